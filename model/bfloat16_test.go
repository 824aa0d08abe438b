package model

import (
	"context"
	"math"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/gguf"
	"github.com/llorch/llorch-check/internal/fixture"
	"github.com/llorch/llorch-check/kvcache"
)

// bfloat16Models are the committed tiny models (F16 files) whose
// bfloat16 copies the tests below write: GPT-2 and each Llama-family
// architecture, so both loaders and every fused matrix are covered.
var bfloat16Models = append([]string{"tiny-gpt2"}, fixture.Families...)

// TestBFloat16HeldAsStored: a BF16 file loaded as stored (--weight-dtype
// auto) holds its matrices as bfloat16, in half float32's memory, and
// its forward pass is the float32-held model's bit for bit: every
// captured tensor and the logits of a prefill, of cached steps and of a
// batched step.
func TestBFloat16HeldAsStored(t *testing.T) {
	for _, name := range bfloat16Models {
		t.Run(name, func(t *testing.T) {
			dir := fixture.BFloat16Copy(t, fixture.FamilyModel(name))
			bf, err := LoadWith(dir, LoadOptions{AsStored: true})
			require.NoError(t, err)
			f32, err := LoadWith(dir, LoadOptions{})
			require.NoError(t, err)
			require.True(t, bf.BFloat16)
			require.False(t, bf.Float16)
			require.Equal(t, "bfloat16", bf.MatricesHeldAs())
			require.Equal(t, "", f32.MatricesHeldAs())
			require.Equal(t, "BF16", bf.WeightsDType)
			require.Equal(t, "BF16", bf.PrecisionDType(), "nothing rounded")
			require.False(t, bf.RoundedToFloat16())
			require.Equal(t, f32.WeightsDType, bf.WeightsDType)
			// The matrices are nearly all the bytes: half float32's.
			require.Less(t, bf.WeightsBytes(), f32.WeightsBytes()*6/10)
			requireSameBits(t, f32.wte.Float32s(), bf.wte.Float32s(), "wte")
			requireSameRun(t, f32, bf)
		})
	}
}

// TestBFloat16OtherWeightDTypes: --weight-dtype f16 still rounds a BF16
// file's matrices to float16, f32 widens them; auto holds a file that
// mixes F16 and BF16 matrices as float32 (neither type holds them all).
func TestBFloat16OtherWeightDTypes(t *testing.T) {
	dir := fixture.BFloat16Copy(t, fixture.TinyModel())
	f16, err := LoadWith(dir, LoadOptions{Float16: true})
	require.NoError(t, err)
	require.Equal(t, "float16", f16.MatricesHeldAs())
	require.True(t, f16.RoundedToFloat16())
	require.Equal(t, "BF16+F16", f16.PrecisionDType())
	require.NotNil(t, f16.h[0].fcW.Float16Bits())

	f32, err := LoadWith(dir, LoadOptions{})
	require.NoError(t, err)
	require.Equal(t, "", f32.MatricesHeldAs())
	require.Nil(t, f32.h[0].fcW.BFloat16Bits())

	// The committed F16 file's matrices held as float16, as before.
	half, err := LoadWith(fixture.TinyModel(), LoadOptions{AsStored: true})
	require.NoError(t, err)
	require.Equal(t, "float16", half.MatricesHeldAs())
	require.False(t, half.BFloat16)
}

// TestBFloat16WeightsCache: a bfloat16 model's weights cache is written,
// then read, and the model read from it is the loaded one: held as
// bfloat16, the same bytes and the same logits bit for bit.
func TestBFloat16WeightsCache(t *testing.T) {
	for _, name := range []string{"tiny-gpt2", "tiny-llama-qwen2"} {
		t.Run(name, func(t *testing.T) {
			dir := fixture.BFloat16Copy(t, fixture.FamilyModel(name))
			want, err := LoadWith(dir, LoadOptions{AsStored: true})
			require.NoError(t, err)
			opt := LoadOptions{AsStored: true, WeightsCache: t.TempDir()}
			for i, note := range []string{"written to ", "read from "} {
				m, err := LoadWith(dir, opt)
				require.NoError(t, err)
				require.True(t, strings.HasPrefix(m.WeightsCache, note), "load %d: %s", i, m.WeightsCache)
				require.True(t, m.BFloat16, "load %d", i)
				require.Equal(t, "bfloat16", m.MatricesHeldAs())
				require.Equal(t, want.PrecisionDType(), m.PrecisionDType())
				require.Equal(t, want.WeightsBytes(), m.WeightsBytes())
				require.NotNil(t, m.h[0].fcW.BFloat16Bits(), "load %d", i)
				requireSameRun(t, want, m)
			}
		})
	}
}

// requireSameRun runs a prefill with every tensor captured, two cached
// steps and a batched step of two sequences through both models and
// requires the same bits everywhere.
func requireSameRun(t *testing.T, want, got *Model) {
	t.Helper()
	ctx := context.Background()
	r := rand.New(rand.NewPCG(7, 8))
	toks := make([]int, 12)
	for i := range toks {
		toks[i] = r.IntN(want.Config.VocabSize)
	}
	cw, cg := want.NewCache(), got.NewCache()
	for _, step := range [][]int{toks[:9], toks[9:10], toks[10:11]} {
		var lw, lg captureLog
		a, err := want.Forward(ctx, cw, step, ForwardOptions{AllLogits: true, Probe: &lw})
		require.NoError(t, err)
		b, err := got.Forward(ctx, cg, step, ForwardOptions{AllLogits: true, Probe: &lg})
		require.NoError(t, err)
		requireSameBits(t, a, b, "logits")
		require.Len(t, lg.got, len(lw.got))
		require.NotEmpty(t, lw.got)
		for i, x := range lw.got {
			y := lg.got[i]
			require.Equal(t, []any{x.Checkpoint, x.Layer, x.Name, x.Shape}, []any{y.Checkpoint, y.Layer, y.Name, y.Shape})
			requireSameBits(t, x.Data, y.Data, x.Name)
		}
	}
	bw, err := want.DecodeBatch(ctx, []*kvcache.Cache{cw, want.NewCache()}, []int{toks[11], toks[0]})
	require.NoError(t, err)
	bg, err := got.DecodeBatch(ctx, []*kvcache.Cache{cg, got.NewCache()}, []int{toks[11], toks[0]})
	require.NoError(t, err)
	require.Len(t, bg, len(bw))
	for i := range bw {
		requireSameBits(t, bw[i], bg[i], "batched logits")
	}
}

// requireSameBits compares float32 bits, so that -0 and 0 differ.
func requireSameBits(t *testing.T, want, got []float32, what string) {
	t.Helper()
	require.Len(t, got, len(want), what)
	for i, w := range want {
		if math.Float32bits(w) != math.Float32bits(got[i]) {
			t.Fatalf("%s: element %d is %g, want %g", what, i, got[i], w)
		}
	}
}

// TestGGUFBFloat16HeldAsStored: a BF16 GGUF file (convert --type bf16)
// loaded as stored holds its matrices as bfloat16, as the BF16
// safetensors file it came from does, rather than widening them to twice
// the file (an 8B model's 16 GB to 32 GB, past what HeldBytes told serve
// to expect); its forward pass is the float32-held model's bit for bit.
func TestGGUFBFloat16HeldAsStored(t *testing.T) {
	for _, name := range bfloat16Models {
		t.Run(name, func(t *testing.T) {
			hf, err := LoadWith(fixture.BFloat16Copy(t, fixture.FamilyModel(name)), LoadOptions{AsStored: true})
			require.NoError(t, err)
			path := filepath.Join(t.TempDir(), "m.gguf")
			_, err = hf.WriteGGUF(path, GGUFFile{Type: gguf.GGMLTypeBF16})
			require.NoError(t, err)
			bf, err := LoadWith(path, LoadOptions{AsStored: true})
			require.NoError(t, err)
			f32, err := LoadWith(path, LoadOptions{})
			require.NoError(t, err)
			require.Equal(t, "bfloat16", bf.MatricesHeldAs())
			require.Equal(t, "", f32.MatricesHeldAs())
			require.False(t, bf.RoundedToFloat16())
			require.Equal(t, hf.WeightsBytes(), bf.WeightsBytes())
			held, err := HeldBytes(path, LoadOptions{AsStored: true})
			require.NoError(t, err)
			// Not less than the load holds (GPT-2's file repeats the tied
			// head as output.weight, which the load keeps once).
			require.GreaterOrEqual(t, held, bf.WeightsBytes(), "HeldBytes")
			requireSameBits(t, f32.wte.Float32s(), bf.wte.Float32s(), "wte")
			requireSameRun(t, f32, bf)
			requireSameRun(t, hf, bf)
		})
	}
}
