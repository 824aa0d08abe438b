package server_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/kvcache"
)

// TestSlidingWindowBoundsKV: serving tiny-llama-mistral (a window of 24 on
// every layer), a generation of 4× the window holds at most the 3 blocks
// of 16 that a window's 24 keys span, not the 7 its 108 positions fill.
func TestSlidingWindowBoundsKV(t *testing.T) {
	ts, m, _ := familyServer(t, "tiny-llama-mistral")
	prompt := make([]int, 12)
	for i := range prompt {
		prompt[i] = 100 + (i*7919)%30000
	}
	out := ts.call(t, "POST", "/v1/completions", map[string]any{
		"prompt": prompt, "max_tokens": 4 * 24, "temperature": 0, "logit_bias": map[string]any{"2": -100}}, http.StatusOK)
	require.EqualValues(t, 4*24, out["usage"].(map[string]any)["completion_tokens"])
	kv := ts.call(t, "GET", "/health", nil, http.StatusOK)["kv_cache"].(map[string]any)
	block := m.Config.KVShape().Bytes(kvcache.DefaultBlockTokens, kvcache.Options{})
	require.EqualValues(t, 3*block, kv["peak_bytes"], "blocks of %d bytes", block)
	require.EqualValues(t, 0, kv["used_blocks"])
}
