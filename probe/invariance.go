package probe

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"

	"github.com/llorch/llorch-check/checkpoints"
)

// concurrentCopies is how many copies of one request the batch-invariance
// check sends at once: enough to fill a small server's slots.
const concurrentCopies = 4

// invarianceTolerance is checkpoint 9's: two ways of asking an engine for
// the same log-probability must agree as closely as the engine must agree
// with the reference, or the reference check itself would depend on how
// it was asked.
func invarianceTolerance() checkpoints.Tolerance { return logprobTolerance() }

// limited reports whether err is the API's limit rather than a broken
// server: a prompt it cannot carry, a tokenizer it disagrees on, or a
// request it refuses (4xx) naming what it does not take.
func limited(err error) bool {
	return errors.Is(err, errTextPrompt) || errors.Is(err, errTokenCount) || refused(err)
}

// invariance runs the engine's self-consistency checks on one prompt:
// greedy generation of n tokens asked several ways must give the same
// tokens and log-probabilities. A way the API refuses is not exposed.
func invariance(ctx context.Context, e engine, prompt []int, n, top int) ([]checkpoints.Invariance, error) {
	ex := e.exposes()
	base, err := e.generate(ctx, genRequest{prompt: prompt, n: n, top: top})
	if limited(err) {
		return []checkpoints.Invariance{notExposed("invariance", err.Error())}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("invariance: %w", err)
	}
	baseReq := e.lastRequest()
	var out []checkpoints.Invariance
	// check asks one other way and compares it with base, or records why
	// the API did not allow it.
	check := func(name string, ask func() (checkpoints.Invariance, error)) error {
		inv, err := ask()
		switch {
		case limited(err):
			out = append(out, notExposed(name, err.Error()))
		case err != nil:
			return fmt.Errorf("invariance: %s: %w", name, err)
		default:
			out = append(out, inv)
		}
		return nil
	}
	gen := func(req genRequest) (genAnswer, error) { return e.generate(ctx, req) }

	err = check("logprobs on vs off", func() (checkpoints.Invariance, error) {
		off, err := gen(genRequest{prompt: prompt, n: n})
		return sameGeneration("logprobs on vs off", "same greedy tokens with and without logprobs", base, off, false, e.lastRequest()), err
	})
	if err != nil {
		return nil, err
	}
	if ex.stream != "" {
		out = append(out, notExposed("streamed vs not", ex.stream))
	} else if err := check("streamed vs not", func() (checkpoints.Invariance, error) {
		st, err := gen(genRequest{prompt: prompt, n: n, top: top, stream: true})
		return sameGeneration("streamed vs not", "same tokens and logprobs streamed", base, st, true, e.lastRequest()), err
	}); err != nil {
		return nil, err
	}
	name := fmt.Sprintf("%d concurrent copies", concurrentCopies)
	if err := check(name, func() (checkpoints.Invariance, error) {
		copies := make([]genAnswer, concurrentCopies)
		errs := make([]error, concurrentCopies)
		var wg sync.WaitGroup
		for i := range copies {
			wg.Go(func() { copies[i], errs[i] = gen(genRequest{prompt: prompt, n: n, top: top}) })
		}
		wg.Wait()
		return worstOf(name, fmt.Sprintf("same request %d times at once (batch invariance)", concurrentCopies), base, copies, baseReq), firstError(errs)
	}); err != nil {
		return nil, err
	}
	if err := check("repeated (prompt cache)", func() (checkpoints.Invariance, error) {
		again, err := gen(genRequest{prompt: prompt, n: n, top: top})
		return sameGeneration("repeated (prompt cache)", "same request again, its prompt cached", base, again, true, baseReq), err
	}); err != nil {
		return nil, err
	}
	if base.ids == nil || len(base.ids) < 2 {
		out = append(out, notExposed("prefix-extended", "the API gave no token ids to extend the prompt with"))
	} else if err := check("prefix-extended", func() (checkpoints.Invariance, error) {
		m := len(base.ids) / 2
		ext, err := gen(genRequest{prompt: slices.Concat(prompt, base.ids[:m]), n: len(base.ids) - m, top: top})
		tail := genAnswer{ids: base.ids[m:], lps: tailOf(base.lps, m)}
		return sameGeneration("prefix-extended", fmt.Sprintf("prompt + first %d generated tokens continues as decoded", m), tail, ext, true, e.lastRequest()), err
	}); err != nil {
		return nil, err
	}
	out = append(out, decodeVsForced(ctx, e, ex, prompt, base, top))
	return out, nil
}

// decodeVsForced compares each generated token's log-probability with
// the one teacher forcing the same sequence gives (decode against prefill).
func decodeVsForced(ctx context.Context, e engine, ex exposure, prompt []int, base genAnswer, top int) checkpoints.Invariance {
	const name = "decode vs teacher-forced"
	switch {
	case base.ids == nil:
		return notExposed(name, "the API gave no token ids to teacher-force")
	case base.lps == nil:
		return notExposed(name, ex.logprobs)
	}
	f, err := e.force(ctx, slices.Concat(prompt, base.ids), len(prompt)-1, top)
	if limited(err) {
		return notExposed(name, err.Error())
	}
	if err != nil {
		return checkpoints.Invariance{Name: name, Status: checkpoints.StatusFailed, Detail: "teacher forcing failed: " + err.Error(), Request: e.lastRequest()}
	}
	got := make([]float64, len(f))
	for i, fp := range f {
		if fp.skip != "" {
			return notExposed(name, fmt.Sprintf("step %d: %s", i, fp.skip))
		}
		got[i] = fp.lp
		if math.IsNaN(got[i]) { // the forced token's own value hidden: it is greedy, so listed
			got[i] = altLogProb(fp.alts, base.ids[i])
		}
	}
	return compareLogprobs(name, "generated tokens' logprobs, decoded vs teacher-forced (prefill)", base.lps, got, e.lastRequest())
}

func altLogProb(alts []alt, id int) float64 {
	for _, a := range alts {
		if a.ID == id {
			return a.LogProb
		}
	}
	return math.NaN()
}

func tailOf(v []float64, m int) []float64 {
	if v == nil {
		return nil
	}
	return v[m:]
}

// sameGeneration compares two answers' tokens and, when withLogprobs,
// their log-probabilities.
func sameGeneration(name, what string, a, b genAnswer, withLogprobs bool, req string) checkpoints.Invariance {
	inv := checkpoints.Invariance{Name: name, Status: checkpoints.StatusPassed, Detail: what}
	if a.ids != nil && b.ids != nil {
		if i := firstDiff(a.ids, b.ids); i >= 0 {
			inv.Status, inv.Request = checkpoints.StatusFailed, req
			inv.Detail = fmt.Sprintf("%s: tokens part at step %d: %s vs %s", what, i, idAt(a.ids, i), idAt(b.ids, i))
			return inv
		}
	} else if a.text != b.text {
		inv.Status, inv.Request = checkpoints.StatusFailed, req
		inv.Detail = fmt.Sprintf("%s: text %q vs %q", what, a.text, b.text)
		return inv
	}
	if !withLogprobs || a.lps == nil || b.lps == nil {
		inv.Detail += " (text compared)"
		if a.ids != nil && b.ids != nil {
			inv.Detail = what + " (ids compared)"
		}
		return inv
	}
	c := compareLogprobs(name, what, a.lps, b.lps, req)
	return c
}

// worstOf compares every copy with base and reports the worst.
func worstOf(name, what string, base genAnswer, copies []genAnswer, req string) checkpoints.Invariance {
	worst := checkpoints.Invariance{Name: name, Status: checkpoints.StatusPassed, Detail: what}
	for i, c := range copies {
		inv := sameGeneration(name, what, base, c, true, req)
		if inv.Status == checkpoints.StatusFailed {
			inv.Detail = fmt.Sprintf("copy %d: %s", i, inv.Detail)
			return inv
		}
		if inv.MaxDelta != nil && (worst.MaxDelta == nil || *inv.MaxDelta > *worst.MaxDelta) {
			worst = inv
		}
	}
	return worst
}

// compareLogprobs judges |a − b| at checkpoint 9's tolerance.
func compareLogprobs(name, what string, a, b []float64, req string) checkpoints.Invariance {
	inv := checkpoints.Invariance{Name: name, Status: checkpoints.StatusPassed, Detail: what}
	if len(a) != len(b) {
		inv.Status, inv.Request = checkpoints.StatusFailed, req
		inv.Detail = fmt.Sprintf("%s: %d log-probabilities vs %d", what, len(a), len(b))
		return inv
	}
	tol := invarianceTolerance()
	worst, at := 0.0, -1
	for i := range a {
		d := math.Abs(a[i] - b[i])
		if math.IsNaN(d) {
			inv.Status, inv.Request = checkpoints.StatusFailed, req
			inv.Detail = fmt.Sprintf("%s: step %d has no log-probability on one side", what, i)
			return inv
		}
		if d > worst || at < 0 {
			worst, at = d, i
		}
		if d > tol.Atol+tol.Rtol*math.Abs(a[i]) && inv.Status == checkpoints.StatusPassed {
			inv.Status, inv.Request = checkpoints.StatusFailed, req
		}
	}
	w := checkpoints.Float(worst)
	inv.MaxDelta = &w
	if inv.Status == checkpoints.StatusFailed {
		inv.Detail = fmt.Sprintf("%s: worst at step %d: %.7g vs %.7g, beyond %s", what, at, a[at], b[at], tol)
	}
	return inv
}

func notExposed(name, why string) checkpoints.Invariance {
	return checkpoints.Invariance{Name: name, Status: checkpoints.StatusNotExposed, Detail: why}
}

func firstDiff(a, b []int) int {
	for i := range max(len(a), len(b)) {
		if i >= len(a) || i >= len(b) || a[i] != b[i] {
			return i
		}
	}
	return -1
}

func idAt(ids []int, i int) string {
	if i >= len(ids) {
		return "(ended)"
	}
	return fmt.Sprint(ids[i])
}

func firstError(errs []error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
