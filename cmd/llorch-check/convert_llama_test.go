package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/llorch/llorch-check/gguf"
	"github.com/llorch/llorch-check/internal/fixture"
	"github.com/llorch/llorch-check/loader"
	"github.com/llorch/llorch-check/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// familyVocab is llama.cpp's vocabulary file a tiny model is converted
// with, as pytorch/gguf_write.py's default_vocab picks it.
func familyVocab(name string) string {
	v := "llama-spm"
	if strings.HasPrefix(name, "tiny-llama-phi3") { // and -longrope
		v = "phi-3"
	}
	return filepath.Join(fixture.Root(), "testdata", "tokenizer", v, "ggml-vocab-"+v+".gguf")
}

// convertFamily converts a tiny Llama-family model with convert.
func convertFamily(t *testing.T, dir, name, typ string) string {
	t.Helper()
	out := filepath.Join(dir, name+"-"+typ+".gguf")
	stdout, err := runSub(t, newConvertCmd(), "--to", "gguf", "--type", typ, "--tokenizer", familyVocab(name), fixture.FamilyModel(name), out)
	require.NoError(t, err)
	require.Contains(t, stdout, "wrote "+out)
	return out
}

// python is /usr/bin/python3 if it has what pytorch/gguf_write.py needs
// (numpy, and torch through llama_torch); CI installs both.
func python(t *testing.T) string {
	const py = "/usr/bin/python3"
	if err := exec.Command(py, "-c", "import numpy, torch").Run(); err != nil {
		t.Skipf("%s with numpy and torch is needed to run pytorch/gguf_write.py (apt-get install python3-numpy python3-torch): %v", py, err)
	}
	return py
}

// What convert writes for the Llama family is what pytorch/gguf_write.py
// writes (llama.cpp's converter layout, checked against llama.cpp): the
// same keys in the same order with the same types and values, and the
// same tensors, in order, of the same type, dims and bytes; ours adds
// general.quantization_version (as llama.cpp's converter writes it) and
// llorch's keys.
func TestConvertFamilyMatchesGGUFWritePy(t *testing.T) {
	py := python(t)
	dir := t.TempDir()
	for _, name := range fixture.Families {
		for _, typ := range []string{"f32", "f16"} {
			t.Run(name+"/"+typ, func(t *testing.T) {
				ours := convertFamily(t, dir, name, typ)
				theirs := filepath.Join(dir, name+"-"+typ+".py.gguf")
				out, err := exec.Command(py, filepath.Join(fixture.Root(), "pytorch", "gguf_write.py"), fixture.FamilyModel(name), theirs,
					"--type", typ, "--vocab", familyVocab(name)).CombinedOutput()
				require.NoError(t, err, string(out))
				a, err := gguf.Open(ours)
				require.NoError(t, err)
				defer a.Close()
				b, err := gguf.Open(theirs)
				require.NoError(t, err)
				defer b.Close()
				var extra []string
				kv := slices.DeleteFunc(slices.Clone(a.KV), func(e gguf.KV) bool {
					if e.Key == "general.quantization_version" || strings.HasPrefix(e.Key, "llorch.") {
						extra = append(extra, e.Key)
						return true
					}
					return false
				})
				require.Equal(t, keysOf(b.KV), keysOf(kv))
				for i, e := range b.KV {
					require.Equal(t, e.Value, kv[i].Value, e.Key)
				}
				want := []string{"general.quantization_version", model.KeySourceSHA256, model.KeySourceDType}
				if name == "tiny-llama3" {
					want = slices.Insert(want, 1, "llorch.rope_scaling.factor", "llorch.rope_scaling.low_freq_factor",
						"llorch.rope_scaling.high_freq_factor", "llorch.rope_scaling.original_max_position_embeddings")
				}
				assert.Equal(t, want, extra)
				require.Equal(t, len(b.Tensors), len(a.Tensors))
				for i, tb := range b.Tensors {
					ta := a.Tensors[i]
					require.Equal(t, tb.Name, ta.Name)
					require.Equal(t, tb.Type, ta.Type, ta.Name)
					require.Equal(t, tb.Dims, ta.Dims, ta.Name)
					da, err := a.TensorData(ta.Name)
					require.NoError(t, err)
					db, err := b.TensorData(tb.Name)
					require.NoError(t, err)
					require.True(t, slices.Equal(da, db), "tensor %s: data differs", ta.Name)
				}
			})
		}
	}
}

// HF → GGUF → run, for each family: F16 (lossless from the F16 tiny
// models) passes every checkpoint of the HF weights' reference set, which
// llorch.source.sha256 ties to the file.
func TestConvertFamilyThenRun(t *testing.T) {
	dir := t.TempDir()
	for _, name := range fixture.Families {
		t.Run(name, func(t *testing.T) {
			refs := fixture.FamilyReferences(name)
			if _, err := os.Stat(refs); err != nil {
				t.Skipf("%s is absent (make references)", refs)
			}
			path := convertFamily(t, dir, name, "f16")
			code, out, stderr := runCLI(t, "run", "--model", path, "--references", refs)
			require.Equal(t, exitOK, code, out+stderr)
			assert.Regexp(t, `PASS: \d+ checks passed, 0 failed`, out)
			assert.Contains(t, out, "weights:    converted from the reference's weights")
		})
	}
}

func keysOf(kv []gguf.KV) []string {
	out := make([]string, len(kv))
	for i, e := range kv {
		out[i] = e.Key
	}
	return out
}

// Without --tokenizer, convert takes the model directory's tokenizer GGUF
// (the tiny models' tokenizer.gguf link to llama.cpp's vocabulary file);
// without one it says what to do; Q8_0 is written too.
func TestConvertFamilyTokenizer(t *testing.T) {
	src := fixture.FamilyModel("tiny-llama-qwen2")
	dir := t.TempDir()
	bare := filepath.Join(dir, "bare")
	require.NoError(t, os.Mkdir(bare, 0o755))
	for _, f := range []string{"config.json", "model.safetensors"} {
		require.NoError(t, os.Symlink(filepath.Join(src, f), filepath.Join(bare, f)))
	}
	out := filepath.Join(dir, "out.gguf")
	_, err := runSub(t, newConvertCmd(), "--to", "gguf", bare, out)
	require.ErrorContains(t, err, bare+" has no tokenizer: neither tokenizer.json nor a tokenizer GGUF")
	assert.ErrorContains(t, err, "give one with --tokenizer")
	_, statErr := os.Stat(out)
	assert.True(t, os.IsNotExist(statErr), "nothing written")

	_, err = runSub(t, newConvertCmd(), "--to", "gguf", "--tokenizer", familyVocab("tiny-llama-phi3"), bare, out)
	require.ErrorContains(t, err, "ggml-vocab-phi-3.gguf: 32064 tokens, the model's vocabulary is 32000")

	require.NoError(t, os.Symlink(familyVocab("tiny-llama-qwen2"), filepath.Join(bare, "tokenizer.gguf")))
	stdout, err := runSub(t, newConvertCmd(), "--to", "gguf", "--type", "q8_0", bare, out)
	require.NoError(t, err)
	assert.Contains(t, stdout, "wrote "+out+": Q8_0, 26 tensors (11 F32, 15 Q8_0)")
	f, err := gguf.Open(out)
	require.NoError(t, err)
	defer f.Close()
	for key, want := range map[string]any{
		"general.architecture": "qwen2", "general.name": "bare", "general.file_type": uint32(7),
		"qwen2.attention.head_count_kv": uint32(2), "tokenizer.ggml.model": "llama", "llorch.source.dtype": "F16",
	} {
		v, ok := f.Get(key)
		require.True(t, ok, key)
		assert.Equal(t, want, v.V, key)
	}
	m, err := loader.Load(out)
	require.NoError(t, err)
	assert.Equal(t, "F32+Q8_0", m.WeightsDType)
	assert.Len(t, m.SourceSHA256, 64)
}

// The llama.cpp peer (node-llama-cpp, e2e/llamacpp/llama_family.mjs)
// loads what convert writes for each architecture and greedy-decodes 16
// tokens from pytorch/test_llama_torch.py's prompt; they must be ours.
// A step whose top-2 margin (ours) is within twice the largest |Δ logit|
// between the two engines there is a near tie, which decides nothing:
// reported, and the comparison stops there (the sequences part). F32's
// prompt logits must agree within checkpoint 9's tolerance (atol 1e-3,
// rtol 1e-4), as llama.cpp's float32 arithmetic must with any float32
// forward; F16 (llama.cpp rounds activations to float16 for its F16
// products) and Q8_0 (to 8 bits) are reported. It takes about a minute
// of llama.cpp runs, so it runs with LLORCH_PEER=1, as make
// interop-llamacpp (a step of make test, skipped there without node or
// the peer) runs it; with LLORCH_PEER=1 a missing node or peer fails.
func TestConvertFamilyLlamaCppPeer(t *testing.T) {
	if os.Getenv("LLORCH_PEER") != "1" {
		t.Skip("LLORCH_PEER=1 runs it (make interop-llamacpp)")
	}
	requirePeer(t)
	tokens := []int{1, 30237, 20004, 21894, 28711, 18506, 24822, 26677, 7208, 1779, 9607, 9124, 27954, 29204, 171, 15994, 26279, 4208, 25506, 3813, 14975}
	dir := t.TempDir()
	// Mixtral's experts too (tiny-llama-qwen3moe's dense layer has no
	// form llama.cpp's qwen3moe can run).
	for _, name := range append(slices.Clone(fixture.Families), "tiny-llama-mixtral") {
		for _, typ := range []string{"f32", "f16", "q8_0"} {
			t.Run(name+"/"+typ, func(t *testing.T) {
				t.Parallel()
				if m, err := model.LoadConfig(filepath.Join(fixture.FamilyModel(name), "config.json")); err == nil && m.LongRope != nil {
					peerLongRope(t, convertFamily(t, dir, name, typ), typ, tokens)
					return
				}
				peerGreedy(t, convertFamily(t, dir, name, typ), typ, tokens)
			})
		}
	}
}

// requirePeer fails without node or the llama.cpp peer.
func requirePeer(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatal("node is not installed (apt-get install -y nodejs npm)")
	}
	if _, err := os.Stat(filepath.Join(fixture.Root(), "e2e", "llamacpp", "node_modules", "node-llama-cpp")); err != nil {
		t.Fatal("the llama.cpp peer is not installed (make peer-llamacpp)")
	}
}

// peerGreedy runs llama_family.mjs on a converted file of type typ from
// tokens and holds its logits and greedy tokens to ours, as
// TestConvertFamilyLlamaCppPeer describes.
func peerGreedy(t *testing.T, path, typ string, tokens []int) {
	t.Helper()
	const n = 16
	script := filepath.Join(fixture.Root(), "e2e", "llamacpp", "llama_family.mjs")
	ids := make([]string, len(tokens))
	for i, id := range tokens {
		ids[i] = fmt.Sprint(id)
	}
	out, err := exec.Command("node", script, path, strings.Join(ids, ","), fmt.Sprint(n)).Output()
	require.NoError(t, err)
	var peer struct {
		Peer         string      `json:"peer"`
		KVCache      []int       `json:"kv_cache"`
		Logits       [][]float64 `json:"logits"`
		Greedy       []int       `json:"greedy"`
		GreedyLogits [][]float64 `json:"greedy_logits"`
	}
	require.NoError(t, json.Unmarshal(out, &peer))
	require.Equal(t, []int{0, 0}, peer.KVCache, "F32 KV cache")

	m, err := loader.Load(path)
	require.NoError(t, err)
	ctx, c, V := context.Background(), m.NewCache(), m.Config.VocabSize
	all, err := m.Forward(ctx, c, tokens, model.ForwardOptions{AllLogits: true})
	require.NoError(t, err)
	// llama.cpp computes Gemma's GELU through a float16 table (docs/gguf.md):
	// its F32 logits are an approximation's, reported, not held to
	// checkpoint 9's tolerance; its greedy tokens still must be ours.
	tableGELU := m.Config.Gemma != nil
	var worst float64
	for p, row := range peer.Logits {
		require.Len(t, row, V)
		for i, v := range row {
			ours := float64(all[p*V+i])
			d := math.Abs(v - ours)
			worst = math.Max(worst, d)
			if typ == "f32" && !tableGELU {
				require.LessOrEqual(t, d-1e-4*math.Abs(ours), 1e-3, "position %d, logit %d", p, i)
			}
		}
	}
	last := all[(len(tokens)-1)*V:]
	equal, stepWorst := 0, 0.0
	for s := range n {
		if s > 0 {
			require.Len(t, peer.GreedyLogits[s-1], V)
			stepWorst = 0
			for i, v := range peer.GreedyLogits[s-1] {
				stepWorst = math.Max(stepWorst, math.Abs(v-float64(last[i])))
			}
			worst = math.Max(worst, stepWorst)
		} else {
			for i, v := range peer.Logits[len(tokens)-1] {
				stepWorst = math.Max(stepWorst, math.Abs(v-float64(last[i])))
			}
		}
		top, margin := argmaxMargin(last)
		if peer.Greedy[s] != top {
			require.LessOrEqual(t, margin, 2*stepWorst, "greedy step %d: llama.cpp %d, ours %d (our margin %.3g, |Δ logit| up to %.3g)",
				s, peer.Greedy[s], top, margin, stepWorst)
			t.Logf("greedy step %d: a near tie (our margin %.3g, |Δ logit| up to %.3g): llama.cpp %d, ours %d; compared no further", s, margin, stepWorst, peer.Greedy[s], top)
			break
		}
		equal++
		if s == n-1 {
			break
		}
		if last, err = m.Forward(ctx, c, []int{top}, model.ForwardOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%s %s: %s: greedy %d/%d tokens equal, max |Δ logit| %.3g", filepath.Base(path), typ, peer.Peer, equal, n, worst)
}

// peerLongRope holds llama.cpp's logits on a longrope file to ours where
// the two choose the same factors. llama.cpp chooses the long factors for
// every position once its context (here prompt + 16 + 1 = 38) is past the
// pretrained one (32); HF, and our forward, by the sequence's length
// (docs/spec.md, RoPE). So llama.cpp's prompt and greedy logits are
// those of our single call over the prompt and llama.cpp's greedy tokens
// (last position 35, past 32: long factors everywhere), within checkpoint
// 9's tolerance in F32, and its greedy tokens are that call's argmaxes;
// our prompt call alone (last position 20: short factors) is not, past
// position 0 (where no rotation is applied), and the test says by how much.
func peerLongRope(t *testing.T, path, typ string, tokens []int) {
	t.Helper()
	const n = 16
	script := filepath.Join(fixture.Root(), "e2e", "llamacpp", "llama_family.mjs")
	ids := make([]string, len(tokens))
	for i, id := range tokens {
		ids[i] = fmt.Sprint(id)
	}
	out, err := exec.Command("node", script, path, strings.Join(ids, ","), fmt.Sprint(n)).Output()
	require.NoError(t, err)
	var peer struct {
		Peer         string      `json:"peer"`
		Logits       [][]float64 `json:"logits"`
		Greedy       []int       `json:"greedy"`
		GreedyLogits [][]float64 `json:"greedy_logits"`
	}
	require.NoError(t, json.Unmarshal(out, &peer))
	m, err := loader.Load(path)
	require.NoError(t, err)
	require.NotNil(t, m.Config.LongRope)
	V, T := m.Config.VocabSize, len(tokens)
	seq := append(slices.Clone(tokens), peer.Greedy[:n-1]...)
	require.Greater(t, len(seq), m.Config.LongRope.Original, "the call must reach past the pretrained context")
	long, err := m.Forward(context.Background(), m.NewCache(), seq, model.ForwardOptions{AllLogits: true})
	require.NoError(t, err)
	short, err := m.Forward(context.Background(), m.NewCache(), tokens, model.ForwardOptions{AllLogits: true})
	require.NoError(t, err)
	rows := append(slices.Clone(peer.Logits), peer.GreedyLogits...)
	require.Len(t, rows, T+n-1)
	var worst, shortWorst float64
	for p, row := range rows {
		require.Len(t, row, V)
		ours := long[p*V : (p+1)*V]
		for i, v := range row {
			d := math.Abs(v - float64(ours[i]))
			worst = math.Max(worst, d)
			if typ == "f32" {
				require.LessOrEqual(t, d-1e-4*math.Abs(float64(ours[i])), 1e-3, "position %d, logit %d", p, i)
			}
			if p > 0 && p < T {
				shortWorst = math.Max(shortWorst, math.Abs(v-float64(short[p*V+i])))
			}
		}
		if top, margin := argmaxMargin(ours); p >= T-1 && typ == "f32" {
			require.Equal(t, top, peer.Greedy[p-(T-1)], "greedy step %d (our margin %.3g)", p-(T-1), margin)
		}
	}
	if typ == "f32" {
		require.Greater(t, shortWorst, 1e-2, "llama.cpp's prompt logits are not those of the short factors")
	}
	t.Logf("%s %s: %s: max |Δ logit| %.3g against one call past the switch (long factors), %.3g against the prompt's own call (short factors)",
		filepath.Base(path), typ, peer.Peer, worst, shortWorst)
}

// argmaxMargin is the argmax (the lowest id of a tie, as torch.argmax and
// llama_family.mjs take it) and its lead over the runner-up.
func argmaxMargin(x []float32) (int, float64) {
	best, second := 0, math.Inf(-1)
	for i := 1; i < len(x); i++ {
		switch {
		case x[i] > x[best]:
			second, best = float64(x[best]), i
		case float64(x[i]) > second:
			second = float64(x[i])
		}
	}
	return best, float64(x[best]) - second
}
