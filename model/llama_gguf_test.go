package model

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/llorch/llorch-check/gguf"
	"github.com/llorch/llorch-check/internal/fixture"
	"github.com/llorch/llorch-check/kernels"
	"github.com/llorch/llorch-check/tokenizer"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The tiny Llama-family models (fixture.Families), one an architecture, and llama.cpp's
// vocabulary file each is converted with (pytorch/gguf_write.py's
// default_vocab). tiny-llama-phi3-longrope's round trip is
// TestLongRopeGGUF's. It is not in TestLlamaGGUFQ8_0: its Q8_0 forward
// drifts from its F32 one past the checkpoint tolerances held there,
// 1.36x at layer 1's down projection with HF's attention factor of 1.18
// (which scales q and k), 0.41x with the factor set to 1 (tiny-llama-phi3:
// 0.37x): measured, not explained further.
var llamaTiny = func() []struct{ name, vocab string } {
	var out []struct{ name, vocab string }
	for _, name := range fixture.Families {
		switch name {
		case "tiny-llama-phi3-longrope":
		case "tiny-llama-phi3":
			out = append(out, struct{ name, vocab string }{name, "../testdata/tokenizer/phi-3/ggml-vocab-phi-3.gguf"})
		default:
			out = append(out, struct{ name, vocab string }{name, llamaSPMVocab})
		}
	}
	return out
}()

const llamaSPMVocab = "../testdata/tokenizer/llama-spm/ggml-vocab-llama-spm.gguf"

// llamaTokens is BOS and 20 ids, pytorch/test_llama_torch.py's TOKENS.
var llamaTokens = []int{1, 30237, 20004, 21894, 28711, 18506, 24822, 26677, 7208, 1779, 9607, 9124, 27954, 29204, 171, 15994, 26279, 4208, 25506, 3813, 14975}

var llamaHF = struct {
	sync.Mutex
	m map[string]*Model
}{m: map[string]*Model{}}

// loadLlamaTiny loads a tiny model's HF directory once per test binary.
func loadLlamaTiny(t testing.TB, name string) *Model {
	t.Helper()
	llamaHF.Lock()
	defer llamaHF.Unlock()
	if m, ok := llamaHF.m[name]; ok {
		return m
	}
	m, err := Load(filepath.Join("../testdata", name))
	require.NoError(t, err)
	llamaHF.m[name] = m
	return m
}

// llamaImage is m as a GGUF image with vocab's tokenizer keys, as convert
// writes it (without general.name and the llorch.source keys), after
// edit.
func llamaImage(t testing.TB, m *Model, typ gguf.GGMLType, vocab string, edit ggufEdit) []byte {
	t.Helper()
	kv, ts, err := m.GGUF(typ)
	require.NoError(t, err)
	tok, err := tokenizer.FileGGUFKeys(vocab)
	require.NoError(t, err)
	kv = WithTokenizer(kv, tok)
	if edit != nil {
		kv, ts = edit(kv, ts)
	}
	var buf bytes.Buffer
	require.NoError(t, gguf.Write(&buf, kv, ts))
	return buf.Bytes()
}

// prefillThenStep is the logits of the tokens but the last in one pass
// and of the last through the cache: prefill and decode alike.
func prefillThenStep(t testing.TB, m *Model, tokens []int) ([]float32, []float32) {
	t.Helper()
	c := m.NewCache()
	a, err := m.Forward(context.Background(), c, tokens[:len(tokens)-1], ForwardOptions{AllLogits: true})
	require.NoError(t, err)
	b, err := m.Forward(context.Background(), c, tokens[len(tokens)-1:], ForwardOptions{})
	require.NoError(t, err)
	return a, b
}

// An F32 or F16 GGUF of each tiny model is the HF model: the same Config
// and logits bit for bit at every position. llama's q and k are stored
// permuted, so this is what proves the loader undoes the writer's
// permutation, and that both read the one parameter table.
func TestLlamaGGUFRoundTrip(t *testing.T) {
	for _, tm := range llamaTiny {
		hf := loadLlamaTiny(t, tm.name)
		wantAll, wantStep := prefillThenStep(t, hf, llamaTokens)
		for _, c := range []struct {
			typ   gguf.GGMLType
			dtype string
		}{{gguf.GGMLTypeF32, "F32"}, {gguf.GGMLTypeF16, "F16+F32"}} {
			t.Run(tm.name+"/"+c.typ.String(), func(t *testing.T) {
				dir := t.TempDir()
				path := filepath.Join(dir, "m.gguf")
				require.NoError(t, os.WriteFile(path, llamaImage(t, hf, c.typ, tm.vocab, nil), 0o644))
				g, err := Load(path)
				require.NoError(t, err)
				require.Equal(t, hf.Config, g.Config)
				assert.Equal(t, FormatGGUF, g.Format)
				assert.Equal(t, c.dtype, g.WeightsDType)
				assert.Equal(t, path, g.WeightsPath)
				assert.Equal(t, dir, g.Dir)
				assert.Equal(t, hf.TiedHead(), g.TiedHead())
				assert.Equal(t, hf.rope, g.rope)
				gotAll, gotStep := prefillThenStep(t, g, llamaTokens)
				require.Equal(t, wantAll, gotAll, "prefill logits")
				require.Equal(t, wantStep, gotStep, "decode-step logits")
			})
		}
	}
}

// AsStored holds an F16 GGUF's matrices as float16, unrounded, as
// it holds an F16 safetensors file's: the same logits again.
func TestLlamaGGUFFloat16IfStored(t *testing.T) {
	for _, name := range []string{"tiny-llama", "tiny-llama-phi3"} {
		hf, err := LoadWith(filepath.Join("../testdata", name), LoadOptions{AsStored: true})
		require.NoError(t, err)
		require.True(t, hf.Float16)
		vocab := llamaTiny[slices.IndexFunc(llamaTiny, func(e struct{ name, vocab string }) bool { return e.name == name })].vocab
		path := filepath.Join(t.TempDir(), "m.gguf")
		require.NoError(t, os.WriteFile(path, llamaImage(t, hf, gguf.GGMLTypeF16, vocab, nil), 0o644))
		g, err := LoadWith(path, LoadOptions{AsStored: true})
		require.NoError(t, err)
		assert.True(t, g.Float16, name)
		assert.False(t, g.RoundedToFloat16(), name)
		assert.Equal(t, hf.WeightsBytes(), g.WeightsBytes(), name)
		require.Equal(t, logitsOf(t, hf, llamaTokens), logitsOf(t, g, llamaTokens), name)
	}
}

// Q8_0 stays quantised, q|k|v and gate|up each one quantised matrix built
// from their parts (llama's q and k rows un-permuted on the way), and its
// forward is the forward of float32 weights holding the same values (the
// HF weights dequantised as ggml does: the model written back as F32) to
// float32 rounding, every captured tensor and the logits. Against the HF
// weights the logits move by the quantisation, which is reported.
func TestLlamaGGUFQ8_0(t *testing.T) {
	for _, tm := range llamaTiny {
		t.Run(tm.name, func(t *testing.T) {
			hf := loadLlamaTiny(t, tm.name)
			q, err := loadGGUFBytes(context.Background(), llamaImage(t, hf, gguf.GGMLTypeQ8_0, tm.vocab, nil), LoadOptions{})
			require.NoError(t, err)
			require.Equal(t, hf.Config, q.Config)
			require.Equal(t, "F32+Q8_0", q.WeightsDType)
			for _, w := range append(q.h[0].matrices(), &q.wte) {
				require.Less(t, w.Bytes(), int64(w.Len())*2, "held quantised")
			}
			f, err := loadGGUFBytes(context.Background(), llamaImage(t, q, gguf.GGMLTypeF32, tm.vocab, nil), LoadOptions{})
			require.NoError(t, err)
			require.Equal(t, "F32", f.WeightsDType)
			gotT, gotLogits := captureAll(t, q, llamaTokens)
			wantT, wantLogits := captureAll(t, f, llamaTokens)
			requireFloat32Close(t, wantT, gotT, wantLogits, gotLogits)
			hfLogits := logitsOf(t, hf, llamaTokens)
			var worst, amax float64
			for i := range hfLogits {
				worst = math.Max(worst, math.Abs(float64(gotLogits[i]-hfLogits[i])))
				amax = math.Max(amax, math.Abs(float64(hfLogits[i])))
			}
			t.Logf("%s: Q8_0 vs F32 (HF weights): max |Δ logit| %.3g at the last position (max |logit| %.3g)", tm.name, worst, amax)
		})
	}
}

// A Q8_0 file's experts stay quantised too (bench notes 35: held as
// float32 they took 3.4-5.3x the file on Qwen3-30B-A3B's layers), and the
// forward is still that of float32 weights holding the same values, to
// float32 rounding: the routing, each expert's products and the logits.
func TestMoEGGUFQ8_0(t *testing.T) {
	hf := loadLlamaTiny(t, "tiny-llama-mixtral")
	q, err := loadGGUFBytes(context.Background(), llamaImage(t, hf, gguf.GGMLTypeQ8_0, llamaSPMVocab, nil), LoadOptions{})
	require.NoError(t, err)
	require.Equal(t, "F32+Q8_0", q.WeightsDType)
	for l := range q.h {
		require.NotNil(t, q.h[l].moe, "layer %d", l)
		for e, ex := range q.h[l].moe.experts {
			for _, w := range []kernels.Matrix{ex.gate, ex.up, ex.down} {
				require.Less(t, w.Bytes(), int64(w.Len())*2, "layer %d expert %d: held quantised", l, e)
			}
		}
	}
	f, err := loadGGUFBytes(context.Background(), llamaImage(t, q, gguf.GGMLTypeF32, llamaSPMVocab, nil), LoadOptions{})
	require.NoError(t, err)
	require.Equal(t, "F32", f.WeightsDType)
	gotT, gotLogits := captureAll(t, q, llamaTokens)
	wantT, wantLogits := captureAll(t, f, llamaTokens)
	requireFloat32Close(t, wantT, gotT, wantLogits, gotLogits)
}

// captureAll is every probed tensor of a forward pass, and its logits.
func captureAll(t testing.TB, m *Model, tokens []int) (map[string][]float32, []float32) {
	t.Helper()
	seen := map[string][]float32{}
	logits, err := m.Forward(context.Background(), m.NewCache(), tokens, ForwardOptions{Probe: ProbeFunc(func(c Captured) {
		seen[fmt.Sprintf("%s/%d", c.Name, c.Layer)] = slices.Clone(c.Data)
	})})
	require.NoError(t, err)
	return seen, logits
}

// A quantised fused matrix whose parts differ in type (llama.cpp's
// Q4_K_M keeps some layers' attn_v as Q6_K) is held as column blocks,
// each in its own type: here ffn_up stored as the F32 of its Q8_0 values
// gives the all-Q8_0 model's decode logits to float32 rounding (the F32
// part's products are float32 ones, the quantised part's limb products),
// with gate still quantised.
func TestLlamaGGUFMixedTypes(t *testing.T) {
	hf := loadLlamaTiny(t, "tiny-llama")
	img := llamaImage(t, hf, gguf.GGMLTypeQ8_0, llamaSPMVocab, nil)
	q, err := loadGGUFBytes(context.Background(), img, LoadOptions{})
	require.NoError(t, err)
	mixed := llamaImage(t, hf, gguf.GGMLTypeQ8_0, llamaSPMVocab, editTensor("blk.1.ffn_up.weight", func(td *gguf.TensorData) {
		vals := make([]float32, td.Dims[0]*td.Dims[1])
		require.NoError(t, gguf.DecodeFloat32(td.Type, td.Data, vals))
		var err error
		td.Type = gguf.GGMLTypeF32
		td.Data, err = gguf.EncodeFloat32(td.Type, vals)
		require.NoError(t, err)
	}))
	m, err := loadGGUFBytes(context.Background(), mixed, LoadOptions{})
	require.NoError(t, err)
	assert.Equal(t, "F32+Q8_0", m.WeightsDType)
	assert.NotZero(t, m.h[0].fcW.Len(), "layer 0's gate|up, all Q8_0: one matrix")
	assert.Zero(t, m.h[1].fcW.Len(), "layer 1's gate|up, Q8_0 and F32: column blocks")
	require.Len(t, m.h[1].fcParts, 2)
	gate, up := m.h[1].fcParts[0], m.h[1].fcParts[1]
	assert.Less(t, gate.w.Bytes(), int64(gate.w.Len())*2, "gate stays Q8_0")
	assert.Equal(t, int64(up.w.Len())*4, up.w.Bytes(), "up float32")
	want, got := logitsOf(t, q, llamaTokens), logitsOf(t, m, llamaTokens)
	for i := range want {
		require.InDelta(t, want[i], got[i], 1e-5*math.Max(1, math.Abs(float64(want[i]))), "logit %d", i)
	}
}

// A file llama.cpp's converter wrote for Llama 3 has rope_freqs.weight but
// not llorch's rope_scaling keys: its frequencies are HF's unscaled ones
// divided by each factor, as llama.cpp applies them, and its Config has
// no RopeScaling. The smoothed band may then differ from HF's float32
// chain in the last bits (reported).
func TestLlamaGGUFForeignRopeFreqs(t *testing.T) {
	hf := loadLlamaTiny(t, "tiny-llama3")
	img := llamaImage(t, hf, gguf.GGMLTypeF32, llamaSPMVocab, func(kv []gguf.KV, ts []gguf.TensorData) ([]gguf.KV, []gguf.TensorData) {
		return slices.DeleteFunc(kv, func(e gguf.KV) bool { return strings.HasPrefix(e.Key, "llorch.rope_scaling.") }), ts
	})
	g, err := loadGGUFBytes(context.Background(), img, LoadOptions{})
	require.NoError(t, err)
	assert.Nil(t, g.Config.RopeScaling)
	unscaled := hf.Config
	unscaled.RopeScaling = nil
	base, factors := newRope(unscaled).invFreq, llama3RopeFactors(hf.Config)
	assert.Equal(t, []float32{1, 1.293975830078125, 7.667385101318359, 8, 8, 8, 8, 8}, factors, "pytorch/gguf_write.py's")
	differ := 0
	for i := range base {
		require.Equal(t, base[i]/factors[i], g.rope.invFreq[i], "pair %d", i)
		if g.rope.invFreq[i] != hf.rope.invFreq[i] {
			differ++
		}
	}
	want, got := logitsOf(t, hf, llamaTokens), logitsOf(t, g, llamaTokens)
	var worst float64
	for i := range want {
		worst = math.Max(worst, math.Abs(float64(got[i]-want[i])))
	}
	t.Logf("llama.cpp's rope_freqs: %d of %d frequencies differ from HF's; max |Δ logit| %.3g", differ, len(base), worst)
	_, _, err = g.GGUF(gguf.GGMLTypeF32)
	assert.ErrorContains(t, err, "the model's rotary frequencies came from a file's rope_freqs.weight without HF's rope_scaling")
}

// Each bad input is an error naming the key or tensor, never a panic.
func TestLoadLlamaGGUFBadInputs(t *testing.T) {
	llama3, qwen2 := loadLlamaTiny(t, "tiny-llama3"), loadLlamaTiny(t, "tiny-llama-qwen2")
	addF32 := func(name string, n int) ggufEdit {
		return addTensor(gguf.TensorData{Name: name, Dims: []uint64{uint64(n)}, Type: gguf.GGMLTypeF32, Data: make([]byte, 4*n)})
	}
	u32 := func(v uint32) gguf.Value { return gguf.Value{Type: gguf.TypeUint32, V: v} }
	f64 := func(v float64) gguf.Value { return gguf.Value{Type: gguf.TypeFloat64, V: v} }
	str := func(s string) gguf.Value { return gguf.Value{Type: gguf.TypeString, V: s} }
	cases := []struct {
		name string
		m    *Model
		edit ggufEdit
		want string
	}{
		{"unknown architecture", llama3, setKV(keyArchitecture, str("mamba")),
			`key general.architecture: value "mamba" is not supported (known: ` + knownArchs() + `)`},
		{"missing tensor", llama3, dropTensor("blk.1.attn_k.weight"), `missing tensor "blk.1.attn_k.weight"`},
		{"missing bias", qwen2, dropTensor("blk.0.attn_v.bias"), `missing tensor "blk.0.attn_v.bias"`},
		{"wrong head_count_kv", llama3, setKV("llama.attention.head_count_kv", u32(4)),
			`tensor "blk.0.attn_k.weight": dims [64 32] contradict the hyper-parameters, which give [64 64]`},
		{"head_count_kv not dividing", llama3, setKV("llama.attention.head_count_kv", u32(3)),
			"key llama.attention.head_count_kv: value 3 does not divide llama.attention.head_count 4"},
		{"missing epsilon", qwen2, dropKV("qwen2.attention.layer_norm_rms_epsilon"), "key not found: qwen2.attention.layer_norm_rms_epsilon"},
		{"missing block count", qwen2, dropKV("qwen2.block_count"), "key not found: qwen2.block_count"},
		{"huge block count", qwen2, setKV("qwen2.block_count", u32(1<<20)), "key qwen2.block_count: value 1048576 is more blocks than"},
		{"more blocks than tensors", qwen2, setKV("qwen2.block_count", u32(3)), `missing tensor "blk.2.attn_norm.weight"`},
		{"unexpected tensor", qwen2, addF32("blk.0.ffn_gate_exps.weight", 4), `unexpected tensor "blk.0.ffn_gate_exps.weight" (not part of llama.cpp's qwen2 layout`},
		{"rope_freqs outside llama", qwen2, addF32("rope_freqs.weight", 8), `unexpected tensor "rope_freqs.weight"`},
		{"key length on qwen2", qwen2, setKV("qwen2.attention.key_length", u32(32)), "key qwen2.attention.key_length: value 32: qwen2 derives the head width"},
		{"value length", qwen2, setKV("qwen2.attention.value_length", u32(8)), "key qwen2.attention.value_length: value 8 differs from the key length 16"},
		{"vocab_size", qwen2, setKV("qwen2.vocab_size", u32(31999)), "key qwen2.vocab_size: value 31999, but token_embd.weight has 32000 rows"},
		{"rope scaling type", qwen2, setKV("qwen2.rope.scaling.type", str("yarn")), "key qwen2.rope.scaling.type: value yarn: rope scaling other than Llama 3's"},
		{"partial rotary on llama", llama3, setKV("llama.rope.dimension_count", u32(8)), "key llama.rope.dimension_count: value 8: partial rotary"},
		{"odd rotary", qwen2, setKV("qwen2.rope.dimension_count", u32(7)), "key qwen2.rope.dimension_count: value 7 is not an even number"},
		{"rope keys incomplete", llama3, dropKV(keyRopeLowFreq), "key not found: llorch.rope_scaling.low_freq_factor (llorch.rope_scaling.factor is set)"},
		{"rope key type", llama3, setKV(keyRopeHighFreq, u32(4)), "key llorch.rope_scaling.high_freq_factor: want float64"},
		{"rope keys inverted", llama3, setKV(keyRopeHighFreq, f64(0.5)), "key llorch.rope_scaling.high_freq_factor: value 0.5 must exceed"},
		{"rope keys vs rope_freqs", llama3, setKV(keyRopeFactor, f64(4)), `tensor "rope_freqs.weight": factor 1 is 1.2939758, the llorch.rope_scaling.* keys give 1.2418236`},
		{"rope keys without rope_freqs", llama3, dropTensor(ggufRopeFreqs), `missing tensor "rope_freqs.weight" (key llorch.rope_scaling.factor is set)`},
		{"rope_freqs dims", llama3, editTensor(ggufRopeFreqs, func(td *gguf.TensorData) { td.Dims, td.Data = []uint64{4}, td.Data[:16] }),
			`tensor "rope_freqs.weight": F32 [4], want F32 [8]`},
		{"rope_freqs zero", llama3, func(kv []gguf.KV, ts []gguf.TensorData) ([]gguf.KV, []gguf.TensorData) {
			kv, ts = dropKV(keyRopeFactor)(kv, ts)
			return editTensor(ggufRopeFreqs, func(td *gguf.TensorData) { clear(td.Data[:4]) })(kv, ts)
		}, `tensor "rope_freqs.weight": factor 0 is 0, not a positive finite number`},
		{"eos list", qwen2, setKV(keyEOSList, gguf.Value{Type: gguf.TypeArray, V: gguf.Array{Elem: gguf.TypeUint32, Values: []uint32{7, 2}}}),
			"key llorch.eos_token_ids: value [7 2] does not start with tokenizer.ggml.eos_token_id 2"},
		{"token count", qwen2, setKV(keyTokens, gguf.Value{Type: gguf.TypeArray, V: gguf.Array{Elem: gguf.TypeString, Values: []string{"a"}}}),
			"key tokenizer.ggml.tokens: 1 tokens, but token_embd.weight has 32000 rows"},
		{"bos outside vocab", qwen2, setKV(keyBOS, u32(32000)), "key tokenizer.ggml.bos_token_id: value 32000 outside the vocabulary"},
		{"dims contradict", qwen2, editTensor("blk.0.ffn_up.weight", func(td *gguf.TensorData) { td.Dims = []uint64{128, 64} }),
			`tensor "blk.0.ffn_up.weight": dims [128 64] contradict the hyper-parameters, which give [64 128]`},
		{"unsupported tensor type", qwen2, editTensor("blk.0.attn_norm.weight", func(td *gguf.TensorData) { td.Type = gguf.GGMLTypeI32 }),
			`tensor "blk.0.attn_norm.weight": type I32 is not supported`},
		{"bad source sha", qwen2, setKV(KeySourceSHA256, str("xyz")), "key llorch.source.sha256: want 64 hex digits"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := loadGGUFBytes(context.Background(), llamaImage(t, c.m, gguf.GGMLTypeF32, llamaSPMVocab, c.edit), LoadOptions{})
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
		})
	}

	// Through Load, the error names the file.
	path := filepath.Join(t.TempDir(), "bad.gguf")
	require.NoError(t, os.WriteFile(path, llamaImage(t, qwen2, gguf.GGMLTypeF32, llamaSPMVocab, dropTensor("output_norm.weight")), 0o644))
	_, err := Load(path)
	assert.ErrorContains(t, err, "loading "+path+`: missing tensor "output_norm.weight"`)
}

// What llama.cpp's layout cannot say is refused when writing.
func TestLlamaGGUFWriteRefusals(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"llama3 scaling on qwen2", func(c *Config) { c.ModelType, c.RopeScaling = ArchQwen2, &RopeScaling{8, 1, 4, 64} }, "rope_scaling llama3 is not written for qwen2"},
		{"partial rotary on llama", func(c *Config) { c.RotaryDim = 8 }, "llama with partial rotary (8 of 16 channels) is not written"},
		{"qwen3 biases", func(c *Config) { c.ModelType, c.QKVBias = ArchQwen3, true }, "qwen3 with attention_bias is not written"},
	} {
		m := *loadLlamaTiny(t, "tiny-llama")
		c.edit(&m.Config)
		_, _, err := m.GGUF(gguf.GGMLTypeF32)
		assert.ErrorContains(t, err, c.want, c.name)
	}
}

// WithTokenizer: the vocabulary's keys after the model's general and
// hyper-parameter keys, its BOS/EOS replaced by the config's at its
// position, llorch's keys last.
func TestWithTokenizer(t *testing.T) {
	kv := []gguf.KV{
		gguf.StringKV("general.architecture", "llama"), gguf.Uint32KV("llama.block_count", 2),
		gguf.Uint32KV(keyBOS, 1), gguf.Uint32KV(keyEOS, 7), gguf.StringKV("llorch.x", "y"),
	}
	tok := []gguf.KV{gguf.StringKV("tokenizer.ggml.model", "llama"), gguf.Uint32KV(keyEOS, 2), gguf.Uint32KV("tokenizer.ggml.unknown_token_id", 0)}
	var keys []string
	got := WithTokenizer(kv, tok)
	for _, e := range got {
		keys = append(keys, e.Key)
	}
	assert.Equal(t, []string{"general.architecture", "llama.block_count", "tokenizer.ggml.model", keyEOS, "tokenizer.ggml.unknown_token_id", keyBOS, "llorch.x"}, keys)
	assert.Equal(t, uint32(7), got[3].Value.V, "the config's EOS")
}

// llamaFuzzSeeds are FuzzLoadGGUF's Llama-family seeds: llama with
// rope_freqs and llorch's rope keys, qwen2's biases, phi3's fused
// matrices, F16 and Q8_0.
func llamaFuzzSeeds(t testing.TB) [][]byte {
	var seeds [][]byte
	for _, name := range []string{"tiny-llama3", "tiny-llama-qwen2", "tiny-llama-phi3"} {
		m := loadLlamaTiny(t, name)
		for _, typ := range []gguf.GGMLType{gguf.GGMLTypeF16, gguf.GGMLTypeQ8_0} {
			seeds = append(seeds, shrinkLlama(t, m, typ))
		}
	}
	return seeds
}

// shrinkLlama is a small seed for the fuzzer: m with one layer and a
// vocabulary of 32 (the first rows of its embedding and head), no tokenizer.
func shrinkLlama(t testing.TB, m *Model, typ gguf.GGMLType) []byte {
	s := *m
	s.Config.NLayer, s.Config.VocabSize, s.h = 1, 32, m.h[:1]
	C := s.Config.NEmbd
	s.wte = matrixOf(m.wte.Float32s()[:32*C], nil, false)
	if !m.TiedHead() {
		s.lmW = matrixOf(m.lmW.Float32s()[:32*C], nil, false)
	}
	kv, ts, err := s.GGUF(typ)
	require.NoError(t, err)
	var buf bytes.Buffer
	require.NoError(t, gguf.Write(&buf, kv, ts))
	return buf.Bytes()
}
