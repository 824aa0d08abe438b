package model

import (
	"context"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/gguf"
)

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
			return encodeRaw(t, map[string]any{"a": entry("F32", []int{4}, 8, 24)}, data16)
		}, []string{`"a"`, "outside the 16-byte data section"}},
		{"negative offset", func(t *testing.T) []byte {
			return encodeRaw(t, map[string]any{"a": entry("F32", []int{1}, -4, 0)}, data16)
		}, []string{`"a"`, "outside"}},
		{"reversed offsets", func(t *testing.T) []byte {
			return encodeRaw(t, map[string]any{"a": entry("F32", []int{0}, 8, 4)}, data16)
		}, []string{`"a"`, "outside"}},
		{"offsets not matching shape", func(t *testing.T) []byte {
			return encodeRaw(t, map[string]any{"a": entry("F32", []int{2, 2}, 0, 12)}, data16)
		}, []string{`"a"`, "hold 12 bytes", "needs 4×4"}},
		{"offsets not matching dtype", func(t *testing.T) []byte {
			return encodeRaw(t, map[string]any{"a": entry("F16", []int{4}, 0, 16)}, data16)
		}, []string{`"a"`, "needs 4×2"}},
		{"overflowing shape", func(t *testing.T) []byte {
			return encodeRaw(t, map[string]any{"a": entry("F32", []int{1 << 62, 1 << 62, 4}, 0, 16)}, data16)
		}, []string{`"a"`, "hold 16 bytes"}},
		{"negative dim", func(t *testing.T) []byte {
			return encodeRaw(t, map[string]any{"a": entry("F32", []int{-1}, 0, 0)}, data16)
		}, []string{`"a"`, "negative"}},
		{"overlapping tensors", func(t *testing.T) []byte {
			return encodeRaw(t, map[string]any{"a": entry("F32", []int{3}, 0, 12), "b": entry("F32", []int{2}, 8, 16)}, data16)
		}, []string{`"b"`, `"a"`, "overlaps"}},
		{"unknown dtype", func(t *testing.T) []byte {
			return encodeRaw(t, map[string]any{"a": entry("I64", []int{2}, 0, 16)}, data16)
		}, []string{`"a"`, "I64"}},
		{"missing field", func(t *testing.T) []byte {
			return encodeRaw(t, map[string]any{"a": map[string]any{"dtype": "F32", "shape": []int{4}}}, data16)
		}, []string{`"a"`, "data_offsets"}},
		{"three offsets", func(t *testing.T) []byte {
			return encodeRaw(t, map[string]any{"a": map[string]any{"dtype": "F32", "shape": []int{1}, "data_offsets": []int{0, 4, 8}}}, data16)
		}, []string{`"a"`, "two entries"}},
		{"duplicate name", func(t *testing.T) []byte {
			h := `{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`
			return append(append(binary.LittleEndian.AppendUint64(nil, uint64(len(h))), h...), data16...)
		}, []string{`"a"`, "twice"}},
		{"bad metadata", func(t *testing.T) []byte {
			return encodeRaw(t, map[string]any{"__metadata__": 3}, nil)
		}, []string{"__metadata__"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseSafetensors(tt.file(t))
			require.Error(t, err)
			for _, s := range tt.wantErr {
				require.Contains(t, err.Error(), s)
			}
		})
	}
}

func TestParseSafetensorsValid(t *testing.T) {
	b := encodeRaw(t, map[string]any{
		"__metadata__": map[string]string{"format": "pt"},
		"b":            entry("F32", []int{2}, 8, 16),
		"a":            entry("F32", []int{2}, 0, 8),
		"empty":        entry("F32", []int{0, 3}, 16, 16),
		"scalar":       entry("BF16", []int{}, 16, 18),
	}, append(f32Bytes([]float32{1, 2, 3, 4}), 0x80, 0x3f))
	f, err := parseSafetensors(b)
	require.NoError(t, err)
	require.Len(t, f.tensors, 4)
	got := map[string][]float32{}
	for _, ti := range f.tensors {
		got[ti.Name] = f.toFloat32(ti)
	}
	require.Equal(t, []float32{1, 2}, got["a"])
	require.Equal(t, []float32{3, 4}, got["b"])
	require.Empty(t, got["empty"])
	require.Equal(t, []float32{1}, got["scalar"])

	// The reference writer pads the header with spaces to 8-byte alignment.
	h := `{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}     `
	f, err = parseSafetensors(append(append(binary.LittleEndian.AppendUint64(nil, uint64(len(h))), h...), f32Bytes([]float32{5})...))
	require.NoError(t, err)
	require.Equal(t, []float32{5}, f.toFloat32(f.tensors[0]))
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

// halfTensors re-encodes F32 test tensors as dtype (values chosen so that
// the conversion is exact is the caller's concern).
func halfTensors(ts []stTensor, dtype string, enc func(float32) uint16) []stTensor {
	out := slices.Clone(ts)
	for i, x := range out {
		raw := make([]byte, 2*len(x.Data))
		for j, v := range x.Data {
			binary.LittleEndian.PutUint16(raw[2*j:], enc(v))
		}
		out[i].DType, out[i].Raw = dtype, raw
	}
	return out
}

// truncBF16 keeps the top half of a float32: exact for values built that way.
func truncBF16(v float32) uint16 { return uint16(math.Float32bits(v) >> 16) }

func TestLoad(t *testing.T) {
	w := randomWeights(testCfg, 7)
	base := w.tensors("")
	cfg := configJSON(testCfg)
	replace := func(name string, x stTensor) []stTensor {
		out := slices.Clone(base)
		for i := range out {
			if out[i].Name == name {
				out[i] = x
			}
		}
		return out
	}
	without := func(name string) []stTensor {
		return slices.DeleteFunc(slices.Clone(base), func(x stTensor) bool { return x.Name == name })
	}
	wte := w.f32["wte.weight"]
	otherWte := slices.Clone(wte)
	otherWte[len(otherWte)-1] += 1
	tests := []struct {
		name    string
		tensors []stTensor
		wantErr []string
		dtype   string
	}{
		{name: "plain", tensors: base, dtype: "F32"},
		{name: "transformer prefix", tensors: w.tensors("transformer."), dtype: "F32"},
		{name: "mixed prefix", tensors: append(w.tensors("transformer.")[:5], base[5:]...), dtype: "F32"},
		{name: "buffers skipped", tensors: append(slices.Clone(base),
			stTensor{Name: "h.0.attn.bias", DType: "F32", Shape: []int{1, 1, 2, 2}, Data: []float32{1, 0, 1, 1}},
			stTensor{Name: "transformer.h.1.attn.masked_bias", DType: "F32", Shape: []int{}, Data: []float32{-1e4}}), dtype: "F32"},
		{name: "lm_head equal", tensors: append(slices.Clone(base),
			stTensor{Name: "lm_head.weight", DType: "F32", Shape: []int{97, 16}, Data: wte}), dtype: "F32"},
		{name: "prefixed lm_head equal", tensors: append(slices.Clone(base),
			stTensor{Name: "transformer.lm_head.weight", DType: "F32", Shape: []int{97, 16}, Data: wte}), dtype: "F32"},
		{name: "mixed dtypes", tensors: append(halfTensors(base[:1], "BF16", truncBF16), base[1:]...), dtype: "BF16+F32"},
		{name: "lm_head different", tensors: append(slices.Clone(base),
			stTensor{Name: "lm_head.weight", DType: "F32", Shape: []int{97, 16}, Data: otherWte}),
			wantErr: []string{"lm_head.weight", "element 1551", "tied"}},
		{name: "lm_head wrong shape", tensors: append(slices.Clone(base),
			stTensor{Name: "lm_head.weight", DType: "F32", Shape: []int{16, 97}, Data: wte}),
			wantErr: []string{"lm_head.weight", "[16 97]", "[97 16]"}},
		{name: "missing tensor", tensors: without("h.1.mlp.c_fc.bias"), wantErr: []string{"missing", "h.1.mlp.c_fc.bias"}},
		{name: "wrong shape", tensors: replace("h.0.attn.c_attn.weight",
			stTensor{Name: "h.0.attn.c_attn.weight", DType: "F32", Shape: []int{48, 16}, Data: w.f32["h.0.attn.c_attn.weight"]}),
			wantErr: []string{"h.0.attn.c_attn.weight", "[48 16]", "expected [16 48]"}},
		{name: "unexpected tensor", tensors: append(slices.Clone(base),
			stTensor{Name: "h.0.attn.rotary", DType: "F32", Shape: []int{1}, Data: []float32{0}}),
			wantErr: []string{"unexpected", "h.0.attn.rotary"}},
		{name: "buffer of a missing layer", tensors: append(slices.Clone(base),
			stTensor{Name: "h.5.attn.bias", DType: "F32", Shape: []int{1}, Data: []float32{0}}),
			wantErr: []string{"unexpected", "h.5.attn.bias"}},
		{name: "duplicate after prefix", tensors: append(slices.Clone(base),
			stTensor{Name: "transformer.ln_f.bias", DType: "F32", Shape: []int{16}, Data: w.f32["ln_f.bias"]}),
			wantErr: []string{"ln_f.bias", "same parameter"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeModel(t, cfg, tt.tensors)
			m, err := Load(dir)
			if tt.wantErr != nil {
				require.Error(t, err)
				require.Contains(t, err.Error(), filepath.Join(dir, "model.safetensors"))
				for _, s := range tt.wantErr {
					require.Contains(t, err.Error(), s)
				}
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.dtype, m.WeightsDType)
			require.Equal(t, dir, m.Dir)
			if tt.dtype == "F32" {
				require.Equal(t, wte, m.wte.Float32s())
			}
			require.Equal(t, w.f32["h.1.mlp.c_proj.weight"], m.h[1].mlpW.Float32s())
			n := 0
			for _, x := range base {
				n += len(x.Data)
			}
			require.Equal(t, int64(4*n), m.WeightsBytes())
		})
	}
}

func TestLoadHalfDTypes(t *testing.T) {
	w := randomWeights(testCfg, 9)
	// Round every weight to a value both F16 and BF16 hold exactly.
	for _, n := range w.names {
		for i, v := range w.f32[n] {
			v = bf16Bits(truncBF16(v))
			v = float32(math.Round(float64(v)*256) / 256)
			w.f32[n][i] = v
		}
	}
	for _, dt := range []struct {
		dtype string
		enc   func(float32) uint16
	}{
		{"BF16", truncBF16},
		{"F16", func(v float32) uint16 { return f32ToF16Exact(t, v) }},
	} {
		t.Run(dt.dtype, func(t *testing.T) {
			m, err := Load(writeModel(t, configJSON(testCfg), halfTensors(w.tensors(""), dt.dtype, dt.enc)))
			require.NoError(t, err)
			require.Equal(t, dt.dtype, m.WeightsDType)
			require.Equal(t, w.f32["wte.weight"], m.wte.Float32s())
			require.Equal(t, w.f32["h.0.ln_1.weight"], m.h[0].ln1W)
		})
	}
}

// f32ToF16Exact encodes a normal float32 that F16 represents exactly.
func f32ToF16Exact(t *testing.T, v float32) uint16 {
	if v == 0 {
		return 0
	}
	b := math.Float32bits(v)
	sign := uint16(b>>16) & 0x8000
	exp := int(b>>23&0xff) - 127 + 15
	mant := b & 0x7fffff
	require.True(t, exp > 0 && exp < 31 && mant&0x1fff == 0, "%g not exact in F16", v)
	h := sign | uint16(exp)<<10 | uint16(mant>>13)
	require.Equal(t, v, decodeOne("F16", h))
	return h
}

func TestLoadFileErrors(t *testing.T) {
	dir := writeModel(t, configJSON(testCfg), randomWeights(testCfg, 1).tensors(""))
	p := filepath.Join(dir, "model.safetensors")
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(p, b[:len(b)-1], 0o644))
	_, err = Load(dir)
	require.ErrorContains(t, err, "outside")
	require.NoError(t, os.WriteFile(p, nil, 0o644))
	_, err = Load(dir)
	require.ErrorContains(t, err, "shorter than")
	require.NoError(t, os.Remove(p))
	_, err = Load(dir)
	require.ErrorContains(t, err, p)
	_, err = Load(t.TempDir())
	require.ErrorContains(t, err, "config.json")
	require.NoError(t, os.Mkdir(p, 0o755)) // once "no such device"
	_, err = Load(dir)
	require.ErrorContains(t, err, p+" is a directory, not a weights file")
}

func FuzzParseSafetensors(f *testing.F) {
	f.Add(encodeSafetensors(f, randomWeights(Config{VocabSize: 3, NPositions: 2, NEmbd: 2, NLayer: 1, NHead: 1, NInner: 2}, 1).tensors("")))
	f.Add(encodeRaw(f, map[string]any{"a": entry("F16", []int{2}, 0, 4), "b": entry("BF16", []int{1, 1}, 4, 6)}, make([]byte, 6)))
	f.Add([]byte{})
	f.Add(binary.LittleEndian.AppendUint64(nil, 2))
	f.Fuzz(func(t *testing.T, b []byte) {
		sf, err := parseSafetensors(b)
		if err != nil {
			return
		}
		total := 0
		for _, ti := range sf.tensors {
			x := sf.toFloat32(ti)
			total += len(x)
			require.Equal(t, ti.numel(), len(x))
		}
		// Converted values never outnumber the bytes they came from.
		require.LessOrEqual(t, total, len(b))
		// Loading as a model must fail cleanly or succeed, never panic.
		_, _ = loadWeights(Config{VocabSize: 3, NPositions: 2, NEmbd: 2, NLayer: 1, NHead: 1, NInner: 2}, b, LoadOptions{})
	})
}

// decodeOne runs one 16-bit value through the loader's conversion.
func decodeOne(dtype string, bits uint16) float32 {
	var raw [2]byte
	binary.LittleEndian.PutUint16(raw[:], bits)
	dst := make([]float32, 1)
	decodeInto(dst, dtype, raw[:])
	return dst[0]
}

// bf16Bits is bfloat16's definition: the top half of a float32.
func bf16Bits(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// TestLoadSizesFromTheFile: a config.json that passes validation but
// claims far more than the file holds fails at once, naming the field,
// before anything is sized by it (a million layers once allocated 23 GB).
func TestLoadSizesFromTheFile(t *testing.T) {
	w := randomWeights(testCfg, 1).tensors("")
	for _, c := range []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"a million layers", func(c *Config) { c.NLayer = 1_000_000 }, "config n_layer 1000000 is more blocks than the file's 28 tensors can hold"},
		{"every size at the limit", func(c *Config) {
			c.NEmbd, c.NInner, c.VocabSize, c.NPositions, c.NHead = 1<<24, 1<<24, 1<<24, 1<<24, 1
		}, `tensor "wte.weight": shape [97 16], expected [16777216 16777216]`},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := testCfg
			c.edit(&cfg)
			dir := writeModel(t, configJSON(cfg), w)
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err := Load(dir)
			runtime.ReadMemStats(&after)
			require.ErrorContains(t, err, c.want)
			require.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(64<<20), "allocated before failing")
		})
	}
}

// TestLoadStopsWhenCancelled: loading checks its context between tensors,
// so a server told to stop while loading does not finish first.
func TestLoadStopsWhenCancelled(t *testing.T) {
	dir := writeModel(t, configJSON(testCfg), randomWeights(testCfg, 1).tensors(""))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := LoadContext(ctx, dir, LoadOptions{})
	require.ErrorIs(t, err, context.Canceled)
	m, err := Load(dir)
	require.NoError(t, err)
	p := filepath.Join(t.TempDir(), "m.gguf")
	require.NoError(t, os.WriteFile(p, ggufImage(t, m, gguf.GGMLTypeF32, nil), 0o644))
	_, err = LoadContext(ctx, p, LoadOptions{})
	require.ErrorIs(t, err, context.Canceled)
}
