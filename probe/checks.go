package probe

import (
	"fmt"
	"math"
	"sort"

	"github.com/llorch/llorch-check/checkpoints"
	"github.com/llorch/llorch-check/references"
)

// alt is one alternative an API listed with its log-probability; ID is
// byText where the API keys alternatives by text.
type alt struct {
	ID      int
	LogProb float64
}

// byText is the ID of an alternative an API named by its text only.
const byText = -1

// logprobTolerance is checkpoint 9's: every value the probe compares at
// checkpoints 9 and 11 is a log-probability, the log-softmax checkpoint 9
// judges. (Checkpoint 11's own atol is for probabilities after the logit
// processors, which no API reports.)
func logprobTolerance() checkpoints.Tolerance {
	c, _ := checkpoints.ByNumber(9)
	return c.Tolerance
}

// promptLogprobsResult compares the server's log-probabilities of the
// prompt's tokens (lps by position) at the positions whose logits the set keeps.
func promptLogprobsResult(rc *refCase, lps []float64) checkpoints.Result {
	v := checkpoints.Values{Axes: []string{"position"}, Rows: rc.Rows}
	for i, pos := range rc.Rows {
		next := rc.Tokens[pos+1]
		v.Got = append(v.Got, lps[pos+1])
		v.Want = append(v.Want, float32(rc.RowLP[i][next]))
		if rc.RowTruth != nil {
			v.Truth = append(v.Truth, rc.RowTruth[i][next])
		}
	}
	return checkpoints.CompareValues(9, "prompt_logprobs", rc.ID, v, checkpoints.Tolerance{})
}

// loglikelihoodTolerance is run's for the set's pairs: a sum of a few
// log-probabilities (docs/spec.md, checkpoint 9).
var loglikelihoodTolerance = checkpoints.Tolerance{Atol: 1e-4}

func loglikelihoodResult(i int, ll references.Loglikelihood, sum float64) checkpoints.Result {
	v := checkpoints.Values{Got: []float64{sum}, Want: []float32{float32(ll.LL)}, Axes: []string{"pair"}}
	if ll.LLF64 != nil {
		v.Truth = []float64{*ll.LLF64}
	}
	return checkpoints.CompareValues(9, "loglikelihood", fmt.Sprintf("loglikelihood[%d]", i), v, loglikelihoodTolerance)
}

// topDist is one distribution the server listed alternatives of: the
// reference's log-softmax there (ref, truth) and the token position it
// predicts from.
type topDist struct {
	pos   int
	ref   []float64
	truth []float64
	alts  []alt
}

// topResult compares the alternatives the server listed with the
// reference's log-softmax (an approximate checkpoint 11): by token id
// where the API gives ids, else rank by rank against the reference's k
// largest.
func topResult(caseID string, k int, dists []topDist) checkpoints.Result {
	v := checkpoints.Values{Axes: []string{"position", "rank"}, Shape: []int{len(dists), k}}
	for _, d := range dists {
		alts := append([]alt(nil), d.alts...)
		sort.SliceStable(alts, func(i, j int) bool { return alts[i].LogProb > alts[j].LogProb })
		if len(alts) < k {
			return checkpoints.Failed(11, "top_logprobs", caseID,
				"position %d: the server listed %d alternatives, %d were asked for (an API that keys them by text merges tokens with the same text)", d.pos, len(alts), k)
		}
		// OpenAI's convention lists the chosen token too: k+1 entries.
		alts = alts[:k]
		byRank := alts[0].ID == byText
		wantTop, truthTop := topValues(d.ref, k), []float64(nil)
		if d.truth != nil {
			truthTop = topValues(d.truth, k)
		}
		for r, a := range alts {
			v.Got = append(v.Got, a.LogProb)
			switch {
			case byRank:
				v.Want = append(v.Want, float32(wantTop[r]))
				if truthTop != nil {
					v.Truth = append(v.Truth, truthTop[r])
				}
			case a.ID < 0 || a.ID >= len(d.ref):
				return checkpoints.Failed(11, "top_logprobs", caseID, "position %d: alternative id %d is outside the vocabulary of %d", d.pos, a.ID, len(d.ref))
			default:
				v.Want = append(v.Want, float32(d.ref[a.ID]))
				if d.truth != nil {
					v.Truth = append(v.Truth, d.truth[a.ID])
				}
			}
		}
		v.Rows = append(v.Rows, d.pos)
	}
	if len(v.Truth) != len(v.Want) {
		v.Truth = nil
	}
	return checkpoints.CompareValues(11, "top_logprobs", caseID, v, logprobTolerance())
}

// promptTops pairs the server's alternatives at every prompt token
// (byToken[i]: the alternatives for token i) with the kept rows.
func promptTops(rc *refCase, byToken [][]alt) []topDist {
	var out []topDist
	for i, pos := range rc.Rows {
		d := topDist{pos: pos, ref: rc.RowLP[i], alts: byToken[pos+1]}
		if rc.RowTruth != nil {
			d.truth = rc.RowTruth[i]
		}
		out = append(out, d)
	}
	return out
}

// nextTop pairs the alternatives of the first generated token with the
// last position's log-softmax; ok is false when the set lacks it.
func nextTop(rc *refCase, alts []alt) (topDist, bool) {
	if rc.LastLP == nil || len(alts) == 0 {
		return topDist{}, false
	}
	ref := make([]float64, len(rc.LastLP))
	for i, x := range rc.LastLP {
		ref[i] = float64(x)
	}
	return topDist{pos: len(rc.Tokens) - 1, ref: ref, truth: rc.LastTruth, alts: alts}, true
}

// greedyIDResults compares generated ids with checkpoint 10's token and
// checkpoint 12's continuation; steps are the server's alternatives per
// step, where it lists them.
func greedyIDResults(rc *refCase, ids []int, steps [][]alt) []checkpoints.Result {
	var out []checkpoints.Result
	if rc.Greedy >= 0 {
		r := checkpoints.CompareIDs(10, "greedy", rc.ID, ids[:min(1, len(ids))], []int{rc.Greedy})
		if !r.Passed {
			r.AppendNote(marginNote(rc, steps, 0))
			r.ServerMargin = stepMargin(steps, 0)
		}
		out = append(out, r)
	}
	if rc.Gen != nil {
		r := checkpoints.CompareIDs(12, "generation", rc.ID, ids, rc.Gen.Tokens[:rc.GenN])
		if !r.Passed && r.Worst != nil {
			r.AppendNote(marginNote(rc, steps, r.Worst.Index[0]))
			r.ServerMargin = stepMargin(steps, r.Worst.Index[0])
		}
		out = append(out, r)
	}
	return out
}

// greedyTextResult compares a generated text with checkpoint 12's; where
// it differs the step is unknown, so the note gives step 0's margins and
// the server's narrowest.
func greedyTextResult(rc *refCase, name, text string, steps [][]alt) checkpoints.Result {
	r := checkpoints.CompareText(12, name, rc.ID, text, *rc.Gen.Text)
	if r.Passed {
		return r
	}
	r.AppendNote(marginNote(rc, steps, 0))
	best, at := math.Inf(1), -1
	for i, s := range steps {
		if m := altMargin(s); m < best {
			best, at = m, i
		}
	}
	if at >= 0 {
		r.AppendNote(fmt.Sprintf("the server's narrowest top-1 − top-2 over the %d steps: %.3g at step %d", len(steps), best, at))
		r.ServerMargin = stepMargin(steps, at)
	}
	return r
}

// marginNote says how close greedy was to a tie at step, for the
// reference (its logits, known at step 0 only) and for the server (its
// log-probabilities, whose differences are logit differences).
func marginNote(rc *refCase, steps [][]alt, step int) string {
	ref := "not in the set (it keeps logits of the prompt only)"
	if step == 0 && rc.LastLogits != nil {
		ref = fmt.Sprintf("%.3g", margin(rc.LastLogits))
	}
	server := "not exposed by this API"
	if step < len(steps) && len(steps[step]) >= 2 {
		server = fmt.Sprintf("%.3g", altMargin(steps[step]))
	}
	return fmt.Sprintf("top-1 − top-2 at step %d: reference %s, server %s", step, ref, server)
}

// stepMargin is the server's top-1 − top-2 at step, nil where unknown.
func stepMargin(steps [][]alt, step int) *checkpoints.Float {
	if step >= len(steps) || len(steps[step]) < 2 {
		return nil
	}
	m := checkpoints.Float(altMargin(steps[step]))
	return &m
}

func altMargin(alts []alt) float64 {
	if len(alts) < 2 {
		return math.Inf(1)
	}
	v := make([]float64, len(alts))
	for i, a := range alts {
		v[i] = a.LogProb
	}
	return margin(v)
}
