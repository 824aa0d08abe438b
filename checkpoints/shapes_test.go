package checkpoints

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/llorch/llorch-check/internal/fixture"
	"github.com/llorch/llorch-check/loader"
	"github.com/llorch/llorch-check/model"
	"github.com/llorch/llorch-check/references"
	"github.com/llorch/llorch-check/tokenizer"
	"github.com/stretchr/testify/require"
)

// shapeCases is the cases file of TestShapesPassAllTwelve: token ids only
// (the Llama family has no Python tokenizer), a couple of dozen tokens in
// all, ids of both vocabularies (Llama 2's 32000 and Phi-3's 32064); the
// one log-likelihood pair is testdata/cases-llama.json's, whose text the
// Go tokenizer must encode to its ids.
const shapeCases = `{
 "cases": [
  {"id": "hello", "tokens": [1, 15043, 29892, 3186, 29889]},
  {"id": "story", "tokens": [1, 1551, 29871, 29941, 4779, 29871, 29896, 29929, 29906, 29896, 29892, 278, 7751, 2175, 2011, 472]},
  {"id": "spread", "tokens": [31999, 3, 17, 20000, 29889, 9, 31000]}
 ],
 "loglikelihood": [
  {"context": "The capital of France is", "continuation": " Paris", "context_tokens": [450, 7483, 310, 3444, 338], "continuation_tokens": [3681]}
 ]
}
`

// llamaShape is a model pytorch/make_tiny_llama.py writes: every field is
// given as a flag, headDim only for qwen3 (0: hidden/heads).
type llamaShape struct {
	name                                                    string
	arch                                                    string
	layers, heads, kvHeads, hidden, headDim, inter, context int
	tied                                                    bool
}

func (s llamaShape) flags() []string {
	f := []string{"--arch", s.arch, "--layers", strconv.Itoa(s.layers), "--heads", strconv.Itoa(s.heads),
		"--kv-heads", strconv.Itoa(s.kvHeads), "--hidden", strconv.Itoa(s.hidden),
		"--intermediate", strconv.Itoa(s.inter), "--context", strconv.Itoa(s.context), "--untied"}
	if s.tied {
		f[len(f)-1] = "--tied"
	}
	if s.headDim != 0 {
		f = append(f, "--head-dim", strconv.Itoa(s.headDim))
	}
	return f
}

// TestShapesPassAllTwelve: Llama-family models of shapes other than the
// committed ones (MQA, GQA ratios 3 and 4, no grouping, Qwen3 head_dim
// apart from hidden/heads, odd head counts, tied and untied heads, one
// and three layers), each written by make_tiny_llama.py with its
// reference set from dump_references.py, pass every checkpoint, 1 to 12,
// at the default tolerances; and bisect names a RoPE layout or GQA
// grouping bug in them where it enters.
func TestShapesPassAllTwelve(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a model and a PyTorch reference set per shape (-short)")
	}
	const py = "/usr/bin/python3"
	if exec.Command(py, "-c", "import torch, numpy").Run() != nil {
		// As make test: the PyTorch steps need Debian's torch; CI has it.
		require.NotEqual(t, "true", os.Getenv("CI"), "dump_references.py needs %s with torch and numpy", py)
		t.Skipf("needs %s with torch and numpy (apt-get install python3-torch python3-numpy)", py)
	}
	cases := filepath.Join(t.TempDir(), "cases.json")
	require.NoError(t, os.WriteFile(cases, []byte(shapeCases), 0o644))
	refDir := filepath.Join(fixture.Root(), "pytorch")

	for _, s := range []llamaShape{
		// name, arch, layers, heads, KV heads, hidden, head_dim, intermediate, context, tied
		{"llama-mqa-3-layers", "llama", 3, 4, 1, 64, 0, 128, 128, false},
		{"llama-no-grouping-tied", "llama", 2, 4, 4, 64, 0, 128, 128, true},
		{"llama-6-heads-over-48", "llama", 2, 6, 3, 48, 0, 96, 128, false},
		{"llama3-gqa4-context-64", "llama3", 2, 8, 2, 128, 0, 256, 64, true},
		{"qwen2-gqa3-untied", "qwen2", 2, 6, 2, 96, 0, 192, 128, false},
		{"qwen3-gqa3-head-dim-24-of-8", "qwen3", 1, 6, 2, 48, 24, 128, 128, false},
		{"qwen3-3-heads-mqa-head-dim-40-of-16-tied", "qwen3", 2, 3, 1, 48, 40, 96, 128, true},
		{"phi3-gqa3", "phi3", 2, 6, 2, 96, 0, 160, 128, false},
		{"phi3-mqa-8-heads-tied", "phi3", 2, 8, 1, 64, 0, 128, 128, true},
	} {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			// As run --model DIR finds it: references/NAME beside the model.
			dir := t.TempDir()
			modelDir, refs := filepath.Join(dir, s.name), filepath.Join(dir, "references", s.name)
			for _, args := range [][]string{
				append([]string{filepath.Join(refDir, "make_tiny_llama.py"), "--out", modelDir}, s.flags()...),
				{filepath.Join(refDir, "dump_references.py"), "--model", modelDir, "--cases", cases,
					"--out", refs, "--n-generate", "4", "--logits-rows", "2"},
			} {
				out, err := exec.Command(py, args...).CombinedOutput()
				require.NoError(t, err, "%s: %s", strings.Join(args, " "), out)
			}

			m, err := loader.LoadWith(modelDir, loader.Options{AsStored: true})
			require.NoError(t, err)
			headDim := s.headDim
			if headDim == 0 {
				headDim = s.hidden / s.heads
			}
			c := m.Config
			require.Equal(t, [7]any{s.arch != "llama3", s.layers, s.heads, s.kvHeads, s.hidden, headDim, s.tied},
				[7]any{c.RopeScaling == nil, c.NLayer, c.NHead, c.KVHeads(), c.NEmbd, c.HeadDim(), c.Tied},
				"rope scaling off, layers, heads, KV heads, hidden, head_dim, tied")
			set, err := references.Open(refs)
			require.NoError(t, err)
			tok, err := tokenizer.Load(m.Dir)
			require.NoError(t, err)
			rep, err := Run(context.Background(), m, set, Options{Tokenizer: tok})
			require.NoError(t, err)

			for _, f := range rep.Failures() {
				t.Errorf("%s cp%d layer %s %s %v: %s", f.Case, f.Checkpoint, layerString(f.Layer), f.Name, f.Shape, f.failureLine())
			}
			var worst []string
			for _, sum := range rep.Summaries() {
				require.NotEqual(t, StatusNotImplemented, sum.Status, "checkpoint %d", sum.Checkpoint.Number)
				require.Positive(t, sum.Tensors, "checkpoint %d compared nothing", sum.Checkpoint.Number)
				worst = append(worst, fmt.Sprintf("%d:%.3f", sum.Checkpoint.Number, sum.TolRatio))
			}
			require.Len(t, worst, 12)
			t.Logf("worst err/tol by checkpoint: %s", strings.Join(worst, " "))
			require.True(t, rep.Passed, rep.Verdict())

			// The numerics keep their teeth at this shape: the layout and
			// grouping bugs are named where they enter, in the last layer.
			last := c.NLayer - 1
			requireBisect(t, m, set, model.FaultRopeLayout, last, 2, "q_rope", last)
			if model.FaultGQARepeat.AppliesTo(c) {
				requireBisect(t, m, set, model.FaultGQARepeat, last, 4, "scores", last)
			}
		})
	}
}
