package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/generation"
	"github.com/llorch/llorch-check/gguf"
	"github.com/llorch/llorch-check/internal/fixture"
	"github.com/llorch/llorch-check/internal/fixture/shards"
	"github.com/llorch/llorch-check/loader"
	"github.com/llorch/llorch-check/safetensors"
	"github.com/llorch/llorch-check/sampling"
	"github.com/llorch/llorch-check/tokenizer"
)

// A tiny model carrying a real Hugging Face tokenizer (tokenizer.json and
// tokenizer_config.json from testdata/tokenizer/tok, no vocabulary GGUF):
// a tiny family model whose embedding (and untied head) is re-drawn with
// vocab rows, the tokenizer's size or more (padded, as Qwen2.5's).
type realTokModel struct {
	family, tok   string
	vocab         int // the model's vocab_size
	tokens        int // the tokenizer's
	bos, eos      int
	vectors       string // testdata/tokenizer/VECTORS.inp and .out
	model, preTok string // tokenizer.ggml.model and .pre expected
	chat          string // text in the tokenizer's own chat markup
	// vectorsSpecial: the vectors are Hugging Face's ids with every added
	// token matched (Gemma's, from transformers.js), EncodeSpecial's.
	vectorsSpecial bool
	// llamaCppDiffers: texts llama.cpp tokenizes otherwise than
	// tokenizer.json, from the GGUF llama.cpp's own converter would write
	// too, and why; the peer test checks they still differ.
	llamaCppDiffers map[string]string
}

// Gemma 3's texts where llama.cpp and Hugging Face part (see realTokModels).
var gemma3LlamaCppDiffers = map[string]string{
	"<s>not a control token</s><code>x = 1</code>": "llama.cpp makes \"</s>\" (212, user-defined) a control token as it is spelled like an end of generation, so plain text does not match it",
	"<s>[INST] What is 2+2? [/INST] Four.</s>":     "llama.cpp makes \"</s>\" (212, user-defined) a control token as it is spelled like an end of generation, so plain text does not match it",
	"▁▁ literal markers ▁ and▁▁▁":                  "the converter writes user-defined \"▁▁\" runs as spaces (as convert_hf_to_gguf.py's pre-normalizing), so a literal \"▁▁\" in the text is no token there",
	"<mask> <unused0> <unused6241> [multimodal]":   "the converter makes <mask> and <unusedN> (added, not special) control tokens (convert_hf_to_gguf.py's does_token_look_special), which plain text does not match",
}

// gemma3Tok is where make tokenizer-gemma3 installs Gemma 3's tokenizer
// (262144 tokens, not committed).
var gemma3Tok = filepath.Join("e2e", "tokenizer-gemma3", "node_modules", "@lenml", "tokenizer-gemma3", "models")

var realTokModels = []realTokModel{
	{"tiny-llama3", "llama-bpe", 128256, 128256, 128000, 128001, "llama-bpe/ggml-vocab-llama-bpe.gguf", "gpt2", "llama-bpe",
		"<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi there<|eot_id|>", false, nil},
	{"tiny-llama-qwen3", "qwen2", 151680, 151669, 151643, 151645, "qwen2/ggml-vocab-qwen2.gguf", "gpt2", "qwen2",
		"<|im_start|>user\nHello, world!<|im_end|>\n<|im_start|>assistant\n", false, nil},
	{"tiny-llama", "mistral-hf", 32000, 32000, 1, 2, "mistral-hf/vectors", "llama", "default",
		"<s>[INST] What is 2+2? [/INST] Four.</s>", false, nil},
	// Gemma 3's tokenizer on a tiny Llama re-drawn with Gemma 3 4B's
	// 262208 rows: the tokenizer's 262145 tokens and [PAD] rows after.
	{"tiny-llama", "gemma3", 262208, 262145, 2, 106, "gemma3/vectors", "llama", "default",
		"<start_of_turn>user\nHi<end_of_turn>\n<start_of_turn>model\n", true, gemma3LlamaCppDiffers},
}

func (r realTokModel) name() string { return r.family + "+" + r.tok }

// make writes the model into a new directory and returns it.
func (r realTokModel) make(t *testing.T) string {
	t.Helper()
	src := fixture.FamilyModel(r.family)
	dir := fixture.CopyDir(t, src)
	ggufs, _ := filepath.Glob(filepath.Join(dir, "*.gguf"))
	for _, g := range ggufs {
		require.NoError(t, os.Remove(g))
	}
	tokDir := filepath.Join(fixture.Root(), "testdata", "tokenizer", r.tok)
	if r.tok == "gemma3" {
		tokDir = filepath.Join(fixture.Root(), gemma3Tok)
		if _, err := os.Stat(filepath.Join(tokDir, "tokenizer.json")); err != nil {
			require.NotEqual(t, "true", os.Getenv("CI"), "Gemma 3's tokenizer is not installed: make tokenizer-gemma3")
			t.Skip("Gemma 3's tokenizer is not installed (make tokenizer-gemma3, which needs npm)")
		}
	}
	data, err := os.ReadFile(filepath.Join(tokDir, "tokenizer.json"))
	if os.IsNotExist(err) {
		data = gunzipFile(t, filepath.Join(tokDir, "tokenizer.json.gz"))
	} else {
		require.NoError(t, err)
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tokenizer.json"), data, 0o644))
	fixture.CopyFile(t, filepath.Join(tokDir, "tokenizer_config.json"), filepath.Join(dir, "tokenizer_config.json"))
	var old int
	fixture.EditJSON(t, filepath.Join(dir, "config.json"), func(c map[string]any) {
		old = int(c["vocab_size"].(float64))
		c["vocab_size"], c["bos_token_id"], c["eos_token_id"] = r.vocab, r.bos, r.eos
	})
	ts := shards.Read(t, src)
	rng := rand.New(rand.NewPCG(uint64(r.vocab), 7))
	for i, x := range ts {
		if len(x.Shape) != 2 || x.Shape[0] != old {
			continue
		}
		// The embedding and an untied head, re-drawn at the new size
		// with the old values' spread.
		var sum float64
		for _, v := range x.Values {
			sum += float64(v) * float64(v)
		}
		sd := float32(math.Sqrt(sum / float64(len(x.Values))))
		vals := make([]float32, r.vocab*x.Shape[1])
		for j := range vals {
			vals[j] = float32(rng.NormFloat64()) * sd
		}
		ts[i].Shape, ts[i].Values = []int{r.vocab, x.Shape[1]}, vals
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, safetensors.SingleFile), shards.File(t, ts), 0o644))
	return dir
}

func gunzipFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	zr, err := gzip.NewReader(bytes.NewReader(b))
	require.NoError(t, err)
	out, err := io.ReadAll(zr)
	require.NoError(t, err)
	return out
}

// tokVectors reads llama.cpp-format test vectors: inputs and their ids.
func tokVectors(t *testing.T, name string) ([]string, [][]int) {
	t.Helper()
	base := filepath.Join(fixture.Root(), "testdata", "tokenizer", name)
	inp, err := os.ReadFile(base + ".inp")
	require.NoError(t, err)
	out, err := os.ReadFile(base + ".out")
	require.NoError(t, err)
	inputs := strings.Split(string(inp), "\n__ggml_vocab_test__\n")
	inputs = inputs[:len(inputs)-1]
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	require.Len(t, lines, len(inputs))
	want := make([][]int, len(lines))
	for i, line := range lines {
		want[i] = []int{}
		for _, f := range strings.Fields(line) {
			id, err := strconv.Atoi(f)
			require.NoError(t, err)
			want[i] = append(want[i], id)
		}
	}
	return inputs, want
}

// specialTexts are every tokenizer's chat markup: each tokenizer must
// keep the others' as text.
func specialTexts() []string {
	out := make([]string, len(realTokModels))
	for i, r := range realTokModels {
		out[i] = r.chat
	}
	return out
}

// A model with a real tokenizer.json and no vocabulary file converts
// (convert finds tokenizer.json itself), and the GGUF's tokenizer
// tokenizes llama.cpp's test vectors id for id, and special tokens as the
// tokenizer.json does; the embedding's padding rows are [PAD{id}] tokens.
func TestConvertTokenizerJSON(t *testing.T) {
	out := t.TempDir()
	for _, r := range realTokModels {
		t.Run(r.name(), func(t *testing.T) {
			dir := r.make(t)
			path := filepath.Join(out, r.name()+".gguf")
			stdout, err := runSub(t, newConvertCmd(), "--to", "gguf", "--type", "bf16", dir, path)
			require.NoError(t, err)
			require.Contains(t, stdout, "wrote "+path+": BF16")
			f, err := gguf.Open(path)
			require.NoError(t, err)
			defer f.Close()
			for key, want := range map[string]any{"tokenizer.ggml.model": r.model, "tokenizer.ggml.pre": r.preTok, "general.file_type": uint32(32)} {
				v, ok := f.Get(key)
				require.True(t, ok, key)
				assert.Equal(t, want, v.V, key)
			}
			toks, err := f.Strings("tokenizer.ggml.tokens")
			require.NoError(t, err)
			require.Len(t, toks, r.vocab)
			for id := r.tokens; id < r.vocab; id++ {
				assert.Equal(t, fmt.Sprintf("[PAD%d]", id), toks[id])
			}
			fromGGUF, err := tokenizer.FromGGUF(f)
			require.NoError(t, err)
			fromJSON, err := tokenizer.Load(dir)
			require.NoError(t, err)
			inputs, want := tokVectors(t, r.vectors)
			for i, in := range inputs {
				got := fromGGUF.Encode(in)
				if r.vectorsSpecial {
					got = fromGGUF.EncodeSpecial(in)
				}
				if got == nil {
					got = []int{}
				}
				if why := r.llamaCppDiffers[in]; strings.Contains(why, "literal") {
					assert.NotEqual(t, want[i], got, "vector %d %q: a known divergence (%s) is gone", i, in, why)
					continue
				}
				assert.Equal(t, want[i], got, "vector %d %q", i, in)
			}
			for _, s := range specialTexts() {
				assert.Equal(t, fromJSON.EncodeSpecial(s), fromGGUF.EncodeSpecial(s), "%q", s)
			}
		})
	}
}

// llama.cpp (the npm peer) loads what convert writes from a real
// tokenizer.json for each family, in F32 and BF16: its tokenization of
// the test vectors and of every family's chat markup as text, and of the
// vectors and the model's own chat markup with special tokens parsed, is
// our tokenizer's from tokenizer.json, id for id; and it greedy-decodes
// our tokens (peerGreedy) from a prompt our tokenizer made. LLORCH_PEER=1
// runs it (make interop-llamacpp).
//
// Other families' markup is not compared with special tokens parsed:
// llama.cpp makes a control token of any vocabulary entry spelled as an
// end of generation ("</s>", "<|im_end|>", "<|eot_id|>", ...), whatever
// its type, so Qwen's ordinary token "</s>" (128247) is one token there
// with special tokens parsed and three in Hugging Face's tokenizer (and
// ours, and in the GGUF llama.cpp's own converter writes).
func TestConvertTokenizerJSONLlamaCppPeer(t *testing.T) {
	if os.Getenv("LLORCH_PEER") != "1" {
		t.Skip("LLORCH_PEER=1 runs it (make interop-llamacpp)")
	}
	requirePeer(t)
	script := filepath.Join(fixture.Root(), "e2e", "llamacpp", "tokenize.mjs")
	out := t.TempDir()
	for _, r := range realTokModels {
		t.Run(r.name(), func(t *testing.T) {
			dir := r.make(t)
			fromJSON, err := tokenizer.Load(dir)
			require.NoError(t, err)
			inputs, _ := tokVectors(t, r.vectors)
			texts := append(append([]string{}, inputs...), specialTexts()...)
			stdin, err := json.Marshal(texts)
			require.NoError(t, err)
			types := []string{"f32", "bf16"}
			if r.tok == "gemma3" {
				types = types[:1] // the tokenizer's keys do not depend on the type
			}
			for _, typ := range types {
				path := filepath.Join(out, r.name()+"-"+typ+".gguf")
				_, err := runSub(t, newConvertCmd(), "--to", "gguf", "--type", typ, dir, path)
				require.NoError(t, err)
				cmd := exec.Command("node", script, path)
				cmd.Stdin = bytes.NewReader(stdin)
				res, err := cmd.Output()
				require.NoError(t, err, "%s", res)
				var peer struct {
					Peer           string
					BOS, EOS, EOT  *int
					AddBOS         bool `json:"add_bos"`
					Plain, Special [][]int
				}
				require.NoError(t, json.Unmarshal(res, &peer))
				require.Len(t, peer.Plain, len(texts))
				f, err := gguf.Open(path)
				require.NoError(t, err)
				fromGGUF, err := tokenizer.FromGGUF(f)
				f.Close()
				require.NoError(t, err)
				if r.tok == "gemma3" {
					// Our reading of the same file is llama.cpp's, but
					// for its rule that makes a user-defined token
					// spelled like an end of generation a control token.
					for i, s := range texts {
						got := fromGGUF.Encode(s)
						if got == nil {
							got = []int{}
						}
						if strings.Contains(r.llamaCppDiffers[s], "spelled like an end of generation") {
							assert.NotEqual(t, peer.Plain[i], got, "text %d %q: ours from the GGUF now matches llama.cpp", i, s)
							continue
						}
						assert.Equal(t, peer.Plain[i], got, "text %d %q: ours from the GGUF", i, s)
					}
				}
				same := 0
				for i, s := range texts {
					want := fromJSON.Encode(s)
					if want == nil {
						want = []int{}
					}
					why, differs := r.llamaCppDiffers[s]
					if differs {
						assert.NotEqual(t, want, peer.Plain[i], "a known divergence (%s) is gone", why)
						t.Logf("text %d %q: llama.cpp differs: %s", i, s, why)
					} else if assert.Equal(t, want, peer.Plain[i], "text %d %q", i, s) {
						same++
					}
					if i >= len(inputs) && s != r.chat {
						continue
					}
					wantSp := fromJSON.EncodeSpecial(s)
					if wantSp == nil {
						wantSp = []int{}
					}
					if differs && strings.Contains(why, "literal") {
						assert.NotEqual(t, wantSp, peer.Special[i], "a known divergence (%s) is gone", why)
						continue
					}
					assert.Equal(t, wantSp, peer.Special[i], "text %d %q, special tokens parsed", i, s)
				}
				require.NotNil(t, peer.BOS)
				assert.Equal(t, r.bos, *peer.BOS)
				require.NotNil(t, peer.EOS)
				assert.Equal(t, r.eos, *peer.EOS)
				if r.tok == "gemma3" {
					// llama.cpp finds <end_of_turn> as the end of a turn
					// too, so its chat stops there.
					require.NotNil(t, peer.EOT)
					assert.Equal(t, 106, *peer.EOT)
					assert.True(t, peer.AddBOS)
				}
				t.Logf("%s %s: %s tokenizes %d/%d texts as tokenizer.json does (add_bos %v)", r.name(), typ, peer.Peer, same, len(texts), peer.AddBOS)

				if r.tok == "gemma3" {
					// 262208 logits a row as JSON: the tokenizer is what
					// this model is for, the forward is the others'.
					continue
				}
				prompt := append([]int{r.bos}, fromJSON.Encode("The quick brown fox jumps over the lazy dog. Once upon a time")...)
				peerGreedy(t, path, typ, prompt)
			}
		})
	}
}

// TestPaddedVocabDecodes: a model whose embedding has rows past its
// tokenizer (Qwen's 151680 over 151669 here, as Qwen2.5's 151936 over
// 151665) may pick one, and its text is nothing, as Hugging Face decodes
// it; generation failed with "invalid token id" (random weights pick them).
func TestPaddedVocabDecodes(t *testing.T) {
	r := realTokModels[1]
	require.Greater(t, r.vocab, r.tokens)
	dir := r.make(t)
	m, err := loader.Load(dir)
	require.NoError(t, err)
	tok, err := tokenizer.ForModel(dir)
	require.NoError(t, err)
	pad := r.tokens + 5
	greedy := sampling.DefaultParams()
	greedy.Temperature = 0
	greedy.LogitBias = map[int]float64{pad: 100}
	got, err := generation.Generate(context.Background(), generation.NewModelDecoder(m), tok,
		generation.Request{Prompt: tok.EncodePrompt("Hello"), MaxTokens: 3, Params: greedy}, nil)
	require.NoError(t, err)
	require.Equal(t, []int{pad, pad, pad}, got.Tokens)
	require.Empty(t, got.Text)
	_, err = tok.Decode([]int{r.vocab})
	require.ErrorIs(t, err, tokenizer.ErrInvalidID, "past the model's rows an id is still invalid")
}
