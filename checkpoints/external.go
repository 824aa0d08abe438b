package checkpoints

import "sort"

// Results of an engine checked from the outside (package probe): the
// values it reported, compared with the reference's as the twelve
// checkpoints compare Go's own.

// CompareValues compares n values an engine reported with the reference's
// (and the float64 truth, when known) at checkpoint cp's default tolerance
// or tol when not zero. axes names the one index, e.g. "position".
func CompareValues(cp int, name, caseID string, got []float64, want []float32, truth []float64, axis string, tol Tolerance) Result {
	c, _ := ByNumber(cp)
	if tol == (Tolerance{}) {
		tol = c.Tolerance
	}
	res := Result{Checkpoint: cp, CheckpointName: c.Name, Name: name, Case: caseID, Shape: []int{len(want)},
		Atol: tol.Atol, Rtol: tol.Rtol, Status: StatusFailed}
	if len(got) != len(want) {
		return res.fail("the engine reported %d values, the reference has %d", len(got), len(want))
	}
	g := make([]float32, len(got))
	for i, v := range got {
		g[i] = float32(v)
	}
	s := compare(g, want, truth, tol, nil)
	res.record(s, []string{axis}, nil)
	if res.Passed = s.Mismatches == 0 && s.Compared > 0; res.Passed {
		res.Status = StatusPassed
	}
	return res
}

// CompareIDs compares token ids exactly (checkpoints 10 and 12).
func CompareIDs(cp int, name, caseID string, got, want []int) Result {
	return exactResult(cp, name, caseID, len(want)).exact(got, want)
}

// CompareText compares a decoded text exactly (checkpoint 12 where an API
// gives text, not ids).
func CompareText(cp int, name, caseID, got, want string) Result {
	res := exactResult(cp, name, caseID, 1)
	if got != want {
		return res.fail("text %q, the reference has %q", got, want)
	}
	res.Status, res.Passed, res.Compared = StatusPassed, true, 1
	return res
}

// Failed is a check that could not be made, with why.
func Failed(cp int, name, caseID, format string, args ...any) Result {
	return exactResult(cp, name, caseID, 0).fail(format, args...)
}

// NewReport gathers results of an engine (its address as Model) against
// a reference set, ordered by checkpoint then case, and decides the verdict.
func NewReport(engine, references string, results []Result) *Report {
	rep := &Report{Model: engine, Engine: "engine", References: references, Results: results}
	sort.SliceStable(rep.Results, func(i, j int) bool { return rep.Results[i].Checkpoint < rep.Results[j].Checkpoint })
	rep.Passed = rep.count(StatusFailed) == 0 && rep.count(StatusPassed) > 0
	return rep
}
