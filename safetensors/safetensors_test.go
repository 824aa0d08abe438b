package safetensors

import (
	"encoding/binary"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/internal/fixture"
)

func f32Bytes(x []float32) []byte {
	b := make([]byte, 4*len(x))
	for i, v := range x {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return b
}

// decodeOne runs one 16-bit value through DecodeInto.
func decodeOne(dtype string, bits uint16) float32 {
	var raw [2]byte
	binary.LittleEndian.PutUint16(raw[:], bits)
	dst := make([]float32, 1)
	DecodeInto(dst, dtype, raw[:])
	return dst[0]
}

func entry(dtype string, shape []int, begin, end int) map[string]any {
	return map[string]any{"dtype": dtype, "shape": shape, "data_offsets": []int{begin, end}}
}

func TestParseSafetensorsErrors(t *testing.T) {
	data16 := make([]byte, 16)
	tests := []struct {
		name    string
		file    func(t *testing.T) []byte
		wantErr []string
	}{
		{"empty", func(t *testing.T) []byte { return nil }, []string{"shorter than the 8-byte"}},
		{"truncated length", func(t *testing.T) []byte { return []byte{1, 2, 3} }, []string{"3 bytes"}},
		{"header past EOF", func(t *testing.T) []byte {
			return binary.LittleEndian.AppendUint64(nil, 1000)
		}, []string{"header length 1000", "past the end"}},
		{"huge header length", func(t *testing.T) []byte {
			return binary.LittleEndian.AppendUint64(nil, math.MaxUint64)
		}, []string{"past the end"}},
		{"header not json", func(t *testing.T) []byte {
			return append(binary.LittleEndian.AppendUint64(nil, 3), "{x}"...)
		}, []string{"parsing header"}},
		{"header not object", func(t *testing.T) []byte {
			return append(binary.LittleEndian.AppendUint64(nil, 2), "[]"...)
		}, []string{"not a JSON object"}},
		{"trailing garbage", func(t *testing.T) []byte {
			return append(binary.LittleEndian.AppendUint64(nil, 4), "{}{}"...)
		}, []string{"trailing"}},
		{"offsets outside data", func(t *testing.T) []byte {
			return fixture.Safetensors(t, map[string]any{"a": entry("F32", []int{4}, 8, 24)}, data16)
		}, []string{`"a"`, "outside the 16-byte data section"}},
		{"negative offset", func(t *testing.T) []byte {
			return fixture.Safetensors(t, map[string]any{"a": entry("F32", []int{1}, -4, 0)}, data16)
		}, []string{`"a"`, "outside"}},
		{"reversed offsets", func(t *testing.T) []byte {
			return fixture.Safetensors(t, map[string]any{"a": entry("F32", []int{0}, 8, 4)}, data16)
		}, []string{`"a"`, "outside"}},
		{"offsets not matching shape", func(t *testing.T) []byte {
			return fixture.Safetensors(t, map[string]any{"a": entry("F32", []int{2, 2}, 0, 12)}, data16)
		}, []string{`"a"`, "hold 12 bytes", "needs 4×4"}},
		{"offsets not matching dtype", func(t *testing.T) []byte {
			return fixture.Safetensors(t, map[string]any{"a": entry("F16", []int{4}, 0, 16)}, data16)
		}, []string{`"a"`, "needs 4×2"}},
		{"overflowing shape", func(t *testing.T) []byte {
			return fixture.Safetensors(t, map[string]any{"a": entry("F32", []int{1 << 62, 1 << 62, 4}, 0, 16)}, data16)
		}, []string{`"a"`, "hold 16 bytes"}},
		{"negative dim", func(t *testing.T) []byte {
			return fixture.Safetensors(t, map[string]any{"a": entry("F32", []int{-1}, 0, 0)}, data16)
		}, []string{`"a"`, "negative"}},
		{"overlapping tensors", func(t *testing.T) []byte {
			return fixture.Safetensors(t, map[string]any{"a": entry("F32", []int{3}, 0, 12), "b": entry("F32", []int{2}, 8, 16)}, data16)
		}, []string{`"b"`, `"a"`, "overlaps"}},
		{"unknown dtype", func(t *testing.T) []byte {
			return fixture.Safetensors(t, map[string]any{"a": entry("I64", []int{2}, 0, 16)}, data16)
		}, []string{`"a"`, "I64"}},
		{"missing field", func(t *testing.T) []byte {
			return fixture.Safetensors(t, map[string]any{"a": map[string]any{"dtype": "F32", "shape": []int{4}}}, data16)
		}, []string{`"a"`, "data_offsets"}},
		{"three offsets", func(t *testing.T) []byte {
			return fixture.Safetensors(t, map[string]any{"a": map[string]any{"dtype": "F32", "shape": []int{1}, "data_offsets": []int{0, 4, 8}}}, data16)
		}, []string{`"a"`, "two entries"}},
		{"duplicate name", func(t *testing.T) []byte {
			h := `{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`
			return append(append(binary.LittleEndian.AppendUint64(nil, uint64(len(h))), h...), data16...)
		}, []string{`"a"`, "twice"}},
		{"bad metadata", func(t *testing.T) []byte {
			return fixture.Safetensors(t, map[string]any{"__metadata__": 3}, nil)
		}, []string{"__metadata__"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(tt.file(t))
			require.Error(t, err)
			for _, s := range tt.wantErr {
				require.Contains(t, err.Error(), s)
			}
		})
	}
}

func TestParseSafetensorsValid(t *testing.T) {
	b := fixture.Safetensors(t, map[string]any{
		"__metadata__": map[string]string{"format": "pt"},
		"b":            entry("F32", []int{2}, 8, 16),
		"a":            entry("F32", []int{2}, 0, 8),
		"empty":        entry("F32", []int{0, 3}, 16, 16),
		"scalar":       entry("BF16", []int{}, 16, 18),
	}, append(f32Bytes([]float32{1, 2, 3, 4}), 0x80, 0x3f))
	f, err := Parse(b)
	require.NoError(t, err)
	require.Len(t, f.Tensors, 4)
	got := map[string][]float32{}
	for _, ti := range f.Tensors {
		got[ti.Name] = f.Float32s(ti)
	}
	require.Equal(t, []float32{1, 2}, got["a"])
	require.Equal(t, []float32{3, 4}, got["b"])
	require.Empty(t, got["empty"])
	require.Equal(t, []float32{1}, got["scalar"])

	// The reference writer pads the header with spaces to 8-byte alignment.
	h := `{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}     `
	f, err = Parse(append(append(binary.LittleEndian.AppendUint64(nil, uint64(len(h))), h...), f32Bytes([]float32{5})...))
	require.NoError(t, err)
	require.Equal(t, []float32{5}, f.Float32s(f.Tensors[0]))
}

func TestHalfConversions(t *testing.T) {
	f16 := []struct {
		bits uint16
		want float32
	}{
		{0x0000, 0}, {0x3c00, 1}, {0xbc00, -1}, {0x3555, 0.333251953125}, {0x7bff, 65504},
		{0x0001, 5.960464477539063e-08}, {0x03ff, 6.097555160522461e-05}, {0x0400, 6.103515625e-05},
		{0xc000, -2}, {0x3800, 0.5}, {0x7c00, float32(math.Inf(1))}, {0xfc00, float32(math.Inf(-1))},
	}
	for _, c := range f16 {
		require.Equal(t, c.want, decodeOne("F16", c.bits), "f16 %#04x", c.bits)
	}
	require.Equal(t, uint32(0x80000000), math.Float32bits(decodeOne("F16", 0x8000)), "negative zero")
	require.True(t, math.IsNaN(float64(decodeOne("F16", 0x7e00))))
	// Every finite f16 must round-trip through float64 exactly.
	for b := 0; b < 1<<16; b++ {
		exp, mant := (b>>10)&0x1f, float64(b&0x3ff)
		if exp == 0x1f {
			continue
		}
		want := math.Ldexp(mant, -24)
		if exp > 0 {
			want = math.Ldexp(1024+mant, exp-25)
		}
		if b&0x8000 != 0 {
			want = -want
		}
		require.Equal(t, want, float64(decodeOne("F16", uint16(b))), "f16 %#04x", b)
	}
	bf16 := []struct {
		bits uint16
		want float32
	}{
		{0x3f80, 1}, {0xbf80, -1}, {0x4049, 3.140625}, {0x0001, 9.183549615799121e-41}, {0x7f7f, 3.3895313892515355e+38},
	}
	for _, c := range bf16 {
		require.Equal(t, c.want, decodeOne("BF16", c.bits), "bf16 %#04x", c.bits)
	}
}

func FuzzParse(f *testing.F) {
	f.Add(fixture.Safetensors(f, map[string]any{"__metadata__": map[string]string{"format": "pt"}, "w": entry("F32", []int{2, 2}, 0, 16)}, f32Bytes([]float32{1, -2, 3.5, 0})))
	f.Add(fixture.Safetensors(f, map[string]any{"a": entry("F16", []int{2}, 0, 4), "b": entry("BF16", []int{1, 1}, 4, 6)}, make([]byte, 6)))
	f.Add([]byte{})
	f.Add(binary.LittleEndian.AppendUint64(nil, 2))
	f.Fuzz(func(t *testing.T, b []byte) {
		sf, err := Parse(b)
		if err != nil {
			return
		}
		total := 0
		for _, ti := range sf.Tensors {
			x := sf.Float32s(ti)
			total += len(x)
			require.Equal(t, ti.Numel(), len(x))
		}
		// Converted values never outnumber the bytes they came from.
		require.LessOrEqual(t, total, len(b))
	})
}

// TestMerge: shards merge into one File whose tensors read from their own
// shard; a tensor name in two shards is refused, naming both.
func TestMerge(t *testing.T) {
	a, err := Parse(fixture.Safetensors(t, map[string]any{"x": entry("F32", []int{1}, 0, 4)}, f32Bytes([]float32{1})))
	require.NoError(t, err)
	b, err := Parse(fixture.Safetensors(t, map[string]any{"y": entry("F32", []int{2}, 0, 8)}, f32Bytes([]float32{2, 3})))
	require.NoError(t, err)
	m, err := Merge([]string{"a", "b"}, []*File{a, b})
	require.NoError(t, err)
	require.Len(t, m.Tensors, 2)
	require.Equal(t, []float32{1}, m.Float32s(m.Tensors[0]))
	require.Equal(t, []float32{2, 3}, m.Float32s(m.Tensors[1]))
	require.Equal(t, 1, m.Tensors[1].Shard)
	_, err = Merge([]string{"a", "a2"}, []*File{a, a})
	require.ErrorContains(t, err, `tensor "x" is in both a and a2`)
	_, err = Merge([]string{"m", "b"}, []*File{m, b})
	require.ErrorContains(t, err, "cannot be merged again")
}

// TestParseIndex: the index's shard names must be plain file names, and
// CheckShard holds a shard to exactly the tensors the index puts there.
func TestParseIndex(t *testing.T) {
	for _, tc := range []struct{ index, err string }{
		{`{"weight_map": {"x": "a.safetensors", "y": "b.safetensors"}}`, ""},
		{`{"weight_map": {"x": "/etc/passwd"}}`, "not a file name beside the index"},
		{`{"weight_map": {"x": ".."}}`, "not a file name beside the index"},
		{`{"weight_map": {"x": "a\\b"}}`, "not a file name beside the index"},
		{`{"weight_map": {}}`, "no weight_map"},
		{`[]`, "not valid JSON"},
	} {
		ix, err := ParseIndex([]byte(tc.index))
		if tc.err != "" {
			require.ErrorContains(t, err, tc.err, tc.index)
			continue
		}
		require.NoError(t, err)
		require.Equal(t, []string{"a.safetensors", "b.safetensors"}, ix.Shards)
		a, err := Parse(fixture.Safetensors(t, map[string]any{"x": entry("F32", []int{1}, 0, 4)}, f32Bytes([]float32{1})))
		require.NoError(t, err)
		require.NoError(t, ix.CheckShard("a.safetensors", a))
		require.ErrorContains(t, ix.CheckShard("b.safetensors", a), `holds tensor "x", which model.safetensors.index.json puts in a.safetensors`)
	}
}

// FuzzParseIndex: any index parses or is refused, never panics, and every
// shard it accepts is a plain file name listed once, sorted.
func FuzzParseIndex(f *testing.F) {
	f.Add([]byte(`{"metadata": {"total_size": 8}, "weight_map": {"a": "model-00001-of-00002.safetensors", "b": "model-00002-of-00002.safetensors"}}`))
	f.Add([]byte(`{"weight_map": {"a": "../x"}}`))
	f.Add([]byte(`{"weight_map": null}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		ix, err := ParseIndex(b)
		if err != nil {
			return
		}
		for i, s := range ix.Shards {
			if s == "" || s == "." || s == ".." || strings.ContainsAny(s, `/\`) {
				t.Fatalf("shard %q accepted", s)
			}
			if i > 0 && ix.Shards[i-1] >= s {
				t.Fatalf("shards %q not sorted and unique", ix.Shards)
			}
		}
	})
}
