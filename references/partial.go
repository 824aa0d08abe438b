package references

import (
	"strings"

	"github.com/llorch/llorch-check/tensors"
)

// A partial dump (generator.partial true) is what another engine writes
// to be compared with `diff` (FORMAT.md, "Dumps from other engines"): the
// tensors every forward has, without the ones only an op-by-op forward or
// the harness computes.

// Partial reports whether the set declares itself a partial dump.
func (m Manifest) Partial() bool {
	v, _ := m.Generator["partial"].(bool)
	return v
}

// dumpOptional are the tensors a partial dump may leave out.
var dumpOptional = map[string]bool{
	tensors.Q: true, tensors.K: true, tensors.V: true, // inside attention; hooks see c_attn's output, engines may fuse it
	tensors.Scores: true, tensors.Probs: true, // inside the attention kernel (fused in most engines)
}

// DumpOptional reports whether a partial dump may leave out the tensor
// name. Checkpoints 10 to 12 and the log-likelihood pairs are optional
// too: they are manifest entries, not tensors.
func DumpOptional(name string) bool {
	// Checkpoint 3's tensors need a second, incremental forward.
	return dumpOptional[name] || tensors.IncrementalRun(name) || strings.HasPrefix(name, SamplingPrefix)
}

// Emulation is what generator.emulates records: the engine whose
// documented approximations dump_references.py --emulate applied in the
// forward (FORMAT.md, "Emulated engines").
type Emulation struct {
	Profile string `json:"profile"`
	Applies string `json:"applies"`
}

// EmulationF16KV is the profile of llorch-check's own float16 KV cache
// (kvcache.Options.Float16): its sets check Go's forward with that
// cache, not another engine.
const EmulationF16KV = "f16-kv"

// Emulates returns the set's emulation, or nil for plain PyTorch.
func (m Manifest) Emulates() *Emulation {
	e, _ := m.Generator["emulates"].(map[string]any)
	if e == nil {
		return nil
	}
	p, _ := e["profile"].(string)
	a, _ := e["applies"].(string)
	return &Emulation{Profile: p, Applies: a}
}
