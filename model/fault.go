package model

import (
	"fmt"
	"math"
)

// Fault is a deliberate, classic GPT-2 implementation bug. The harness
// injects them to prove that its checkpoints catch each one.
type Fault int

const (
	FaultNone           Fault = iota
	FaultErfGELU              // erf GELU instead of gelu_new's tanh form
	FaultTransposedProj       // attn.c_proj applied transposed (the nanoGPT Linear bug)
	FaultNoCausalMask         // every position attends to every key
	FaultAttnScale            // scores scaled by 1/D instead of 1/√D
	FaultLayerNormEps         // eps 1e-6 instead of the config's
	FaultNoResidual           // x = attn(ln_1(x)), dropping the attention residual
)

var faultNames = [...]string{
	FaultNone:           "none",
	FaultErfGELU:        "erf-gelu",
	FaultTransposedProj: "transposed-proj",
	FaultNoCausalMask:   "no-causal-mask",
	FaultAttnScale:      "attn-scale",
	FaultLayerNormEps:   "layernorm-eps",
	FaultNoResidual:     "no-residual",
}

// ParseFault maps a fault's name (as printed by String) to the fault.
func ParseFault(name string) (Fault, error) {
	for f, n := range faultNames {
		if n == name {
			return Fault(f), nil
		}
	}
	return FaultNone, fmt.Errorf("unknown fault %q (want one of %v)", name, faultNames[1:])
}

func (f Fault) String() string {
	if f < 0 || int(f) >= len(faultNames) {
		return fmt.Sprintf("Fault(%d)", int(f))
	}
	return faultNames[f]
}

// faultyLayerNormEps replaces the config's epsilon under FaultLayerNormEps.
const faultyLayerNormEps = 1e-6

// InjectFault makes later forward passes apply f at block layer, or at every
// block when layer is negative (-1); a layer past the last block injects
// nothing. FaultNone clears any fault. Only blocks are affected (ln_f keeps
// the config's eps under FaultLayerNormEps). It must not run concurrently
// with Forward.
func (m *Model) InjectFault(f Fault, layer int) {
	if f == FaultNone {
		m.fault, m.faultLayer = FaultNone, -1
		return
	}
	m.fault, m.faultLayer = f, layer
}

// faulty reports whether fault f is active at block layer.
func (m *Model) faulty(f Fault, layer int) bool {
	return m.fault == f && (m.faultLayer < 0 || m.faultLayer == layer)
}

// blockFaults is what the injected fault changes in one block, resolved
// once per layer so the block reads as GPT-2 with a few switches.
type blockFaults struct {
	eps                                                             float64 // LayerNorm epsilon of ln_1 and ln_2
	erfGELU, transposedProj, noCausalMask, attnScaleByD, noResidual bool
}

func (m *Model) faultsAt(l int) blockFaults {
	f := blockFaults{
		eps:            m.Config.LayerNormEpsilon,
		erfGELU:        m.faulty(FaultErfGELU, l),
		transposedProj: m.faulty(FaultTransposedProj, l),
		noCausalMask:   m.faulty(FaultNoCausalMask, l),
		attnScaleByD:   m.faulty(FaultAttnScale, l),
		noResidual:     m.faulty(FaultNoResidual, l),
	}
	if m.faulty(FaultLayerNormEps, l) {
		f.eps = faultyLayerNormEps
	}
	return f
}

// attnScale is the divisor of q·k: √D, or D under FaultAttnScale.
func (f blockFaults) attnScale(D int) float32 {
	if f.attnScaleByD {
		return float32(D)
	}
	return float32(math.Sqrt(float64(D)))
}
