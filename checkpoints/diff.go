package checkpoints

import (
	"context"
	"fmt"
	"slices"

	"github.com/llorch/llorch-check/references"
	"github.com/llorch/llorch-check/tensors"
)

// Diff compares two reference sets made from the same weights, tensor by
// tensor: want is the baseline (its float64 twins, if any, give the
// budget), got the set under test (a `dump` of another build, say).
func Diff(ctx context.Context, want, got *references.Set, opt Options) (*Report, error) {
	wm, gm := want.Manifest.Model, got.Manifest.Model
	if wm.WeightsSHA256 != gm.WeightsSHA256 {
		return nil, fmt.Errorf("%s and %s were made from different weights (sha256 %s vs %s)", want.Dir, got.Dir, wm.WeightsSHA256, gm.WeightsSHA256)
	}
	dims, err := want.Manifest.ModelConfig()
	if err != nil {
		return nil, err
	}
	if opt.Checkpoints == nil {
		opt.Checkpoints, _ = ParseSelection("")
	}
	caseIndex := map[string]int{}
	for i, c := range want.Manifest.Cases {
		caseIndex[c.ID] = i
	}
	rep := &Report{Model: wm.Path, References: want.Dir + " vs " + got.Dir, Overrides: opt.Overrides, Budget: opt.Budget,
		Emulates: want.Manifest.Emulates()}
	if got.Manifest.Partial() {
		rep.Engine = "engine" // another engine's dump, not Go's
	}
	absent := Selection{} // checkpoints Go cannot dump yet, missing from got
	for _, ti := range want.Manifest.Tensors {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if !opt.Checkpoints[ti.Checkpoint] || !opt.layerSelected(ti.LayerIndex()) {
			continue
		}
		if cp, _ := ByNumber(ti.Checkpoint); !cp.Implemented {
			if _, ok := got.Find(ti.Case, ti.Name, ti.LayerIndex()); !ok {
				absent[ti.Checkpoint] = true
				continue
			}
		}
		if got.Manifest.Partial() && references.DumpOptional(ti.Name) {
			if _, ok := got.Find(ti.Case, ti.Name, ti.LayerIndex()); !ok {
				rep.notDumped(ti.Checkpoint, ti.Name)
				continue
			}
		}
		res, err := diffTensor(want, got, ti, opt)
		if err != nil {
			return nil, err
		}
		res.caseIndex = caseIndex[ti.Case]
		res.rank = tensors.Rank(ti.Name, ti.LayerIndex(), dims.NLayer)
		rep.Results = append(rep.Results, res)
	}
	for _, res := range diffExact(want, got, opt, rep) {
		res.caseIndex = caseIndex[res.Case]
		res.rank = tensors.Rank(res.Name, -1, dims.NLayer)
		rep.Results = append(rep.Results, res)
	}
	rep.addNotImplemented(absent)
	sortForward(rep.Results)
	rep.Passed = rep.count(StatusFailed) == 0 && rep.count(StatusPassed) > 0
	return rep, nil
}

func diffTensor(want, got *references.Set, ti references.TensorInfo, opt Options) (Result, error) {
	w, truth, err := loadReference(want, ti)
	if err != nil {
		return Result{}, err
	}
	other, ok := got.Find(ti.Case, ti.Name, ti.LayerIndex())
	if !ok {
		return newResult(ti, opt).fail("missing from %s", got.Dir), nil
	}
	if !slices.Equal(ti.Rows, other.Rows) {
		return newResult(ti, opt).fail("rows %v in %s, %v in %s", ti.Rows, want.Dir, other.Rows, got.Dir), nil
	}
	g, err := got.Tensor(other)
	if err != nil {
		return Result{}, err
	}
	return compareData(ti, g, other.Shape, w, truth, opt), nil
}

// diffExact compares the results a manifest holds rather than tensors:
// greedy tokens (10), generations (12) and log-likelihoods (9).
func diffExact(want, got *references.Set, opt Options, rep *Report) []Result {
	var out []Result
	wm, gm := want.Manifest, got.Manifest
	if opt.Layer != nil {
		return nil
	}
	// A partial dump that has none of an exact result was not asked for it.
	partial := gm.Partial()
	if partial && len(gm.Greedy) == 0 && len(wm.Greedy) > 0 && opt.Checkpoints[10] {
		rep.notDumped(10, "greedy")
		opt.Checkpoints = withoutCheckpoint(opt.Checkpoints, 10)
	}
	if partial && gm.Generation == nil && wm.Generation != nil && opt.Checkpoints[12] {
		rep.notDumped(12, "generation")
		opt.Checkpoints = withoutCheckpoint(opt.Checkpoints, 12)
	}
	skipPairs := partial && len(gm.Loglikelihood) == 0 && len(wm.Loglikelihood) > 0
	if skipPairs && opt.Checkpoints[9] {
		rep.notDumped(9, "loglikelihood pairs")
	}
	if opt.Checkpoints[10] {
		for _, w := range wm.Greedy {
			res := exactResult(10, "greedy", w.Case, 1)
			g, ok := findGreedy(got, w.Case)
			if !ok {
				out = append(out, res.fail("missing from %s", got.Dir))
				continue
			}
			out = append(out, res.exact([]int{g}, []int{w.Token}))
		}
	}
	if opt.Checkpoints[12] && wm.Generation != nil {
		for _, w := range wm.Generation.Results {
			out = append(out, diffGeneration(w, gm.Generation, got.Dir))
		}
	}
	if opt.Checkpoints[9] && !skipPairs {
		tol := loglikelihoodTolerance
		if o, ok := opt.Overrides[9]; ok {
			tol = o
		}
		for i, w := range wm.Loglikelihood {
			res := exactResult(9, "loglikelihood", fmt.Sprintf("loglikelihood[%d]", i), 1)
			res.Atol, res.Rtol = tol.Atol, tol.Rtol
			if i >= len(gm.Loglikelihood) || !sameLoglikelihoodPair(w, gm.Loglikelihood[i]) {
				out = append(out, res.fail("pair %d missing from %s or made from other tokens", i, got.Dir))
				continue
			}
			var truth []float64
			if w.LLF64 != nil {
				truth = []float64{*w.LLF64}
			}
			g := gm.Loglikelihood[i]
			s := compare64(g.LL, w.LL, truth, tol)
			res.record(s, []string{"pair"}, nil)
			switch {
			case s.Mismatches > 0:
				res = res.fail("log-likelihood %.6f, the baseline has %.6f", g.LL, w.LL)
			case g.IsGreedy != w.IsGreedy:
				res = res.fail("is_greedy %v, the baseline has %v", g.IsGreedy, w.IsGreedy)
			default:
				res.Passed, res.Status = true, StatusPassed
			}
			out = append(out, res)
		}
	}
	return out
}

func sameLoglikelihoodPair(a, b references.Loglikelihood) bool {
	return slices.Equal(a.ContextTokens, b.ContextTokens) && slices.Equal(a.ContinuationTokens, b.ContinuationTokens)
}

func diffGeneration(w references.GenerationResult, gen *references.Generation, dir string) Result {
	res := exactResult(12, "generation", w.Case, len(w.Tokens))
	var g *references.GenerationResult
	if gen != nil {
		if i := slices.IndexFunc(gen.Results, func(r references.GenerationResult) bool { return r.Case == w.Case }); i >= 0 {
			g = &gen.Results[i]
		}
	}
	if g == nil {
		return res.fail("missing from %s", dir)
	}
	res = res.exact(g.Tokens, w.Tokens)
	switch {
	case !res.Passed:
	case g.StopReason != w.StopReason:
		res = res.fail("stop reason %q, the baseline has %q", g.StopReason, w.StopReason)
	case (g.Text == nil) != (w.Text == nil) || (g.Text != nil && *g.Text != *w.Text):
		res = res.fail("the decoded texts differ")
	}
	return res
}

func withoutCheckpoint(sel Selection, cp int) Selection {
	out := Selection{}
	for n, on := range sel {
		out[n] = on && n != cp
	}
	return out
}
