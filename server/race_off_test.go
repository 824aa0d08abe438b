//go:build !race

package server_test

// slack scales the latency bounds docs/api.md demands: 1 without the race
// detector.
const slack = 1
