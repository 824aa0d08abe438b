package loader

import (
	"context"
	"fmt"
	"github.com/llorch/llorch-check/model"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/llorch/llorch-check/gguf"
	"github.com/llorch/llorch-check/internal/pages"
	"github.com/llorch/llorch-check/kernels"
	"github.com/llorch/llorch-check/weights"
)

// loadGGUF reads a GGUF file through a memory map, by the GGUF loader of
// its family's placement (placings: GPT-2's, loadGPT2GGUF, or the Llama
// family's, loadLlamaGGUF, gguf_llama.go). Every parameter
// is copied out of it (quantised matrices stay quantised, in the kernels'
// layout; other tensors become float32), so the map is released before
// returning.
func loadGGUF(ctx context.Context, path string, opt Options) (*model.Model, error) {
	data, unmap, err := weights.Map(path)
	if err != nil {
		return nil, err
	}
	release, done := releaseFor([]string{path}, [][]byte{data})
	m, err := loadGGUFFrom(ctx, data, release, opt)
	done()
	if uerr := unmap(); uerr != nil && err == nil {
		err = fmt.Errorf("unmapping %s: %w", path, uerr)
	}
	if err != nil {
		return nil, fmt.Errorf("loading %s: %w", path, err)
	}
	m.Dir, m.WeightsPath = filepath.Dir(path), path
	return m, nil
}

// loadGGUFFrom builds a model from a complete GGUF image; nothing it
// returns aliases data. data may be a file mapping: release, if not nil,
// drops each tensor's pages once converted, so the mapping and the
// float32 copy are not both resident (a 654 MB F32 file once peaked at
// 1.3 GB).
func loadGGUFFrom(ctx context.Context, data []byte, release func([]byte), opt Options) (*model.Model, error) {
	f, cfg, err := parseGGUF(data)
	if err != nil {
		return nil, err
	}
	if release != nil && f.DataOffset <= int64(len(data)) {
		// The metadata is parsed (its vocabulary is a megabyte or two);
		// its pages would otherwise stay resident until the unmap.
		release(data[:f.DataOffset])
	}
	pc, err := placingOf(cfg)
	if err != nil {
		return nil, err
	}
	m, err := pc.gguf(ctx, f, cfg, release, opt)
	if err != nil {
		return nil, err
	}
	m.Format = model.FormatGGUF
	return m, nil
}

// loadGPT2GGUF builds a GPT-2 model from a file in llama.cpp's gpt2 layout.
func loadGPT2GGUF(ctx context.Context, f *gguf.File, cfg model.Config, release func([]byte), opt Options) (*model.Model, error) {
	pl := model.NewPlacer(cfg, opt.Float16, false, release)
	params := pl.Params()
	if opt.AsStored {
		pl.HoldAsStored(ggufMatricesStoredAs(f, params))
	}
	known := map[string]bool{ggufOutput: true}
	for _, p := range params {
		known[p.GGUF()] = true
	}
	for _, t := range f.Tensors {
		if !known[t.Name] {
			return nil, fmt.Errorf("unexpected tensor %q (not part of llama.cpp's gpt2 layout)", t.Name)
		}
	}
	// Whether output.weight is token_embd's copy is decided on the bytes
	// before either is converted and released. llama.cpp's converter
	// writes GPT-2's tied head as such a copy, and the model then keeps
	// one matrix; anything else (a Q4_K_M file stores output.weight as
	// Q6_K) is an LM head of its own.
	out, hasOutput := f.Tensor(ggufOutput)
	tied := false
	var err error
	if hasOutput {
		if tied, err = weights.SameTensor(f, out, params[0].GGUF()); err != nil {
			return nil, err
		}
		if raw, _ := f.TensorData(out.Name); tied && release != nil {
			release(raw) // read for the comparison, never again
		}
	}
	types := map[string]bool{}
	load := func(t gguf.TensorInfo, p model.Param) error {
		if err := weights.CheckTensor(t, weights.Dims(p.Stored())); err != nil {
			return err
		}
		raw, err := f.TensorData(t.Name)
		if err != nil {
			return err
		}
		if err := storeGGUFTensor(pl, p, t, raw, release); err != nil {
			return fmt.Errorf("tensor %q: %w", t.Name, err)
		}
		if release != nil {
			release(raw)
		}
		types[t.Type.String()] = true
		return nil
	}
	for _, p := range params {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("loading stopped: %w", err)
		}
		t, ok := f.Tensor(p.GGUF())
		if !ok {
			return nil, fmt.Errorf("missing tensor %q", p.GGUF())
		}
		if err := load(t, p); err != nil {
			return nil, err
		}
	}
	if hasOutput && !tied {
		if err := load(out, pl.UntiedHead()); err != nil {
			return nil, err
		}
	}
	m := pl.Model()
	m.WeightsDType = strings.Join(slices.Sorted(maps.Keys(types)), "+")
	if m.SourceSHA256, err = weights.SHA256(f, model.KeySourceSHA256); err != nil {
		return nil, err
	}
	return pl.Done()
}

// storeGGUFTensor places tensor t's data raw as GPT-2's p. A matrix of a
// quantised type stays quantised (unless the model holds float16), its
// rows decoded straight into the kernels' layout, releasing (if release
// is not nil) the rows read so far every so often: the largest tensor's
// pages (output.weight of a Q4_K_M file, 32 MB of 113) would otherwise
// all be resident at the end of the load, on top of everything copied.
// Everything else is converted to float32 (and rounded to float16 for a
// Float16 model).
func storeGGUFTensor(pl *model.Placer, p model.Param, t gguf.TensorInfo, raw []byte, release func([]byte)) error {
	m, shape := pl.Model(), p.Shape()
	if _, ok := gguf.GroupsOf(t.Type); ok && p.Matrix() && !m.Float16 {
		// The file's rows run along the reduction: Conv1D weights are
		// stored [out][in] (p.Transposed), the embedding [V][C].
		rows, cols := shape[0], shape[1]
		if p.Transposed() {
			rows, cols = cols, rows
		}
		w, err := weights.Quantized([]weights.Part{{Info: t, Raw: raw, Rows: rows}}, cols, !p.Transposed(), release)
		if err != nil {
			return err
		}
		pl.SetMatrix(p, w)
		return nil
	}
	if p.Matrix() && pl.HeldAsStored(t.Type.String()) {
		// Float16 (bfloat16) held as such: the file's bits, moved, not
		// widened to float32 and rounded back (the same bits, a fifth of
		// an F16 file's load).
		bits, err := weights.Float16View(raw, int(t.Elements()))
		if err != nil {
			return fmt.Errorf("tensor %q: %w", t.Name, err)
		}
		bits = pages.Clone(bits)
		held := kernels.Float16(bits)
		if m.BFloat16 {
			held = kernels.BFloat16(bits)
		}
		if !p.Transposed() {
			pl.SetMatrix(p, held)
			return nil
		}
		w, err := kernels.SlabbedRows(held, shape[1], shape[0])
		if err != nil {
			return fmt.Errorf("tensor %q: %w", t.Name, err)
		}
		pl.SetMatrix(p, w)
		return nil
	}
	vals := pages.Make[float32](int(t.Elements()))
	if err := gguf.DecodeFloat32(t.Type, raw, vals); err != nil {
		return err
	}
	if p.Transposed() {
		vals = kernels.Transpose(vals, shape[1], shape[0])
	}
	return pl.Store(p, vals, t.Type.String())
}

// parseGGUF reads a GGUF image's metadata and the configuration it gives.
func parseGGUF(data []byte) (*gguf.File, model.Config, error) {
	f, err := gguf.ReadBytes(data)
	if err != nil {
		return nil, model.Config{}, err
	}
	cfg, err := model.ConfigFromGGUF(meta{f})
	return f, cfg, err
}

// ggufMatricesStoredAs is "F16" or "BF16" when the file stores every
// weight matrix (and output.weight, if present) in that type; "" otherwise.
func ggufMatricesStoredAs(f *gguf.File, params []model.Param) string {
	names := []string{ggufOutput}
	for _, p := range params {
		if p.Matrix() {
			names = append(names, p.GGUF())
		}
	}
	return ggufStoredAs(f, names)
}

// ggufStoredAs is the one type, F16 or BF16, of the named tensors the
// file has; "" when they are of another type or several.
func ggufStoredAs(f *gguf.File, names []string) string {
	var typ gguf.GGMLType
	n := 0
	for _, name := range names {
		t, ok := f.Tensor(name)
		if !ok {
			continue
		}
		if n > 0 && t.Type != typ || t.Type != gguf.GGMLTypeF16 && t.Type != gguf.GGMLTypeBF16 {
			return ""
		}
		typ, n = t.Type, n+1
	}
	if n == 0 {
		return ""
	}
	return typ.String()
}

// ggufOutput is llama.cpp's optional LM head; GPT-2 ties it to token_embd.
const ggufOutput = "output.weight"
