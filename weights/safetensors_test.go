package weights

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/llorch/llorch-check/safetensors"
	"github.com/stretchr/testify/require"
)

// TestFloat32sChunks checks the chunked conversion and that release
// sees every source byte exactly once, in order.
func TestFloat32sChunks(t *testing.T) {
	n := chunk + 77
	src := make([]float32, n)
	for i := range src {
		src[i] = float32(i) * 0.5
	}
	img := safetensorsImage(t, "x", src)
	f, err := safetensors.Parse(img)
	require.NoError(t, err)
	ti := f.Tensors[0]
	raw := f.Raw(ti)
	var seen int
	got := Float32s(f, ti, func(b []byte) {
		require.Equal(t, &raw[seen], &b[0])
		seen += len(b)
	})
	require.Equal(t, len(raw), seen)
	require.Equal(t, src, got)
}

// safetensorsImage is a file of one F32 tensor.
func safetensorsImage(t *testing.T, name string, vals []float32) []byte {
	h, err := json.Marshal(map[string]any{name: map[string]any{"dtype": "F32", "shape": []int{len(vals)}, "data_offsets": []int{0, 4 * len(vals)}}})
	require.NoError(t, err)
	out := binary.LittleEndian.AppendUint64(nil, uint64(len(h)))
	out = append(out, h...)
	for _, v := range vals {
		out = binary.LittleEndian.AppendUint32(out, math.Float32bits(v))
	}
	return out
}

// TestBits16Chunks: Float16Bits and BFloat16Bits copy a 16-bit tensor's
// little-endian bits as they are, chunk by chunk, releasing every source
// byte exactly once, in order.
func TestBits16Chunks(t *testing.T) {
	n := chunk + 77
	for _, c := range []struct {
		dtype string
		bits  func(*safetensors.File, safetensors.Tensor, func([]byte)) []uint16
	}{{"F16", Float16Bits}, {"BF16", BFloat16Bits}} {
		want := make([]uint16, n)
		data := make([]byte, 0, 2*n)
		for i := range want {
			want[i] = uint16(i*40503 + 1)
			data = binary.LittleEndian.AppendUint16(data, want[i])
		}
		h, err := json.Marshal(map[string]any{"x": map[string]any{"dtype": c.dtype, "shape": []int{n}, "data_offsets": []int{0, 2 * n}}})
		require.NoError(t, err)
		img := append(binary.LittleEndian.AppendUint64(nil, uint64(len(h))), h...)
		f, err := safetensors.Parse(append(img, data...))
		require.NoError(t, err)
		ti := f.Tensors[0]
		raw := f.Raw(ti)
		var seen int
		got := c.bits(f, ti, func(b []byte) {
			require.Equal(t, &raw[seen], &b[0])
			seen += len(b)
		})
		require.Equal(t, len(raw), seen, c.dtype)
		require.Equal(t, want, got, c.dtype)
	}
}

// BenchmarkBFloat16BitsMapped copies a mapped 128 MB bfloat16 tensor as
// an HF load does (releasing each chunk): the copy, the faults of the
// mapping and of the fresh output (scripts/bench/notes: load).
func BenchmarkBFloat16BitsMapped(b *testing.B) {
	n := 64 << 20
	h, err := json.Marshal(map[string]any{"x": map[string]any{"dtype": "BF16", "shape": []int{n}, "data_offsets": []int{0, 2 * n}}})
	require.NoError(b, err)
	img := append(binary.LittleEndian.AppendUint64(nil, uint64(len(h))), h...)
	img = append(img, make([]byte, 2*n)...)
	path := filepath.Join(b.TempDir(), "model.safetensors")
	require.NoError(b, os.WriteFile(path, img, 0o644))
	c, err := MapWeights(path)
	require.NoError(b, err)
	defer c.Close()
	b.SetBytes(int64(2 * n))
	for b.Loop() {
		_ = BFloat16Bits(c.File, c.File.Tensors[0], Release)
	}
}
