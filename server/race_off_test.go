//go:build !race

package server_test

// slack scales the latency bounds API.md demands: 1 without the race
// detector.
const slack = 1
