package model

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/llorch/llorch-check/internal/pages"
	"github.com/llorch/llorch-check/kernels"
	"github.com/llorch/llorch-check/safetensors"
	"github.com/llorch/llorch-check/weights"
)

// loadLlamaFrom reads a Llama-family checkpoint's tensors (names with or
// without "model.") through the family's parameter table. Linear weights
// arrive [out,in]; q, k and v are stacked into one matrix and gate and up
// into another, then held transposed, [in,out], as the kernels read
// GPT-2's Conv1D weights. release is as loadWeightsFrom's.
func loadLlamaFrom(ctx context.Context, cfg Config, f *safetensors.File, release func([]byte), opt LoadOptions) (*Model, error) {
	if cfg.NLayer > len(f.Tensors) {
		return nil, fmt.Errorf("config num_hidden_layers %d is more layers than the file's %d tensors can hold", cfg.NLayer, len(f.Tensors))
	}
	byName := map[string]*safetensors.Tensor{}
	for i := range f.Tensors {
		t := &f.Tensors[i]
		name := strings.TrimPrefix(t.Name, "model.")
		if strings.HasSuffix(name, "rotary_emb.inv_freq") {
			continue // a buffer older exports save; recomputed from the config
		}
		if prev, dup := byName[name]; dup {
			return nil, fmt.Errorf("tensors %q and %q are the same parameter", prev.Name, t.Name)
		}
		byName[name] = t
	}
	m := &Model{Config: cfg, h: make([]block, cfg.NLayer), faultLayer: -1, Float16: opt.Float16, rope: newRope(cfg), local: localRope(cfg)}
	params := llamaGlobals(cfg)
	for l := range cfg.NLayer {
		params = append(params, llamaLayer(cfg, l)...)
	}
	if opt.AsStored {
		m.holdAsStored(llamaMatricesDType(params, byName))
	}
	ld := llamaLoader{m: m, f: f, release: release, dtypes: map[string]bool{}, hf: true}
	for i, p := range params {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("loading stopped: %w", err)
		}
		t, ok := byName[p.hf]
		if !ok {
			return nil, fmt.Errorf("missing tensor %q", p.hf)
		}
		if !slices.Equal(t.Shape, p.shape) {
			return nil, fmt.Errorf("tensor %q: shape %v, config.json implies %v", t.Name, t.Shape, p.shape)
		}
		delete(byName, p.hf)
		if next := i + 1; release != nil && next < len(params) {
			if u, ok := byName[params[next].hf]; ok {
				weights.Prefetch(f.Raw(*u)) // read while this one is placed
			}
		}
		if err := ld.put(p, t); err != nil {
			return nil, fmt.Errorf("tensor %q: %w", t.Name, err)
		}
	}
	if err := ld.finish(); err != nil {
		return nil, err
	}
	if t, ok := byName["lm_head.weight"]; ok && cfg.Tied {
		// A tied checkpoint that also stores the head: it must be the embedding.
		emb := f.Tensors[slices.IndexFunc(f.Tensors, func(u safetensors.Tensor) bool {
			return strings.TrimPrefix(u.Name, "model.") == "embed_tokens.weight"
		})]
		if err := checkTied(f, *t, emb, release); err != nil {
			return nil, err
		}
		delete(byName, "lm_head.weight")
	}
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		return nil, fmt.Errorf("unexpected tensor %q (not a %s parameter of this config)", byName[name].Name, cfg.ModelType)
	}
	m.WeightsDType = strings.Join(slices.Sorted(maps.Keys(ld.dtypes)), "+")
	if err := m.slabHead(); err != nil {
		return nil, err
	}
	return m, nil
}

// llamaMatricesDType is the dtype the file stores every matrix of the
// table in, "" if they differ.
func llamaMatricesDType(params []llamaParam, byName map[string]*safetensors.Tensor) string {
	dtype := ""
	for _, p := range params {
		t, ok := byName[p.hf]
		if !ok || len(p.shape) != 2 {
			continue
		}
		if dtype != "" && t.DType != dtype {
			return ""
		}
		dtype = t.DType
	}
	return dtype
}

// llamaLoader places tensors: vectors as float32, matrices as float32 or
// 16-bit float bits (float16, or bfloat16 for a model that holds them
// so), a block's fused matrices assembled row block by row block [out,in]
// and transposed once complete.
type llamaLoader struct {
	m       *Model
	f       *safetensors.File
	release func([]byte)
	dtypes  map[string]bool
	buf     []float32 // weights.RoundFloat16's
	// hf: the tensors are HF's, whose Gemma norms hold w (a GGUF file's
	// hold 1 + w already).
	hf bool
	// The current layer's fused matrices, [out,in], and its index.
	layer       int
	qkv, gateUp staged
}

// staged is a matrix being assembled: float32 or 16-bit float rows, or
// the parts of the file whose bits it holds as stored.
type staged struct {
	f32   []float32
	h16   []uint16
	parts []storedPart
	rows  int
}

func (ld *llamaLoader) put(p llamaParam, t *safetensors.Tensor) error {
	ld.dtypes[t.DType] = true
	if len(p.shape) == 1 {
		return ld.putVector(p, weights.Float32s(ld.f, *t, ld.release))
	}
	if ld.heldAsStored(t) {
		switch p.part {
		case partQKV, partGateUp, partO, partDown:
			return ld.putStored(p, t)
		}
	}
	f32, h16, err := ld.matrix(t)
	if err != nil {
		return err
	}
	return ld.place(p, f32, h16)
}

// putStored places a matrix whose 16-bit bits the model holds as the file
// stores them: its rows are read from the file's pages as its slabs are
// made (kernels.SlabbedRowsFrom), once the fused matrix it is part of has
// all its parts; no copy of it is made on the way.
func (ld *llamaLoader) putStored(p llamaParam, t *safetensors.Tensor) error {
	raw := ld.f.Raw(*t)
	if ld.release != nil {
		weights.PopulateRead(raw) // a mapping: its pages in one call, not a fault each
	}
	view, err := weights.Float16View(raw, t.Numel())
	if err != nil {
		return err
	}
	part := storedPart{row: p.row, rows: p.shape[0], cols: p.shape[1], bits: view, raw: raw}
	if p.part == partO || p.part == partDown {
		b := &ld.m.h[layerOf(p.hf)]
		dst := &b.projW
		if p.part == partDown {
			dst = &b.mlpW
		}
		*dst = ld.slabsOf([]storedPart{part}, part.rows)
		return nil
	}
	s, err := ld.stage(p)
	if err != nil {
		return err
	}
	s.parts = append(s.parts, part)
	if s.f32 != nil || s.h16 != nil {
		ld.flatten(s, ld.m.Config.fusedRows(p.part), part.cols) // a matrix whose other parts were converted
	}
	return nil
}

// flatten copies the stored parts of s, if any, into its 16-bit rows: a
// fused matrix whose parts the file stores in different dtypes (a float16
// model from a file mixing F16 and F32) is assembled the converting way.
func (ld *llamaLoader) flatten(s *staged, rows, cols int) {
	parts := s.parts
	s.parts = nil
	for _, pt := range parts {
		s.put(rows, pt.row, cols, nil, pt.bits)
		if ld.release != nil {
			ld.release(pt.raw)
		}
	}
}

// slabsOf is the [in,out] slabs of the matrix of rows rows made of parts,
// which are then released.
func (ld *llamaLoader) slabsOf(parts []storedPart, rows int) kernels.Matrix {
	cols := parts[0].cols
	w := kernels.SlabbedRowsFrom(rows, cols, ld.m.BFloat16, func(r int) []uint16 {
		for _, pt := range parts {
			if r >= pt.row && r < pt.row+pt.rows {
				return pt.bits[(r-pt.row)*cols:]
			}
		}
		panic("model: row outside every part") // the parameter table covers every row
	})
	if ld.release != nil {
		for _, pt := range parts {
			ld.release(pt.raw)
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

// heldAsStored says whether the model holds matrix t's 16-bit bits as the
// file stores them.
func (ld *llamaLoader) heldAsStored(t *safetensors.Tensor) bool {
	return (ld.m.BFloat16 && t.DType == "BF16") || (ld.m.Float16 && !ld.m.BFloat16 && t.DType == "F16")
}

// stage is the fused matrix p is part of, in its layer: the previous
// layer's, if any, is finished first.
func (ld *llamaLoader) stage(p llamaParam) (*staged, error) {
	if l := layerOf(p.hf); l != ld.layer {
		if err := ld.finish(); err != nil {
			return nil, err
		}
		ld.layer = l
	}
	if p.part == partGateUp {
		return &ld.gateUp, nil
	}
	return &ld.qkv, nil
}

// place puts a matrix, [out,in] as HF and GGUF store it, float32 or
// 16-bit float bits of the model's format, where p says: the embedding
// and head as they are, q/k/v and gate/up staged into the layer's fused
// matrix, o and down as the slabs of their transposes, made where they
// are. All but q/k/v and gate/up must be the loader's own memory, not the
// file's pages.
func (ld *llamaLoader) place(p llamaParam, f32 []float32, h16 []uint16) error {
	bf16 := ld.m.BFloat16
	switch p.part {
	case partEmbed:
		ld.m.wte = matrixOf(f32, h16, bf16)
	case partHead:
		ld.m.lmW = matrixOf(f32, h16, bf16)
	case partQKV, partGateUp:
		s, err := ld.stage(p)
		if err != nil {
			return err
		}
		rows := ld.m.Config.fusedRows(p.part)
		ld.flatten(s, rows, p.shape[1])
		s.put(rows, p.row, p.shape[1], f32, h16)
	case partRouter, partExpertGate, partExpertUp, partExpertDown:
		return ld.placeExpert(p, f32, h16)
	case partO, partDown:
		b := &ld.m.h[layerOf(p.hf)]
		dst := &b.projW
		if p.part == partDown {
			dst = &b.mlpW
		}
		return slabbedRows(f32, h16, bf16, p.shape[0], p.shape[1], dst)
	}
	return nil
}

// matrix converts a tensor to float32, to float16 bits for a Float16
// model (rounding, and marking the model so, unless the file stores F16),
// or to bfloat16 bits, as stored, for a BFloat16 one.
func (ld *llamaLoader) matrix(t *safetensors.Tensor) ([]float32, []uint16, error) {
	switch {
	case ld.m.BFloat16 && t.DType == "BF16":
		return nil, weights.BFloat16Bits(ld.f, *t, ld.release), nil
	case !ld.m.Float16:
		return weights.Float32s(ld.f, *t, ld.release), nil, nil
	case t.DType == "F16":
		return nil, weights.Float16Bits(ld.f, *t, ld.release), nil
	}
	h, err := weights.RoundFloat16(ld.f, *t, ld.release, &ld.buf)
	ld.m.roundedToF16 = true
	return nil, h, err
}

func (ld *llamaLoader) putVector(p llamaParam, v []float32) error {
	m := ld.m
	if ld.hf && m.Config.Gemma != nil && p.part.isNorm() {
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

// finish puts the current layer's fused matrices into its block, as the
// slabs of their transposes.
func (ld *llamaLoader) finish() error {
	c := ld.m.Config
	b := &ld.m.h[ld.layer]
	for _, s := range []struct {
		st   *staged
		dst  *kernels.Matrix
		rows int
	}{{&ld.qkv, &b.attnW, c.fusedRows(partQKV)}, {&ld.gateUp, &b.fcW, c.fusedRows(partGateUp)}} {
		if s.st.parts != nil {
			*s.dst = ld.slabsOf(s.st.parts, s.rows)
			*s.st = staged{}
			continue
		}
		if s.st.f32 == nil && s.st.h16 == nil {
			continue
		}
		if err := slabbedRows(s.st.f32, s.st.h16, ld.m.BFloat16, s.rows, c.NEmbd, s.dst); err != nil {
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
