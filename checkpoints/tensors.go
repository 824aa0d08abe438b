package checkpoints

import "strings"

// perLayerOrder is the forward order of the tensors inside one block.
var perLayerOrder = []string{"ln_1", "q", "k", "v", "scores", "probs", "attn_out", "ln_2", "gelu", "mlp_out", "block_out"}

// headOrder is the forward order of the tensors after the last block.
var headOrder = []string{"ln_f", "logits", "last_logits", "last_logprobs"}

// forwardRank orders tensors as the forward pass computes them, so that
// bisect can name the first one that leaves the reference. Checkpoint 3
// (a second, incremental run) and the sampling checkpoints come after.
func forwardRank(name string, layer, nLayer int) int {
	const slot = 16
	switch {
	case name == "embeddings":
		return 0
	case layer >= 0 && name != "k_cache" && name != "v_cache":
		return slot * (1 + layer*slot + indexOf(perLayerOrder, name))
	}
	base := slot * (1 + nLayer*slot)
	if i := indexOf(headOrder, name); i >= 0 {
		return base + i
	}
	base += len(headOrder)
	switch name {
	case "k_cache":
		return base + 2*layer
	case "v_cache":
		return base + 2*layer + 1
	case "step_logits":
		return base + 2*nLayer
	}
	base += 2*nLayer + 1
	if strings.HasPrefix(name, "sampling_") {
		return base + 1
	}
	return base + 2
}

func indexOf(list []string, s string) int {
	for i, v := range list {
		if v == s {
			return i
		}
	}
	return -1
}

// axesOf names the dimensions of a tensor so that an index can be read by
// a person: [H,T,D] is (head, token, channel).
func axesOf(name string) []string {
	switch name {
	case "q", "k", "v", "k_cache", "v_cache":
		return []string{"head", "token", "channel"}
	case "scores", "probs":
		return []string{"head", "query", "key"}
	case "logits":
		return []string{"token", "vocab"}
	case "last_logits", "last_logprobs", "step_logits":
		return []string{"vocab"}
	}
	if strings.HasPrefix(name, "sampling_") {
		return []string{"vocab"}
	}
	return []string{"token", "channel"}
}
