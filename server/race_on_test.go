//go:build race

package server_test

// slack scales the latency bounds docs/api.md demands: the race detector slows
// code 5–10×, and a shared 2-core CI machine adds scheduling noise.
const slack = 5
