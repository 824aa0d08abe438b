// Package checkpoints defines the twelve validation checkpoints of docs/spec.md
// section 2, compares a model's captured tensors with a reference set, and
// renders the results.
package checkpoints

import (
	"fmt"
	"strconv"
	"strings"
)

// Tolerance is numpy allclose's: |got − want| ≤ Atol + Rtol·|want|.
type Tolerance struct {
	Atol float64 `json:"atol"`
	Rtol float64 `json:"rtol"`
}

func (t Tolerance) String() string {
	return fmt.Sprintf("atol %g, rtol %g", t.Atol, t.Rtol)
}

// Checkpoint is one of the twelve things llorch-check validates.
type Checkpoint struct {
	Number      int
	Name        string
	Captures    string
	Tolerance   Tolerance
	Exact       bool // integer results compared for equality
	Implemented bool
}

var all = []Checkpoint{
	{1, "Norm", "the block's two norms, every layer [T,C]: ln_1, ln_2 (LayerNorm); attn_norm, ffn_norm (RMSNorm)", Tolerance{1e-4, 1e-4}, false, true},
	{2, "QKV projection", "q, k, v after the projection and the head split [H,T,D] (k, v: KV heads); q_norm, k_norm (Qwen3); q_rope, k_rope", Tolerance{1e-4, 1e-4}, false, true},
	{3, "KV cache", "cache after prefill of T−1 tokens + one step [H,T,D]; that step's logits [V]", Tolerance{1e-4, 1e-4}, false, true},
	{4, "Attention scores", "scaled scores before softmax (causal entries only) and weights after softmax [H,T,T]", Tolerance{1e-4, 1e-4}, false, true},
	{5, "Attention output", "merged heads after c_proj, before the residual add [T,C]", Tolerance{1e-4, 1e-4}, false, true},
	{6, "FFN", "GELU output [T,I] and mlp.c_proj output [T,C]; gate, up, silu(gate)·up [T,I] and down [T,C]", Tolerance{1e-4, 1e-4}, false, true},
	{7, "Block output", "embedding sum and residual stream after each block [T,C]", Tolerance{1e-4, 1e-4}, false, true},
	{8, "LM head", "final norm (ln_f, norm) [T,C] and full logits [T,V]", Tolerance{1e-3, 1e-4}, false, true},
	{9, "Selected logits", "last-position logits and log-softmax [V]; log-likelihood of reference pairs (atol 1e-4)", Tolerance{1e-3, 1e-4}, false, true},
	{10, "Greedy sampling", "argmax token of the last position", Tolerance{}, true, true},
	{11, "Sampling distribution", "probabilities after Go's logit processors on PyTorch's last logits, per sampling config [V]", Tolerance{1e-6, 0}, false, true},
	{12, "Generation", "greedy continuation through the KV cache: ids and text", Tolerance{}, true, true},
}

// All returns the twelve checkpoints in order.
func All() []Checkpoint {
	out := make([]Checkpoint, len(all))
	copy(out, all)
	return out
}

// ByNumber returns checkpoint n (1..12).
func ByNumber(n int) (Checkpoint, bool) {
	if n < 1 || n > len(all) {
		return Checkpoint{}, false
	}
	return all[n-1], true
}

// Selection is a set of checkpoint numbers.
type Selection map[int]bool

// ParseSelection reads "", "N" or "N-M"; empty selects all twelve.
func ParseSelection(s string) (Selection, error) {
	sel := Selection{}
	if strings.TrimSpace(s) == "" {
		for _, c := range all {
			sel[c.Number] = true
		}
		return sel, nil
	}
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(strings.TrimSpace(part), "-")
		a, err := parseCheckpointNumber(lo)
		if err != nil {
			return nil, err
		}
		b := a
		if isRange {
			if b, err = parseCheckpointNumber(hi); err != nil {
				return nil, err
			}
		}
		if b < a {
			return nil, fmt.Errorf("checkpoint range %q: %d is greater than %d", part, a, b)
		}
		for n := a; n <= b; n++ {
			sel[n] = true
		}
	}
	return sel, nil
}

func parseCheckpointNumber(s string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n < 1 || n > len(all) {
		return 0, fmt.Errorf("checkpoint %q: want a number from 1 to %d", s, len(all))
	}
	return n, nil
}

// ParseOverride reads "N=ATOL,RTOL" (one checkpoint) or "N-M=ATOL,RTOL".
func ParseOverride(s string) (Selection, Tolerance, error) {
	lhs, rhs, ok := strings.Cut(s, "=")
	if !ok {
		return nil, Tolerance{}, fmt.Errorf("tolerance %q: want N=ATOL,RTOL", s)
	}
	sel, err := ParseSelection(lhs)
	if err != nil || strings.TrimSpace(lhs) == "" {
		return nil, Tolerance{}, fmt.Errorf("tolerance %q: bad checkpoint: %v", s, err)
	}
	a, r, ok := strings.Cut(rhs, ",")
	if !ok {
		return nil, Tolerance{}, fmt.Errorf("tolerance %q: want N=ATOL,RTOL", s)
	}
	var tol Tolerance
	if tol.Atol, err = parseNonNegative(a); err != nil {
		return nil, Tolerance{}, fmt.Errorf("tolerance %q: atol: %w", s, err)
	}
	if tol.Rtol, err = parseNonNegative(r); err != nil {
		return nil, Tolerance{}, fmt.Errorf("tolerance %q: rtol: %w", s, err)
	}
	return sel, tol, nil
}

func parseNonNegative(s string) (float64, error) {
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || !(v >= 0) || v > 1e30 {
		return 0, fmt.Errorf("%q is not a non-negative number", s)
	}
	return v, nil
}

// Overrides resolves the command line's tolerances into per-checkpoint
// ones: atol and rtol (negative: not given) replace that half of every
// non-exact checkpoint's default, the other half staying the default;
// each spec "N=ATOL,RTOL" or "N-M=ATOL,RTOL" then sets the whole
// tolerance of its checkpoints, later specs winning.
func Overrides(atol, rtol float64, specs []string) (map[int]Tolerance, error) {
	out := map[int]Tolerance{}
	if atol >= 0 || rtol >= 0 {
		for _, cp := range all {
			if cp.Exact {
				continue
			}
			tol := cp.Tolerance
			if atol >= 0 {
				tol.Atol = atol
			}
			if rtol >= 0 {
				tol.Rtol = rtol
			}
			out[cp.Number] = tol
		}
	}
	for _, s := range specs {
		nums, tol, err := ParseOverride(s)
		if err != nil {
			return nil, err
		}
		for n := range nums {
			out[n] = tol
		}
	}
	return out, nil
}
