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
		{12 << 20, 100}, // a tiny model: the default
		{48 << 20, 100}, // headroom equal to the weights
		{135 << 20, 35}, // GPT-2 124M Q8_0: 48 MB of garbage, not 135
		{654 << 20, 10}, // GPT-2 F32: 10% is the floor
		{4 << 30, 10},   // larger models keep the floor
	} {
		require.Equal(t, tc.want, GCPercent(tc.weights), "weights %d", tc.weights)
	}
}
