package loader

import (
	"context"
	"fmt"
	"github.com/llorch/llorch-check/model"
	"maps"
	"slices"
	"strings"

	"github.com/llorch/llorch-check/gguf"
	"github.com/llorch/llorch-check/internal/pages"
	"github.com/llorch/llorch-check/kernels"
	"github.com/llorch/llorch-check/weights"
)

// ggufPart is one tensor of a matrix being loaded, with its data.
type ggufPart struct {
	p model.Param
	weights.Part
}

// llamaGGUFLoader loads a Llama-family file's tensors through the
// family's Placer, which places them as the HF loader's.
type llamaGGUFLoader struct {
	pl      *model.Placer
	m       *model.Model
	f       *gguf.File
	release func([]byte)
	dtypes  map[string]bool
	// The parts of the fused matrices being gathered, and how many tensors
	// make each (q, k, v or qkv; gate, up or gate_up), by Param.Fused.
	pending map[string][]ggufPart
	parts   map[string]int
}

// loadLlamaGGUF loads the tensors of a file model.ConfigFromGGUF read. Each
// matrix stays in its file's type where the kernels hold it (float32,
// float16 for a Float16 model or an F16 file with AsStored, a
// quantised type as is); q|k|v and gate|up are fused as the HF loader
// fuses them, quantised ones into one quantised matrix when their parts
// share a type, and into float32 (exact, at four bytes a weight) when
// they do not, as llama.cpp's Q4_K_M stores attn_v as Q6_K beside Q4_K.
func loadLlamaGGUF(ctx context.Context, f *gguf.File, cfg model.Config, release func([]byte), opt Options) (*model.Model, error) {
	pl := model.NewPlacer(cfg, opt.Float16, false, release)
	m := pl.Model()
	params := pl.Params()
	known := map[string]bool{}
	// The matrices decide how AsStored holds the weights, the expert
	// stacks among them: a BF16 file whose experts are F16 is not held as
	// bfloat16, which would round them.
	var matrices []string
	for _, p := range params {
		if err := p.CheckRopeHeads(); err != nil {
			return nil, err
		}
		known[p.GGUF()] = true
		if len(p.Shape()) == 2 {
			matrices = append(matrices, p.GGUF())
		}
		if p.Router() {
			for _, s := range cfg.ExpertStacks(p.Layer()) {
				known[s.GGUF] = true
				matrices = append(matrices, s.GGUF)
			}
		}
	}
	for _, name := range cfg.GGUFConfigTensors() { // read with the config, or by Placer.ReadRope
		known[name] = true
	}
	for _, t := range f.Tensors {
		if !known[t.Name] {
			return nil, fmt.Errorf("unexpected tensor %q (not part of llama.cpp's %s layout for these hyper-parameters)", t.Name, cfg.ModelType)
		}
	}
	if opt.AsStored {
		pl.HoldAsStored(ggufStoredAs(f, matrices))
	}
	gl := llamaGGUFLoader{pl: pl, m: m, f: f, release: release, dtypes: map[string]bool{},
		pending: map[string][]ggufPart{}, parts: map[string]int{}}
	for _, p := range params {
		if p.Fused() != "" && p.Layer() == 0 {
			gl.parts[p.Fused()]++
		}
	}
	for _, p := range params {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("loading stopped: %w", err)
		}
		switch {
		case p.Router():
			if err := gl.loadExperts(p.Layer()); err != nil {
				return nil, err
			}
			continue
		case p.Expert():
			continue
		}
		t, ok := f.Tensor(p.GGUF())
		if !ok {
			return nil, fmt.Errorf("missing tensor %q", p.GGUF())
		}
		if err := gl.load(p, t); err != nil {
			return nil, err
		}
	}
	if err := pl.Finish(); err != nil {
		return nil, err
	}
	name, err := pl.ReadRope(meta{f})
	if err != nil {
		return nil, err
	}
	if raw, err := f.TensorData(name); name != "" && err == nil && release != nil {
		release(raw) // read for the frequencies, never again
	}
	m.WeightsDType = strings.Join(slices.Sorted(maps.Keys(gl.dtypes)), "+")
	if m.SourceSHA256, err = weights.SHA256(f, model.KeySourceSHA256); err != nil {
		return nil, err
	}
	return pl.Done()
}

// load reads tensor t as parameter p.
func (gl *llamaGGUFLoader) load(p model.Param, t gguf.TensorInfo) error {
	shape := p.Shape()
	if err := weights.CheckTensor(t, weights.Dims(shape)); err != nil {
		return err
	}
	raw, err := gl.f.TensorData(t.Name)
	if err != nil {
		return err
	}
	gl.dtypes[t.Type.String()] = true
	pt := ggufPart{p, weights.Part{Info: t, Raw: raw, Rows: shape[0], RopeHeads: p.RopeHeads()}}
	m := gl.m
	if len(shape) == 2 && !m.Float16 && !m.BFloat16 {
		if p.Fused() != "" {
			return gl.fused(pt)
		}
		if _, quantised := gguf.GroupsOf(t.Type); quantised {
			return gl.quantised(pt)
		}
	}
	if len(shape) == 2 && gl.pl.HeldAsStored(t.Type.String()) {
		// Float16 (bfloat16) held as such: the file's bits, not widened
		// to float32 and rounded back (the same bits). place copies q/k/v
		// and gate/up into the fused matrix; the embedding and the head
		// it keeps, and o and down it transposes where they are, so
		// those are copied off the file's pages first.
		h, err := pt.Float16s()
		if err != nil {
			return err
		}
		if p.Fused() == "" {
			h = pages.Clone(h)
		}
		if err := gl.pl.Place(pt.p, nil, h); err != nil {
			return err
		}
		gl.done(pt)
		return nil
	}
	vals, err := pt.Float32s()
	if err != nil {
		return err
	}
	gl.done(pt)
	if len(shape) == 1 {
		return gl.pl.PutVector(p, vals)
	}
	return gl.placeFloat(pt, vals)
}

// placeFloat places a float matrix, as float16 bits in a Float16 model.
func (gl *llamaGGUFLoader) placeFloat(pt ggufPart, vals []float32) error {
	if !gl.m.Float16 {
		return gl.pl.Place(pt.p, vals, nil)
	}
	h, err := kernels.ToFloat16(vals)
	if err != nil {
		return fmt.Errorf("tensor %q: %w", pt.Info.Name, err)
	}
	if pt.Info.Type != gguf.GGMLTypeF16 {
		gl.pl.Rounded()
	}
	return gl.pl.Place(pt.p, nil, h)
}

// done releases a part's pages, read for the last time.
func (gl *llamaGGUFLoader) done(pt ggufPart) {
	if gl.release != nil {
		gl.release(pt.Raw)
	}
}

// quantised keeps a quantised embedding, head, o or down matrix
// quantised.
func (gl *llamaGGUFLoader) quantised(pt ggufPart) error {
	p := pt.p
	// The embedding and head [V,C] as stored: the kernels read their rows
	// (Row, MatMulT); o and down transposed.
	w, err := weights.Quantized([]weights.Part{pt.Part}, p.Shape()[1], !p.BlockMatrix(), gl.release)
	if err != nil {
		return err
	}
	gl.pl.PutQuantized(p, w)
	return nil
}

// fused gathers the parts of a layer's q|k|v (gate|up) matrix and places
// them once the last is read: one quantised matrix when all are of one
// quantised type; column blocks, each quantised in its own type, when
// their types differ (llama.cpp's Q4_K_M); float32 for float types.
func (gl *llamaGGUFLoader) fused(pt ggufPart) error {
	p := pt.p
	parts := append(gl.pending[p.Fused()], pt)
	gl.pending[p.Fused()] = parts
	if len(parts) < gl.parts[p.Fused()] {
		return nil
	}
	delete(gl.pending, p.Fused())
	_, quantised := gguf.GroupsOf(parts[0].Info.Type)
	switch {
	case quantised && !slices.ContainsFunc(parts, func(q ggufPart) bool { return q.Info.Type != parts[0].Info.Type }):
		ps := make([]weights.Part, len(parts))
		for i, q := range parts {
			ps[i] = q.Part
		}
		w, err := weights.Quantized(ps, p.Shape()[1], false, gl.release)
		if err != nil {
			return err
		}
		gl.pl.PutFused(p, w)
		return nil
	case slices.ContainsFunc(parts, func(q ggufPart) bool { _, ok := gguf.GroupsOf(q.Info.Type); return ok }):
		for _, q := range parts {
			w, err := gl.columnBlock(q)
			if err != nil {
				return err
			}
			gl.pl.AddColumnBlock(q.p, w, q.p.Shape()[0])
		}
		return nil
	}
	for _, q := range parts {
		vals, err := q.Float32s()
		if err != nil {
			return err
		}
		gl.done(q)
		if err := gl.pl.Place(q.p, vals, nil); err != nil {
			return err
		}
	}
	return nil
}

// columnBlock is one part of a fused matrix held on its own, [in,out]:
// quantised in the file's type, or float32 (slabbed) for a float part.
func (gl *llamaGGUFLoader) columnBlock(q ggufPart) (kernels.Matrix, error) {
	if _, ok := gguf.GroupsOf(q.Info.Type); ok {
		return weights.Quantized([]weights.Part{q.Part}, q.p.Shape()[1], false, gl.release)
	}
	vals, err := q.Float32s()
	if err != nil {
		return kernels.Matrix{}, err
	}
	gl.done(q)
	rows, cols := q.p.Shape()[0], q.p.Shape()[1]
	return kernels.SlabbedRows(kernels.Float32(vals), rows, cols)
}
