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
	"github.com/llorch/llorch-check/safetensors"
)

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
	require.ErrorContains(t, err, dir+": no weights: neither model.safetensors nor model.safetensors.index.json")
	_, err = Load(t.TempDir())
	require.ErrorContains(t, err, "config.json")
	require.NoError(t, os.Mkdir(p, 0o755)) // once "no such device"
	_, err = Load(dir)
	require.ErrorContains(t, err, p+": a directory, not a regular file")
}

// decodeOne runs one 16-bit value through the loader's conversion.
func decodeOne(dtype string, bits uint16) float32 {
	var raw [2]byte
	binary.LittleEndian.PutUint16(raw[:], bits)
	dst := make([]float32, 1)
	safetensors.DecodeInto(dst, dtype, raw[:])
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

// FuzzLoadSafetensors: loading any bytes as a model fails cleanly or
// succeeds, never panics (the parser's own fuzz is safetensors.FuzzParse).
func FuzzLoadSafetensors(f *testing.F) {
	cfg := Config{VocabSize: 3, NPositions: 2, NEmbd: 2, NLayer: 1, NHead: 1, NInner: 2}
	f.Add(encodeSafetensors(f, randomWeights(cfg, 1).tensors("")))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = loadWeights(cfg, b, LoadOptions{})
	})
}
