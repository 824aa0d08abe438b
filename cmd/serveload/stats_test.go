package main

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPercentile(t *testing.T) {
	for _, tc := range []struct {
		name string
		xs   []float64
		p    float64
		want float64
	}{
		{"one value", []float64{7}, 99, 7},
		{"median of odd count", []float64{3, 1, 2}, 50, 2},
		{"median of even count is the mean of the middle two", []float64{4, 1, 3, 2}, 50, 2.5},
		{"p0 is the minimum", []float64{5, 9, 1}, 0, 1},
		{"p100 is the maximum", []float64{5, 9, 1}, 100, 9},
		{"p99 interpolates towards the maximum", []float64{0, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100}, 99, 99},
		{"p99 of 101 values 0..100", seq(101), 99, 99},
		{"p90 between ranks", []float64{1, 2}, 90, 1.9},
		{"unsorted input", []float64{100, 0, 50}, 75, 75},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := append([]float64(nil), tc.xs...)
			assert.InDelta(t, tc.want, percentile(tc.xs, tc.p), 1e-9)
			assert.Equal(t, in, tc.xs, "percentile must not sort its input")
		})
	}
	assert.True(t, math.IsNaN(percentile(nil, 50)), "no sample: NaN, printed as -")
}

func seq(n int) []float64 {
	xs := make([]float64, n)
	for i := range xs {
		xs[i] = float64(i)
	}
	return xs
}

// A missing figure must survive the JSON file compare reads back.
func TestNumJSON(t *testing.T) {
	b, err := json.Marshal(struct{ A, B num }{num(math.NaN()), 1.23456})
	require.NoError(t, err)
	assert.JSONEq(t, `{"A":null,"B":1.235}`, string(b))
	var back struct{ A, B num }
	require.NoError(t, json.Unmarshal(b, &back))
	assert.True(t, math.IsNaN(float64(back.A)))
	assert.InDelta(t, 1.235, float64(back.B), 1e-9)
	assert.Equal(t, "-", f(back.A, 1))
}

func TestErrorsCell(t *testing.T) {
	assert.Equal(t, "0", errorsCell(map[string]int{}))
	assert.Equal(t, "429:8,stream:1", errorsCell(map[string]int{"stream": 1, "429": 8}))
}
