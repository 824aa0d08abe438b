package checkpoints

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strings"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/tw"
)

// maxFailureRows bounds the failure table, and maxNoteRunes a note in it;
// JSON output has them all, whole.
const (
	maxFailureRows = 20
	maxNoteRunes   = 110
)

// clip shortens s to n runes, marking the cut.
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// NewTable is the project's table style: headers as written, not upper-cased.
func NewTable(w io.Writer) *tablewriter.Table {
	return tablewriter.NewTable(w, tablewriter.WithHeaderAutoFormat(tw.Off))
}

// WriteTable prints the report for a person: one row per checkpoint, then
// the failing tensors, then a verdict line.
func (r *Report) WriteTable(w io.Writer) error {
	fmt.Fprintf(w, "model:      %s\nreferences: %s\n", r.Model, r.References)
	for _, line := range r.settingLines() {
		fmt.Fprintln(w, line)
	}
	t := NewTable(w)
	engine := r.Engine
	if engine == "" {
		engine = "Go"
	}
	t.Header("#", "checkpoint", "tensors", "max abs err", "max rel err", "err/tol", engine+"/torch vs f64", "result")
	for _, s := range r.Summaries() {
		if s.Status == StatusNotImplemented {
			t.Append(s.Checkpoint.Number, s.Checkpoint.Name, "-", "-", "-", "-", "-", "NOT IMPLEMENTED")
			continue
		}
		t.Append(s.Checkpoint.Number, s.Checkpoint.Name, fmt.Sprintf("%d/%d", s.Passed, s.Tensors),
			sci(s.MaxAbsErr), sci(s.MaxRelErr), fixed(s.TolRatio), budget(s.Budget), strings.ToUpper(s.Status))
	}
	if err := t.Render(); err != nil {
		return err
	}
	if err := r.writeFailures(w); err != nil {
		return err
	}
	if err := r.writeProbed(w); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w, r.Verdict())
	return err
}

func (r *Report) settingLines() []string {
	lines := r.API.lines()
	nums := make([]int, 0, len(r.Overrides))
	for n := range r.Overrides {
		nums = append(nums, n)
	}
	sort.Ints(nums)
	for _, n := range nums {
		lines = append(lines, fmt.Sprintf("override:   checkpoint %d tolerance %s", n, r.Overrides[n]))
	}
	if r.Budget > 0 {
		lines = append(lines, fmt.Sprintf("budget:     Go's float64 error at most %gx PyTorch float32's", r.Budget))
	}
	if r.WeightsMatch != "" && r.WeightsMatch != matchedByFile {
		lines = append(lines, "weights:    "+r.WeightsMatch)
	}
	if line := r.notDumpedLine(); line != "" {
		lines = append(lines, line)
	}
	if r.HeldAs != "" {
		lines = append(lines, "weights:    matrices held as "+r.HeldAs)
	}
	if r.Layers > 0 {
		blocks := "the first block"
		if r.Layers > 1 {
			blocks = fmt.Sprintf("the first %d blocks", r.Layers)
		}
		lines = append(lines, fmt.Sprintf("layers:     %s only (--layers %d), then the final norm and head", blocks, r.Layers))
	}
	if r.KVCache != "" {
		lines = append(lines, "kv cache:   "+r.KVCache+r.kvCacheNote())
	}
	if e := r.Emulates; e != nil {
		lines = append(lines, fmt.Sprintf("emulates:   %s, applied by the reference: %s", e.Profile, e.Applies))
	}
	if c := r.Cost; c != nil {
		lines = append(lines,
			"cost:       a COST REPORT, not a validation: "+c.Reason+".",
			"cost:       Results beyond the default tolerances are what that rounding costs (COST), not failures.",
			"cost:       To validate this model, run it against a reference set made from its own weights",
			"cost:       (pytorch/dump_references.py --model FILE.gguf, or --weight-dtype f16).")
	}
	return lines
}

func (r *Report) writeFailures(w io.Writer) error {
	fails := r.Failures()
	if len(fails) == 0 {
		return nil
	}
	fmt.Fprintf(w, "\n%d failing tensors (first %d in forward order):\n", len(fails), min(len(fails), maxFailureRows))
	t := NewTable(w)
	t.Header("case", "#", "layer", "tensor", "mismatches", "max abs err", "vs f64", "worst at", "got", "want", "note")
	for _, f := range fails[:min(len(fails), maxFailureRows)] {
		t.Append(f.Case, f.Checkpoint, layerString(f.Layer), f.Name,
			fmt.Sprintf("%d/%d", f.Mismatches, f.Compared), sci(float64(f.MaxAbsErr)), budgetOf(f),
			f.Worst.where(), f.Worst.got(), f.Worst.want(), clip(f.Message, maxNoteRunes))
	}
	return t.Render()
}

// Verdict is the one-line outcome.
func (r *Report) Verdict() string {
	pass, fail := r.count(StatusPassed), r.count(StatusFailed)
	msg := fmt.Sprintf("%d checks passed, %d failed", pass, fail)
	if n := len(r.Invariance); n > 0 {
		msg += fmt.Sprintf("; invariance %d/%d passed", r.countInvariance(StatusPassed), n)
	}
	if r.Cost != nil {
		msg = fmt.Sprintf("%d checks within the default tolerances, %d beyond them by the weights' rounding", pass, r.count(StatusCost))
	}
	if len(r.NotImplemented) > 0 {
		msg += fmt.Sprintf("; checkpoints %s not implemented (not checked)", joinInts(r.NotImplemented))
	}
	if len(r.NotDumped) > 0 {
		msg += "; a partial dump (what it lacks is listed above, not checked)"
	}
	switch {
	case r.Cost != nil && r.Passed:
		return "COST REPORT (not a validation): " + msg
	case r.Passed:
		return "PASS: " + msg
	}
	return "FAIL: " + msg
}

func (e *Element) where() string {
	if e == nil {
		return "-"
	}
	parts := make([]string, len(e.Index))
	for i, v := range e.Index {
		parts[i] = fmt.Sprintf("%s %d", e.Axes[i], v)
	}
	return strings.Join(parts, ", ")
}

func (e *Element) got() string {
	if e == nil {
		return "-"
	}
	return fmt.Sprintf("%.*g", e.digits(), float64(e.Got))
}

func (e *Element) want() string {
	if e == nil {
		return "-"
	}
	return fmt.Sprintf("%.*g", e.digits(), float64(e.Want))
}

// digits is how many significant digits got and want print with: six, or
// as many more as it takes for two different values to print differently
// (-109.9123 and -109.9118, not -109.912 twice); 17 tell any two float64
// values apart.
func (e *Element) digits() int {
	got, want := float64(e.Got), float64(e.Want)
	p := 6
	for ; p < 17 && got != want; p++ {
		if fmt.Sprintf("%.*g", p, got) != fmt.Sprintf("%.*g", p, want) {
			break
		}
	}
	return p
}

func layerString(l *int) string {
	if l == nil {
		return "-"
	}
	return fmt.Sprint(*l)
}

func sci(v float64) string { return fmt.Sprintf("%.2e", v) }

func fixed(v float64) string { return fmt.Sprintf("%.3f", v) }

func budget(v float64) string {
	if math.IsNaN(v) {
		return "-"
	}
	return fmt.Sprintf("%.2fx", v)
}

// budgetOf is a result's float64 budget ratio, "-" without twins.
func budgetOf(r Result) string {
	if r.BudgetRatio == nil {
		return "-"
	}
	return budget(float64(*r.BudgetRatio))
}

func joinInts(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = fmt.Sprint(n)
	}
	return strings.Join(s, ", ")
}
