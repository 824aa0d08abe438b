package loader

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDropBehind(t *testing.T) {
	const GB = int64(1) << 30
	for _, tc := range []struct {
		name            string
		file, available int64
		want            bool
	}{
		{"an 8B checkpoint on a 24 GB machine", 16 * GB, 23 * GB, true},
		{"a 7B checkpoint with 31 GB free", 15 * GB, 31 * GB, false},
		{"file and model just fit", 10 * GB, 20 * GB, false},
		{"a byte over", 10*GB + 1, 20 * GB, true},
		{"a small model", GB / 4, 23 * GB, false},
		{"memory unknown: keep the cache", 16 * GB, 0, false},
	} {
		require.Equal(t, tc.want, dropBehind(tc.file, tc.available), tc.name)
	}
}
