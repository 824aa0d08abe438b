package checkpoints

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/llorch/llorch-check/generation"
	"github.com/llorch/llorch-check/model"
	"github.com/llorch/llorch-check/references"
	"github.com/llorch/llorch-check/sampling"
	"github.com/llorch/llorch-check/tensors"
)

// loglikelihoodTolerance is how close a summed log-probability must be;
// a run's checkpoint 9 override replaces it.
var loglikelihoodTolerance = Tolerance{Atol: 1e-4}

// checkGreedy compares the argmax of Go's last-position logits with the
// reference's greedy token (checkpoint 10).
func checkGreedy(set *references.Set, c references.Case, got *captured) (Result, bool) {
	want, ok := findGreedy(set, c.ID)
	if !ok {
		return Result{}, false
	}
	res := exactResult(10, "greedy", c.ID, 1)
	last, ok := got.get(tensors.LastLogits, model.NoLayer)
	if !ok {
		return res.fail("the model produced no last_logits"), true
	}
	return res.exact([]int{sampling.Argmax(last.Data)}, []int{want}), true
}

func findGreedy(set *references.Set, caseID string) (int, bool) {
	for _, g := range set.Manifest.Greedy {
		if g.Case == caseID {
			return g.Token, true
		}
	}
	return 0, false
}

// checkSampling runs Go's logit processors on PyTorch's last-position
// logits for each sampling configuration (checkpoint 11). Feeding the
// reference logits isolates the processors: a logit difference within
// checkpoint 9's tolerance would otherwise reappear here, amplified.
func checkSampling(set *references.Set, c references.Case, opt Options) ([]Result, error) {
	var out []Result
	for _, cfg := range set.Manifest.Sampling {
		ti, ok := set.Find(c.ID, "sampling_"+cfg.Name, model.NoLayer)
		if !ok {
			continue
		}
		logitsInfo, ok := set.Find(c.ID, tensors.LastLogits, model.NoLayer)
		if !ok {
			return nil, fmt.Errorf("%s: case %s has sampling tensors but no last_logits to feed them", set.Dir, c.ID)
		}
		logits, err := set.Tensor(logitsInfo)
		if err != nil {
			return nil, err
		}
		want, truth, err := loadReference(set, ti)
		if err != nil {
			return nil, err
		}
		probs := sampling.Process(logits, c.Tokens, cfg.Params())
		out = append(out, compareData(ti, probs, []int{len(probs)}, want, truth, opt))
	}
	return out, nil
}

// checkLoglikelihood scores each reference (context, continuation) pair
// from its recorded tokens, and checks that Go's tokenizer splits the
// strings into those same tokens.
func checkLoglikelihood(ctx context.Context, m *model.Model, set *references.Set, opt Options) ([]Result, error) {
	tol := loglikelihoodTolerance
	if o, ok := opt.Overrides[9]; ok {
		tol = o
	}
	var out []Result
	for i, ll := range set.Manifest.Loglikelihood {
		res := exactResult(9, "loglikelihood", fmt.Sprintf("loglikelihood[%d]", i), 1)
		res.Atol, res.Rtol = tol.Atol, tol.Rtol
		d, err := opt.pairDecoder(m, set, i, ll)
		if err != nil {
			return nil, err
		}
		got, err := generation.LoglikelihoodTokens(ctx, d, ll.ContextTokens, ll.ContinuationTokens)
		if err != nil {
			return nil, fmt.Errorf("loglikelihood[%d]: %w", i, err)
		}
		var truth []float64
		if ll.LLF64 != nil {
			truth = []float64{*ll.LLF64}
		}
		s := compare64(got.LL, ll.LL, truth, tol)
		res.record(s, []string{"pair"}, nil)
		res.Passed = s.Mismatches == 0
		switch {
		case !res.Passed:
			res.Message = fmt.Sprintf("log-likelihood %.6f, the reference has %.6f", got.LL, ll.LL)
		case got.IsGreedy != ll.IsGreedy:
			res = res.fail("is_greedy %v, the reference has %v", got.IsGreedy, ll.IsGreedy)
		case opt.Tokenizer != nil:
			ctxT, contT, err := generation.EncodePair(opt.Tokenizer, ll.Context, ll.Continuation)
			if err != nil {
				res = res.fail("cannot tokenize the pair as the reference did: %v", err)
			} else if !slices.Equal(ctxT, ll.ContextTokens) || !slices.Equal(contT, ll.ContinuationTokens) {
				res = res.fail("tokenized as %v + %v, the reference has %v + %v", ctxT, contT, ll.ContextTokens, ll.ContinuationTokens)
			}
		}
		if res.Passed && res.Message == "" {
			res.Status = StatusPassed
		}
		out = append(out, res)
	}
	return out, nil
}

// compare64 compares one float64 value as compare does a tensor.
func compare64(got, want float64, truth []float64, tol Tolerance) Stats {
	s := Stats{Compared: 1, Worst: 0, WorstGot: got, WantAt: want, Cosine: 1, HasBudget: truth != nil}
	diff := math.Abs(got - want)
	if math.IsNaN(got) || math.IsInf(got, 0) {
		diff = math.Inf(1)
	}
	s.MaxAbsErr, s.TolRatio = diff, toleranceRatio(diff, want, tol)
	if want != 0 {
		s.MaxRelErr = diff / math.Abs(want)
	}
	if !(s.TolRatio <= 1) {
		s.Mismatches = 1
	}
	if truth != nil {
		s.GoErrF64, s.RefErrF64 = math.Abs(got-truth[0]), math.Abs(want-truth[0])
		s.BudgetRate = budgetRatio(s.GoErrF64, s.RefErrF64, math.Abs(truth[0]))
	}
	return s
}

// exactResult starts a result for an integer checkpoint.
func exactResult(checkpoint int, name, caseID string, n int) Result {
	cp, _ := ByNumber(checkpoint)
	return Result{Checkpoint: checkpoint, CheckpointName: cp.Name, Name: name, Case: caseID, Shape: []int{n}, Status: StatusFailed}
}

// exact compares token ids for equality; the worst element is the first
// position where they differ.
func (r Result) exact(got, want []int) Result {
	r.Compared = max(len(got), len(want))
	first := -1
	for i := 0; i < r.Compared; i++ {
		if i >= len(got) || i >= len(want) || got[i] != want[i] {
			r.Mismatches++
			if first < 0 {
				first = i
			}
		}
	}
	r.Cosine = 1
	if first >= 0 {
		r.Worst = &Element{Index: []int{first}, Axes: []string{"step"}, Got: idAt(got, first), Want: idAt(want, first)}
		r.MaxAbsErr = Float(math.Inf(1))
		r.TolRatio = Float(math.Inf(1))
		return r.fail("ids %v, the reference has %v", got, want)
	}
	r.Passed, r.Status = true, StatusPassed
	return r
}

// idAt is the id at i, or -1 past the end of a shorter sequence.
func idAt(ids []int, i int) Float {
	if i < len(ids) {
		return Float(ids[i])
	}
	return -1
}
