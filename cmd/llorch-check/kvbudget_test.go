package main

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/internal/fixture"
	"github.com/llorch/llorch-check/internal/fixture/shards"
	"github.com/llorch/llorch-check/kvcache"
	"github.com/llorch/llorch-check/loader"
)

// TestKVBudget: serve's default KV bound is --parallel full contexts where
// they fit beside the weights, else what the memory left after the
// weights holds (a Llama 3.x config's 131072-token context on a 24 GB
// machine), in whole blocks; --kv-cache-tokens overrides; a machine the
// weights fill is refused.
func TestKVBudget(t *testing.T) {
	dir := fixture.CopyDir(t, fixture.FamilyModel("tiny-llama3"))
	fixture.EditJSON(t, filepath.Join(dir, "config.json"), func(m map[string]any) { m["max_position_embeddings"] = 1 << 24 })
	cfg, err := loader.ReadConfig(dir)
	require.NoError(t, err)
	opt, err := parseKVCacheDType("f32")
	require.NoError(t, err)
	held, err := loader.HeldBytes(dir, loader.Options{AsStored: true})
	require.NoError(t, err)
	var params int64
	for _, x := range shards.Read(t, dir) {
		params += int64(len(x.Values))
	}
	require.Equal(t, 2*params, held, "float16 weights held as stored")
	held32, err := loader.HeldBytes(dir, loader.Options{})
	require.NoError(t, err)
	require.Equal(t, 4*params, held32, "--weight-dtype f32 widens them")
	f := serveFlags{parallel: 4, kvCacheDType: "f32", model: modelFlags{weightDType: "auto"}}

	const gb = int64(1e9)
	for _, total := range []int64{8 * gb, 24 * gb} {
		tokens, why, err := f.kvBudgetIn(dir, total)
		require.NoError(t, err)
		free := total - held - kvHeadroom(total)
		require.Less(t, tokens, 4<<24, "four full contexts (%d GB) do not fit", cfg.KVShape().Bytes(4<<24, opt)/gb)
		require.Zero(t, tokens%kvcache.DefaultBlockTokens)
		require.LessOrEqual(t, cfg.KVShape().Bytes(int64(tokens), opt), free)
		require.Greater(t, cfg.KVShape().Bytes(int64(tokens+kvcache.DefaultBlockTokens), opt), free, "every whole block that fits")
		require.Contains(t, why, "the memory left after the weights")
		require.Contains(t, why, "--parallel 4 × context 16777216 would need")
	}

	small := fixture.FamilyModel("tiny-llama3")
	tokens, why, err := f.kvBudgetIn(small, 24*gb)
	require.NoError(t, err)
	require.Equal(t, 4*128, tokens)
	require.Equal(t, "--parallel 4 × context 128", why)

	f.kvCacheTokens = 4096
	tokens, why, err = f.kvBudgetIn(dir, 24*gb)
	require.NoError(t, err)
	require.Equal(t, 4096, tokens)
	require.Equal(t, "--kv-cache-tokens", why)

	f.kvCacheTokens = 0
	_, _, err = f.kvBudgetIn(dir, 1<<30)
	require.ErrorContains(t, err, "leave no room for a KV cache")
}
