package tensors

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRank(t *testing.T) {
	const nLayer = 2
	order := []struct {
		name  string
		layer int
	}{
		{"embeddings", -1},
		{"ln_1", 0}, {"q", 0}, {"k", 0}, {"v", 0}, {"scores", 0}, {"probs", 0},
		{"attn_out", 0}, {"ln_2", 0}, {"gelu", 0}, {"mlp_out", 0}, {"block_out", 0},
		{"ln_1", 1}, {"block_out", 1},
		{"ln_f", -1}, {"logits", -1}, {"last_logits", -1}, {"last_logprobs", -1},
		{"k_cache", 0}, {"v_cache", 0}, {"k_cache", 1}, {"step_logits", -1},
		{"sampling_top_k", -1},
	}
	llama := []struct {
		name  string
		layer int
	}{
		{"embeddings", -1},
		{"attn_norm", 0}, {"q", 0}, {"k", 0}, {"v", 0}, {"q_norm", 0}, {"k_norm", 0}, {"q_rope", 0}, {"k_rope", 0},
		{"scores", 0}, {"probs", 0}, {"attn_out", 0}, {"ffn_norm", 0}, {"gate", 0}, {"up", 0}, {"act", 0},
		{"router_logits", 0}, {"experts", 0}, {"expert_weights", 0}, {"expert_gate", 0}, {"expert_down", 0},
		{"down", 0}, {"block_out", 0}, {"attn_norm", 1}, {"block_out", 1},
		{"norm", -1}, {"logits", -1}, {"k_cache", 0}, {"step_logits", -1},
	}
	for _, order := range [][]struct {
		name  string
		layer int
	}{order, llama} {
		for i := 1; i < len(order); i++ {
			a, b := order[i-1], order[i]
			require.Less(t, Rank(a.name, a.layer, nLayer), Rank(b.name, b.layer, nLayer), "%v before %v", a, b)
		}
	}
}

func TestLookup(t *testing.T) {
	for _, c := range []struct {
		name       string
		checkpoint int
		perLayer   bool
	}{
		{"ln_1", 1, true}, {"k_cache", 3, true}, {"logits", 8, false}, {"sampling_openai", 11, false},
	} {
		k, ok := Lookup(c.name)
		require.True(t, ok, c.name)
		require.Equal(t, c.checkpoint, k.Checkpoint, c.name)
		require.Equal(t, c.perLayer, k.PerLayer, c.name)
		require.Equal(t, c.checkpoint, Checkpoint(c.name))
	}
	_, ok := Lookup("attn_weights")
	require.False(t, ok)
	require.Equal(t, []string{"gelu", "mlp_out", "gate", "up", "act", "router_logits", "experts", "expert_weights",
		"expert_gate", "expert_up", "expert_act", "expert_down", "down"}, Names(6))
	require.Equal(t, []string{"sampling_<name>"}, Names(11))
	require.Empty(t, Names(12))
	for _, c := range []struct {
		name string
		dims Dims
		want []int
	}{
		{"q", Dims{NEmbd: 64, NHead: 4, VocabSize: 9}, []int{4, 7, 16}},
		{"k", Dims{NEmbd: 64, NHead: 4, VocabSize: 9}, []int{4, 7, 16}},
		{"gelu", Dims{NEmbd: 64, NHead: 4, VocabSize: 9}, []int{7, 256}},
		// Qwen3: head_dim apart from hidden/heads, grouped KV heads.
		{"q_rope", Dims{NEmbd: 64, NHead: 4, NKVHead: 2, HeadDim: 32, NInner: 96}, []int{4, 7, 32}},
		{"k_cache", Dims{NEmbd: 64, NHead: 4, NKVHead: 2, HeadDim: 32, NInner: 96}, []int{2, 7, 32}},
		{"act", Dims{NEmbd: 64, NHead: 4, NKVHead: 2, HeadDim: 32, NInner: 96}, []int{7, 96}},
		// A mixture of experts: 4 experts, 2 a token, each 32 wide.
		{"router_logits", Dims{NEmbd: 64, NHead: 4, NInner: 96, NExperts: 4, TopK: 2, MoEInner: 32}, []int{7, 4}},
		{"experts", Dims{NEmbd: 64, NHead: 4, NInner: 96, NExperts: 4, TopK: 2, MoEInner: 32}, []int{7, 2}},
		{"expert_act", Dims{NEmbd: 64, NHead: 4, NInner: 96, NExperts: 4, TopK: 2, MoEInner: 32}, []int{7, 2, 32}},
		{"expert_down", Dims{NEmbd: 64, NHead: 4, NInner: 96, NExperts: 4, TopK: 2, MoEInner: 32}, []int{7, 2, 64}},
	} {
		k, _ := Lookup(c.name)
		require.Equal(t, c.want, k.Shape(c.dims, 7), c.name)
	}
}
