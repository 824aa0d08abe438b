package model

import (
	"slices"

	"github.com/llorch/llorch-check/tensors"
)

// probeWriter keeps the nil check in one place; with no probe, emit is a
// single comparison.
type probeWriter struct{ p Probe }

func (w probeWriter) on() bool { return w.p != nil }

// emit hands tensor name (of layer, or NoLayer) to the probe; its
// checkpoint is the tensor table's.
func (w probeWriter) emit(name string, layer int, data []float32, shape ...int) {
	if w.p == nil {
		return
	}
	w.emitPart(name, layer, data[:elements(shape)], 0, shape...)
}

// emitRows hands the probe rows of a [positions, n] tensor (of no layer)
// computed only at those positions: Captured.Rows says which.
func (w probeWriter) emitRows(name string, data []float32, rows []int, n int) {
	if w.p == nil {
		return
	}
	w.p.Capture(Captured{Checkpoint: tensors.Checkpoint(name), Layer: NoLayer, Name: name,
		Shape: []int{len(rows), n}, Rows: slices.Clone(rows), Data: data[:len(rows)*n]})
}

// emitPart hands the probe values off..off+len(data)-1 of tensor name, of
// the whole shape: one of the parts a pass emits in order when it does
// not hold the whole tensor at once (Captured.Off).
func (w probeWriter) emitPart(name string, layer int, data []float32, off int, shape ...int) {
	if w.p == nil {
		return
	}
	// Cloning keeps shape from escaping, so the variadic slice stays on the
	// caller's stack when there is no probe.
	w.p.Capture(Captured{Checkpoint: tensors.Checkpoint(name), Layer: layer, Name: name, Shape: slices.Clone(shape), Data: data, Off: off})
}
