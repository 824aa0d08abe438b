package checkpoints

import "math"

// Summary aggregates a report's results for one checkpoint.
type Summary struct {
	Checkpoint Checkpoint
	Tensors    int
	Passed     int
	Failed     int
	Cost       int // results outside the defaults in a cost report (StatusCost)
	MaxAbsErr  float64
	MaxRelErr  float64
	TolRatio   float64
	Budget     float64 // worst float64 budget ratio; NaN when no twins
	Status     string
}

// Summaries returns one entry per checkpoint present in the report, in
// checkpoint order.
func (r *Report) Summaries() []Summary {
	byNum := map[int]*Summary{}
	var order []int
	for _, res := range r.Results {
		s, ok := byNum[res.Checkpoint]
		if !ok {
			cp, _ := ByNumber(res.Checkpoint)
			s = &Summary{Checkpoint: cp, Budget: math.NaN(), Status: StatusPassed}
			byNum[res.Checkpoint] = s
			order = append(order, res.Checkpoint)
		}
		s.add(res)
	}
	out := make([]Summary, 0, len(order))
	for n := 1; n <= len(all); n++ {
		if s, ok := byNum[n]; ok {
			out = append(out, *s)
		}
	}
	return out
}

func (s *Summary) add(res Result) {
	switch res.Status {
	case StatusNotImplemented:
		s.Status = StatusNotImplemented
		return
	case StatusFailed:
		s.Failed++
		s.Status = StatusFailed
	case StatusPassed:
		s.Passed++
	case StatusCost:
		s.Cost++
		if s.Status == StatusPassed {
			s.Status = StatusCost
		}
	}
	s.Tensors++
	s.MaxAbsErr = nanMax(s.MaxAbsErr, float64(res.MaxAbsErr))
	s.MaxRelErr = nanMax(s.MaxRelErr, float64(res.MaxRelErr))
	s.TolRatio = nanMax(s.TolRatio, float64(res.TolRatio))
	if res.BudgetRatio != nil {
		if math.IsNaN(s.Budget) {
			s.Budget = float64(*res.BudgetRatio)
		} else {
			s.Budget = math.Max(s.Budget, float64(*res.BudgetRatio))
		}
	}
}

// nanMax is math.Max except that a NaN error stays visible as +Inf.
func nanMax(a, b float64) float64 {
	if math.IsNaN(b) {
		return math.Inf(1)
	}
	return math.Max(a, b)
}

// FirstFailure is the earliest failing tensor in forward order, or nil.
func (r *Report) FirstFailure() *Result {
	for i := range r.Results {
		if r.Results[i].Status == StatusFailed {
			return &r.Results[i]
		}
	}
	return nil
}

// Failures lists every failing tensor in forward order.
func (r *Report) Failures() []Result {
	var out []Result
	for _, res := range r.Results {
		if res.Status == StatusFailed {
			out = append(out, res)
		}
	}
	return out
}
