package model

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/llorch/llorch-check/gguf"
	"github.com/llorch/llorch-check/safetensors"
	"github.com/llorch/llorch-check/weights"
)

// ConvertGGUF writes the HF model in dir (config.json and its weights,
// one file or shards) as a GGUF file at path, atomically, without loading
// the model: each GGUF tensor is made from its mapped source tensor and
// written before the next is read, and the source's pages are released as
// they are read, so memory holds a tensor's worth of float32 at most
// (rows at a time where llama.cpp's layout keeps HF's rows: every
// Llama-family tensor). The file is byte for byte WriteGGUF's for the
// model Load makes of dir. progress, if not nil, is called before each
// tensor with its index, the count and its name.
func ConvertGGUF(dir, path string, f GGUFFile, progress func(i, n int, name string)) (GGUFWritten, error) {
	ftype, err := weights.FileType(f.Type)
	if err != nil {
		return GGUFWritten{}, err
	}
	cfg, err := LoadConfig(filepath.Join(dir, "config.json"))
	if err != nil {
		return GGUFWritten{}, err
	}
	ckpt, err := weights.MapCheckpoint(dir)
	if err != nil {
		return GGUFWritten{}, err
	}
	defer ckpt.Close()
	var kv []gguf.KV
	var plan []streamTensor
	var dtype string
	kv, plan, dtype, err = cfg.family().convertPlan(cfg, ckpt.File, f.Type, ftype)
	if err != nil {
		return GGUFWritten{}, fmt.Errorf("converting %s: %w", ckpt.Path, err)
	}
	kv = fileKeys(cfg, kv, f, dtype)
	infos := make([]gguf.TensorInfo, len(plan))
	types := make([]gguf.GGMLType, len(plan))
	for i, t := range plan {
		infos[i] = gguf.TensorInfo{Name: t.name, Dims: weights.Dims(t.shape), Type: t.typ}
		types[i] = t.typ
	}
	err = gguf.WriteFileStream(path, kv, infos, func(sw *gguf.StreamWriter) error {
		for i, t := range plan {
			if progress != nil {
				progress(i, len(plan), t.name)
			}
			if err := t.write(sw, ckpt.File); err != nil {
				return fmt.Errorf("tensor %s: %w", t.name, err)
			}
		}
		return nil
	})
	if err != nil {
		return GGUFWritten{}, err
	}
	return written(path, types), nil
}

// streamTensor is one GGUF tensor to write and where its values come
// from: a source tensor, as it is, transposed, or with its rows permuted;
// or values made from the config (rope_freqs).
type streamTensor struct {
	name  string
	shape []int // row-major, as GGUF stores it
	typ   gguf.GGMLType
	src   *safetensors.Tensor
	vals  []float32 // when src is nil
	// transpose: src is shape's transpose (GPT-2's Conv1D [in,out]).
	transpose bool
	// ropeHeads: the rows are permuted for llama.cpp's rope, row r of src
	// going to weights.RopeRow(r, rows, ropeHeads).
	ropeHeads int
	// plusOne: 1 is added to each value, in float32 (Gemma's norms, which
	// GGUF stores as 1 + w, as the model holds them).
	plusOne bool
	// stack: the tensor is these sources one after another (a mixture of
	// experts' matrices, [E, rows, cols]); src is then nil.
	stack []*safetensors.Tensor
}

// streamChunk is the number of values converted at a time (16 MiB of
// float32), the source's pages released after each.
const streamChunk = 4 << 20

// write writes the tensor's data in its GGUF type.
func (t streamTensor) write(sw *gguf.StreamWriter, f *safetensors.File) error {
	put := func(vals []float32) error {
		b, err := gguf.EncodeFloat32(t.typ, vals)
		if err != nil {
			return err
		}
		_, err = sw.Write(b)
		return err
	}
	if t.stack != nil {
		for _, s := range t.stack {
			if err := (streamTensor{shape: t.shape[1:], typ: t.typ, src: s}).write(sw, f); err != nil {
				return err
			}
		}
		return nil
	}
	if t.src == nil {
		return put(t.vals)
	}
	if t.transpose {
		// Whole: each output row gathers a column of the source. Only
		// GPT-2 transposes, and its largest matrix is small.
		vals := weights.Float32s(f, *t.src, weights.Release)
		return put(weights.Transpose(vals, t.shape[1], t.shape[0]))
	}
	rows := 1
	if len(t.shape) == 2 || t.ropeHeads > 0 {
		rows = t.shape[0]
	}
	n := t.src.Numel()
	cols := n / max(rows, 1)
	raw := f.Raw(*t.src)
	size := len(raw) / max(n, 1)
	// from[r] is the source row of output row r.
	var from []int
	if t.ropeHeads > 0 {
		from = make([]int, rows)
		for r := range rows {
			from[weights.RopeRow(r, rows, t.ropeHeads)] = r
		}
	}
	step := max(1, streamChunk/max(cols, 1))
	buf := make([]float32, min(step, rows)*cols)
	for r0 := 0; r0 < rows; r0 += step {
		r1 := min(r0+step, rows)
		vals := buf[:(r1-r0)*cols]
		if from == nil {
			src := raw[r0*cols*size : r1*cols*size]
			safetensors.DecodeInto(vals, t.src.DType, src)
			weights.Release(src)
		} else {
			for r := r0; r < r1; r++ {
				s := from[r]
				safetensors.DecodeInto(vals[(r-r0)*cols:(r-r0+1)*cols], t.src.DType, raw[s*cols*size:(s+1)*cols*size])
			}
		}
		if t.plusOne {
			for i := range vals {
				vals[i]++
			}
		}
		if err := put(vals); err != nil {
			return err
		}
	}
	if from != nil {
		weights.Release(raw)
	}
	return nil
}

// llamaPlan checks a Llama-family checkpoint as loadLlamaFrom does and
// lists llamaGGUF's keys and tensors, each from its source tensor.
func llamaPlan(cfg Config, f *safetensors.File, typ gguf.GGMLType, ftype uint32) ([]gguf.KV, []streamTensor, string, error) {
	if cfg.NLayer > len(f.Tensors) {
		return nil, nil, "", fmt.Errorf("config num_hidden_layers %d is more layers than the file's %d tensors can hold", cfg.NLayer, len(f.Tensors))
	}
	if err := llamaWritable(cfg); err != nil {
		return nil, nil, "", err
	}
	byName := map[string]*safetensors.Tensor{}
	for i := range f.Tensors {
		t := &f.Tensors[i]
		name := strings.TrimPrefix(t.Name, "model.")
		if strings.HasSuffix(name, "rotary_emb.inv_freq") {
			continue
		}
		if prev, dup := byName[name]; dup {
			return nil, nil, "", fmt.Errorf("tensors %q and %q are the same parameter", prev.Name, t.Name)
		}
		byName[name] = t
	}
	globals := llamaGlobals(cfg)
	params := slices.Clone(globals)
	for l := range cfg.NLayer {
		params = append(params, llamaLayer(cfg, l)...)
	}
	dtypes := map[string]bool{}
	var plan []streamTensor
	var emb *safetensors.Tensor
	for i, p := range params {
		if err := checkRopeHeads(p); err != nil {
			return nil, nil, "", err
		}
		switch p.part {
		case partRouter: // with the layer's experts, stacked
			st, err := moePlan(cfg, layerOf(p.hf), byName, typ, dtypes)
			if err != nil {
				return nil, nil, "", err
			}
			plan = append(plan, st...)
			continue
		case partExpertGate, partExpertUp, partExpertDown:
			continue
		}
		t, ok := byName[p.hf]
		if !ok {
			return nil, nil, "", fmt.Errorf("missing tensor %q", p.hf)
		}
		if !slices.Equal(t.Shape, p.shape) {
			return nil, nil, "", fmt.Errorf("tensor %q: shape %v, config.json implies %v", t.Name, t.Shape, p.shape)
		}
		delete(byName, p.hf)
		if p.part == partEmbed {
			emb = t
		}
		dtypes[t.DType] = true
		ty := gguf.GGMLTypeF32
		if len(p.shape) == 2 {
			ty = weights.MatrixType(typ, p.shape[1])
		}
		plan = append(plan, streamTensor{name: p.gguf, shape: p.shape, typ: ty, src: t, ropeHeads: p.ropeHeads, plusOne: cfg.Gemma != nil && p.part.isNorm()})
		if i == len(globals)-1 && cfg.RopeScaling != nil {
			plan = append(plan, streamTensor{name: ggufRopeFreqs, shape: []int{cfg.RotaryDim / 2}, typ: gguf.GGMLTypeF32, vals: llama3RopeFactors(cfg)})
		}
		if i == len(globals)-1 && cfg.LongRope != nil {
			plan = append(plan, longRopeTensors(cfg.LongRope)...)
		}
	}
	if t, ok := byName["lm_head.weight"]; ok && cfg.Tied {
		if err := checkTied(f, *t, *emb, weights.Release); err != nil {
			return nil, nil, "", err
		}
		delete(byName, "lm_head.weight")
	}
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		return nil, nil, "", fmt.Errorf("unexpected tensor %q (not a %s parameter of this config)", byName[name].Name, cfg.ModelType)
	}
	return llamaKeys(cfg, ftype), plan, strings.Join(slices.Sorted(maps.Keys(dtypes)), "+"), nil
}

// gpt2Plan checks a GPT-2 checkpoint as loadWeightsFrom does and lists
// GGUF's keys and tensors for it, each from its source tensor: the Conv1D
// matrices transposed, output.weight after token_embd as its copy.
func gpt2Plan(cfg Config, f *safetensors.File, typ gguf.GGMLType, ftype uint32) ([]gguf.KV, []streamTensor, string, error) {
	if cfg.NLayer > len(f.Tensors) {
		return nil, nil, "", fmt.Errorf("config n_layer %d is more blocks than the file's %d tensors can hold", cfg.NLayer, len(f.Tensors))
	}
	m := &Model{Config: cfg, h: make([]block, cfg.NLayer)}
	params := m.gpt2Params()
	want := map[string]gpt2Param{}
	for _, p := range params {
		want[p.hf] = p
	}
	buffers := map[string]bool{}
	for i := range cfg.NLayer {
		buffers[fmt.Sprintf("h.%d.attn.bias", i)] = true
		buffers[fmt.Sprintf("h.%d.attn.masked_bias", i)] = true
	}
	found := map[string]string{}
	src := map[string]*safetensors.Tensor{}
	dtypes := map[string]bool{}
	var lmHead *safetensors.Tensor
	for i := range f.Tensors {
		t := &f.Tensors[i]
		name := strings.TrimPrefix(t.Name, "transformer.")
		if prev, dup := found[name]; dup {
			return nil, nil, "", fmt.Errorf("tensors %q and %q are the same parameter", prev, t.Name)
		}
		found[name] = t.Name
		if buffers[name] {
			continue
		}
		if name == "lm_head.weight" {
			lmHead = t
			continue
		}
		e, ok := want[name]
		if !ok {
			return nil, nil, "", fmt.Errorf("unexpected tensor %q", t.Name)
		}
		if !slices.Equal(t.Shape, e.shape) {
			return nil, nil, "", fmt.Errorf("tensor %q: shape %v, expected %v", t.Name, t.Shape, e.shape)
		}
		src[name] = t
		dtypes[t.DType] = true
	}
	var missing []string
	for _, p := range params {
		if src[p.hf] == nil {
			missing = append(missing, p.hf)
		}
	}
	if len(missing) > 0 {
		return nil, nil, "", fmt.Errorf("missing tensor %q (%d missing in all)", missing[0], len(missing))
	}
	if lmHead != nil {
		if err := checkTied(f, *lmHead, *src["wte.weight"], weights.Release); err != nil {
			return nil, nil, "", err
		}
	}
	var plan []streamTensor
	for _, p := range params {
		stored := p.stored()
		ty := gguf.GGMLTypeF32
		if len(stored) == 2 && p.gguf != "position_embd.weight" {
			ty = weights.MatrixType(typ, stored[1])
		}
		t := streamTensor{name: p.gguf, shape: stored, typ: ty, src: src[p.hf], transpose: p.transposed}
		plan = append(plan, t)
		if p.gguf == "token_embd.weight" {
			// The tied head, as GGUF's writes it.
			t.name = ggufOutput
			plan = append(plan, t)
		}
	}
	return gpt2Keys(cfg, ftype), plan, strings.Join(slices.Sorted(maps.Keys(dtypes)), "+"), nil
}
