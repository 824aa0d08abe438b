package loader

import (
	"bytes"
	"context"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/gguf"
	"github.com/llorch/llorch-check/internal/fixture"
)

// TestLoadGGUFReleasesEveryTensor: each tensor's mapped bytes are handed
// back once converted (or, for the tied output.weight, once compared;
// quantised ones in runs of rows as they are decoded), so loading a file
// never holds the mapping and the copy at once.
func TestLoadGGUFReleasesEveryTensor(t *testing.T) {
	m, err := Load(fixture.TinyModel())
	require.NoError(t, err)
	for _, typ := range []gguf.GGMLType{gguf.GGMLTypeF32, gguf.GGMLTypeQ8_0} {
		kv, ts, err := GGUF(m, typ)
		require.NoError(t, err)
		var buf bytes.Buffer
		require.NoError(t, gguf.Write(&buf, kv, ts))
		img := buf.Bytes()
		f, err := gguf.ReadBytes(img)
		require.NoError(t, err)
		released := make([]bool, len(img))
		base := uintptrOf(img)
		type call struct{ off, n int }
		var calls []call
		_, err = loadGGUFFrom(context.Background(), img, func(b []byte) {
			off := int(uintptrOf(b) - base)
			calls = append(calls, call{off, len(b)})
			for i := range b {
				released[off+i] = true
			}
		}, Options{})
		require.NoError(t, err)
		for i := range int(f.DataOffset) {
			require.True(t, released[i], "%s: metadata byte %d never released", typ, i)
		}
		if typ == gguf.GGMLTypeQ8_0 {
			// Rows are released as a growing prefix of the tensor, so
			// that pages a fault mapped back behind go again.
			raw, err := f.TensorData("token_embd.weight")
			require.NoError(t, err)
			off, row := int(uintptrOf(raw)-base), len(raw)/m.Config.VocabSize
			require.Contains(t, calls, call{off, 512 * row}, "rows 0..512 released together")
		}
		for _, ti := range f.Tensors {
			raw, err := f.TensorData(ti.Name)
			require.NoError(t, err)
			off := int(uintptrOf(raw) - base)
			for i := range raw {
				require.True(t, released[off+i], "%s: %s byte %d never released", typ, ti.Name, i)
			}
		}
	}
}

func uintptrOf(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }
