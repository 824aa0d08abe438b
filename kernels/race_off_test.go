//go:build !race

package kernels

// raceEnabled: see race_on_test.go.
const raceEnabled = false
