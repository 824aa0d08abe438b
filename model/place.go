package model

import (
	"fmt"

	"github.com/llorch/llorch-check/internal/pages"
	"github.com/llorch/llorch-check/kernels"
)

// Placer builds a model from a file's tensors, each placed as its
// parameter (Param) says: vectors as float32, matrices as float32,
// 16-bit float bits (float16, or bfloat16 for a model that holds them so)
// or already in the kernels' layout (quantised), a Llama-family block's
// fused matrices assembled row block by row block [out,in] and
// transposed once complete. Package loader reads the files and decodes
// the tensors; the Placer alone knows where in the model each goes.
type Placer struct {
	m *Model
	// release, if not nil, drops a range of a file mapping read for the
	// last time (weights.Release).
	release func([]byte)
	// hf: the tensors are HF's, whose Gemma norms hold w (a GGUF file's
	// hold 1 + w already).
	hf bool
	// The current layer's fused matrices, [out,in], and its index.
	layer       int
	qkv, gateUp staged
}

// NewPlacer starts a model of cfg, its matrices held as float16 if
// float16 (loader.Options.Float16), from a file whose tensors are HF's (hf)
// or llama.cpp's; release is as Placer's. The Llama family's rotary
// frequencies are HF's for cfg unless ReadRope reads a file's.
func NewPlacer(cfg Config, float16, hf bool, release func([]byte)) *Placer {
	m := NewModel(cfg)
	m.Float16 = float16
	if cfg.llama() != nil {
		m.rope, m.local = newRope(cfg), localRope(cfg)
	}
	return &Placer{m: m, release: release, hf: hf}
}

// NewModel is a model of cfg without weights: what a loader fills
// (Placer), or a weights cache restores (SetHolding, WeightArrays).
func NewModel(cfg Config) *Model {
	return &Model{Config: cfg, h: make([]block, cfg.NLayer), faultLayer: -1}
}

// Model is the model being built.
func (pl *Placer) Model() *Model { return pl.m }

// Params is the model's parameter table, in llama.cpp's order.
func (pl *Placer) Params() []Param { return pl.m.params() }

// HoldAsStored holds the matrices as dtype, the type the file stores
// every one of them in (loader.Options.AsStored): float16 or bfloat16 bits
// as they are; any other type as loader.Options.Float16 says.
func (pl *Placer) HoldAsStored(dtype string) { pl.m.holdAsStored(dtype) }

// HeldAsStored says a matrix the file stores as dtype is held with its
// bits as they are: float16 in a Float16 model, bfloat16 in a BFloat16 one.
func (pl *Placer) HeldAsStored(dtype string) bool { return pl.m.heldAsStored(dtype) }

// Rounded records that a matrix was rounded to float16 from another
// type (Model.PrecisionDType).
func (pl *Placer) Rounded() { pl.m.roundedToF16 = true }

// Done finishes the model, once every tensor is placed (and, in the
// Llama family, Finish has run): the LM head becomes the slabs of its
// transpose (slabHead).
func (pl *Placer) Done() (*Model, error) {
	if err := pl.m.slabHead(); err != nil {
		return nil, err
	}
	return pl.m, nil
}

// staged is a matrix being assembled: float32 or 16-bit float rows, or
// the parts of the file whose bits it holds as stored.
type staged struct {
	f32   []float32
	h16   []uint16
	parts []storedPart
	rows  int
}

// flatten copies the stored parts of s, if any, into its 16-bit rows: a
// fused matrix whose parts the file stores in different dtypes (a float16
// model from a file mixing F16 and F32) is assembled the converting way.
func (pl *Placer) flatten(s *staged, rows, cols int) {
	parts := s.parts
	s.parts = nil
	for _, pt := range parts {
		s.put(rows, pt.row, cols, nil, pt.bits)
		if pl.release != nil {
			pl.release(pt.raw)
		}
	}
}

// slabsOf is the [in,out] slabs of the matrix of rows rows made of parts,
// which are then released.
func (pl *Placer) slabsOf(parts []storedPart, rows int) kernels.Matrix {
	cols := parts[0].cols
	w := kernels.SlabbedRowsFrom(rows, cols, pl.m.BFloat16, func(r int) []uint16 {
		for _, pt := range parts {
			if r >= pt.row && r < pt.row+pt.rows {
				return pt.bits[(r-pt.row)*cols:]
			}
		}
		panic("model: row outside every part") // the parameter table covers every row
	})
	if pl.release != nil {
		for _, pt := range parts {
			pl.release(pt.raw)
		}
	}
	return w
}

// storedPart is a matrix's rows [row, row+rows) as the file stores them.
type storedPart struct {
	row, rows, cols int
	bits            []uint16 // raw's bits (raw itself where aligned)
	raw             []byte
}

// stage is the fused matrix p is part of, in its layer: the previous
// layer's, if any, is finished first.
func (pl *Placer) stage(p Param) (*staged, error) {
	if l := layerOf(p.hf); l != pl.layer {
		if err := pl.Finish(); err != nil {
			return nil, err
		}
		pl.layer = l
	}
	if p.part == partGateUp {
		return &pl.gateUp, nil
	}
	return &pl.qkv, nil
}

// Place puts a matrix, [out,in] as HF and GGUF store it, float32 or
// 16-bit float bits of the model's format, where p says: the embedding
// and head as they are, q/k/v and gate/up staged into the layer's fused
// matrix, o and down as the slabs of their transposes, made where they
// are. All but q/k/v and gate/up must be the loader's own memory, not the
// file's pages.
func (pl *Placer) Place(p Param, f32 []float32, h16 []uint16) error {
	bf16 := pl.m.BFloat16
	switch p.part {
	case partEmbed:
		pl.m.wte = matrixOf(f32, h16, bf16)
	case partHead:
		pl.m.lmW = matrixOf(f32, h16, bf16)
	case partQKV, partGateUp:
		s, err := pl.stage(p)
		if err != nil {
			return err
		}
		rows := pl.m.Config.fusedRows(p.part)
		pl.flatten(s, rows, p.shape[1])
		s.put(rows, p.row, p.shape[1], f32, h16)
	case partRouter, partExpertGate, partExpertUp, partExpertDown:
		return pl.PutExpert(p, f32, h16)
	case partO, partDown:
		b := &pl.m.h[layerOf(p.hf)]
		dst := &b.projW
		if p.part == partDown {
			dst = &b.mlpW
		}
		return slabbedRows(f32, h16, bf16, p.shape[0], p.shape[1], dst)
	}
	return nil
}

// PutVector places a Llama-family vector (a norm's weight, a bias),
// taking v over; an HF Gemma norm's w becomes the 1 + w the model holds.
func (pl *Placer) PutVector(p Param, v []float32) error {
	m := pl.m
	if pl.hf && m.Config.Gemma != nil && p.part.isNorm() {
		// HF's Gemma norms hold w and multiply by 1 + w in float32; the
		// model holds the sum, as llama.cpp's GGUF files do.
		for i := range v {
			v[i]++
		}
	}
	if p.part == partNorm {
		m.lnfW = v
		return nil
	}
	b := &m.h[layerOf(p.hf)]
	switch p.part {
	case partPostAttnNorm:
		b.postAttnW = v
	case partPostFFNNorm:
		b.postFFNW = v
	case partAttnNorm:
		b.ln1W = v
	case partFFNNorm:
		b.ln2W = v
	case partQNorm:
		b.qNormW = v
	case partKNorm:
		b.kNormW = v
	case partOBias:
		b.projB = v
	case partDownBias:
		b.mlpB = v
	case partQKVBias, partGateUpBias:
		dst := &b.attnB
		if p.part == partGateUpBias {
			dst = &b.fcB
		}
		if *dst == nil {
			*dst = make([]float32, m.Config.fusedRows(p.part))
		}
		copy((*dst)[p.row:], v)
	}
	return nil
}

// Finish puts the current layer's fused matrices into its block, as the
// slabs of their transposes: once a layer's tensors are placed (Place and
// PutStored finish the previous layer's when the next begins), so a
// loader calls it after the last.
func (pl *Placer) Finish() error {
	c := pl.m.Config
	b := &pl.m.h[pl.layer]
	for _, s := range []struct {
		st   *staged
		dst  *kernels.Matrix
		rows int
	}{{&pl.qkv, &b.attnW, c.fusedRows(partQKV)}, {&pl.gateUp, &b.fcW, c.fusedRows(partGateUp)}} {
		if s.st.parts != nil {
			*s.dst = pl.slabsOf(s.st.parts, s.rows)
			*s.st = staged{}
			continue
		}
		if s.st.f32 == nil && s.st.h16 == nil {
			continue
		}
		if err := slabbedRows(s.st.f32, s.st.h16, pl.m.BFloat16, s.rows, c.NEmbd, s.dst); err != nil {
			return err
		}
		*s.st = staged{}
	}
	return nil
}

// put copies a tensor's rows into the staged matrix from row on.
func (s *staged) put(rows, row, cols int, f32 []float32, h16 []uint16) {
	if f32 != nil {
		if s.f32 == nil {
			s.f32 = pages.Make[float32](rows * cols)
		}
		copy(s.f32[row*cols:], f32)
		return
	}
	if s.h16 == nil {
		s.h16 = pages.Make[uint16](rows * cols)
	}
	copy(s.h16[row*cols:], h16)
}

// layerOf reads the layer index out of an HF name "layers.N. …".
func layerOf(name string) int {
	var l int
	fmt.Sscanf(name, "layers.%d.", &l)
	return l
}

// slabbedRows puts into dst the [in,out] matrix of the [out,in] weight
// (rows, cols) held in f32 or h16 (as matrixOf), in the slab layout,
// taking over that storage (kernels.SlabbedRows).
func slabbedRows(f32 []float32, h16 []uint16, bf16 bool, rows, cols int, dst *kernels.Matrix) error {
	w, err := kernels.SlabbedRows(matrixOf(f32, h16, bf16), rows, cols)
	if err != nil {
		return err
	}
	*dst = w
	return nil
}

// matrixOf is the matrix of f32, or of h16's bits, bfloat16 if bf16 and
// float16 otherwise.
func matrixOf(f32 []float32, h16 []uint16, bf16 bool) kernels.Matrix {
	switch {
	case h16 != nil && bf16:
		return kernels.BFloat16(h16)
	case h16 != nil:
		return kernels.Float16(h16)
	}
	return kernels.Float32(f32)
}

// PutStored places a matrix whose 16-bit bits the model holds as the file
// stores them (HeldAsStored): its rows are read from bits, raw's (a view
// of the file's pages), as its slabs are made (kernels.SlabbedRowsFrom),
// once the fused matrix it is part of has all its parts; no copy of it is
// made on the way. raw is released then.
func (pl *Placer) PutStored(p Param, bits []uint16, raw []byte) error {
	part := storedPart{row: p.row, rows: p.shape[0], cols: p.shape[1], bits: bits, raw: raw}
	if p.part == partO || p.part == partDown {
		b := &pl.m.h[layerOf(p.hf)]
		dst := &b.projW
		if p.part == partDown {
			dst = &b.mlpW
		}
		*dst = pl.slabsOf([]storedPart{part}, part.rows)
		return nil
	}
	s, err := pl.stage(p)
	if err != nil {
		return err
	}
	s.parts = append(s.parts, part)
	if s.f32 != nil || s.h16 != nil {
		pl.flatten(s, pl.m.Config.fusedRows(p.part), part.cols) // a matrix whose other parts were converted
	}
	return nil
}

// PutQuantized places the embedding, the head, o or down as w, a matrix
// already in the kernels' layout (a quantised one).
func (pl *Placer) PutQuantized(p Param, w kernels.Matrix) {
	m := pl.m
	switch p.part {
	case partEmbed:
		m.wte = w
	case partHead:
		m.lmW = w
	case partO:
		m.h[layerOf(p.hf)].projW = w
	case partDown:
		m.h[layerOf(p.hf)].mlpW = w
	}
}

// PutFused places the whole fused matrix p is part of (q|k|v, gate|up) as
// w, a matrix in the kernels' layout; AddColumnBlock places one part of
// it, n columns of its [in,out], when the parts are held each on its own.
func (pl *Placer) PutFused(p Param, w kernels.Matrix) { *pl.fused(p) = w }

// AddColumnBlock: see PutFused.
func (pl *Placer) AddColumnBlock(p Param, w kernels.Matrix, n int) {
	b := &pl.m.h[layerOf(p.hf)]
	blocks := &b.attnParts
	if p.part == partGateUp {
		blocks = &b.fcParts
	}
	*blocks = append(*blocks, colBlock{w: w, n: n})
}

func (pl *Placer) fused(p Param) *kernels.Matrix {
	b := &pl.m.h[layerOf(p.hf)]
	if p.part == partGateUp {
		return &b.fcW
	}
	return &b.attnW
}

// Store places GPT-2's parameter p: vals, stored in the file as dtype,
// as float32, or rounded to float16 for a matrix of a Float16 model.
func (pl *Placer) Store(p Param, vals []float32, dtype string) error {
	return p.dst.store(pl.m, vals, dtype)
}

// SetMatrix places GPT-2's matrix p as w, already as the model holds it.
func (pl *Placer) SetMatrix(p Param, w kernels.Matrix) { *p.dst.mat = w }

// Placed says GPT-2's parameter p has been placed.
func (pl *Placer) Placed(p Param) bool { return !p.dst.empty() }

// UntiedHead is GPT-2's parameter of an LM head of its own: the shape of
// the embedding, whose GGUF tensor (output.weight) llama.cpp's converter
// writes as the embedding's copy when tied.
func (pl *Placer) UntiedHead() Param {
	p := pl.Params()[0]
	p.hf, p.gguf, p.dst, p.part = "lm_head.weight", ggufOutput, mat(&pl.m.lmW), partHead
	return p
}
