package weights

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFloat16View(t *testing.T) {
	buf := []byte{0xff, 0x00, 0x3c, 0x01, 0xc0, 0x02, 0x7c}
	for _, tc := range []struct {
		name string
		raw  []byte
		want []uint16
	}{
		{"aligned", buf[1:7], []uint16{0x3c00, 0xc001, 0x7c02}},
		{"unaligned", buf[0:6], []uint16{0x00ff, 0x013c, 0x02c0}},
		{"empty", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Float16View(tc.raw, len(tc.want))
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
	_, err := Float16View(buf[:5], 3)
	assert.EqualError(t, err, "5 bytes for 3 float16 values")
}
