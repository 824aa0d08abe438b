package main

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/llorch/llorch-check/internal/fixture"
	"github.com/llorch/llorch-check/kernels"
	"github.com/stretchr/testify/require"
)

// runCLI runs the command line in-process and returns exit code and output.
func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = execute(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

func modelArgs(model, refs string) []string {
	return []string{"--model", model, "--references", refs}
}

func TestRunDefaultPasses(t *testing.T) {
	code, out, stderr := runCLI(t, "run", "--model", fixture.TinyModel(), "--references", fixture.TinyReferences())
	require.Equal(t, exitOK, code, stderr)
	require.Contains(t, out, "PASS: ")
	require.Contains(t, out, "PASS: 124 checks passed, 0 failed")
	require.NotContains(t, out, "NOT IMPLEMENTED")
}

// TestRunFamiliesPass is the rest of make run: each Llama-family tiny
// model, given by --model alone, finds its own reference set beside it
// and passes; a GPT-2 set for a Llama model is refused as bad input.
func TestRunFamiliesPass(t *testing.T) {
	for _, name := range fixture.Families {
		t.Run(name, func(t *testing.T) {
			code, out, stderr := runCLI(t, "run", "--model", fixture.FamilyModel(name))
			require.Equal(t, exitOK, code, stderr)
			require.Contains(t, out, "references: "+fixture.FamilyReferences(name))
			require.Regexp(t, `PASS: \d+ checks passed, 0 failed`, out)
		})
	}
	code, _, stderr := runCLI(t, "run", "--model", fixture.FamilyModel("tiny-llama"), "--references", fixture.TinyReferences())
	require.Equal(t, exitBadInput, code)
	require.Contains(t, stderr, "sha256")
	code, _, stderr = runCLI(t, "bisect", "--model", fixture.FamilyModel("tiny-llama"), "--inject-fault", "erf-gelu")
	require.Equal(t, exitBadInput, code)
	require.Contains(t, stderr, "no counterpart in this llama model: a fault of GPT-2's GELU and Conv1D")
}

// Float16 matrices of the F16 tiny model are its exact weights: every
// checkpoint passes at the default tolerances (no cost report), and the
// checkpoints still catch an injected bug.
func TestRunFloat16Weights(t *testing.T) {
	args := append([]string{"run", "--weight-dtype", "f16"}, modelArgs(fixture.TinyModel(), fixture.TinyReferences())...)
	code, out, stderr := runCLI(t, args...)
	require.Equal(t, exitOK, code, stderr)
	require.Contains(t, out, "weights:    matrices held as float16")
	require.NotContains(t, out, "cost:")
	require.Contains(t, out, "PASS: 124 checks passed, 0 failed")

	code, out, stderr = runCLI(t, append(args, "--inject-fault", "attn-scale@1")...)
	require.Equal(t, exitFailed, code, stderr)
	require.Contains(t, out, "FAIL")
}

func TestRunJSON(t *testing.T) {
	code, out, stderr := runCLI(t, append([]string{"run", "--format", "json", "--checkpoint", "4", "--layer", "1"},
		modelArgs(fixture.TinyModel(), fixture.TinyReferences())...)...)
	require.Equal(t, exitOK, code, stderr)
	var doc struct {
		Passed  bool             `json:"passed"`
		Results []map[string]any `json:"results"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &doc), "stdout must be one JSON document")
	require.True(t, doc.Passed)
	require.NotEmpty(t, doc.Results)
	for _, r := range doc.Results {
		for _, key := range []string{"checkpoint", "name", "layer", "case", "shape", "max_abs_err", "max_rel_err",
			"atol", "rtol", "mismatches", "passed", "budget_ratio", "worst", "cosine"} {
			require.Contains(t, r, key)
		}
		require.EqualValues(t, 4, r["checkpoint"])
		require.EqualValues(t, 1, r["layer"])
	}
}

func TestBisectNamesFault(t *testing.T) {
	code, out, stderr := runCLI(t, append([]string{"bisect", "--format", "json", "--inject-fault", "erf-gelu@1"},
		modelArgs(fixture.TinyModel(), fixture.TinyReferences())...)...)
	require.Equal(t, exitFailed, code, stderr)
	var doc struct {
		FirstFailure *struct {
			Checkpoint int      `json:"checkpoint"`
			Layer      *int     `json:"layer"`
			Name       string   `json:"name"`
			Case       string   `json:"case"`
			Index      []int    `json:"index"`
			Got        *float64 `json:"got"`
			Want       *float64 `json:"want"`
		} `json:"first_failure"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	require.NotNil(t, doc.FirstFailure)
	require.Equal(t, 6, doc.FirstFailure.Checkpoint)
	require.Equal(t, "gelu", doc.FirstFailure.Name)
	require.Equal(t, 1, *doc.FirstFailure.Layer)
	require.Len(t, doc.FirstFailure.Index, 2)

	code, out, _ = runCLI(t, append([]string{"bisect", "--format", "json"}, modelArgs(fixture.TinyModel(), fixture.TinyReferences())...)...)
	require.Equal(t, exitOK, code)
	require.JSONEq(t, `{"first_failure": null}`, out)

	code, out, _ = runCLI(t, append([]string{"bisect", "--inject-fault", "attn-scale@0"}, modelArgs(fixture.TinyModel(), fixture.TinyReferences())...)...)
	require.Equal(t, exitFailed, code)
	require.Contains(t, out, "first failure: checkpoint 4 (Attention scores), layer 0, tensor scores")
}

func TestRunWritesJUnitAndPlot(t *testing.T) {
	dir := t.TempDir()
	junit, plot := filepath.Join(dir, "report.xml"), filepath.Join(dir, "drift.svg")
	code, _, stderr := runCLI(t, append([]string{"run", "--junit", junit, "--plot", plot, "--inject-fault", "no-residual@1"},
		modelArgs(fixture.TinyModel(), fixture.TinyReferences())...)...)
	require.Equal(t, exitFailed, code, stderr)

	b, err := os.ReadFile(junit)
	require.NoError(t, err)
	var doc struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Suites   []struct {
			Cases []struct {
				Name    string    `xml:"name,attr"`
				Failure *struct{} `xml:"failure"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	require.NoError(t, xml.Unmarshal(b, &doc))
	require.Positive(t, doc.Failures)
	var failing []string
	for _, s := range doc.Suites {
		for _, c := range s.Cases {
			if c.Failure != nil {
				failing = append(failing, c.Name)
			}
		}
	}
	require.Contains(t, failing, "story/layer 1/ln_2", "one testcase per (case, layer, tensor)")
	require.NotContains(t, failing, "story/layer 0/ln_2", "layer 0 is untouched")

	svg, err := os.ReadFile(plot)
	require.NoError(t, err)
	require.Contains(t, string(svg), "<svg")
	require.Contains(t, string(svg), "tolerance")
}

func TestDumpThenDiff(t *testing.T) {
	out := filepath.Join(t.TempDir(), "go-refs")
	code, _, stderr := runCLI(t, append([]string{"dump", "--out", out}, modelArgs(fixture.TinyModel(), fixture.TinyReferences())...)...)
	require.Equal(t, exitOK, code, stderr)

	code, stdout, stderr := runCLI(t, "diff", fixture.TinyReferences(), out)
	require.Equal(t, exitOK, code, stderr+stdout)
	require.Contains(t, stdout, "PASS: ")
	// The tiny model is an F16 file, held as float16 by default: nothing
	// was rounded, so its dump is the reference of a float32-held run too.
	code, stdout, stderr = runCLI(t, "run", "--weight-dtype", "f32", "--model", fixture.TinyModel(), "--references", out, "--checkpoint", "9")
	require.Equal(t, exitOK, code, stderr+stdout)

	// A second dump over a different set needs --force.
	faulty := filepath.Join(t.TempDir(), "faulty")
	code, _, stderr = runCLI(t, append([]string{"dump", "--out", faulty, "--inject-fault", "erf-gelu@0"}, modelArgs(fixture.TinyModel(), fixture.TinyReferences())...)...)
	require.Equal(t, exitOK, code, stderr)
	code, stdout, _ = runCLI(t, "diff", "--format", "json", out, faulty)
	require.Equal(t, exitFailed, code)
	require.Contains(t, stdout, `"passed": false`)
	code, _, stderr = runCLI(t, append([]string{"dump", "--out", out, "--inject-fault", "erf-gelu@0"}, modelArgs(fixture.TinyModel(), fixture.TinyReferences())...)...)
	require.Equal(t, exitBadInput, code, "an existing, different set is refused without --force")
	require.Contains(t, stderr, out)
}

// TestBadInputExitsTwo breaks one file at a time; each must reach the user
// as exit code 2 with a message naming what is wrong.
func TestBadInputExitsTwo(t *testing.T) {
	tests := []struct {
		name    string
		breakIt func(t *testing.T, model, refs string)
		mention func(model, refs string) string
	}{
		{"missing model dir", func(t *testing.T, model, _ string) { require.NoError(t, os.RemoveAll(model)) },
			func(model, _ string) string { return model }},
		{"truncated safetensors", func(t *testing.T, model, _ string) {
			truncate(t, filepath.Join(model, "model.safetensors"), 1000)
		}, func(model, _ string) string { return "model.safetensors" }},
		{"safetensors header lies about its size", func(t *testing.T, model, _ string) {
			p := filepath.Join(model, "model.safetensors")
			b, err := os.ReadFile(p)
			require.NoError(t, err)
			b[0], b[1], b[2], b[3] = 0xff, 0xff, 0xff, 0x0f
			require.NoError(t, os.WriteFile(p, b, 0o644))
		}, func(model, _ string) string { return "model.safetensors" }},
		{"unsupported activation", func(t *testing.T, model, _ string) {
			fixture.EditJSON(t, filepath.Join(model, "config.json"), func(m map[string]any) { m["activation_function"] = "relu" })
		}, func(string, string) string { return "activation_function" }},
		{"weights from another model", func(t *testing.T, model, _ string) {
			p := filepath.Join(model, "model.safetensors")
			b, err := os.ReadFile(p)
			require.NoError(t, err)
			b[len(b)-1] ^= 0x01 // a different, still valid, last weight
			require.NoError(t, os.WriteFile(p, b, 0o644))
		}, func(string, string) string { return "sha256" }},
		{"missing manifest", func(t *testing.T, _, refs string) {
			require.NoError(t, os.Remove(filepath.Join(refs, "manifest.json")))
		},
			func(_, refs string) string { return "manifest.json" }},
		{"missing npy", func(t *testing.T, _, refs string) {
			require.NoError(t, os.Remove(filepath.Join(refs, "story", "l01_gelu.npy")))
		},
			func(string, string) string { return "l01_gelu.npy" }},
		{"truncated npy", func(t *testing.T, _, refs string) { truncate(t, filepath.Join(refs, "story", "l00_ln_1.npy"), 200) },
			func(string, string) string { return "l00_ln_1.npy" }},
		{"npy of the wrong dtype", func(t *testing.T, _, refs string) {
			fixture.CopyFile(t, filepath.Join(refs, "story", "l00_ln_2.f64.npy"), filepath.Join(refs, "story", "l00_ln_2.npy"))
		}, func(string, string) string { return "l00_ln_2.npy" }},
		{"npy of the wrong shape", func(t *testing.T, _, refs string) {
			fixture.CopyFile(t, filepath.Join(refs, "hello", "l00_ln_2.npy"), filepath.Join(refs, "story", "l00_ln_2.npy"))
		}, func(string, string) string { return "l00_ln_2.npy" }},
		{"NaN in a reference", func(t *testing.T, _, refs string) {
			fixture.SetNPYElement(t, filepath.Join(refs, "story", "l01_attn_out.npy"), 5, func(float32) float32 { return float32(math.NaN()) })
		}, func(string, string) string { return "l01_attn_out.npy" }},
		{"token outside the vocabulary", func(t *testing.T, _, refs string) {
			fixture.EditJSON(t, filepath.Join(refs, "manifest.json"), func(m map[string]any) {
				m["cases"].([]any)[0].(map[string]any)["tokens"].([]any)[0] = 50257
			})
		}, func(string, string) string { return "50257" }},
		{"prompt longer than the context", func(t *testing.T, _, refs string) {
			fixture.EditJSON(t, filepath.Join(refs, "manifest.json"), func(m map[string]any) {
				c := m["cases"].([]any)[0].(map[string]any)
				toks := make([]any, 129)
				for i := range toks {
					toks[i] = 13
				}
				c["tokens"] = toks
			})
		}, func(string, string) string { return "129" }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			model, refs := fixture.CopyDir(t, fixture.TinyModel()), fixture.CopyDir(t, fixture.TinyReferences())
			tc.breakIt(t, model, refs)
			code, stdout, stderr := runCLI(t, append([]string{"run"}, modelArgs(model, refs)...)...)
			require.Equal(t, exitBadInput, code, "stdout: %s\nstderr: %s", stdout, stderr)
			require.Contains(t, stderr, tc.mention(model, refs))
			require.Empty(t, stdout, "nothing half-written on stdout")
		})
	}
}

func TestBadFlagsExitTwo(t *testing.T) {
	for _, args := range [][]string{
		{"run", "--checkpoint", "13"},
		{"run", "--format", "yaml"},
		{"run", "--layer", "7"},
		{"run", "--tolerance", "4=abc"},
		{"run", "--inject-fault", "typo"},
		{"run", "--weight-dtype", "f64"},
		{"serve", "--weight-dtype", "F16x"},
		{"run", "--no-such-flag"},
		{"diff", "only-one-arg"},
		{"dump"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			code, _, stderr := runCLI(t, args...)
			require.Equal(t, exitBadInput, code)
			require.NotEmpty(t, stderr)
		})
	}
}

func TestHelpSaysWhatEachCommandDoes(t *testing.T) {
	for _, cmd := range newRootCmd().Commands() {
		if cmd.Name() == "help" || cmd.Name() == "completion" {
			continue
		}
		t.Run(cmd.Name(), func(t *testing.T) {
			code, out, _ := runCLI(t, cmd.Name(), "--help")
			require.Equal(t, exitOK, code)
			what := cmd.Short
			if cmd.Long != "" {
				what, _, _ = strings.Cut(cmd.Long, "\n")
			}
			require.NotEmpty(t, what)
			require.Contains(t, out, what)
			require.Contains(t, out, "Usage:")
		})
	}
}

func truncate(t *testing.T, path string, size int64) {
	t.Helper()
	require.NoError(t, os.Truncate(path, size))
}

// TestVersion: --version names the build and the kernels in use, which a
// bug report needs to be reproduced.
func TestVersion(t *testing.T) {
	code, out, _ := runCLI(t, "--version")
	require.Equal(t, exitOK, code)
	require.True(t, strings.HasPrefix(out, "llorch-check "), out)
	require.Contains(t, out, "commit:  ")
	require.Contains(t, out, "go:      "+runtime.Version())
	require.Contains(t, out, "kernels: "+kernels.Name())
}

// TestReportTargets: --junit and --plot never replace an input of the run,
// and say so when they replace another existing file.
func TestReportTargets(t *testing.T) {
	model, refs := fixture.CopyDir(t, fixture.TinyModel()), fixture.CopyDir(t, fixture.TinyReferences())
	args := modelArgs(model, refs)
	for _, target := range []string{filepath.Join(model, "config.json"), filepath.Join(refs, "manifest.json"), filepath.Join(model, "model.safetensors")} {
		code, _, stderr := runCLI(t, append([]string{"run", "--checkpoint", "1", "--junit", target}, args...)...)
		require.Equal(t, exitBadInput, code, target)
		require.Contains(t, stderr, "an input of this run")
	}
	code, _, stderr := runCLI(t, append([]string{"run", "--checkpoint", "1", "--plot", filepath.Join(model, "drift.svg")}, args...)...)
	require.Equal(t, exitOK, code, stderr, "a new file beside the inputs is fine")
	old := filepath.Join(t.TempDir(), "report.xml")
	require.NoError(t, os.WriteFile(old, []byte("old"), 0o644))
	code, _, stderr = runCLI(t, append([]string{"run", "--checkpoint", "1", "--junit", old}, args...)...)
	require.Equal(t, exitOK, code, stderr)
	require.Contains(t, stderr, "--junit replaces the existing "+old)
	b, err := os.ReadFile(filepath.Join(model, "config.json"))
	require.NoError(t, err)
	require.Contains(t, string(b), "n_embd", "config.json untouched")
}
