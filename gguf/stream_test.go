package gguf

import (
	"bufio"
	"bytes"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// writeWhole is the writer as it was before StreamWriter, every tensor's
// data in hand: the oracle the streamed bytes are held to.
func writeWhole(w io.Writer, kv []KV, tensors []TensorData) error {
	align, _ := alignmentOf(kv)
	ew := &encoder{w: bufio.NewWriterSize(w, 1<<20)}
	ew.raw([]byte(Magic))
	ew.u32(3)
	ew.u64(uint64(len(tensors)))
	ew.u64(uint64(len(kv)))
	for _, e := range kv {
		ew.str(e.Key)
		ew.u32(uint32(e.Value.Type))
		ew.value(e.Value.V)
	}
	var off uint64
	for _, t := range tensors {
		ew.str(t.Name)
		ew.u32(uint32(len(t.Dims)))
		for _, d := range t.Dims {
			ew.u64(d)
		}
		ew.u32(uint32(t.Type))
		ew.u64(off)
		off = alignUp(off+uint64(len(t.Data)), align)
	}
	ew.pad(align)
	for _, t := range tensors {
		ew.raw(t.Data)
		ew.pad(align)
	}
	if ew.err != nil {
		return ew.err
	}
	return ew.w.Flush()
}

func streamTensors(t *testing.T) []TensorData {
	t.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	vals := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = rng.Float32()*2 - 1
		}
		return v
	}
	enc := func(typ GGMLType, n int) []byte {
		b, err := EncodeFloat32(typ, vals(n))
		require.NoError(t, err)
		return b
	}
	return []TensorData{
		{Name: "a", Dims: []uint64{5, 3}, Type: GGMLTypeF32, Data: enc(GGMLTypeF32, 15)},
		{Name: "empty", Dims: []uint64{0}, Type: GGMLTypeF32, Data: []byte{}},
		{Name: "h", Dims: []uint64{7}, Type: GGMLTypeF16, Data: enc(GGMLTypeF16, 7)},
		{Name: "b", Dims: []uint64{9, 2}, Type: GGMLTypeBF16, Data: enc(GGMLTypeBF16, 18)},
		{Name: "q", Dims: []uint64{64, 3}, Type: GGMLTypeQ8_0, Data: enc(GGMLTypeQ8_0, 192)},
		{Name: "last", Dims: []uint64{1}, Type: GGMLTypeF16, Data: enc(GGMLTypeF16, 1)},
	}
}

// The streamed file is byte for byte the whole-data writer's, however the
// data is cut into writes (within a tensor, across tensors, all at once),
// at the default and at a custom alignment.
func TestStreamWriterBytes(t *testing.T) {
	tensors := streamTensors(t)
	var all []byte
	for _, td := range tensors {
		all = append(all, td.Data...)
	}
	for _, kv := range [][]KV{
		{StringKV("general.architecture", "x")},
		{StringKV("general.architecture", "x"), Uint32KV("general.alignment", 64)},
	} {
		var want bytes.Buffer
		require.NoError(t, writeWhole(&want, kv, tensors))
		for _, cut := range []int{1, 3, 7, 64, len(all)} {
			var got bytes.Buffer
			sw, err := NewStreamWriter(&got, kv, infosOf(tensors))
			require.NoError(t, err)
			for p := all; len(p) > 0; {
				k := min(cut, len(p))
				n, err := sw.Write(p[:k])
				require.NoError(t, err)
				require.Equal(t, k, n)
				p = p[k:]
			}
			_, more := sw.Tensor()
			require.False(t, more)
			require.NoError(t, sw.Close())
			require.Equal(t, want.Bytes(), got.Bytes(), "writes of %d bytes", cut)
		}
		var viaWrite bytes.Buffer
		require.NoError(t, Write(&viaWrite, kv, tensors))
		require.Equal(t, want.Bytes(), viaWrite.Bytes(), "Write")
	}
}

// Too little data is an error at Close, too much at Write.
func TestStreamWriterErrors(t *testing.T) {
	tensors := streamTensors(t)
	infos := infosOf(tensors)
	tests := []struct {
		name      string
		data      int // bytes written
		wantWrite string
		wantClose string
	}{
		{"short", 10, "", "tensor a: 10 of its 60 bytes"},
		{"mid tensor", 60 + 4, "", "tensor h: 4 of its 14 bytes"},
		{"past the end", 1 << 10, "past the last tensor", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sw, err := NewStreamWriter(io.Discard, nil, infos)
			require.NoError(t, err)
			_, err = sw.Write(make([]byte, tc.data))
			if tc.wantWrite != "" {
				require.ErrorContains(t, err, tc.wantWrite)
				return
			}
			require.NoError(t, err)
			require.ErrorContains(t, sw.Close(), tc.wantClose)
		})
	}
}

// A fill that fails leaves no file (and no temporary one); a complete
// one reads back.
func TestWriteFileStream(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.gguf")
	tensors := streamTensors(t)
	err := WriteFileStream(path, nil, infosOf(tensors), func(sw *StreamWriter) error {
		_, err := sw.Write(tensors[0].Data)
		return err // the rest is missing
	})
	require.ErrorContains(t, err, "tensor h")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Empty(t, entries)

	require.NoError(t, WriteFileStream(path, nil, infosOf(tensors), func(sw *StreamWriter) error {
		for _, td := range tensors {
			if _, err := sw.Write(td.Data); err != nil {
				return err
			}
		}
		return nil
	}))
	f, err := Open(path)
	require.NoError(t, err)
	defer f.Close()
	require.Len(t, f.Tensors, len(tensors))
}
