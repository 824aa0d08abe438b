//go:build race

package kernels

// raceEnabled: the race detector's sync.Pool drops a quarter of what is
// put back, at random, so a pooled scratch buffer is allocated again now
// and then and allocation counts are not the code's.
const raceEnabled = true
