package model

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/gguf"
	"github.com/llorch/llorch-check/internal/fixture"
	"github.com/llorch/llorch-check/internal/fixture/shards"
	"github.com/llorch/llorch-check/safetensors"
)

var convertTypes = []gguf.GGMLType{gguf.GGMLTypeF32, gguf.GGMLTypeF16, gguf.GGMLTypeBF16, gguf.GGMLTypeQ8_0}

// convertFile is a GGUFFile with every part set: a name, tokenizer keys
// (the Llama family's placed among the model's, its BOS id the config's)
// and the source's sha256.
func convertFile(typ gguf.GGMLType, dir string) GGUFFile {
	tok := []gguf.KV{
		gguf.StringKV("tokenizer.ggml.model", "gpt2"),
		gguf.ArrayKV("tokenizer.ggml.tokens", gguf.TypeString, []string{"a", "b"}),
	}
	if dir != fixture.TinyModel() {
		tok = append(tok, gguf.Uint32KV(keyBOS, 7))
	}
	return GGUFFile{Type: typ, Name: "tiny", SourceSHA256: "0123abcd", Tokenizer: tok}
}

func tinyModels() []string {
	dirs := []string{fixture.TinyModel()}
	for _, name := range fixture.Families {
		dirs = append(dirs, fixture.FamilyModel(name))
	}
	return dirs
}

// ConvertGGUF, tensor by tensor from the mapping, writes byte for byte
// the file WriteGGUF writes from the loaded model (the whole model in
// memory, the oracle), for GPT-2 and every Llama-family architecture
// (q/k rows permuted, rope_freqs, Phi-3's fused tensors, Qwen's biases
// and norms) in every output type.
func TestConvertGGUFMatchesWriteGGUF(t *testing.T) {
	out := t.TempDir()
	for _, dir := range tinyModels() {
		m, err := Load(dir)
		require.NoError(t, err)
		for _, typ := range convertTypes {
			t.Run(filepath.Base(dir)+"/"+typ.String(), func(t *testing.T) {
				f := convertFile(typ, dir)
				want, got := filepath.Join(out, "want.gguf"), filepath.Join(out, "got.gguf")
				ww, err := m.WriteGGUF(want, f)
				require.NoError(t, err)
				var seen []string
				gw, err := ConvertGGUF(dir, got, f, func(i, n int, name string) {
					require.Equal(t, len(seen), i)
					require.Equal(t, ww.Tensors, n)
					seen = append(seen, name)
				})
				require.NoError(t, err)
				require.Equal(t, ww, gw)
				require.Len(t, seen, ww.Tensors)
				requireSameFile(t, want, got)
			})
		}
	}
}

func requireSameFile(t *testing.T, want, got string) {
	t.Helper()
	a, err := os.ReadFile(want)
	require.NoError(t, err)
	b, err := os.ReadFile(got)
	require.NoError(t, err)
	require.Equal(t, len(a), len(b), "file sizes")
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("%s and %s first differ at byte %d of %d", want, got, i, len(a))
		}
	}
}

// A sharded bfloat16 checkpoint converts to the bytes of the single-file
// checkpoint holding the same bfloat16 values, and to what WriteGGUF
// writes from the sharded model loaded whole.
func TestConvertGGUFShards(t *testing.T) {
	out := t.TempDir()
	for _, dir := range tinyModels() {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			sharded := shards.Copy(t, dir, 3, "BF16")
			single := fixture.CopyDir(t, dir)
			ts := shards.Read(t, dir)
			for i := range ts {
				ts[i].DType = "BF16"
			}
			require.NoError(t, os.WriteFile(filepath.Join(single, safetensors.SingleFile), shards.File(t, ts), 0o644))
			f := convertFile(gguf.GGMLTypeBF16, dir)
			f.SourceSHA256 = "" // the two checkpoints' hashes differ; their tensors must not
			fromShards, fromSingle, loaded := filepath.Join(out, "shards.gguf"), filepath.Join(out, "single.gguf"), filepath.Join(out, "loaded.gguf")
			_, err := ConvertGGUF(sharded, fromShards, f, nil)
			require.NoError(t, err)
			_, err = ConvertGGUF(single, fromSingle, f, nil)
			require.NoError(t, err)
			requireSameFile(t, fromSingle, fromShards)
			m, err := Load(sharded)
			require.NoError(t, err)
			_, err = m.WriteGGUF(loaded, f)
			require.NoError(t, err)
			requireSameFile(t, loaded, fromShards)
		})
	}
}

// What the checkpoint lacks or holds too much of is refused, naming the
// tensor, and no file is left.
func TestConvertGGUFErrors(t *testing.T) {
	tests := []struct {
		name string
		dir  string
		edit func(t *testing.T, dir string)
		want string
	}{
		{"llama tensor missing", "tiny-llama", func(t *testing.T, dir string) {
			dropSafetensor(t, dir, "model.layers.1.mlp.up_proj.weight")
		}, `missing tensor "layers.1.mlp.up_proj.weight"`},
		{"gpt2 tensor missing", "tiny-gpt2", func(t *testing.T, dir string) {
			dropSafetensor(t, dir, "h.0.ln_1.bias")
		}, `missing tensor "h.0.ln_1.bias"`},
		{"llama shape", "tiny-llama", func(t *testing.T, dir string) {
			fixture.EditJSON(t, filepath.Join(dir, "config.json"), func(c map[string]any) { c["intermediate_size"] = 7 })
		}, "config.json implies"},
		{"no weights", "tiny-llama-qwen2", func(t *testing.T, dir string) {
			require.NoError(t, os.Remove(filepath.Join(dir, safetensors.SingleFile)))
		}, "no weights"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := fixture.TinyModel()
			if tc.dir != "tiny-gpt2" {
				src = fixture.FamilyModel(tc.dir)
			}
			dir := fixture.CopyDir(t, src)
			tc.edit(t, dir)
			outDir := t.TempDir()
			_, err := ConvertGGUF(dir, filepath.Join(outDir, "out.gguf"), convertFile(gguf.GGMLTypeF16, src), nil)
			require.ErrorContains(t, err, tc.want)
			entries, err := os.ReadDir(outDir)
			require.NoError(t, err)
			require.Empty(t, entries)
		})
	}
}

// dropSafetensor rewrites dir's model.safetensors without one tensor.
func dropSafetensor(t *testing.T, dir, name string) {
	t.Helper()
	var keep []shards.Tensor
	for _, x := range shards.Read(t, dir) {
		if x.Name != name {
			keep = append(keep, x)
		}
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, safetensors.SingleFile), shards.File(t, keep), 0o644))
}

// A BF16 file holds every matrix as the F32 file's values rounded to
// bfloat16 (ggml's rounding), norms, biases and position_embd as F32
// (llama.cpp's converter's choice for f16 and bf16 alike), and loads
// back into a model that runs.
func TestConvertGGUFBF16(t *testing.T) {
	out := t.TempDir()
	for _, dir := range tinyModels() {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			f32Path, bf16Path := filepath.Join(out, "f32.gguf"), filepath.Join(out, "bf16.gguf")
			_, err := ConvertGGUF(dir, f32Path, GGUFFile{Type: gguf.GGMLTypeF32}, nil)
			require.NoError(t, err)
			w, err := ConvertGGUF(dir, bf16Path, GGUFFile{Type: gguf.GGMLTypeBF16}, nil)
			require.NoError(t, err)
			require.Contains(t, w.Types, "BF16")
			a, err := gguf.Open(f32Path)
			require.NoError(t, err)
			defer a.Close()
			b, err := gguf.Open(bf16Path)
			require.NoError(t, err)
			defer b.Close()
			ft, ok := b.Get("general.file_type")
			require.True(t, ok)
			require.Equal(t, uint32(32), ft.V, "LLAMA_FTYPE_MOSTLY_BF16")
			require.Len(t, b.Tensors, len(a.Tensors))
			for i, ti := range b.Tensors {
				want := a.Tensors[i]
				require.Equal(t, want.Name, ti.Name)
				require.Equal(t, want.Dims, ti.Dims)
				if len(ti.Dims) == 1 || ti.Name == "position_embd.weight" {
					require.Equal(t, gguf.GGMLTypeF32, ti.Type, ti.Name)
				} else {
					require.Equal(t, gguf.GGMLTypeBF16, ti.Type, ti.Name)
				}
				raw, err := a.TensorData(want.Name)
				require.NoError(t, err)
				vals := make([]float32, want.Elements())
				require.NoError(t, gguf.DecodeFloat32(gguf.GGMLTypeF32, raw, vals))
				if raw, err = b.TensorData(ti.Name); err != nil {
					t.Fatal(err)
				}
				got := make([]float32, ti.Elements())
				require.NoError(t, gguf.DecodeFloat32(ti.Type, raw, got))
				for j, v := range vals {
					if ti.Type == gguf.GGMLTypeBF16 {
						v = math.Float32frombits(uint32(gguf.Float32ToBF16(v)) << 16)
					}
					if math.Float32bits(v) != math.Float32bits(got[j]) {
						t.Fatalf("%s[%d]: %g, want %g", ti.Name, j, got[j], v)
					}
				}
			}
			m, err := Load(bf16Path)
			require.NoError(t, err)
			logits, err := m.Forward(context.Background(), m.NewCache(), []int{1, 2, 3}, ForwardOptions{})
			require.NoError(t, err)
			require.Len(t, logits, m.Config.VocabSize)
		})
	}
}
