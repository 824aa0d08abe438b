package generation

import (
	"cmp"
	"context"
	"slices"

	"github.com/llorch/llorch-check/sampling"
)

// tokenLogProbs is id's log-probability under logits and the top most
// probable tokens (ties to the lower id, as Argmax breaks them).
func tokenLogProbs(logits []float32, id, top int) (float64, []TokenLogProb) {
	lp := sampling.LogSoftmax(logits)
	return lp[id], topLogProbs(lp, top)
}

func topLogProbs(lp []float64, top int) []TokenLogProb {
	if top <= 0 {
		return nil
	}
	// A bounded insertion keeps this O(V·top) without sorting V entries;
	// top is small (OpenAI allows at most 5).
	out := make([]TokenLogProb, 0, top+1)
	for i, v := range lp {
		if len(out) == top && !(v > out[top-1].LogProb) {
			continue
		}
		at, _ := slices.BinarySearchFunc(out, v, func(e TokenLogProb, v float64) int { return cmp.Compare(v, e.LogProb) })
		// Equal values go after the existing ones, so lower ids stay first.
		for at < len(out) && out[at].LogProb == v {
			at++
		}
		out = slices.Insert(out, at, TokenLogProb{ID: i, LogProb: v})
		if len(out) > top {
			out = out[:top]
		}
	}
	return out
}

// PromptLogProb is the score of one prompt token given the tokens before it.
type PromptLogProb struct {
	LogProb     float64
	TopLogProbs []TokenLogProb
}

// PromptLogProbs scores every prompt token after the first with one forward
// pass (the first has no context, so OpenAI's echo reports null for it):
// element i-1 is token i's log-probability and the top most probable tokens
// at position i. The prompt must be valid (ValidatePrompt).
func PromptLogProbs(ctx context.Context, d Decoder, tokens []int, top int) ([]PromptLogProb, error) {
	if err := ValidatePrompt(tokens, d.ContextLength(), d.VocabSize()); err != nil {
		return nil, err
	}
	if len(tokens) < 2 {
		return nil, nil
	}
	out := make([]PromptLogProb, len(tokens)-1)
	err := eachRow(ctx, d, tokens[:len(tokens)-1], 0, func(j int, row []float32) error {
		lp := sampling.LogSoftmax(row)
		out[j] = PromptLogProb{LogProb: lp[tokens[j+1]], TopLogProbs: topLogProbs(lp, top)}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
