package checkpoints

import (
	"fmt"
	"math"
	"slices"

	"github.com/llorch/llorch-check/model"
	"github.com/llorch/llorch-check/references"
	"github.com/llorch/llorch-check/tensors"
)

// compareTensor compares one reference tensor with what the model produced.
// Reading the reference can fail (bad input); a missing or misshapen Go
// tensor is a failed result, since it is the implementation that is wrong.
func compareTensor(set *references.Set, ti references.TensorInfo, got *captured, opt Options) (Result, error) {
	var g *model.Captured
	if t, ok := got.get(ti.Name, ti.LayerIndex()); ok {
		g = &t
	}
	res, err := compareCaptured(set, ti, g, opt)
	if err == nil && g != nil {
		var logits []float32
		if t, ok := got.get(tensors.RouterLogits, ti.LayerIndex()); ok {
			logits = t.Data
		}
		err = explainRouting(set, ti, &res, g.Data, logits)
	}
	return res, err
}

// compareCaptured is compareTensor of Go's tensor g; nil when the model
// produced none.
func compareCaptured(set *references.Set, ti references.TensorInfo, g *model.Captured, opt Options) (Result, error) {
	if ti.Rows == nil && (g == nil || g.Rows == nil) && (elements(ti.Shape) > chunkValues || g != nil && !g.Whole()) {
		return compareChunked(set, ti, g, opt)
	}
	want, truth, err := loadReference(set, ti)
	if err != nil {
		return Result{}, err
	}
	if g == nil {
		return newResult(ti, opt).fail("the model produced no %s tensor", ti.Name), nil
	}
	data, shape := g.Data, g.Shape
	if ti.Rows != nil || g.Rows != nil {
		if data, shape, err = selectRows(data, shape, g.Rows, ti.Rows); err != nil {
			return newResult(ti, opt).fail("%v", err), nil
		}
	}
	return compareData(ti, data, shape, want, truth, opt), nil
}

// operands are ti's reference values and Go's tensor; a failed result
// when Go produced none (the implementation is wrong), an error when the
// reference cannot be read (bad input).
func operands(set *references.Set, ti references.TensorInfo, got *captured, opt Options) ([]float32, []float64, model.Captured, *Result, error) {
	want, truth, err := loadReference(set, ti)
	if err != nil {
		return nil, nil, model.Captured{}, &Result{}, err
	}
	g, ok := got.get(ti.Name, ti.LayerIndex())
	if !ok {
		res := newResult(ti, opt).fail("the model produced no %s tensor", ti.Name)
		return nil, nil, model.Captured{}, &res, nil
	}
	return want, truth, g, nil, nil
}

func loadReference(set *references.Set, ti references.TensorInfo) ([]float32, []float64, error) {
	want, err := set.Tensor(ti)
	if err != nil {
		return nil, nil, err
	}
	truth, err := set.TensorF64(ti)
	if err != nil {
		return nil, nil, err
	}
	return want, truth, nil
}

// newResult starts a result for ti with its checkpoint's tolerance for
// this run (override or default).
func newResult(ti references.TensorInfo, opt Options) Result {
	cp, _ := ByNumber(ti.Checkpoint)
	tol := opt.tolerance(cp)
	return Result{
		Checkpoint: cp.Number, CheckpointName: cp.Name, Name: ti.Name, Case: ti.Case,
		Shape: ti.Shape, Atol: tol.Atol, Rtol: tol.Rtol, Layer: ti.Layer, Status: StatusFailed,
	}
}

// newTensorResult is newResult for comparing a tensor's values: expert
// ids compare exactly (the same expert or another).
func newTensorResult(ti references.TensorInfo, opt Options) Result {
	res := newResult(ti, opt)
	if ti.Name == tensors.Experts {
		res.Atol, res.Rtol = 0, 0
	}
	return res
}

// chunkValues is how many values of a reference tensor compareChunked
// reads at a time, and the size above which a tensor is read so (a var for
// the tests, which make it small).
var chunkValues = 1 << 20

// compareChunked is compareCaptured for a tensor larger than chunkValues,
// its reference read a chunk at a time (references.Set.TensorChunks).
func compareChunked(set *references.Set, ti references.TensorInfo, g *model.Captured, opt Options) (Result, error) {
	p := newPartCompare(ti, g, opt)
	if err := p.add(set, g); err != nil {
		return Result{}, err
	}
	return p.result(opt), nil
}

// partCompare compares a tensor part by part (model.Captured.Off) as Go
// emits it, each part with the same values of the reference read a chunk
// at a time; a tensor emitted whole is its one part.
type partCompare struct {
	ti     references.TensorInfo
	res    Result
	a      *accumulator
	skip   func(off int, want []float32) func(int) bool
	next   int    // the offset the next part must start at
	failed string // why Go's tensor cannot be compared, once known
}

func newPartCompare(ti references.TensorInfo, g *model.Captured, opt Options) *partCompare {
	p := &partCompare{ti: ti, res: newTensorResult(ti, opt)}
	p.a = newAccumulator(Tolerance{p.res.Atol, p.res.Rtol}, ti.FileF64 != nil)
	if causal := causalMask(ti.Shape); ti.Name == tensors.Scores && causal != nil { // as maskedScores: no mask unless [H,Tq,Tk]
		p.skip = func(off int, want []float32) func(int) bool {
			return func(i int) bool { return causal(i) || masked(want[i-off]) }
		}
	}
	switch {
	case g == nil:
		p.failed = fmt.Sprintf("the model produced no %s tensor", ti.Name)
	case !slices.Equal(g.Shape, ti.Shape) || g.Off+len(g.Data) > elements(ti.Shape):
		p.failed = fmt.Sprintf("got shape %v, the reference has %v", g.Shape, ti.Shape)
	}
	return p
}

// add compares part g, the next one; with no part to compare (nil, or a
// tensor already found wrong) it reads the whole reference through once,
// for its errors.
func (p *partCompare) add(set *references.Set, g *model.Captured) error {
	if p.failed == "" && g != nil && g.Off != p.next {
		p.failed = fmt.Sprintf("the model's %s came in parts out of order: values from %d, expected from %d", p.ti.Name, g.Off, p.next)
	}
	if p.failed != "" || g == nil {
		if p.next < 0 {
			return nil
		}
		p.next = -1
		return set.TensorChunks(p.ti, chunkValues, func(int, []float32, []float64) error { return nil })
	}
	end := g.Off + len(g.Data)
	err := set.TensorRange(p.ti, g.Off, end, chunkValues, func(off int, want []float32, truth []float64) error {
		var skip func(int) bool
		if p.skip != nil {
			skip = p.skip(off, want)
		}
		p.a.add(off, g.Data[off-g.Off:off-g.Off+len(want)], want, truth, skip, nil)
		return nil
	})
	p.next = end
	return err
}

// done says the last part has been added (or the tensor failed).
func (p *partCompare) done() bool { return p.failed != "" || p.next == elements(p.ti.Shape) }

// result judges the parts added.
func (p *partCompare) result(opt Options) Result {
	if p.failed != "" {
		return p.res.fail("%s", p.failed)
	}
	if !p.done() {
		return p.res.fail("the model emitted %d of %s's %d values", p.next, p.ti.Name, elements(p.ti.Shape))
	}
	return judge(p.res, p.ti, p.a.stats(), opt)
}

// elements is the number of values of a tensor of the shape.
func elements(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

// compareData compares got (of the given shape) with the reference values.
func compareData(ti references.TensorInfo, got []float32, shape []int, want []float32, truth []float64, opt Options) Result {
	res := newTensorResult(ti, opt)
	if !slices.Equal(shape, ti.Shape) {
		return res.fail("got shape %v, the reference has %v", shape, ti.Shape)
	}
	var skip func(int) bool
	if ti.Name == tensors.Scores {
		skip = maskedScores(ti.Shape, want)
	}
	s := compare(got, want, truth, Tolerance{res.Atol, res.Rtol}, skip)
	return judge(res, ti, s, opt)
}

// judge records a comparison's statistics in res and decides it.
func judge(res Result, ti references.TensorInfo, s Stats, opt Options) Result {
	res.record(s, axesOf(ti.Name), ti.Rows)
	res.Passed = s.Mismatches == 0 && s.Compared > 0
	if res.Passed && opt.Budget > 0 && s.HasBudget && s.BudgetRate > opt.Budget {
		res.Passed = false
		res.Message = fmt.Sprintf("float64 budget: Go's error is %.3gx PyTorch float32's, above --budget %g", s.BudgetRate, opt.Budget)
	}
	if res.Passed {
		res.Status = StatusPassed
	}
	return res
}

func (r Result) fail(format string, args ...any) Result {
	r.Status, r.Passed = StatusFailed, false
	r.Message = fmt.Sprintf(format, args...)
	return r
}

// record copies comparison statistics into the result.
func (r *Result) record(s Stats, axes []string, rows []int) {
	r.stats = &s
	r.Compared, r.Mismatches = s.Compared, s.Mismatches
	r.MaxAbsErr, r.MaxRelErr, r.TolRatio, r.Cosine = Float(s.MaxAbsErr), Float(s.MaxRelErr), Float(s.TolRatio), Float(s.Cosine)
	if s.HasBudget {
		r.BudgetRatio, r.GoErrF64, r.RefErrF64 = floatPtr(s.BudgetRate), floatPtr(s.GoErrF64), floatPtr(s.RefErrF64)
	}
	if s.Worst < 0 {
		return
	}
	idx := references.Unravel(s.Worst, r.Shape)
	if rows != nil {
		idx[0] = rows[idx[0]] // report the token position, not the row of the subset
	}
	r.Worst = &Element{Index: idx, Axes: axes, Got: Float(s.WorstGot), Want: Float(s.WantAt)}
}

// selectRows keeps the rows at positions rows of a [N,n] tensor whose
// rows are of positions have (nil: 0..N-1); rows nil keeps them all.
func selectRows(data []float32, shape []int, have, rows []int) ([]float32, []int, error) {
	if len(shape) != 2 {
		return nil, nil, fmt.Errorf("row subset of a tensor of shape %v", shape)
	}
	if rows == nil {
		if have == nil {
			return data, shape, nil
		}
		return nil, nil, fmt.Errorf("the model computed positions %v only, the reference keeps all %d", have, shape[0])
	}
	n := shape[1]
	out := make([]float32, 0, len(rows)*n)
	for _, r := range rows {
		i := r
		if have != nil {
			i = slices.Index(have, r)
		}
		if i < 0 || i >= shape[0] {
			if have != nil {
				return nil, nil, fmt.Errorf("position %d: the model computed positions %v only", r, have)
			}
			return nil, nil, fmt.Errorf("row %d outside the model's %d positions", r, shape[0])
		}
		out = append(out, data[i*n:(i+1)*n]...)
	}
	return out, []int{len(rows), n}, nil
}

// maskedScores skips the scores the reference masked: past the causal
// mask, and before a sliding window (finfo.min added, which no score
// approaches). Their probabilities, compared in full, are zero in both
// when Go masks them too.
func maskedScores(shape []int, want []float32) func(int) bool {
	causal := causalMask(shape)
	if causal == nil {
		return nil
	}
	return func(i int) bool { return causal(i) || masked(want[i]) }
}

// masked says a reference score is a mask's value (HF's dtype minimum),
// not a score.
func masked(w float32) bool { return w <= -math.MaxFloat32/2 }

// causalMask reports the [H,Tq,Tk] entries a query may not see. Their
// values are an implementation's choice (HF uses the dtype's minimum), so
// they are not compared; softmax output still is, where a missing mask shows.
func causalMask(shape []int) func(int) bool {
	if len(shape) != 3 {
		return nil
	}
	tq, tk := shape[1], shape[2]
	offset := tk - tq
	return func(i int) bool {
		q, k := (i/tk)%tq, i%tk
		return k > q+offset
	}
}

// axesOf names the dimensions of a tensor so that an index can be read by
// a person: [H,T,D] is (head, token, channel).
func axesOf(name string) []string {
	if k, ok := tensors.Lookup(name); ok {
		return k.Axes
	}
	return []string{"token", "channel"}
}
