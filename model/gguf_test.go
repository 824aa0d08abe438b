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
	"testing"

	"github.com/llorch/llorch-check/gguf"
	"github.com/llorch/llorch-check/tokenizer"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ggufImage writes m as GGUF after letting edit change the metadata and
// tensors, so each bad-input case is one small mutation of a valid file.
func ggufImage(t testing.TB, m *Model, typ gguf.GGMLType, edit ggufEdit) []byte {
	t.Helper()
	kv, ts, err := m.GGUF(typ)
	require.NoError(t, err)
	if edit != nil {
		kv, ts = edit(kv, ts)
	}
	var buf bytes.Buffer
	require.NoError(t, gguf.Write(&buf, kv, ts))
	return buf.Bytes()
}

func logitsOf(t testing.TB, m *Model, tokens []int) []float32 {
	t.Helper()
	out, err := m.Forward(context.Background(), m.NewCache(), tokens, ForwardOptions{})
	require.NoError(t, err)
	return out
}

// F32 GGUF is the same model bit for bit: same config, weights and logits.
// The config is rectangular (C=16, I=64), so a transpose on one side but
// not the other, or dims read in the wrong order, cannot go unnoticed.
func TestGGUFRoundTripF32(t *testing.T) {
	m, _ := testModel(t)
	g, err := loadGGUFBytes(context.Background(), ggufImage(t, m, gguf.GGMLTypeF32, nil), LoadOptions{})
	require.NoError(t, err)
	assert.Equal(t, m.Config, g.Config)
	assert.Equal(t, "F32", g.WeightsDType)
	assert.Equal(t, FormatGGUF, g.Format)
	for i, p := range m.gpt2Params() {
		assert.Equal(t, p.dst.float32s(), g.gpt2Params()[i].dst.float32s(), p.gguf)
	}
	toks := testTokens(9, 5)
	assert.Equal(t, logitsOf(t, m, toks), logitsOf(t, g, toks))
}

// The Conv1D matrices are stored as llama.cpp's converter stores them:
// PyTorch [out,in] row-major, i.e. GGUF dims [in,out] with in fastest.
func TestGGUFLayoutMatchesLlamaCpp(t *testing.T) {
	m, w := testModel(t)
	f, err := gguf.ReadBytes(ggufImage(t, m, gguf.GGMLTypeF32, nil))
	require.NoError(t, err)
	C, I := testCfg.NEmbd, testCfg.NInner
	for _, c := range []struct {
		gguf, hf string
		in, out  int
	}{
		{"blk.1.attn_qkv.weight", "h.1.attn.c_attn.weight", C, 3 * C},
		{"blk.1.attn_output.weight", "h.1.attn.c_proj.weight", C, C},
		{"blk.1.ffn_up.weight", "h.1.mlp.c_fc.weight", C, I},
		{"blk.1.ffn_down.weight", "h.1.mlp.c_proj.weight", I, C},
	} {
		ti, ok := f.Tensor(c.gguf)
		require.True(t, ok, c.gguf)
		assert.Equal(t, []uint64{uint64(c.in), uint64(c.out)}, ti.Dims, c.gguf)
		raw, err := f.TensorData(c.gguf)
		require.NoError(t, err)
		got := make([]float32, c.in*c.out)
		require.NoError(t, gguf.DecodeFloat32(ti.Type, raw, got))
		hf := w.f32[c.hf] // [in,out]
		for _, ij := range [][2]int{{0, 1}, {c.in - 1, 0}, {3, c.out - 2}} {
			i, j := ij[0], ij[1]
			assert.Equal(t, hf[i*c.out+j], got[j*c.in+i], "%s in %d out %d", c.gguf, i, j)
		}
	}
	emb, _ := f.Tensor("token_embd.weight")
	assert.Equal(t, []uint64{uint64(C), uint64(testCfg.VocabSize)}, emb.Dims)
	// llama.cpp's converter writes the tied head as a copy, and its gpt2
	// loaders of early 2025 refuse a file without it.
	out, hasOutput := f.Tensor("output.weight")
	require.True(t, hasOutput, "output.weight is written")
	assert.Equal(t, emb.Type, out.Type)
	assert.Equal(t, emb.Dims, out.Dims)
	embData, err := f.TensorData("token_embd.weight")
	require.NoError(t, err)
	outData, err := f.TensorData("output.weight")
	require.NoError(t, err)
	assert.Equal(t, embData, outData)
}

// F16 and Q8_0 round weights as documented and no further; 1-D tensors and
// position_embd stay F32; a Q8_0 matrix whose rows are not whole blocks of
// 32 falls back to F16.
func TestGGUFLowerPrecision(t *testing.T) {
	m, _ := testModel(t)
	for _, c := range []struct {
		typ   gguf.GGMLType
		dtype string
	}{
		{gguf.GGMLTypeF16, "F16+F32"},
		{gguf.GGMLTypeQ8_0, "F16+F32+Q8_0"}, // only ffn_down has 64-wide rows
	} {
		img := ggufImage(t, m, c.typ, nil)
		f, err := gguf.ReadBytes(img)
		require.NoError(t, err)
		g, err := loadGGUFBytes(context.Background(), img, LoadOptions{})
		require.NoError(t, err, c.typ.String())
		assert.Equal(t, c.dtype, g.WeightsDType)
		for i, p := range m.gpt2Params() {
			ti, _ := f.Tensor(p.gguf)
			want, got := p.dst.float32s(), g.gpt2Params()[i].dst.float32s()
			switch {
			case len(p.shape) == 1 || p.gguf == "position_embd.weight":
				assert.Equal(t, gguf.GGMLTypeF32, ti.Type, p.gguf)
				assert.Equal(t, want, got, p.gguf)
			case ti.Type == gguf.GGMLTypeF16:
				for j := range want {
					require.Equal(t, gguf.Float16To32(gguf.Float32To16(want[j])), got[j], "%s[%d]", p.gguf, j)
				}
			default:
				require.Equal(t, gguf.GGMLTypeQ8_0, ti.Type, p.gguf)
				var amax float64
				for _, v := range want {
					amax = math.Max(amax, math.Abs(float64(v)))
				}
				for j := range want {
					require.InDelta(t, want[j], got[j], amax/127, "%s[%d]", p.gguf, j)
				}
			}
		}
	}
	_, _, err := m.GGUF(gguf.GGMLTypeQ4_0)
	assert.ErrorContains(t, err, "Q4_0 is not supported")
}

func TestLoadGGUFFile(t *testing.T) {
	m, _ := testModel(t)
	sha := strings.Repeat("ab", 32)
	img := ggufImage(t, m, gguf.GGMLTypeF32, func(kv []gguf.KV, ts []gguf.TensorData) ([]gguf.KV, []gguf.TensorData) {
		return append(kv, gguf.KV{Key: KeySourceSHA256, Value: gguf.Value{Type: gguf.TypeString, V: strings.ToUpper(sha)}}), ts
	})
	dir := t.TempDir()
	path := filepath.Join(dir, "tiny.gguf")
	require.NoError(t, os.WriteFile(path, img, 0o644))
	assert.True(t, IsGGUF(path))
	assert.False(t, IsGGUF(dir))
	g, err := Load(path)
	require.NoError(t, err)
	assert.Equal(t, dir, g.Dir)
	assert.Equal(t, path, g.WeightsPath)
	assert.Equal(t, sha, g.SourceSHA256, "lower-cased")
	assert.Equal(t, FormatGGUF, g.Format)
	assert.Equal(t, FormatHF, m.Format)
	assert.Equal(t, path, g.Path(), "a GGUF model's is its file")
	assert.Equal(t, m.Dir, m.Path(), "an HF model's is its directory")
	assert.Empty(t, m.SourceSHA256)

	_, err = Load(filepath.Join(dir, "missing.gguf"))
	assert.ErrorContains(t, err, "missing.gguf: no such file")
	_, err = Load(filepath.Join(tinyModelDir, "config.json"))
	assert.ErrorContains(t, err, "config.json: gguf: invalid file: bad magic")
}

// Each bad input is an error naming the key or tensor, never a panic.
func TestLoadGGUFBadInputs(t *testing.T) {
	m, _ := testModel(t)
	u32 := func(v uint32) gguf.Value { return gguf.Value{Type: gguf.TypeUint32, V: v} }
	C, V := uint64(testCfg.NEmbd), uint64(testCfg.VocabSize)
	wte := make([]byte, 4*C*V)

	cases := []struct {
		name string
		edit ggufEdit
		want string
	}{
		{"wrong architecture", setKV("general.architecture", gguf.Value{Type: gguf.TypeString, V: "mamba"}), `key general.architecture: value "mamba" is not supported (known: gpt2, llama`},
		{"no architecture", dropKV("general.architecture"), "key not found: general.architecture"},
		{"missing context length", dropKV(keyContextLength), "key not found: gpt2.context_length"},
		{"missing embedding length", dropKV(keyEmbeddingLen), "key not found: gpt2.embedding_length"},
		{"missing feed-forward length", dropKV(keyFeedForwardLen), "key not found: gpt2.feed_forward_length"},
		{"missing block count", dropKV(keyBlockCount), "key not found: gpt2.block_count"},
		{"missing head count", dropKV(keyHeadCount), "key not found: gpt2.attention.head_count"},
		{"missing epsilon", dropKV(keyLayerNormEps), "key not found: gpt2.attention.layer_norm_epsilon"},
		{"string hyper-parameter", setKV(keyHeadCount, gguf.Value{Type: gguf.TypeString, V: "2"}), "key gpt2.attention.head_count: want integer"},
		{"zero heads", setKV(keyHeadCount, u32(0)), "key gpt2.attention.head_count: value 0 is out of range"},
		{"heads not dividing", setKV(keyHeadCount, u32(3)), "key gpt2.embedding_length: value 16 is not divisible by gpt2.attention.head_count 3"},
		{"huge block count", setKV(keyBlockCount, u32(1<<24)), "key gpt2.block_count: value 16777216 is more blocks than"},
		{"negative epsilon", setKV(keyLayerNormEps, gguf.Value{Type: gguf.TypeFloat32, V: float32(-1)}), "key gpt2.attention.layer_norm_epsilon: value -1 must be a positive"},
		{"bad source sha", setKV(KeySourceSHA256, gguf.Value{Type: gguf.TypeString, V: "xyz"}), "key llorch.source.sha256: want 64 hex digits"},
		{"token count", setKV(keyTokens, gguf.Value{Type: gguf.TypeArray, V: gguf.Array{Elem: gguf.TypeString, Values: []string{"a"}}}), "key tokenizer.ggml.tokens: 1 tokens, but token_embd.weight has 97 rows"},
		{"eos outside vocab", setKV(keyEOS, u32(97)), "key tokenizer.ggml.eos_token_id: value 97 outside the vocabulary"},
		{"missing tensor", dropTensor("blk.1.ffn_down.bias"), `missing tensor "blk.1.ffn_down.bias"`},
		{"missing embedding", dropTensor("token_embd.weight"), `missing tensor "token_embd.weight"`},
		{"unexpected tensor", addTensor(gguf.TensorData{Name: "blk.9.attn_qkv.weight", Dims: []uint64{1}, Type: gguf.GGMLTypeF32, Data: make([]byte, 4)}), `unexpected tensor "blk.9.attn_qkv.weight"`},
		{"block count vs tensors", setKV(keyBlockCount, u32(3)), `missing tensor "blk.2.attn_norm.weight"`},
		{"dims contradict hyper-parameters", editTensor("blk.0.ffn_up.weight", func(t *gguf.TensorData) { t.Dims = []uint64{64, 16} }),
			`tensor "blk.0.ffn_up.weight": dims [64 16] contradict the hyper-parameters, which give [16 64]`},
		{"embedding width", setKV(keyEmbeddingLen, u32(32)), `tensor "token_embd.weight": dims [16 97] contradict the hyper-parameters`},
		{"feed-forward width", setKV(keyFeedForwardLen, u32(32)), `tensor "blk.0.ffn_up.weight": dims [16 64] contradict the hyper-parameters, which give [16 32]`},
		{"unsupported tensor type", editTensor("blk.0.attn_norm.weight", func(t *gguf.TensorData) { t.Type = gguf.GGMLTypeI32 }),
			`tensor "blk.0.attn_norm.weight": type I32 is not supported`},
		{"output dims", editTensor("output.weight", func(t *gguf.TensorData) { t.Dims, t.Data = []uint64{C, V - 1}, wte[:4*C*(V-1)] }),
			`tensor "output.weight": dims [16 96] contradict the hyper-parameters, which give [16 97]`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := loadGGUFBytes(context.Background(), ggufImage(t, m, gguf.GGMLTypeF32, c.edit), LoadOptions{})
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
		})
	}

	// Damage the reader sees: bad magic, version, truncation, an unknown
	// tensor type (which the writer refuses, so the byte is patched).
	valid := ggufImage(t, m, gguf.GGMLTypeF32, nil)
	patch := func(off int, b ...byte) []byte {
		img := slices.Clone(valid)
		copy(img[off:], b)
		return img
	}
	f, err := gguf.ReadBytes(valid)
	require.NoError(t, err)
	typeOff := bytes.Index(valid, []byte("output_norm.bias")) + len("output_norm.bias") + 4 + 8
	for _, c := range []struct {
		name string
		img  []byte
		want string
	}{
		{"wrong magic", patch(0, 'G', 'G', 'M', 'L'), "bad magic"},
		{"unsupported version", patch(4, 1), "unsupported version 1"},
		{"truncated header", valid[:20], "tensor count"},
		{"truncated data", valid[:f.DataOffset+100], "past end of file"},
		{"unknown tensor type", patch(typeOff, 99), `tensor "output_norm.bias": type GGMLType(99) is not supported`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := loadGGUFBytes(context.Background(), c.img, LoadOptions{})
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
		})
	}
}

// llama.cpp's converter duplicates token_embd as output.weight; an exact
// copy (same type and bytes) is tied and not kept, whatever the type and
// whether matrices are held as float16: comparing values after rounding
// to float16 once refused tied F32 and Q8_0 files under --weight-dtype f16.
func TestLoadGGUFTiedOutput(t *testing.T) {
	m, _ := testModel(t)
	for _, typ := range []gguf.GGMLType{gguf.GGMLTypeF32, gguf.GGMLTypeF16, gguf.GGMLTypeQ8_0} {
		for _, f16 := range []bool{false, true} {
			g, err := loadGGUFBytes(context.Background(), ggufImage(t, m, typ, nil), LoadOptions{Float16: f16})
			require.NoError(t, err, "%s, float16 %v", typ, f16)
			assert.True(t, g.TiedHead(), "%s, float16 %v", typ, f16)
			if typ == gguf.GGMLTypeF32 && !f16 {
				assert.Equal(t, m.WeightsBytes(), g.WeightsBytes(), "one copy of the embedding")
			}
		}
	}
}

// An output.weight that is not a copy of token_embd is the model's LM head
// (a Q4_K_M file stores it as Q6_K, token_embd as Q4_K): here twice the
// embedding, so every logit doubles exactly.
func TestLoadGGUFUntiedOutput(t *testing.T) {
	m, _ := testModel(t)
	img := ggufImage(t, m, gguf.GGMLTypeF32, editTensor("output.weight", func(td *gguf.TensorData) {
		vals := make([]float32, len(td.Data)/4)
		require.NoError(t, gguf.DecodeFloat32(gguf.GGMLTypeF32, td.Data, vals))
		for i := range vals {
			vals[i] *= 2
		}
		var err error
		td.Data, err = gguf.EncodeFloat32(gguf.GGMLTypeF32, vals)
		require.NoError(t, err)
	}))
	g, err := loadGGUFBytes(context.Background(), img, LoadOptions{})
	require.NoError(t, err)
	require.False(t, g.TiedHead())
	// A step reads the untied head, not the embedding it takes a row of;
	// the tied model's head is its embedding, read whole.
	V, C := int64(g.Config.VocabSize), int64(g.Config.NEmbd)
	require.Equal(t, g.WeightsBytes()-4*V*C-4*int64(g.Config.NPositions)*C, g.DecodeBytes())
	require.Equal(t, m.WeightsBytes()-4*int64(m.Config.NPositions)*C, m.DecodeBytes())
	tokens := []int{3, 14, 15, 92}
	want, err := m.Forward(context.Background(), m.NewCache(), tokens, ForwardOptions{})
	require.NoError(t, err)
	got, err := g.Forward(context.Background(), g.NewCache(), tokens, ForwardOptions{})
	require.NoError(t, err)
	for i := range want {
		require.Equal(t, 2*want[i], got[i], "logit %d", i)
	}

	// Written back, the untied head stays the file's own.
	kv, ts, err := g.GGUF(gguf.GGMLTypeF32)
	require.NoError(t, err)
	require.NotEmpty(t, kv)
	require.Equal(t, "output.weight", ts[1].Name)
	require.NotEqual(t, ts[0].Data, ts[1].Data)
}

// The GGUF loader (GPT-2's and the Llama family's) never panics or
// allocates past the file on any input.
func FuzzLoadGGUF(f *testing.F) {
	cfg := testCfg
	cfg.NEmbd, cfg.NHead, cfg.NInner, cfg.VocabSize, cfg.NPositions, cfg.NLayer = 32, 2, 32, 5, 4, 1
	w := randomWeights(cfg, 7)
	m, err := loadWeights(cfg, encodeSafetensors(f, w.tensors("")), LoadOptions{})
	require.NoError(f, err)
	for _, typ := range []gguf.GGMLType{gguf.GGMLTypeF32, gguf.GGMLTypeF16, gguf.GGMLTypeQ8_0} {
		f.Add(ggufImage(f, m, typ, nil))
	}
	for _, seed := range llamaFuzzSeeds(f) {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		g, err := loadGGUFBytes(context.Background(), data, LoadOptions{})
		if err != nil {
			return
		}
		if int64(g.wte.Len()) > int64(len(data)) {
			t.Fatalf("embedding of %d floats from a %d-byte file", g.wte.Len(), len(data))
		}
	})
}

// ggufEdit changes a GGUF image's metadata and tensors before it is
// written (ggufImage's and llamaImage's edit).
type ggufEdit = func([]gguf.KV, []gguf.TensorData) ([]gguf.KV, []gguf.TensorData)

// setKV sets key to v, appending it if absent.
func setKV(key string, v gguf.Value) ggufEdit {
	return func(kv []gguf.KV, ts []gguf.TensorData) ([]gguf.KV, []gguf.TensorData) {
		for i := range kv {
			if kv[i].Key == key {
				kv[i].Value = v
				return kv, ts
			}
		}
		return append(kv, gguf.KV{Key: key, Value: v}), ts
	}
}

func dropKV(key string) ggufEdit {
	return func(kv []gguf.KV, ts []gguf.TensorData) ([]gguf.KV, []gguf.TensorData) {
		return slices.DeleteFunc(kv, func(e gguf.KV) bool { return e.Key == key }), ts
	}
}

func dropTensor(name string) ggufEdit {
	return func(kv []gguf.KV, ts []gguf.TensorData) ([]gguf.KV, []gguf.TensorData) {
		return kv, slices.DeleteFunc(ts, func(t gguf.TensorData) bool { return t.Name == name })
	}
}

func addTensor(t gguf.TensorData) ggufEdit {
	return func(kv []gguf.KV, ts []gguf.TensorData) ([]gguf.KV, []gguf.TensorData) {
		return kv, append(ts, t)
	}
}

// editTensor returns a ggufImage edit applying f to the named tensor.
func editTensor(name string, f func(*gguf.TensorData)) ggufEdit {
	return func(kv []gguf.KV, ts []gguf.TensorData) ([]gguf.KV, []gguf.TensorData) {
		for i := range ts {
			if ts[i].Name == name {
				f(&ts[i])
			}
		}
		return kv, ts
	}
}

// A quantised GGUF stays quantised in memory, and its forward pass is the
// one of float32 weights holding the same values to float32 rounding (its
// products are limb products, kernels/limbs.go): every captured tensor
// and the logits.
func TestLoadGGUFQuantizedKept(t *testing.T) {
	cfg := testCfg
	cfg.NEmbd, cfg.NHead, cfg.NInner = 64, 4, 128
	w := randomWeights(cfg, 17)
	m, err := loadWeights(cfg, encodeSafetensors(t, w.tensors("")), LoadOptions{})
	require.NoError(t, err)
	q, err := loadGGUFBytes(context.Background(), ggufImage(t, m, gguf.GGMLTypeQ8_0, nil), LoadOptions{})
	require.NoError(t, err)
	require.Equal(t, "F32+Q8_0", q.WeightsDType)
	for _, mat := range append(q.h[0].matrices(), &q.wte) {
		require.Less(t, mat.Bytes(), int64(mat.Len())*2, "1 byte a weight, a scale per 32, slab padding: under float16's 2")
	}
	f, err := loadGGUFBytes(context.Background(), ggufImage(t, q, gguf.GGMLTypeF32, nil), LoadOptions{})
	require.NoError(t, err)
	require.Equal(t, "F32", f.WeightsDType)

	tokens := testTokens(9, 3)
	capture := func(m *Model) (map[string][]float32, []float32) {
		seen := map[string][]float32{}
		logits, err := m.Forward(context.Background(), m.NewCache(), tokens, ForwardOptions{Probe: ProbeFunc(func(c Captured) {
			seen[fmt.Sprintf("%s/%d", c.Name, c.Layer)] = slices.Clone(c.Data)
		})})
		require.NoError(t, err)
		return seen, logits
	}
	gotT, gotLogits := capture(q)
	wantT, wantLogits := capture(f)
	requireFloat32Close(t, wantT, gotT, wantLogits, gotLogits)
}

// requireFloat32Close: two forward passes of the same weights' values,
// one through quantised matrices (limb products), agree in every captured
// tensor and logit within the checkpoints' default tolerances
// (checkpoints/definitions.go: atol 1e-4 + rtol 1e-4 up to the blocks'
// outputs, atol 1e-3 for logits), as a reference check would hold them.
func requireFloat32Close(t *testing.T, wantT, gotT map[string][]float32, wantLogits, gotLogits []float32) {
	t.Helper()
	within := func(want, got []float32, atol float64, what string) {
		require.Len(t, got, len(want), what)
		for i := range want {
			require.InDelta(t, want[i], got[i], atol+1e-4*math.Abs(float64(want[i])), "%s[%d]", what, i)
		}
	}
	require.Equal(t, len(wantT), len(gotT))
	for name, want := range wantT {
		atol := 1e-4
		if base, _, _ := strings.Cut(name, "/"); base == "ln_f" || base == "norm" || strings.Contains(base, "logit") || strings.Contains(base, "logprob") {
			atol = 1e-3
		}
		within(want, gotT[name], atol, name)
	}
	within(wantLogits, gotLogits, 1e-3, "logits")
}

// TestWriteGGUF: the written file holds the model's keys and tensors with
// general.name second, the tokenizer's keys in their order (GPT-2's after
// the model's, the Llama family's among them), llorch's source keys last
// when given and none of the three when not; it loads back, and the
// summary is the file's.
func TestWriteGGUF(t *testing.T) {
	gpt2, _ := testModel(t)
	llama := loadLlamaTiny(t, "tiny-llama")
	llamaTok, err := tokenizer.FileGGUFKeys(llamaSPMVocab)
	require.NoError(t, err)
	gpt2Tok := []gguf.KV{gguf.StringKV("tokenizer.ggml.model", "gpt2"), gguf.StringKV("tokenizer.ggml.pre", "gpt-2")}
	sha := strings.Repeat("0f", 32)
	for _, c := range []struct {
		name  string
		m     *Model
		file  GGUFFile
		types string
	}{
		{"bare", gpt2, GGUFFile{Type: gguf.GGMLTypeF32}, "29 F32"},
		{"gpt2", gpt2, GGUFFile{Type: gguf.GGMLTypeF16, Name: "tiny", Tokenizer: gpt2Tok, SourceSHA256: sha}, "19 F32, 10 F16"},
		{"llama", llama, GGUFFile{Type: gguf.GGMLTypeQ8_0, Name: "tiny-llama", Tokenizer: llamaTok, SourceSHA256: sha}, "5 F32, 16 Q8_0"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "m.gguf")
			w, err := c.m.WriteGGUF(path, c.file)
			require.NoError(t, err)
			fi, err := os.Stat(path)
			require.NoError(t, err)
			f, err := gguf.Open(path)
			require.NoError(t, err)
			defer f.Close()
			require.Equal(t, GGUFWritten{Tensors: len(f.Tensors), Types: c.types, Bytes: fi.Size()}, w)

			var keys []string
			for _, e := range f.KV {
				keys = append(keys, e.Key)
			}
			own, _, err := c.m.GGUF(c.file.Type)
			require.NoError(t, err)
			want := map[string]bool{}
			for _, e := range slices.Concat(own, c.file.Tokenizer) {
				want[e.Key] = true
			}
			require.Equal(t, keyArchitecture, keys[0])
			if c.file.Name != "" {
				require.Equal(t, "general.name", keys[1])
				name, err := f.String("general.name")
				require.NoError(t, err)
				require.Equal(t, c.file.Name, name)
				want["general.name"] = true
			}
			if c.file.SourceSHA256 != "" {
				require.Equal(t, []string{KeySourceSHA256, KeySourceDType}, keys[len(keys)-2:])
				got, err := f.String(KeySourceSHA256)
				require.NoError(t, err)
				require.Equal(t, sha, got)
				want[KeySourceSHA256], want[KeySourceDType] = true, true
			}
			require.Len(t, keys, len(want), "each key once")
			for _, k := range keys {
				require.True(t, want[k], "%s is the model's, the tokenizer's or the file's", k)
			}
			last := -1
			for _, e := range c.file.Tokenizer {
				i := slices.Index(keys, e.Key)
				require.Greater(t, i, last, "%s in the tokenizer's order", e.Key)
				last = i
			}
			_, err = Load(path)
			require.NoError(t, err)
		})
	}
}
