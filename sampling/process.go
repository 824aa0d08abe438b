package sampling

import (
	"cmp"
	"math"
	"slices"
)

// Process applies the logit processors of p to logits, with history (the
// prompt and the tokens generated so far) as the repetition-penalty context,
// and returns the next-token probabilities [V]. Removed tokens are exactly 0.
// Greedy settings give a one-hot vector at the argmax of the penalised
// logits.
//
// The order and semantics are those of transformers 4.40–4.46 as
// pytorch/dump_references.py pins them (checkpoint 11), with OpenAI's
// logit bias first (as HF's sequence_bias, single tokens) and its presence
// and frequency penalties after the repetition penalty (as vLLM orders
// them). The penalties count the whole history, prompt included, as
// llama.cpp's server does; vLLM counts only the generated tokens. The arithmetic is
// float64 so that no rounding of ours can move a token across a top-p or
// min-p boundary that PyTorch's float32 keeps on one side. History ids
// outside the vocabulary are ignored.
func Process(logits []float32, history []int, p Params) []float32 {
	return ProcessInto(make([]float32, len(logits)), make([]float64, len(logits)), logits, history, p)
}

// ProcessInto is Process writing the probabilities into dst and using s as
// its float64 scratch, both of len(logits): a generation passes the same
// two buffers every token, instead of 600 KB of fresh memory a token on
// GPT-2's vocabulary (which set the pace of a server's garbage
// collector). Greedy settings, temperature and the penalties allocate
// nothing; top-k and top-p sort.
func ProcessInto(dst []float32, s []float64, logits []float32, history []int, p Params) []float32 {
	dst, s = dst[:len(logits)], s[:len(logits)]
	for i, v := range logits {
		s[i] = float64(v)
	}
	for id, b := range p.LogitBias {
		if id >= 0 && id < len(s) {
			s[id] += b
		}
	}
	penalize(s, history, p.penalty())
	penalizeCounts(s, history, p.PresencePenalty, p.FrequencyPenalty)
	if p.Greedy() {
		clear(dst)
		if i := argmax64(s); i >= 0 {
			dst[i] = 1
		}
		return dst
	}
	if p.Temperature != 1 {
		for i := range s {
			s[i] /= p.Temperature
		}
	}
	if p.TopK > 0 {
		topK(s, p.TopK)
	}
	if p.TopP < 1 {
		topP(s, p.TopP)
	}
	if p.MinP > 0 {
		minP(s, p.MinP)
	}
	softmax64Into(s, s)
	for i, v := range s {
		dst[i] = float32(v)
	}
	return dst
}

// penalize is RepetitionPenaltyLogitsProcessor: each distinct token of
// history is penalised once, however often it occurs, by dividing a
// positive logit and multiplying a negative one (so both move down).
func penalize(s []float64, history []int, rp float64) {
	if rp == 1 || len(history) == 0 {
		return
	}
	seen := make(map[int]bool, len(history))
	for _, id := range history {
		if id < 0 || id >= len(s) || seen[id] {
			continue
		}
		seen[id] = true
		if s[id] < 0 {
			s[id] *= rp
		} else {
			s[id] /= rp
		}
	}
}

// penalizeCounts is OpenAI's presence and frequency penalties: each token
// of history loses presence once and frequency per occurrence.
func penalizeCounts(s []float64, history []int, presence, frequency float64) {
	if presence == 0 && frequency == 0 {
		return
	}
	counts := map[int]int{}
	for _, id := range history {
		if id >= 0 && id < len(s) {
			counts[id]++
		}
	}
	for id, n := range counts {
		s[id] -= presence + frequency*float64(n)
	}
}

// topK is TopKLogitsWarper: everything strictly below the k-th largest value
// goes, so tokens tied with the k-th all stay.
func topK(s []float64, k int) {
	k = min(k, len(s))
	sorted := slices.Clone(s)
	slices.SortFunc(sorted, func(a, b float64) int { return cmp.Compare(b, a) })
	kth := sorted[k-1]
	for i, v := range s {
		if v < kth {
			s[i] = math.Inf(-1)
		}
	}
}

// topP is TopPLogitsWarper: walking the tokens from least to most probable,
// remove them while the probability mass removed so far stays ≤ 1−p; the
// most probable token always stays. Ties are ordered by id (stable sort), so
// among equal logits the lower id is removed first, as the reference does.
func topP(s []float64, p float64) {
	order := ascending(s)
	probs := softmax64(s)
	limit := 1 - p
	cum := 0.0
	for _, i := range order[:len(order)-1] {
		cum += probs[i]
		if cum > limit {
			break
		}
		s[i] = math.Inf(-1)
	}
}

// minP is MinPLogitsWarper: remove tokens less probable than p times the
// most probable one, keeping at least the most probable.
func minP(s []float64, p float64) {
	probs := softmax64(s)
	top := argmax64(probs)
	if top < 0 {
		return
	}
	limit := p * probs[top]
	for i, v := range probs {
		if v < limit && i != top {
			s[i] = math.Inf(-1)
		}
	}
}

// ascending returns the indices of s sorted by value, ties by index (the
// order a stable sort gives, at the cost of an unstable one).
func ascending(s []float64) []int {
	type entry struct {
		v float64
		i int
	}
	e := make([]entry, len(s))
	for i, v := range s {
		e[i] = entry{v, i}
	}
	slices.SortFunc(e, func(a, b entry) int {
		if c := cmp.Compare(a.v, b.v); c != 0 {
			return c
		}
		return cmp.Compare(a.i, b.i)
	})
	order := make([]int, len(s))
	for k, x := range e {
		order[k] = x.i
	}
	return order
}
