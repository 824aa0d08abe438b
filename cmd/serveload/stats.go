package main

import (
	"math"
	"slices"
	"time"
)

// percentile is the p-th percentile (0..100) of xs by linear interpolation
// between the two nearest ranks (numpy's default), so p50 of an even count
// is the mean of the middle two and p99 of a small sample leans towards its
// maximum without jumping to it. NaN for an empty sample: the table prints
// "-" rather than a zero that would read as a measurement.
func percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	pos := p / 100 * float64(len(s)-1)
	lo := int(math.Floor(pos))
	hi := int(math.Ceil(pos))
	if lo < 0 {
		lo = 0
	}
	if hi >= len(s) {
		hi = len(s) - 1
	}
	return s[lo] + (s[hi]-s[lo])*(pos-float64(lo))
}

// ms is d in milliseconds as a float, the unit of every latency column.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
