package probe

import (
	"fmt"
	"math"
	"strings"

	"github.com/llorch/llorch-check/checkpoints"
)

// nextSteps says where to look after a probe: the first place the engine
// and the reference part, whether a greedy mismatch is a near-tie the
// log-probability error explains, an engine that disagrees with itself,
// and how to name the first drifting tensor from the engine's own
// activations (bisect, the command that does it).
func nextSteps(rep *checkpoints.Report, bisect string) []string {
	var out []string
	for _, inv := range rep.Invariance {
		if inv.Status == checkpoints.StatusFailed {
			out = append(out, fmt.Sprintf("the engine disagrees with itself (%s): fix that first; every comparison with the reference depends on how it was asked", inv.Name))
			break
		}
	}
	fails := rep.Failures()
	var worstLP float64
	for _, f := range fails {
		if f.Checkpoint == 9 || f.Checkpoint == 11 {
			worstLP = math.Max(worstLP, float64(f.MaxAbsErr))
		}
	}
	numeric := false
	for _, f := range fails {
		switch {
		case f.Name == "tokenize":
			out = append(out, fmt.Sprintf("case %s: the server tokenizes the prompt otherwise than the reference: compare its tokenizer with the model's (llorch-check tokenize) before any numbers", f.Case))
		case (f.Checkpoint == 9 || f.Checkpoint == 11) && f.Worst != nil && !numeric:
			numeric = true
			out = append(out, fmt.Sprintf("the engine and the reference first part at checkpoint %d (%s), case %s, %s: log-probability %.7g against %.7g (|Δ| %.3g, %.3gx PyTorch float32's own error there); the worst log-probability error of the run is %.3g",
				f.Checkpoint, f.Name, f.Case, where(f.Worst), float64(f.Worst.Got), float64(f.Worst.Want), float64(f.MaxAbsErr), budgetValue(f), worstLP))
		case (f.Checkpoint == 10 || f.Checkpoint == 12) && f.Name != "generation_text":
			note := fmt.Sprintf("case %s: greedy %s parts from the reference", f.Case, f.Name)
			if f.Worst != nil && len(f.Worst.Index) > 0 {
				note += fmt.Sprintf(" at step %d (token %.0f against %.0f)", f.Worst.Index[0], float64(f.Worst.Got), float64(f.Worst.Want))
			}
			if f.ServerMargin != nil {
				m := float64(*f.ServerMargin)
				note += fmt.Sprintf(", where the server's top-1 − top-2 margin is %.3g", m)
				if worstLP > 0 && m < 2*worstLP {
					note += fmt.Sprintf(": a near-tie within twice the worst log-probability error (%.3g), so the flip follows from that error", worstLP)
				}
			}
			out = append(out, note)
		}
	}
	if len(fails) > 0 {
		out = append(out, fmt.Sprintf("to name the first tensor that drifts, dump the engine's activations for the set's cases into %s (llama.cpp: cmd/llamacpp-ggml dump; PyTorch engines: pytorch/dump_hooks.py; references/FORMAT.md, \"Dumps from other engines\") and run: %s",
			DumpDir, bisect))
	}
	if c := rep.Corpus; c != nil && float64(c.Times.Value) > 10 {
		out = append(out, fmt.Sprintf("the corpus: the engine's distributions are %.3gx further from the float64 truth than PyTorch float32's; for lossy weights or caches that is their cost, for float32 weights a numerics difference to bisect", float64(c.Times.Value)))
	}
	return out
}

// DumpDir is where the advice asks for the engine's activations, so that
// the bisect command it prints runs as printed.
const DumpDir = "engine-dump"

// bisectCommand is the command line that bisects DumpDir against the set
// in dir, as a shell reads it pasted: dir quoted where a shell would split
// or expand it, and no --references at all when the set is the command
// line's default (onDefault).
func bisectCommand(dir string, onDefault bool) string {
	cmd := "llorch-check bisect --dump " + DumpDir
	if !onDefault {
		cmd += " --references " + shellQuote(dir)
	}
	return cmd
}

// shellQuote returns s as one POSIX shell word: as it is when every byte
// is one no shell treats specially, else in single quotes (a quote inside
// written '\”).
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("@%+=:,./_-", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func where(e *checkpoints.Element) string {
	s := ""
	for i, ax := range e.Axes {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%s %d", ax, e.Index[i])
	}
	return s
}

func budgetValue(r checkpoints.Result) float64 {
	if r.BudgetRatio == nil {
		return math.NaN()
	}
	return float64(*r.BudgetRatio)
}
