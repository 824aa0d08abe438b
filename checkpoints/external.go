package checkpoints

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// Results of an engine checked from the outside (package probe): the
// values it reported, compared with the reference's as the twelve
// checkpoints compare Go's own.

// Values are what an engine reported and the reference's, elementwise.
type Values struct {
	Got   []float64
	Want  []float32
	Truth []float64 // the float64 twin's values; nil when the set has none
	Shape []int     // default: [len(Want)]
	Axes  []string  // one name per dimension
	Rows  []int     // token positions of the first dimension's rows; nil: the row index
}

// CompareValues compares the values an engine reported with the
// reference's (and the float64 truth, when known) at checkpoint cp's
// default tolerance, or tol when not zero.
func CompareValues(cp int, name, caseID string, v Values, tol Tolerance) Result {
	c, _ := ByNumber(cp)
	if tol == (Tolerance{}) {
		tol = c.Tolerance
	}
	shape := v.Shape
	if shape == nil {
		shape = []int{len(v.Want)}
	}
	res := Result{Checkpoint: cp, CheckpointName: c.Name, Name: name, Case: caseID, Shape: shape,
		Atol: tol.Atol, Rtol: tol.Rtol, Status: StatusFailed}
	if len(v.Got) != len(v.Want) {
		return res.fail("the engine reported %d values, the reference has %d", len(v.Got), len(v.Want))
	}
	g := make([]float32, len(v.Got))
	for i, x := range v.Got {
		g[i] = float32(x)
	}
	s := compare(g, v.Want, v.Truth, tol, nil)
	res.record(s, v.Axes, v.Rows)
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
	res.Compared, res.Cosine = 1, 1
	if got != want {
		res.Mismatches = 1
		res.MaxAbsErr, res.TolRatio = Float(math.Inf(1)), Float(math.Inf(1))
		return res.fail("text %q, the reference has %q", got, want)
	}
	res.Status, res.Passed = StatusPassed, true
	return res
}

// Failed is a check that could not be made, with why.
func Failed(cp int, name, caseID, format string, args ...any) Result {
	return exactResult(cp, name, caseID, 0).fail(format, args...)
}

// API says which HTTP API an engine was probed through and how it was
// chosen, and which checkpoints that API cannot show.
type API struct {
	Name      string `json:"name"`
	Chosen    string `json:"chosen"` // "--api", or what auto-detection saw
	Checks    []int  `json:"checks"`
	Unexposed []int  `json:"unexposed,omitempty"`
	// Limits are the checks this API did not allow, each with why.
	Limits []Limit `json:"limits,omitempty"`
}

func (a *API) lines() []string {
	if a == nil {
		return nil
	}
	line := fmt.Sprintf("api:        %s (%s); checks checkpoints %s", a.Name, a.Chosen, joinInts(a.Checks))
	if len(a.Unexposed) > 0 {
		line += "; this API does not expose " + joinInts(a.Unexposed)
	}
	return []string{line}
}

// NewReport gathers results of an engine (its address as Model) against
// a reference set, ordered by checkpoint then case, and decides the verdict.
func NewReport(engine, references string, api *API, results []Result) *Report {
	rep := &Report{Model: engine, Engine: "engine", References: references, API: api, Results: results}
	sort.SliceStable(rep.Results, func(i, j int) bool { return rep.Results[i].Checkpoint < rep.Results[j].Checkpoint })
	rep.decide()
	return rep
}

// AppendNote adds a sentence to a result's message.
func (r *Result) AppendNote(note string) {
	r.Message = strings.TrimPrefix(r.Message+"; "+note, "; ")
}
