package checkpoints

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"math"
)

// WriteJSON writes the report as one JSON document.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// Failure is bisect's answer: the first tensor outside tolerance.
type Failure struct {
	Checkpoint     int      `json:"checkpoint"`
	CheckpointName string   `json:"checkpoint_name"`
	Layer          *int     `json:"layer"`
	Name           string   `json:"name"`
	Case           string   `json:"case"`
	Index          []int    `json:"index"`
	Axes           []string `json:"axes"`
	Got            *Float   `json:"got"`
	Want           *Float   `json:"want"`
	MaxAbsErr      Float    `json:"max_abs_err"`
	Mismatches     int      `json:"mismatches"`
	Compared       int      `json:"compared"`
	Atol           float64  `json:"atol"`
	Rtol           float64  `json:"rtol"`
	Message        string   `json:"message,omitempty"`
}

// Bisect is the first failure in forward order, or nil when all passed.
func (r *Report) Bisect() *Failure {
	res := r.FirstFailure()
	if res == nil {
		return nil
	}
	f := &Failure{
		Checkpoint: res.Checkpoint, CheckpointName: res.CheckpointName, Layer: res.Layer,
		Name: res.Name, Case: res.Case, MaxAbsErr: res.MaxAbsErr, Mismatches: res.Mismatches,
		Compared: res.Compared, Atol: res.Atol, Rtol: res.Rtol, Message: res.Message,
	}
	if res.Worst != nil {
		f.Index, f.Axes = res.Worst.Index, res.Worst.Axes
		f.Got, f.Want = floatPtr(float64(res.Worst.Got)), floatPtr(float64(res.Worst.Want))
	}
	return f
}

// WriteBisectJSON writes {"first_failure": ...}.
func (r *Report) WriteBisectJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(struct {
		FirstFailure *Failure `json:"first_failure"`
	}{r.Bisect()})
}

// WriteBisectText names the first failure in a sentence a person can act on.
func (r *Report) WriteBisectText(w io.Writer) error {
	f := r.Bisect()
	if f == nil {
		_, err := fmt.Fprintf(w, "no failure: %s\n", r.Verdict())
		return err
	}
	layer := "outside the blocks"
	if f.Layer != nil {
		layer = fmt.Sprintf("layer %d", *f.Layer)
	}
	fmt.Fprintf(w, "first failure: checkpoint %d (%s), %s, tensor %s, case %s\n",
		f.Checkpoint, f.CheckpointName, layer, f.Name, f.Case)
	if f.Got != nil {
		el := &Element{Index: f.Index, Axes: f.Axes, Got: *f.Got, Want: *f.Want}
		fmt.Fprintf(w, "  worst element: %s: got %s, want %s (|diff| %.3g, tolerance atol %g + rtol %g·|want|)\n",
			el.where(), el.got(), el.want(), math.Abs(float64(*f.Got-*f.Want)), f.Atol, f.Rtol)
		fmt.Fprintf(w, "  %d of %d elements outside tolerance\n", f.Mismatches, f.Compared)
	}
	if f.Message != "" {
		fmt.Fprintf(w, "  %s\n", f.Message)
	}
	return nil
}

type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Skipped  int         `xml:"skipped,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Failure   *junitMessage `xml:"failure,omitempty"`
	Skipped   *junitMessage `xml:"skipped,omitempty"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Body    string `xml:",chardata"`
}

// WriteJUnit writes one testsuite per checkpoint and one testcase per
// (case, layer, tensor), so CI shows which tensor drifted.
func (r *Report) WriteJUnit(w io.Writer) error {
	var doc junitSuites
	index := map[int]int{}
	for _, res := range r.Results {
		i, ok := index[res.Checkpoint]
		if !ok {
			i = len(doc.Suites)
			index[res.Checkpoint] = i
			doc.Suites = append(doc.Suites, junitSuite{Name: fmt.Sprintf("checkpoint %02d %s", res.Checkpoint, res.CheckpointName)})
		}
		s := &doc.Suites[i]
		c := junitCase{Classname: fmt.Sprintf("llorch-check.checkpoint%02d", res.Checkpoint), Name: res.testName()}
		switch res.Status {
		case StatusFailed:
			c.Failure = &junitMessage{Message: res.failureLine(), Body: res.failureLine()}
			s.Failures++
			doc.Failures++
		case StatusNotImplemented:
			c.Skipped = &junitMessage{Message: res.Message}
			s.Skipped++
		}
		s.Tests++
		doc.Tests++
		s.Cases = append(s.Cases, c)
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

func (r Result) testName() string {
	if r.Status == StatusNotImplemented {
		return "not implemented"
	}
	return fmt.Sprintf("%s/layer %s/%s", r.Case, layerString(r.Layer), r.Name)
}

func (r Result) failureLine() string {
	line := fmt.Sprintf("%d of %d elements outside atol %g + rtol %g·|want|; max abs err %.3g; worst at %s: got %s, want %s",
		r.Mismatches, r.Compared, r.Atol, r.Rtol, float64(r.MaxAbsErr), r.Worst.where(), r.Worst.got(), r.Worst.want())
	if r.Message != "" {
		line += "; " + r.Message
	}
	return line
}
