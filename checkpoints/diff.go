package checkpoints

import (
	"context"
	"fmt"
	"slices"

	"github.com/llorch/llorch-check/references"
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
	rep := &Report{Model: wm.Path, References: want.Dir + " vs " + got.Dir, Overrides: opt.Overrides, Budget: opt.Budget}
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
		res, err := diffTensor(want, got, ti, opt)
		if err != nil {
			return nil, err
		}
		res.caseIndex = caseIndex[ti.Case]
		res.rank = forwardRank(ti.Name, ti.LayerIndex(), dims.NLayer)
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
