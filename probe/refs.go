package probe

import (
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/llorch/llorch-check/references"
	"github.com/llorch/llorch-check/sampling"
	"github.com/llorch/llorch-check/tensors"
	"github.com/llorch/llorch-check/tokenizer"
)

// refCase is what the probe compares one case's answers with.
type refCase struct {
	references.Case
	// Rows are the prompt positions whose logits the set keeps and whose
	// next token is in the prompt; RowLP[i] is row i's log-softmax (of
	// PyTorch's float32 logits) and RowTruth[i] the float64 twin's.
	Rows     []int
	RowLP    [][]float64
	RowTruth [][]float64
	// LastLogits and LastLP are the last position's logits and
	// log-softmax (checkpoint 9); LastTruth the twin's log-softmax.
	LastLogits []float32
	LastLP     []float32
	LastTruth  []float64
	Greedy     int // checkpoint 10's token, -1 when the set has none
	Gen        *references.GenerationResult
	GenN       int // tokens to ask for: the reference's N, or fewer when it stopped at EOS
}

// loadCases reads what the probe needs of every case of set.
func loadCases(set *references.Set) ([]refCase, error) {
	var out []refCase
	for _, c := range set.Manifest.Cases {
		rc := refCase{Case: c, Greedy: -1}
		if err := rc.loadRows(set); err != nil {
			return nil, fmt.Errorf("case %s: %w", c.ID, err)
		}
		if ti, ok := set.Find(c.ID, tensors.LastLogits, references.NoLayer); ok {
			v, err := set.Tensor(ti)
			if err != nil {
				return nil, fmt.Errorf("case %s: %w", c.ID, err)
			}
			rc.LastLogits = v
		}
		if ti, ok := set.Find(c.ID, tensors.LastLogprobs, references.NoLayer); ok {
			v, err := set.Tensor(ti)
			if err != nil {
				return nil, fmt.Errorf("case %s: %w", c.ID, err)
			}
			if rc.LastTruth, err = set.TensorF64(ti); err != nil {
				return nil, fmt.Errorf("case %s: %w", c.ID, err)
			}
			rc.LastLP = v
		}
		for _, g := range set.Manifest.Greedy {
			if g.Case == c.ID {
				rc.Greedy = g.Token
			}
		}
		if gen := set.Manifest.Generation; gen != nil {
			for i, r := range gen.Results {
				if r.Case == c.ID && len(r.Tokens) > 0 {
					rc.Gen, rc.GenN = &gen.Results[i], min(gen.N, len(r.Tokens))
				}
			}
		}
		out = append(out, rc)
	}
	return out, nil
}

// generatedText gives each generation without a text (a set written
// without a Python tokenizer, as the Llama family's are) the text tok
// decodes its ids to as a continuation of the prompt (a SentencePiece
// piece's leading space kept, as servers return it), the final EOS left
// out as for text the set records; without tok those generations are
// compared by id only.
func generatedText(cases []refCase, tok *tokenizer.Tokenizer) error {
	if tok == nil {
		return nil
	}
	for i := range cases {
		g := cases[i].Gen
		if g == nil || g.Text != nil {
			continue
		}
		ids := g.Tokens
		if g.StopReason == "eos" && len(ids) > 0 {
			ids = ids[:len(ids)-1]
		}
		text, err := tok.DecodeContinuation(ids)
		if err != nil {
			return fmt.Errorf("case %s: decoding the reference generation: %w", cases[i].ID, err)
		}
		gen := *g
		gen.Text = &text
		cases[i].Gen = &gen
	}
	return nil
}

func (rc *refCase) loadRows(set *references.Set) error {
	ti, ok := set.Find(rc.ID, tensors.Logits, references.NoLayer)
	if !ok || len(rc.Tokens) < 2 {
		return nil
	}
	want, err := set.Tensor(ti)
	if err != nil {
		return err
	}
	truth, err := set.TensorF64(ti)
	if err != nil {
		return err
	}
	rows := ti.Rows
	if rows == nil {
		for r := range ti.Shape[0] {
			rows = append(rows, r)
		}
	}
	V := ti.Shape[1]
	for i, pos := range rows {
		if pos+1 >= len(rc.Tokens) {
			continue // the last position predicts past the prompt
		}
		rc.Rows = append(rc.Rows, pos)
		rc.RowLP = append(rc.RowLP, sampling.LogSoftmax(want[i*V:(i+1)*V]))
		if truth != nil {
			rc.RowTruth = append(rc.RowTruth, sampling.LogSoftmax(truth[i*V:(i+1)*V]))
		}
	}
	return nil
}

// prompt is the case's text, for APIs that take text.
func (rc *refCase) prompt(api string) (string, error) {
	if rc.Prompt == nil {
		return "", fmt.Errorf("case %s has token ids but no prompt text, and the %s API takes text", rc.ID, api)
	}
	return *rc.Prompt, nil
}

// topValues returns the k largest of row, largest first.
func topValues[T float32 | float64](row []T, k int) []float64 {
	v := make([]float64, len(row))
	for i, x := range row {
		v[i] = float64(x)
	}
	sort.Sort(sort.Reverse(sort.Float64Slice(v)))
	return slices.Clip(v[:min(k, len(v))])
}

// margin is the top-1 minus top-2 of row: how far greedy was from a tie.
func margin[T float32 | float64](row []T) float64 {
	if len(row) < 2 {
		return math.NaN()
	}
	t := topValues(row, 2)
	return t[0] - t[1]
}
