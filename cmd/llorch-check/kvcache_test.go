package main

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/gguf"
	"github.com/llorch/llorch-check/internal/fixture"
	"github.com/llorch/llorch-check/references"
	"github.com/llorch/llorch-check/tensors"
)

func f16KVReferences(name string) string {
	return filepath.Join(fixture.Root(), "testdata", "references", name+"-f16kv")
}

// TestKVCacheDTypePairing: --kv-cache-dtype f16 and the sets of the f16-kv
// profile go together; either alone is bad input (exit 2) naming the set
// and the flag, for run and bisect alike; --kv-cache-dtype f16 without
// --references takes the model's f16-kv set where there is one.
func TestKVCacheDTypePairing(t *testing.T) {
	gpt2, qwen2 := fixture.TinyModel(), fixture.FamilyModel("tiny-llama-qwen2")
	tests := []struct {
		name     string
		args     []string
		wantCode int      // exitBadInput, exitOK (every checkpoint passed), or -1: it ran (passed or failed)
		want     []string // in stderr for exit 2, in stdout otherwise
	}{
		{"f16-kv set, float32 cache", []string{"run", "--model", gpt2, "--references", f16KVReferences("tiny-gpt2")},
			exitBadInput, []string{f16KVReferences("tiny-gpt2"), "applies f16-kv's approximations", "run with --kv-cache-dtype f16"}},
		{"bisect: f16-kv set, float32 cache", []string{"bisect", "--model", qwen2, "--references", f16KVReferences("tiny-llama-qwen2")},
			exitBadInput, []string{f16KVReferences("tiny-llama-qwen2"), "--kv-cache-dtype f16"}},
		{"plain set, float16 cache", []string{"run", "--model", gpt2, "--references", fixture.TinyReferences(), "--kv-cache-dtype", "f16"},
			exitBadInput, []string{"--kv-cache-dtype f16: " + fixture.TinyReferences() + " is a plain reference set", "fails by design"}},
		{"bisect: plain set, float16 cache", []string{"bisect", "--kv-cache-dtype", "f16", "--model", qwen2, "--references", fixture.FamilyReferences("tiny-llama-qwen2")},
			exitBadInput, []string{fixture.FamilyReferences("tiny-llama-qwen2") + " is a plain reference set"}},
		{"a model without an f16-kv set", []string{"run", "--model", fixture.FamilyModel("tiny-llama"), "--kv-cache-dtype", "f16"},
			exitBadInput, []string{fixture.FamilyReferences("tiny-llama") + " is a plain reference set"}},
		{"another engine's set", []string{"run", "--kv-cache-dtype", "f16", "--model", gpt2, "--references", llamacppSet(t)},
			exitBadInput, []string{"applies llamacpp-cpu's approximations", "not llorch-check's forward"}},
		{"unknown dtype", []string{"run", "--kv-cache-dtype", "f8"},
			exitBadInput, []string{`--kv-cache-dtype "f8": want f32 or f16`}},
		{"bisect --dump", []string{"bisect", "--kv-cache-dtype", "f16", "--dump", fixture.TinyReferences()},
			exitBadInput, []string{"--kv-cache-dtype configures Go's forward"}},
		{"f16-kv set, float16 cache", []string{"run", "--model", gpt2, "--references", f16KVReferences("tiny-gpt2"), "--kv-cache-dtype", "f16"},
			exitOK, []string{"references: " + f16KVReferences("tiny-gpt2"), "kv cache:   float16; checkpoint 3 modulo float16 rounding flips (15 found)", "emulates:   f16-kv", "PASS:"}},
		{"the f16-kv set found beside the plain one", []string{"run", "--model", qwen2, "--kv-cache-dtype", "f16"},
			exitOK, []string{"references: " + f16KVReferences("tiny-llama-qwen2"), "kv cache:   float16", "PASS:"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, tc.args...)
			out := stdout
			switch tc.wantCode {
			case exitBadInput:
				require.Equal(t, exitBadInput, code, stdout+stderr)
				out = stderr
			case exitOK:
				require.Equal(t, exitOK, code, stdout+stderr)
			default:
				require.NotEqual(t, exitBadInput, code, stderr)
			}
			for _, s := range tc.want {
				require.Contains(t, out, s)
			}
		})
	}
}

// llamacppSet is the tiny set relabelled as llama.cpp's f16kv profile.
func llamacppSet(t *testing.T) string {
	t.Helper()
	dir := fixture.CopyDir(t, fixture.TinyReferences())
	fixture.EditJSON(t, filepath.Join(dir, references.ManifestFile), func(m map[string]any) {
		m["generator"] = map[string]any{"emulates": map[string]any{"profile": "llamacpp-cpu", "applies": "ggml's float16 GELU table"}}
	})
	return dir
}

// TestDumpKVCacheDType: dump --kv-cache-dtype f16 writes the float16
// cache's values at checkpoint 3 and says so in the manifest.
func TestDumpKVCacheDType(t *testing.T) {
	for _, dtype := range []string{"f32", "f16"} {
		t.Run(dtype, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "go-refs")
			code, _, stderr := runCLI(t, "dump", "--out", out, "--kv-cache-dtype", dtype,
				"--model", fixture.TinyModel(), "--references", f16KVReferences("tiny-gpt2"))
			require.Equal(t, exitOK, code, stderr)
			set, err := references.Open(out)
			require.NoError(t, err)
			ti, ok := set.Find("long", tensors.VCache, 1)
			require.True(t, ok)
			v, err := set.Tensor(ti)
			require.NoError(t, err)
			halves := 0
			for _, x := range v {
				if gguf.Float16To32(gguf.Float32To16(x)) == x {
					halves++
				}
			}
			if dtype == "f16" {
				require.Equal(t, references.Float16, set.Manifest.Generator["kv_cache"])
				require.Equal(t, len(v), halves, "every cached value a float16")
			} else {
				require.Nil(t, set.Manifest.Generator["kv_cache"])
				require.Less(t, halves, len(v)/2)
			}
		})
	}
}
