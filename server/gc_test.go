package server

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestGCPercent(t *testing.T) {
	for _, tc := range []struct {
		weights int64
		want    int
	}{
		{0, 100},
		{6 << 20, 100}, // a tiny model: the default
		{8 << 20, 100}, // headroom equal to the weights
		{135 << 20, 5}, // GPT-2 124M Q8_0: 8 MB of garbage, not 135
		{654 << 20, 1}, // GPT-2 F32
		{4 << 30, 1},   // larger models: 1% is the floor
		{64 << 30, 1},
	} {
		require.Equal(t, tc.want, GCPercent(tc.weights), "weights %d", tc.weights)
	}
}
