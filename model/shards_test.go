package model

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/internal/fixture"
	"github.com/llorch/llorch-check/internal/fixture/shards"
	"github.com/llorch/llorch-check/safetensors"
)

// lastLogits runs tokens through m and returns the last position's logits.
func lastLogits(t *testing.T, m *Model, tokens []int) []float32 {
	t.Helper()
	logits, err := m.Forward(context.Background(), m.NewCache(), tokens, ForwardOptions{})
	require.NoError(t, err)
	return logits
}

// TestLoadShards: a checkpoint split into shards with an index, as Hugging
// Face ships every model above ~2B, loads the same weights as the single
// file: every family's tiny model gives the same logits bit for bit, in
// the file's own dtype (F16 held as float16) and in float32.
func TestLoadShards(t *testing.T) {
	for _, name := range []string{"tiny-gpt2", "tiny-llama", "tiny-llama3", "tiny-llama-qwen2", "tiny-llama-qwen3", "tiny-llama-mistral", "tiny-llama-phi3"} {
		t.Run(name, func(t *testing.T) {
			src := fixture.FamilyModel(name)
			for _, dtype := range []string{"", "F32"} {
				dir := shards.Copy(t, src, 3, dtype)
				opt := LoadOptions{AsStored: true}
				want, err := LoadWith(src, LoadOptions{AsStored: dtype == ""})
				require.NoError(t, err)
				got, err := LoadWith(dir, opt)
				require.NoError(t, err)
				require.Equal(t, filepath.Join(dir, safetensors.IndexFile), got.WeightsPath)
				require.Equal(t, want.Float16, got.Float16, "matrices held alike")
				tokens := []int{1, 450, 7483, 310, 3444, 338}
				w, g := lastLogits(t, want, tokens), lastLogits(t, got, tokens)
				for i := range w {
					if math.Float32bits(w[i]) != math.Float32bits(g[i]) {
						t.Fatalf("dtype %q: logit %d: single file %g, shards %g", dtype, i, w[i], g[i])
					}
				}
			}
		})
	}
}

// TestLoadShardErrors: a broken sharded checkpoint is refused with an
// error naming the file and the tensor or shard at fault.
func TestLoadShardErrors(t *testing.T) {
	src := fixture.FamilyModel("tiny-llama-qwen2")
	editIndex := func(edit func(wm map[string]any)) func(t *testing.T, dir string) {
		return func(t *testing.T, dir string) {
			fixture.EditJSON(t, filepath.Join(dir, safetensors.IndexFile), func(m map[string]any) {
				edit(m["weight_map"].(map[string]any))
			})
		}
	}
	for _, tc := range []struct {
		name   string
		break_ func(t *testing.T, dir string)
		want   []string
	}{
		{"missing shard", func(t *testing.T, dir string) {
			require.NoError(t, os.Remove(filepath.Join(dir, shards.ShardName(1, 3))))
		}, []string{safetensors.IndexFile, "lists shard " + shards.ShardName(1, 3) + ", which is missing"}},
		{"tensor the index puts in a shard that lacks it", editIndex(func(wm map[string]any) {
			wm["model.layers.9.mlp.up_proj.weight"] = shards.ShardName(2, 3)
		}), []string{`"model.layers.9.mlp.up_proj.weight"`, "does not hold it", shards.ShardName(2, 3)}},
		{"tensor in a shard the index does not list", editIndex(func(wm map[string]any) {
			delete(wm, "model.norm.weight")
		}), []string{`"model.norm.weight"`, "does not list"}},
		{"tensor the index puts elsewhere", editIndex(func(wm map[string]any) {
			wm["model.norm.weight"] = shards.ShardName(0, 3)
		}), []string{`"model.norm.weight"`, shards.ShardName(0, 3), "which does not hold it"}},
		{"shard name with a path", editIndex(func(wm map[string]any) {
			wm["model.norm.weight"] = "../" + shards.ShardName(2, 3)
		}), []string{safetensors.IndexFile, "not a file name beside the index"}},
		{"index not JSON", func(t *testing.T, dir string) {
			require.NoError(t, os.WriteFile(filepath.Join(dir, safetensors.IndexFile), []byte("{\"weight_map\": "), 0o644))
		}, []string{safetensors.IndexFile, "not valid JSON"}},
		{"empty index", func(t *testing.T, dir string) {
			require.NoError(t, os.WriteFile(filepath.Join(dir, safetensors.IndexFile), []byte(`{"metadata": {}}`), 0o644))
		}, []string{safetensors.IndexFile, "no weight_map"}},
		{"tensor in two shards", func(t *testing.T, dir string) {
			// A fourth file holds a copy of a tensor the first shard
			// holds, and the index lists the file: the copy is named.
			ts := shards.Read(t, src)
			part := append([]shards.Tensor{}, ts[:1]...)
			part[0].DType = "F16"
			require.NoError(t, os.WriteFile(filepath.Join(dir, "extra.safetensors"), shards.File(t, part), 0o644))
			fixture.EditJSON(t, filepath.Join(dir, safetensors.IndexFile), func(m map[string]any) {
				m["weight_map"].(map[string]any)["x"] = "extra.safetensors"
			})
		}, []string{"extra.safetensors holds tensor", "puts in " + shards.ShardName(0, 3)}},
		{"no weights", func(t *testing.T, dir string) {
			require.NoError(t, os.Remove(filepath.Join(dir, safetensors.IndexFile)))
		}, []string{"neither model.safetensors nor model.safetensors.index.json"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := shards.Copy(t, src, 3, "")
			tc.break_(t, dir)
			_, err := Load(dir)
			require.Error(t, err)
			for _, w := range tc.want {
				require.ErrorContains(t, err, w)
			}
		})
	}
}

// TestShardIndexJSON: the index the fixture writes is HF's shape, so the
// tests above exercise the layout real checkpoints have.
func TestShardIndexJSON(t *testing.T) {
	dir := shards.Copy(t, fixture.FamilyModel("tiny-llama"), 2, "BF16")
	b, err := os.ReadFile(filepath.Join(dir, safetensors.IndexFile))
	require.NoError(t, err)
	var ix struct {
		Metadata  map[string]any    `json:"metadata"`
		WeightMap map[string]string `json:"weight_map"`
	}
	require.NoError(t, json.Unmarshal(b, &ix))
	require.Contains(t, ix.Metadata, "total_size")
	require.Equal(t, shards.ShardName(0, 2), ix.WeightMap["model.embed_tokens.weight"])
}
