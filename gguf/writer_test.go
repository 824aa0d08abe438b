package gguf

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func mustValue(t *testing.T, v any) Value {
	t.Helper()
	val, err := ValueOf(v)
	require.NoError(t, err)
	return val
}

// Every value type, nested arrays, a custom alignment and tensors of
// several types survive Write then Read unchanged.
func TestWriteRoundTrip(t *testing.T) {
	values := []any{
		uint8(200), int8(-3), uint16(0x1234), int16(-2), uint32(70000), int32(-1),
		float32(1.5), true, "héllo", uint64(1 << 40), int64(-1), -2.25,
		[]uint8{1, 2}, []int8{-1}, []uint16{9}, []int16{-9}, []uint32{7}, []int32{1, -2, 3},
		[]float32{0.5}, []bool{true, false}, []string{"a", "", "Ġ t"}, []uint64{1 << 63},
		[]int64{-5}, []float64{math.Pi},
		[]Array{{Elem: TypeString, Values: []string{"x"}}, {Elem: TypeBool, Values: []bool{}}},
	}
	kv := []KV{{Key: "general.alignment", Value: mustValue(t, uint32(64))}}
	for i, v := range values {
		kv = append(kv, KV{Key: "k" + string(rune('a'+i)), Value: mustValue(t, v)})
	}
	f32, err := EncodeFloat32(GGMLTypeF32, []float32{1, 2, 3, 4, 5, 6})
	require.NoError(t, err)
	q8, err := EncodeFloat32(GGMLTypeQ8_0, make([]float32, 64))
	require.NoError(t, err)
	tensors := []TensorData{
		{Name: "w", Dims: []uint64{3, 2}, Type: GGMLTypeF32, Data: f32},
		{Name: "h", Dims: []uint64{1}, Type: GGMLTypeF16, Data: []byte{0, 0x3c}},
		{Name: "q", Dims: []uint64{32, 2}, Type: GGMLTypeQ8_0, Data: q8},
	}
	var buf bytes.Buffer
	require.NoError(t, Write(&buf, kv, tensors))
	f, err := ReadBytes(buf.Bytes())
	require.NoError(t, err)

	assert.EqualValues(t, 3, f.Version)
	assert.EqualValues(t, 64, f.Alignment)
	assert.Zero(t, f.DataOffset%64)
	require.Len(t, f.KV, len(kv))
	for i, e := range kv {
		assert.Equal(t, e, f.KV[i], e.Key)
	}
	require.Len(t, f.Tensors, len(tensors))
	for i, want := range tensors {
		got := f.Tensors[i]
		assert.Equal(t, want.Name, got.Name)
		assert.Equal(t, want.Dims, got.Dims)
		assert.Equal(t, want.Type, got.Type)
		assert.Zero(t, got.Offset%64, want.Name)
		data, err := f.TensorData(want.Name)
		require.NoError(t, err)
		assert.Equal(t, want.Data, data, want.Name)
	}
}

func TestWriteFileAtomic(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.gguf")
	require.NoError(t, os.WriteFile(path, []byte("old"), 0o644))
	bad := []TensorData{{Name: "t", Dims: []uint64{2}, Type: GGMLTypeF32, Data: make([]byte, 4)}}
	err := WriteFile(path, nil, bad)
	require.ErrorContains(t, err, "tensor t: 4 bytes of data, F32[2] needs 8")
	old, _ := os.ReadFile(path)
	assert.Equal(t, "old", string(old), "a failed write leaves the old file")

	require.NoError(t, WriteFile(path, []KV{{Key: "a", Value: mustValue(t, "b")}}, nil))
	f, err := Open(path)
	require.NoError(t, err)
	defer f.Close()
	s, err := f.String("a")
	require.NoError(t, err)
	assert.Equal(t, "b", s)
	entries, _ := os.ReadDir(filepath.Dir(path))
	assert.Len(t, entries, 1, "no temporary file left behind")
}

func TestWriteRejects(t *testing.T) {
	f32 := func(n int) []byte { return make([]byte, 4*n) }
	cases := []struct {
		name    string
		kv      []KV
		tensors []TensorData
		want    string
	}{
		{"duplicate key", []KV{{"a", Value{TypeUint8, uint8(1)}}, {"a", Value{TypeUint8, uint8(1)}}}, nil, `duplicate metadata key "a"`},
		{"type mismatch", []KV{{"a", Value{TypeUint32, int32(1)}}}, nil, "key a: value of Go type int32 is not a uint32"},
		{"array mismatch", []KV{{"a", Value{TypeArray, Array{TypeString, []int32{1}}}}}, nil, "key a: array values of Go type []int32 are not []string"},
		{"unknown type", []KV{{"a", Value{99, 1}}}, nil, "key a: unknown value type 99"},
		{"bad alignment", []KV{{"general.alignment", Value{TypeUint32, uint32(48)}}}, nil, "power-of-two"},
		{"duplicate tensor", nil, []TensorData{{"t", []uint64{1}, GGMLTypeF32, f32(1)}, {"t", []uint64{1}, GGMLTypeF32, f32(1)}}, `duplicate tensor name "t"`},
		{"too many dims", nil, []TensorData{{"t", []uint64{1, 1, 1, 1, 1}, GGMLTypeF32, f32(1)}}, "tensor t: 5 dims, at most 4"},
		{"unknown tensor type", nil, []TensorData{{"t", []uint64{1}, 99, nil}}, "tensor t: unknown ggml type 99"},
		{"partial block", nil, []TensorData{{"t", []uint64{31}, GGMLTypeQ8_0, nil}}, "tensor t: first dim 31 not a multiple of Q8_0 block size 32"},
		{"short data", nil, []TensorData{{"t", []uint64{2, 2}, GGMLTypeF32, f32(3)}}, "tensor t: 12 bytes of data, F32[2 2] needs 16"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var buf bytes.Buffer
			err := Write(&buf, c.kv, c.tensors)
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
			assert.Zero(t, buf.Len(), "nothing written before validation")
		})
	}
	_, err := ValueOf(struct{}{})
	assert.ErrorContains(t, err, "no GGUF type for Go type struct {}")
}

func TestReadOverlappingTensors(t *testing.T) {
	b := new(builder).header(3, 2, 0)
	b.str("a").u32(1).u64(16).u32(uint32(GGMLTypeF32)).u64(0)
	b.str("b").u32(1).u64(8).u32(uint32(GGMLTypeF32)).u64(32)
	b.pad(32)
	b.Write(make([]byte, 96))
	data := b.Bytes()
	_, err := Read(bytes.NewReader(data), int64(len(data)))
	require.ErrorIs(t, err, ErrInvalid)
	assert.ErrorContains(t, err, "tensor b [32,64) overlaps tensor a [0,64)")
}
