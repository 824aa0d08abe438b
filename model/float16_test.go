package model

import (
	"context"
	"strings"
	"testing"

	"github.com/llorch/llorch-check/gguf"
	"github.com/llorch/llorch-check/kvcache"
	"github.com/stretchr/testify/require"
)

// roundMatrices rounds a model's matrices (not its vectors) to float16
// values in place, as LoadOptions.Float16 does on load.
func roundMatrices(w *testWeights) {
	for _, n := range w.names {
		if len(w.shapes[n]) != 2 || n == "wpe.weight" {
			continue
		}
		for i, v := range w.f32[n] {
			w.f32[n][i] = gguf.Float16To32(gguf.Float32To16(v))
		}
	}
}

// TestLoadFloat16 loads float32 files as float16: the matrices are rounded
// to nearest even, vectors and wpe stay exact, memory halves, and the
// logits (prefill, cached decode and batched decode) are bit-identical to
// a float32 model whose file holds the rounded values.
func TestLoadFloat16(t *testing.T) {
	w := randomWeights(testCfg, 42)
	dir := writeModel(t, configJSON(testCfg), w.tensors(""))
	m16, err := LoadWith(dir, LoadOptions{Float16: true})
	require.NoError(t, err)
	m32, err := Load(dir)
	require.NoError(t, err)
	require.True(t, m16.Float16)
	require.Equal(t, "F32", m16.WeightsDType)
	require.Equal(t, "F16+F32", m16.PrecisionDType())
	require.Equal(t, "F32", m32.PrecisionDType())
	require.Less(t, m16.WeightsBytes(), m32.WeightsBytes()*6/10)
	require.Equal(t, m32.wpe, m16.wpe)
	require.Equal(t, m32.h[1].ln2B, m16.h[1].ln2B)
	for i, v := range w.f32["h.0.mlp.c_fc.weight"] {
		require.Equal(t, gguf.Float32To16(v), m16.h[0].fcW.Float16Bits()[i], "c_fc element %d", i)
	}

	roundMatrices(w)
	rounded, err := Load(writeModel(t, configJSON(testCfg), w.tensors("")))
	require.NoError(t, err)
	requireSameLogits(t, rounded, m16)
}

// requireSameLogits runs a prefill, two cached steps and a batched step
// through both models and requires identical bits.
func requireSameLogits(t *testing.T, want, got *Model) {
	t.Helper()
	ctx := context.Background()
	cw, cg := want.NewCache(), got.NewCache()
	toks := testTokens(7, 9)
	for _, step := range [][]int{toks, toks[:1], toks[2:3]} {
		lw, err := want.Forward(ctx, cw, step, ForwardOptions{AllLogits: true})
		require.NoError(t, err)
		lg, err := got.Forward(ctx, cg, step, ForwardOptions{AllLogits: true})
		require.NoError(t, err)
		require.Equal(t, lw, lg)
	}
	bw, err := want.DecodeBatch(ctx, []*kvcache.Cache{cw, want.NewCache()}, []int{3, 4})
	require.NoError(t, err)
	bg, err := got.DecodeBatch(ctx, []*kvcache.Cache{cg, got.NewCache()}, []int{3, 4})
	require.NoError(t, err)
	require.Equal(t, bw, bg)
}

// An F16 file held as float16 is lossless: same precision, same logits as
// the float32-held model.
func TestLoadFloat16FromF16(t *testing.T) {
	w := randomWeights(testCfg, 43)
	ts := w.tensors("")
	for i := range ts {
		storeF16(&ts[i])
	}
	dir := writeModel(t, configJSON(testCfg), ts)
	m16, err := LoadWith(dir, LoadOptions{Float16: true})
	require.NoError(t, err)
	m32, err := Load(dir)
	require.NoError(t, err)
	require.Equal(t, "F16", m16.PrecisionDType())
	requireSameLogits(t, m32, m16)
}

// storeF16 makes t an F16 tensor of its values, rounded.
func storeF16(t *stTensor) {
	raw := make([]byte, 2*len(t.Data))
	for j, v := range t.Data {
		h := gguf.Float32To16(v)
		raw[2*j], raw[2*j+1] = byte(h), byte(h>>8)
	}
	t.DType, t.Raw = "F16", raw
}

// AsStored holds float16 only what a file stores as float16: an
// F16 file's matrices (lossless, the float32-held logits), not an F32 or
// Q8_0 file's, HF or GGUF.
func TestLoadFloat16IfStored(t *testing.T) {
	w := randomWeights(testCfg, 44)
	ts := w.tensors("")
	f32dir := writeModel(t, configJSON(testCfg), ts)
	for i := range ts {
		if len(ts[i].Shape) == 2 && ts[i].Name != "wpe.weight" {
			storeF16(&ts[i])
		}
	}
	f16dir := writeModel(t, configJSON(testCfg), ts)
	auto := LoadOptions{AsStored: true}
	for _, c := range []struct {
		dir  string
		want bool
	}{{f16dir, true}, {f32dir, false}} {
		m, err := LoadWith(c.dir, auto)
		require.NoError(t, err)
		require.Equal(t, c.want, m.Float16, c.dir)
		if c.want {
			m32, err := Load(c.dir)
			require.NoError(t, err)
			require.Equal(t, m.WeightsDType, m.PrecisionDType(), "nothing rounded")
			requireSameLogits(t, m32, m)
		}
	}
	m, _ := testModel(t)
	for _, c := range []struct {
		typ  gguf.GGMLType
		want bool
	}{{gguf.GGMLTypeF16, true}, {gguf.GGMLTypeF32, false}, {gguf.GGMLTypeQ8_0, false}} {
		g, err := loadGGUFBytes(context.Background(), ggufImage(t, m, c.typ, nil), auto)
		require.NoError(t, err)
		require.Equal(t, c.want, g.Float16, c.typ)
	}
}

func TestLoadFloat16GGUF(t *testing.T) {
	m, _ := testModel(t)
	for _, c := range []struct {
		typ  gguf.GGMLType
		want string
	}{
		{gguf.GGMLTypeF32, "F16+F32"},
		{gguf.GGMLTypeF16, "F16+F32"}, // norms and biases are F32 in GGUF; nothing rounded
		{gguf.GGMLTypeQ8_0, "F16+F32+Q8_0"},
	} {
		img := ggufImage(t, m, c.typ, nil)
		g32, err := loadGGUFBytes(context.Background(), img, LoadOptions{})
		require.NoError(t, err)
		g16, err := loadGGUFBytes(context.Background(), img, LoadOptions{Float16: true})
		require.NoError(t, err, c.typ)
		require.Equal(t, c.want, g16.PrecisionDType(), c.typ)
		if c.typ == gguf.GGMLTypeF16 {
			requireSameLogits(t, g32, g16)
		}
	}
}

// A float32 value beyond float16's range fails the load, naming the
// tensor; the same value in a bias (held as float32) is fine.
func TestLoadFloat16Overflow(t *testing.T) {
	for _, c := range []struct {
		tensor  string
		wantErr string
	}{
		{"h.1.attn.c_proj.weight", `tensor "h.1.attn.c_proj.weight": element 5 is 70000, beyond float16's range`},
		{"h.1.attn.c_proj.bias", ""},
	} {
		w := randomWeights(testCfg, 44)
		w.f32[c.tensor][5] = 70000
		_, err := LoadWith(writeModel(t, configJSON(testCfg), w.tensors("")), LoadOptions{Float16: true})
		if c.wantErr == "" {
			require.NoError(t, err)
			continue
		}
		require.Error(t, err)
		require.True(t, strings.Contains(err.Error(), c.wantErr), err.Error())
	}
}

// FaultTransposedProj widens float16 c_proj for gonum: same logits.
func TestFloat16Fault(t *testing.T) {
	w := randomWeights(testCfg, 45)
	roundMatrices(w)
	dir := writeModel(t, configJSON(testCfg), w.tensors(""))
	m16, err := LoadWith(dir, LoadOptions{Float16: true})
	require.NoError(t, err)
	m32, err := Load(dir)
	require.NoError(t, err)
	for _, m := range []*Model{m16, m32} {
		m.InjectFault(FaultTransposedProj, 1)
	}
	requireSameLogits(t, m32, m16)
}
