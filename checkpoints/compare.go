package checkpoints

import "math"

// Stats summarises one tensor comparison.
type Stats struct {
	Compared   int     // elements compared (masked ones excluded)
	Mismatches int     // elements outside tolerance; NaN and Inf always are
	Flips      int     // elements outside tolerance that compareAllowing's allow passed, left out of the rest
	MaxAbsErr  float64 // max |got − want|
	MaxRelErr  float64 // max |got − want| / |want| over want ≠ 0, as numpy reports it
	TolRatio   float64 // max |got − want| / (atol + rtol·|want|); above 1 fails
	Cosine     float64
	Worst      int // flat index of the element with the largest TolRatio
	WorstGot   float64
	WantAt     float64

	// Error budget against the float64 truth (docs/spec.md section 2).
	HasBudget  bool
	GoErrF64   float64 // max |got − truth|
	RefErrF64  float64 // max |want − truth|, PyTorch float32's own error
	BudgetRate float64 // GoErrF64 / max(RefErrF64, float32 spacing at max |truth|)
}

// compare checks got against want elementwise. truth may be nil; skip, when
// non-nil, excludes flat indices from the comparison (masked attention).
func compare(got, want []float32, truth []float64, tol Tolerance, skip func(int) bool) Stats {
	return compareAllowing(got, want, truth, tol, skip, nil)
}

// compareAllowing is compare where an element outside tolerance that
// allow (when non-nil) passes counts as a flip, not a mismatch, and is
// left out of every other statistic (a float16 cache's rounding flips:
// compareCacheF16).
func compareAllowing(got, want []float32, truth []float64, tol Tolerance, skip, allow func(int) bool) Stats {
	a := newAccumulator(tol, truth != nil)
	a.add(0, got, want, truth, skip, allow)
	return a.stats()
}

// accumulator is compareAllowing over a tensor given in consecutive
// chunks (references.Set.TensorChunks): the same statistics, to the bit,
// as one call over the whole, since every sum runs in the same order.
type accumulator struct {
	s                     Stats
	tol                   Tolerance
	dot, gg, ww, truthMax float64
}

func newAccumulator(tol Tolerance, budget bool) *accumulator {
	return &accumulator{s: Stats{Worst: -1, HasBudget: budget}, tol: tol}
}

// add compares the chunk at flat offset off; skip and allow see flat
// indices of the whole tensor.
func (a *accumulator) add(off int, got, want []float32, truth []float64, skip, allow func(int) bool) {
	s := &a.s
	for j := range want {
		i := off + j
		if skip != nil && skip(i) {
			continue
		}
		g, w := float64(got[j]), float64(want[j])
		s.Compared++
		diff := math.Abs(g - w)
		ratio := toleranceRatio(diff, w, a.tol)
		if math.IsNaN(g) || math.IsInf(g, 0) {
			diff, ratio = math.Inf(1), math.Inf(1)
		}
		if !(ratio <= 1) && allow != nil && allow(i) {
			s.Flips++
			continue
		}
		if !(ratio <= 1) {
			s.Mismatches++
		}
		if s.Worst < 0 || ratio > s.TolRatio {
			s.Worst, s.TolRatio, s.WorstGot, s.WantAt = i, ratio, g, w
		}
		s.MaxAbsErr = math.Max(s.MaxAbsErr, diff)
		if w != 0 {
			s.MaxRelErr = math.Max(s.MaxRelErr, diff/math.Abs(w))
		}
		a.dot += g * w
		a.gg += g * g
		a.ww += w * w
		if truth != nil {
			s.GoErrF64 = math.Max(s.GoErrF64, math.Abs(g-truth[j]))
			s.RefErrF64 = math.Max(s.RefErrF64, math.Abs(w-truth[j]))
			a.truthMax = math.Max(a.truthMax, math.Abs(truth[j]))
		}
	}
}

func (a *accumulator) stats() Stats {
	s := a.s
	s.Cosine = cosine(a.dot, a.gg, a.ww)
	if s.HasBudget {
		s.BudgetRate = budgetRatio(s.GoErrF64, s.RefErrF64, a.truthMax)
	}
	return s
}

// toleranceRatio is how much of its allowance an element uses. With a zero
// allowance (an exact comparison) any difference is infinitely over.
func toleranceRatio(diff, want float64, tol Tolerance) float64 {
	allowed := tol.Atol + tol.Rtol*math.Abs(want)
	switch {
	case diff == 0:
		return 0
	case allowed == 0:
		return math.Inf(1)
	}
	return diff / allowed
}

func cosine(dot, gg, ww float64) float64 {
	switch {
	case math.IsNaN(dot) || math.IsInf(dot, 0):
		return math.NaN()
	case gg == 0 && ww == 0:
		return 1
	case gg == 0 || ww == 0:
		return 0
	}
	return dot / (math.Sqrt(gg) * math.Sqrt(ww))
}

// budgetRatio compares Go's error against the float64 truth with PyTorch
// float32's. PyTorch's error is floored at float32's spacing at the
// magnitude of the values: a float32 result cannot be judged more finely
// than that, and a reference that landed closer by luck (common for a
// single scalar such as a log-likelihood) would make the ratio noise.
func budgetRatio(goErr, refErr, truthMax float64) float64 {
	if math.IsNaN(goErr) {
		return math.Inf(1)
	}
	refErr = math.Max(refErr, float32Spacing(truthMax))
	switch {
	case refErr == 0 && goErr == 0:
		return 1
	case refErr == 0:
		return math.Inf(1)
	}
	return goErr / refErr
}

// float32Spacing is the gap between adjacent float32 values at |x|.
func float32Spacing(x float64) float64 {
	f := float32(math.Abs(x))
	if f == 0 || math.IsInf(float64(f), 0) {
		return 0
	}
	return float64(math.Nextafter32(f, float32(math.Inf(1))) - f)
}
