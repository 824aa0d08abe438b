package model

import (
	"fmt"
	"slices"
)

// Param is one tensor of a family's parameter table: its name in HF's
// layout (without "transformer." or "model.") and in llama.cpp's GGUF
// layout, its row-major shape as HF stores it, how GGUF stores it
// differently, and where it goes in the model. The one table the HF
// loader, the GGUF loader and the GGUF writer (package loader) read, so
// that a family's names and shapes are written once, beside its block.
type Param struct {
	hf, gguf string
	shape    []int
	// transposed: GGUF stores the matrix transposed (GPT-2's Conv1D
	// [in,out], which llama.cpp's converter writes as Linear's [out,in]).
	transposed bool
	// ropeHeads: llama.cpp's converter permutes the rows of llama's q and
	// k (not Qwen2's, Qwen3's nor Phi-3's) so that its rope pairs
	// adjacent channels; the GGUF side undoes and redoes it with this
	// many heads. 0: stored as HF stores it.
	ropeHeads int

	// GPT-2's: where the tensor goes.
	dst dest
	// The Llama family's: the parameter it fills (Placer), the first row
	// of the fused matrix or vector it fills, and the expert a
	// partExpert* tensor belongs to.
	part   part
	row    int
	expert int
}

// HF is the tensor's name in HF's layout, without "transformer." or
// "model.".
func (p Param) HF() string { return p.hf }

// GGUF is its name in llama.cpp's layout.
func (p Param) GGUF() string { return p.gguf }

// Shape is its row-major shape as an HF checkpoint stores it.
func (p Param) Shape() []int { return p.shape }

// Transposed says GGUF stores the matrix transposed.
func (p Param) Transposed() bool { return p.transposed }

// RopeHeads is the number of heads whose rows llama.cpp's converter
// permutes for its rope; 0 when it stores them as HF does.
func (p Param) RopeHeads() int { return p.ropeHeads }

// Stored is the tensor's row-major shape in a GGUF file.
func (p Param) Stored() []int {
	stored := slices.Clone(p.shape)
	if p.transposed {
		stored[0], stored[1] = stored[1], stored[0]
	}
	return stored
}

// Layer is the block a layer tensor belongs to (0 for the others).
func (p Param) Layer() int { return layerOf(p.hf) }

// Fused names the fused matrix of a Llama-family block the tensor is rows
// of ("qkv": q, k and v, or Phi-3's qkv; "gate_up"), "" for the others:
// the loaders gather a fused matrix's parts before placing it.
func (p Param) Fused() string {
	switch p.part {
	case partQKV:
		return "qkv"
	case partGateUp:
		return "gate_up"
	}
	return ""
}

// BlockMatrix says the tensor is (part of) one of a block's four dense
// matrices: q|k|v, o, gate|up or down.
func (p Param) BlockMatrix() bool {
	switch p.part {
	case partQKV, partGateUp, partO, partDown:
		return true
	}
	return false
}

// Router says the tensor is a sparse layer's router; Expert that it is
// an expert's matrix. llama.cpp stacks a layer's experts (ExpertStacks).
func (p Param) Router() bool { return p.part == partRouter }

// Expert: see Router.
func (p Param) Expert() bool {
	switch p.part {
	case partExpertGate, partExpertUp, partExpertDown:
		return true
	}
	return false
}

// CheckRopeHeads refuses a permutation whose heads do not split in two.
func (p Param) CheckRopeHeads() error {
	if p.ropeHeads > 0 && (p.shape[0]%p.ropeHeads != 0 || p.shape[0]/p.ropeHeads%2 != 0) {
		return fmt.Errorf("tensor %q: %d rows do not split into %d heads of pairs for llama's rope permutation", p.gguf, p.shape[0], p.ropeHeads)
	}
	return nil
}

// params is the model's parameter table, in llama.cpp's order.
func (m *Model) params() []Param { return m.Config.family().params(m) }

// Matrix says the model holds the tensor as a matrix (kernels.Matrix),
// not a float32 vector: GPT-2's position table, [P,C], is a vector.
func (p Param) Matrix() bool {
	if p.dst != (dest{}) {
		return p.dst.mat != nil
	}
	return len(p.shape) == 2
}

// Params is the parameter table of a model of c, in llama.cpp's order.
func Params(c Config) []Param { return NewModel(c).params() }
