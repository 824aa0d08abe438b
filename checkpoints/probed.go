package checkpoints

import (
	"fmt"
	"io"
	"strings"
)

// What a probe of an engine from outside adds to its checkpoint results:
// the checks the API did not allow and why, the engine's self-consistency
// (invariance) checks, a distribution verdict over a corpus, and where to
// look next.

// Limit is a check an API did not allow, and why.
type Limit struct {
	Check string `json:"check"`
	Why   string `json:"why"`
}

// Statuses of an invariance check beyond passed and failed.
const StatusNotExposed = "not_exposed"

// Invariance is one self-consistency check of an engine: two ways of
// asking that must give the same tokens and log-probabilities.
type Invariance struct {
	Name   string `json:"name"`
	Status string `json:"status"` // passed, failed or not_exposed
	// MaxDelta is the largest |Δ log p| between the two ways; nil when
	// the API shows no log-probabilities.
	MaxDelta *Float `json:"max_abs_delta_logprob,omitempty"`
	Detail   string `json:"detail"`
	// Request is the request that shows a failure, as sent.
	Request string `json:"request,omitempty"`
}

// Stat summarises a per-position quantity over a corpus.
type Stat struct {
	Mean  Float `json:"mean"`
	Sigma Float `json:"sigma"` // standard error of the mean
	P50   Float `json:"p50"`
	P90   Float `json:"p90"`
	P99   Float `json:"p99"`
	Max   Float `json:"max"`
}

// Share is a proportion with its binomial standard error.
type Share struct {
	Count int   `json:"count"`
	Of    int   `json:"of"`
	Value Float `json:"value"`
	Sigma Float `json:"sigma"`
}

// Ratio is a ratio with its standard error.
type Ratio struct {
	Value Float `json:"value"`
	Sigma Float `json:"sigma"`
}

// CorpusSide is one engine's statistics against the float64 truth.
type CorpusSide struct {
	// KL is KL(truth ‖ engine) per position over the engine's listed
	// alternatives plus one bucket for the rest: a lower bound of the
	// full-vocabulary divergence.
	KL   Stat  `json:"kl_bound"`
	Top1 Share `json:"top1_agreement"`
	// DeltaP is p(next token) engine − truth; nil when the API does not
	// give the next token's log-probability.
	DeltaP   *Stat  `json:"delta_p,omitempty"`
	PPLRatio *Ratio `json:"perplexity_ratio,omitempty"` // PPL(engine)/PPL(truth)
}

// Corpus is the distribution verdict of a teacher-forced corpus, as
// llama-perplexity --kl-divergence gives one, against the float64 truth,
// with PyTorch float32's own statistics on the same positions as the
// yardstick.
type Corpus struct {
	Dir       string     `json:"dir"`
	Positions int        `json:"positions"`
	Skipped   int        `json:"skipped,omitempty"`
	SkipWhy   string     `json:"skipped_why,omitempty"`
	TopK      int        `json:"top_k"`
	Engine    CorpusSide `json:"engine"`
	Torch     CorpusSide `json:"torch_float32"`
	// TorchKLExact is PyTorch float32's full-vocabulary KL from the truth,
	// averaged over the same positions: what the bound leaves out.
	TorchKLExact Float `json:"torch_float32_kl_exact"`
	// Times is the engine's mean KL bound over PyTorch float32's.
	Times Ratio    `json:"times_torch_float32"`
	Notes []string `json:"notes,omitempty"`
}

// decide sets Passed from the checkpoint results and invariance checks.
func (r *Report) decide() {
	failed := r.count(StatusFailed)
	for _, inv := range r.Invariance {
		if inv.Status == StatusFailed {
			failed++
		}
	}
	r.Passed = failed == 0 && r.count(StatusPassed) > 0
}

// SetInvariance records an engine's invariance checks; a failed one fails
// the report.
func (r *Report) SetInvariance(checks []Invariance) {
	r.Invariance = checks
	r.decide()
}

func (r *Report) writeProbed(w io.Writer) error {
	if lim := r.API.limitLines(); len(lim) > 0 {
		fmt.Fprintln(w, "\nnot checked, because the API does not allow it:")
		for _, l := range lim {
			fmt.Fprintln(w, "  "+l)
		}
	}
	if len(r.Invariance) > 0 {
		fmt.Fprintln(w, "\ninvariance (the engine against itself):")
		t := NewTable(w)
		t.Header("check", "max |Δ log p|", "result", "detail")
		for _, inv := range r.Invariance {
			d := "-"
			if inv.MaxDelta != nil {
				d = sci(float64(*inv.MaxDelta))
			}
			t.Append(inv.Name, d, strings.ToUpper(strings.ReplaceAll(inv.Status, "_", " ")), inv.Detail)
		}
		if err := t.Render(); err != nil {
			return err
		}
		for _, inv := range r.Invariance {
			if inv.Status == StatusFailed && inv.Request != "" {
				fmt.Fprintf(w, "  %s: the request that shows it: %s\n", inv.Name, inv.Request)
			}
		}
	}
	if c := r.Corpus; c != nil {
		if err := c.write(w); err != nil {
			return err
		}
	}
	if len(r.Next) > 0 {
		fmt.Fprintln(w, "\nwhere to look next:")
		for _, n := range r.Next {
			fmt.Fprintln(w, "  "+n)
		}
	}
	return nil
}

func (a *API) limitLines() []string {
	if a == nil {
		return nil
	}
	var out []string
	for _, l := range a.Limits {
		out = append(out, l.Check+": "+l.Why)
	}
	return out
}

func (c *Corpus) write(w io.Writer) error {
	fmt.Fprintf(w, "\ncorpus %s: %d positions teacher-forced, the engine listing its top %d; against the float64 truth:\n", c.Dir, c.Positions, c.TopK)
	t := NewTable(w)
	t.Header("statistic", "engine", "PyTorch float32", "")
	t.Append("mean KL bound (± σ)", pm(c.Engine.KL.Mean, c.Engine.KL.Sigma), pm(c.Torch.KL.Mean, c.Torch.KL.Sigma), "nats")
	t.Append("KL bound p50 / p90 / p99 / max", pct(c.Engine.KL), pct(c.Torch.KL), "nats")
	t.Append("top-1 agreement (± σ)", share(c.Engine.Top1), share(c.Torch.Top1), "")
	if c.Engine.DeltaP != nil && c.Torch.DeltaP != nil {
		t.Append("Δp of the next token: mean (± σ)", pm(c.Engine.DeltaP.Mean, c.Engine.DeltaP.Sigma), pm(c.Torch.DeltaP.Mean, c.Torch.DeltaP.Sigma), "")
		t.Append("|Δp| p50 / p90 / p99 / max", pct(*c.Engine.DeltaP), pct(*c.Torch.DeltaP), "")
	}
	if c.Engine.PPLRatio != nil && c.Torch.PPLRatio != nil {
		t.Append("perplexity / truth's (± σ)", ratio(*c.Engine.PPLRatio), ratio(*c.Torch.PPLRatio), "")
	}
	if err := t.Render(); err != nil {
		return err
	}
	fmt.Fprintf(w, "verdict: the engine's mean KL bound is %s times PyTorch float32's own (exact full-vocabulary KL of PyTorch float32: %.3g nats)\n",
		ratio(c.Times), float64(c.TorchKLExact))
	if c.Skipped > 0 {
		fmt.Fprintf(w, "skipped: %d positions (%s)\n", c.Skipped, c.SkipWhy)
	}
	for _, n := range c.Notes {
		fmt.Fprintln(w, "note: "+n)
	}
	return nil
}

func pm(v, s Float) string { return fmt.Sprintf("%.3g ± %.2g", float64(v), float64(s)) }

func pct(s Stat) string {
	return fmt.Sprintf("%.2g / %.2g / %.2g / %.2g", float64(s.P50), float64(s.P90), float64(s.P99), float64(s.Max))
}

func share(s Share) string {
	return fmt.Sprintf("%.2f%% ± %.2f%% (%d/%d)", 100*float64(s.Value), 100*float64(s.Sigma), s.Count, s.Of)
}

func ratio(r Ratio) string { return fmt.Sprintf("%.6g ± %.2g", float64(r.Value), float64(r.Sigma)) }

func (r *Report) countInvariance(status string) int {
	n := 0
	for _, inv := range r.Invariance {
		if inv.Status == status {
			n++
		}
	}
	return n
}
