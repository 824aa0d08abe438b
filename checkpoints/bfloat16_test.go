package checkpoints

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/internal/fixture"
	"github.com/llorch/llorch-check/loader"
	"github.com/llorch/llorch-check/references"
	"github.com/llorch/llorch-check/tokenizer"
)

// runBoth runs the BF16 model at dir against set twice, its matrices
// held as bfloat16 (--weight-dtype auto) and as float32, and requires
// the same results from both: bfloat16 widens exactly, so holding the
// file as stored changes no bit of any checkpoint.
func runBoth(t *testing.T, dir string, set *references.Set, sel Selection) *Report {
	t.Helper()
	var reps [2]*Report
	for i, opt := range []loader.Options{{AsStored: true}, {}} {
		m, err := loader.LoadWith(dir, opt)
		require.NoError(t, err)
		tok, err := tokenizer.Load(m.Dir)
		require.NoError(t, err)
		reps[i], err = Run(context.Background(), m, set, Options{Tokenizer: tok, Checkpoints: sel})
		require.NoError(t, err)
	}
	bf, f32 := reps[0], reps[1]
	require.Equal(t, "bfloat16", bf.HeldAs)
	require.Empty(t, f32.HeldAs)
	require.Nil(t, bf.Cost, "nothing is rounded: the default tolerances apply")
	require.Equal(t, f32.Results, bf.Results)
	var table bytes.Buffer
	require.NoError(t, bf.WriteTable(&table))
	require.Contains(t, table.String(), "weights:    matrices held as bfloat16\n")
	return bf
}

// TestBFloat16RunsAgainstItsOwnSet: a BF16 checkpoint held as bfloat16
// runs against a set made from its own file (here Go's dump of the
// float32-held model: no PyTorch needed) with the default tolerances and
// no difference at all, every checkpoint's error zero. Checkpoint 11 is
// left out: a dump's sampling distributions are Go's processors on the
// last logits of the set it was dumped from (another model's, here).
func TestBFloat16RunsAgainstItsOwnSet(t *testing.T) {
	for _, name := range []string{"tiny-gpt2", "tiny-llama-qwen2"} {
		t.Run(name, func(t *testing.T) {
			dir := fixture.BFloat16Copy(t, fixture.FamilyModel(name))
			sha, err := references.FileSHA256(filepath.Join(dir, "model.safetensors"))
			require.NoError(t, err)
			// The committed set's cases, as the copy's: Dump reads only them.
			src := fixture.CopyDir(t, fixture.FamilyReferences(name))
			fixture.EditJSON(t, filepath.Join(src, "manifest.json"), func(m map[string]any) {
				m["model"].(map[string]any)["weights_sha256"] = sha
			})
			srcSet, err := references.Open(src)
			require.NoError(t, err)
			m32, err := loader.LoadWith(dir, loader.Options{})
			require.NoError(t, err)
			tok, err := tokenizer.Load(m32.Dir)
			require.NoError(t, err)
			out := filepath.Join(t.TempDir(), "set")
			require.NoError(t, Dump(context.Background(), m32, srcSet, out, Options{Tokenizer: tok}))
			set, err := references.Open(out)
			require.NoError(t, err)

			sel, err := ParseSelection("")
			require.NoError(t, err)
			delete(sel, 11)
			rep := runBoth(t, dir, set, sel)
			for _, f := range rep.Failures() {
				t.Errorf("%s cp%d layer %s %s: %s", f.Case, f.Checkpoint, layerString(f.Layer), f.Name, f.failureLine())
			}
			require.True(t, rep.Passed, rep.Verdict())
			compared := 0
			for _, r := range rep.Results {
				if r.stats != nil {
					require.Zero(t, float64(r.MaxAbsErr), "%s cp%d %s", r.Case, r.Checkpoint, r.Name)
					compared++
				}
			}
			require.Positive(t, compared)
		})
	}
}

// TestBFloat16PassesPyTorchReference: a BF16 checkpoint held as bfloat16
// passes every checkpoint, 1 to 12, against the reference set
// dump_references.py makes from the same file, at the default
// tolerances, with the float32-held model's results.
func TestBFloat16PassesPyTorchReference(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a PyTorch reference set per model (-short)")
	}
	const py = "/usr/bin/python3"
	if exec.Command(py, "-c", "import torch, numpy").Run() != nil {
		// As make test: the PyTorch steps need Debian's torch; CI has it.
		require.NotEqual(t, "true", os.Getenv("CI"), "dump_references.py needs %s with torch and numpy", py)
		t.Skipf("needs %s with torch and numpy (apt-get install python3-torch python3-numpy)", py)
	}
	for _, c := range []struct{ name, cases string }{
		{"tiny-gpt2", "cases.json"},
		{"tiny-llama-qwen2", "cases-llama.json"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := fixture.BFloat16Copy(t, fixture.FamilyModel(c.name))
			refs := filepath.Join(t.TempDir(), "references")
			args := []string{filepath.Join(fixture.Root(), "pytorch", "dump_references.py"), "--model", dir,
				"--cases", filepath.Join(fixture.Root(), "testdata", c.cases), "--out", refs}
			out, err := exec.Command(py, args...).CombinedOutput()
			require.NoError(t, err, "%s: %s", strings.Join(args, " "), out)
			set, err := references.Open(refs)
			require.NoError(t, err)
			require.Equal(t, "BF16", set.Manifest.Model.WeightsDType)

			rep := runBoth(t, dir, set, nil)
			for _, f := range rep.Failures() {
				t.Errorf("%s cp%d layer %s %s: %s", f.Case, f.Checkpoint, layerString(f.Layer), f.Name, f.failureLine())
			}
			require.True(t, rep.Passed, rep.Verdict())
			require.Len(t, rep.Summaries(), 12)
			for _, s := range rep.Summaries() {
				require.NotEqual(t, StatusNotImplemented, s.Status, "checkpoint %d", s.Checkpoint.Number)
			}
		})
	}
}
