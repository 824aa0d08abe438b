package model

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Fault is a deliberate, classic implementation bug of GPT-2 or of the
// Llama family. The harness injects them to prove that its checkpoints
// catch each one.
type Fault int

const (
	FaultNone           Fault = iota
	FaultErfGELU              // erf GELU instead of gelu_new's tanh form
	FaultTransposedProj       // attn.c_proj applied transposed (the nanoGPT Linear bug)
	FaultNoCausalMask         // every position attends to every key
	FaultAttnScale            // scores scaled by 1/D instead of 1/√D
	FaultLayerNormEps         // eps 1e-6 instead of the config's
	FaultNoResidual           // x = attn(ln_1(x)), dropping the attention residual

	// The Llama family's.
	FaultRopeLayout // RoPE pairs channels 2i, 2i+1 (llama.cpp's layout) on HF's unpermuted q/k
	FaultRMSNormF16 // RMSNorm computed in float16, without HF's float32 upcast
	FaultGQARepeat  // query head h reads KV head h mod Hkv instead of h / (H/Hkv)
	FaultSwiGLUSwap // silu(up)·gate instead of silu(gate)·up

	// Sliding windows'.
	FaultWindowOffByOne // a query sees window+1 keys (i − j ≤ window instead of < window)
	FaultWindowIgnored  // the sliding window dropped: every earlier key is seen

	// Long RoPE's.
	FaultLongRopeWrongFactor // longrope's factors chosen by the context, not by the sequence's length (llama.cpp's choice)

	// Gemma's.
	FaultGemmaNormDouble // 1 added to norm weights that already hold 1 + w (a GGUF loader that adds it again)
	FaultNoSoftcap       // Gemma 2's attention soft-cap dropped (and, injected in every layer, the final logit soft-cap)
	// Mixtures of experts'.
	FaultMoENoRenorm         // the chosen experts' probabilities not divided by their sum
	FaultMoESoftmaxAfterTopK // top-k of the router logits, then a softmax over the k chosen
)

var faultNames = [...]string{
	FaultNone:                "none",
	FaultErfGELU:             "erf-gelu",
	FaultTransposedProj:      "transposed-proj",
	FaultNoCausalMask:        "no-causal-mask",
	FaultAttnScale:           "attn-scale",
	FaultLayerNormEps:        "layernorm-eps",
	FaultNoResidual:          "no-residual",
	FaultRopeLayout:          "rope-layout",
	FaultRMSNormF16:          "rmsnorm-f16-upcast",
	FaultGQARepeat:           "gqa-repeat",
	FaultSwiGLUSwap:          "swiglu-swap",
	FaultWindowOffByOne:      "window-off-by-one",
	FaultWindowIgnored:       "window-ignored",
	FaultLongRopeWrongFactor: "longrope-wrong-factor",
	FaultGemmaNormDouble:     "gemma-norm-double",
	FaultNoSoftcap:           "no-softcap",
	FaultMoENoRenorm:         "moe-no-renorm",
	FaultMoESoftmaxAfterTopK: "moe-softmax-after-topk",
}

// AppliesTo says whether f changes the forward pass of a model with this
// config, as its family says: GPT-2's GELU and Conv1D faults have no
// Llama-family counterpart, the Llama family's have none in GPT-2, and
// gqa-repeat needs grouped heads.
func (f Fault) AppliesTo(c Config) bool {
	return f.missing(c) == ""
}

// missing says why f does not change the forward of a model with config
// c, naming what c lacks, or "" when it does.
func (f Fault) missing(c Config) string {
	if f <= FaultNone || int(f) >= len(faultNames) {
		return "not a fault"
	}
	return c.family().faultMissing(f, c)
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

// FaultNames are the faults' names, FaultNone aside, in order, joined by
// ", ": what --inject-fault takes.
func FaultNames() string {
	return strings.Join(faultNames[1:], ", ")
}

// ParseFaultSpec is the fault a spec, NAME or NAME@LAYER, names (an
// error naming spec if none); FaultNone for an empty spec. Whether the
// fault and the layer fit a model is InjectFaultSpec's to say.
func ParseFaultSpec(spec string) (Fault, error) {
	if spec == "" {
		return FaultNone, nil
	}
	name, _, _ := strings.Cut(spec, "@")
	fault, err := ParseFault(name)
	if err != nil {
		return FaultNone, fmt.Errorf("%q: %w", spec, err)
	}
	return fault, nil
}

// InjectFaultSpec parses spec, a fault's name alone (every block) or
// NAME@LAYER (one block), and injects it (InjectFault); an empty spec
// injects nothing. A fault with no counterpart in this model's family
// (Fault.AppliesTo) or a layer it does not have is an error naming spec,
// and leaves the model as it was.
func (m *Model) InjectFaultSpec(spec string) error {
	if spec == "" {
		return nil
	}
	fault, err := ParseFaultSpec(spec)
	if err != nil {
		return err
	}
	_, layerStr, hasLayer := strings.Cut(spec, "@")
	if why := fault.missing(m.Config); why != "" {
		return fmt.Errorf("%q: the fault has no counterpart in this %s model: %s", spec, m.Config.ModelType, why)
	}
	layer := -1
	if hasLayer {
		if layer, err = strconv.Atoi(layerStr); err != nil || layer < 0 || layer >= m.Config.NLayer {
			return fmt.Errorf("%q: layer must be 0..%d", spec, m.Config.NLayer-1)
		}
	}
	m.InjectFault(fault, layer)
	return nil
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
// once per layer so the block reads as its family's with a few switches.
type blockFaults struct {
	eps                                                             float64 // LayerNorm epsilon of ln_1 and ln_2
	rmsEps                                                          float64 // RMSNorm epsilon of the two norms
	erfGELU, transposedProj, noCausalMask, attnScaleByD, noResidual bool
	ropeInterleaved, rmsF16, gqaRepeat, swigluSwap                  bool
	normDouble, noSoftcap                                           bool // Gemma's
	window                                                          int  // the layer's sliding window; 0: none
	moeNoRenorm, moeSoftmaxAfterTopK                                bool
}

func (m *Model) faultsAt(l int) blockFaults {
	f := blockFaults{
		eps:             m.Config.LayerNormEpsilon,
		rmsEps:          m.Config.RMSNormEps,
		erfGELU:         m.faulty(FaultErfGELU, l),
		transposedProj:  m.faulty(FaultTransposedProj, l),
		noCausalMask:    m.faulty(FaultNoCausalMask, l),
		attnScaleByD:    m.faulty(FaultAttnScale, l),
		noResidual:      m.faulty(FaultNoResidual, l),
		ropeInterleaved: m.faulty(FaultRopeLayout, l),
		rmsF16:          m.faulty(FaultRMSNormF16, l),
		gqaRepeat:       m.faulty(FaultGQARepeat, l),
		swigluSwap:      m.faulty(FaultSwiGLUSwap, l),
		normDouble:      m.faulty(FaultGemmaNormDouble, l),
		noSoftcap:       m.faulty(FaultNoSoftcap, l),
		window:          m.Config.Window(l),

		moeNoRenorm:         m.faulty(FaultMoENoRenorm, l),
		moeSoftmaxAfterTopK: m.faulty(FaultMoESoftmaxAfterTopK, l),
	}
	switch {
	case f.window == 0:
	case m.faulty(FaultWindowOffByOne, l):
		f.window++
	case m.faulty(FaultWindowIgnored, l):
		f.window = 0
	}
	if m.faulty(FaultLayerNormEps, l) {
		f.eps = faultyLayerNormEps
		// The RMSNorm models' eps bug: the other common default.
		f.rmsEps = faultyLayerNormEps
		if m.Config.RMSNormEps == faultyLayerNormEps {
			f.rmsEps = 1e-5
		}
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
