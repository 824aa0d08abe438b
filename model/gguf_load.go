package model

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/llorch/llorch-check/gguf"
	"github.com/llorch/llorch-check/internal/pages"
	"github.com/llorch/llorch-check/kernels"
	"github.com/llorch/llorch-check/weights"
)

// loadGGUF reads a GGUF file (GPT-2's, or the Llama family's:
// loadLlamaGGUF) through a memory map. Every parameter
// is copied out of it (quantised matrices stay quantised, in the kernels'
// layout; other tensors become float32), so the map is released before
// returning.
func loadGGUF(ctx context.Context, path string, opt LoadOptions) (*Model, error) {
	data, unmap, err := weights.Map(path)
	if err != nil {
		return nil, err
	}
	m, err := loadGGUFFrom(ctx, data, weights.Release, opt)
	if uerr := unmap(); uerr != nil && err == nil {
		err = fmt.Errorf("unmapping %s: %w", path, uerr)
	}
	if err != nil {
		return nil, fmt.Errorf("loading %s: %w", path, err)
	}
	m.Dir, m.WeightsPath = filepath.Dir(path), path
	return m, nil
}

// loadGGUFBytes builds a model from a complete GGUF image; nothing it
// returns aliases data.
func loadGGUFBytes(ctx context.Context, data []byte, opt LoadOptions) (*Model, error) {
	return loadGGUFFrom(ctx, data, nil, opt)
}

// loadGGUFFrom is loadGGUFBytes for data that may be a file mapping:
// release, if not nil, drops each tensor's pages once converted, so the
// mapping and the float32 copy are not both resident (a 654 MB F32 file
// once peaked at 1.3 GB).
func loadGGUFFrom(ctx context.Context, data []byte, release func([]byte), opt LoadOptions) (*Model, error) {
	f, cfg, err := parseGGUF(data)
	if err != nil {
		return nil, err
	}
	if release != nil && f.DataOffset <= int64(len(data)) {
		// The metadata is parsed (its vocabulary is a megabyte or two);
		// its pages would otherwise stay resident until the unmap.
		release(data[:f.DataOffset])
	}
	return cfg.family().loadGGUF(ctx, f, cfg, release, opt)
}

// loadGPT2GGUF builds a GPT-2 model from a file in llama.cpp's gpt2 layout.
func loadGPT2GGUF(ctx context.Context, f *gguf.File, cfg Config, release func([]byte), opt LoadOptions) (*Model, error) {
	m := &Model{Config: cfg, h: make([]block, cfg.NLayer), faultLayer: -1, Format: FormatGGUF, Float16: opt.Float16}
	params := m.gpt2Params()
	if opt.AsStored {
		m.holdAsStored(ggufMatricesStoredAs(f, params))
	}
	known := map[string]bool{ggufOutput: true}
	for _, p := range params {
		known[p.gguf] = true
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
		if tied, err = weights.SameTensor(f, out, params[0].gguf); err != nil {
			return nil, err
		}
		if raw, _ := f.TensorData(out.Name); tied && release != nil {
			release(raw) // read for the comparison, never again
		}
	}
	types := map[string]bool{}
	load := func(t gguf.TensorInfo, p gpt2Param) error {
		if err := weights.CheckTensor(t, p.ggufDims()); err != nil {
			return err
		}
		raw, err := f.TensorData(t.Name)
		if err != nil {
			return err
		}
		if err := storeGGUFTensor(m, p, t, raw, release); err != nil {
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
		t, ok := f.Tensor(p.gguf)
		if !ok {
			return nil, fmt.Errorf("missing tensor %q", p.gguf)
		}
		if err := load(t, p); err != nil {
			return nil, err
		}
	}
	if hasOutput && !tied {
		head := params[0]
		head.gguf, head.dst = out.Name, mat(&m.lmW)
		if err := load(out, head); err != nil {
			return nil, err
		}
	}
	m.WeightsDType = strings.Join(slices.Sorted(maps.Keys(types)), "+")
	if m.SourceSHA256, err = weights.SHA256(f, KeySourceSHA256); err != nil {
		return nil, err
	}
	if err := m.slabHead(); err != nil {
		return nil, err
	}
	return m, nil
}

// storeGGUFTensor places tensor t's data raw in p's dst. A matrix of a
// quantised type stays quantised (unless the model holds float16), its
// rows decoded straight into the kernels' layout, releasing (if release
// is not nil) the rows read so far every so often: the largest tensor's
// pages (output.weight of a Q4_K_M file, 32 MB of 113) would otherwise
// all be resident at the end of the load, on top of everything copied.
// Everything else is converted to float32 (and rounded to float16 for a
// Float16 model).
func storeGGUFTensor(m *Model, p gpt2Param, t gguf.TensorInfo, raw []byte, release func([]byte)) error {
	if _, ok := gguf.GroupsOf(t.Type); ok && p.dst.mat != nil && !m.Float16 {
		// The file's rows run along the reduction: Conv1D weights are
		// stored [out][in] (p.transposed), the embedding [V][C].
		rows, cols := p.shape[0], p.shape[1]
		if p.transposed {
			rows, cols = cols, rows
		}
		w, err := weights.Quantized([]weights.Part{{Info: t, Raw: raw, Rows: rows}}, cols, !p.transposed, release)
		if err != nil {
			return err
		}
		*p.dst.mat = w
		return nil
	}
	if p.dst.mat != nil && m.heldAsStored(t.Type) {
		// Float16 (bfloat16) held as such: the file's bits, moved, not
		// widened to float32 and rounded back (the same bits, a fifth of
		// an F16 file's load).
		bits, err := weights.Float16View(raw, int(t.Elements()))
		if err != nil {
			return fmt.Errorf("tensor %q: %w", t.Name, err)
		}
		held := matrixOf(nil, pages.Clone(bits), m.BFloat16)
		if !p.transposed {
			*p.dst.mat = held
			return nil
		}
		w, err := kernels.SlabbedRows(held, p.shape[1], p.shape[0])
		if err != nil {
			return fmt.Errorf("tensor %q: %w", t.Name, err)
		}
		*p.dst.mat = w
		return nil
	}
	vals := pages.Make[float32](int(t.Elements()))
	if err := gguf.DecodeFloat32(t.Type, raw, vals); err != nil {
		return err
	}
	if p.transposed {
		vals = weights.Transpose(vals, p.shape[1], p.shape[0])
	}
	return p.dst.store(m, vals, t.Type.String())
}

// parseGGUF reads a GGUF image's metadata and the configuration it gives.
func parseGGUF(data []byte) (*gguf.File, Config, error) {
	f, err := gguf.ReadBytes(data)
	if err != nil {
		return nil, Config{}, err
	}
	cfg, err := ggufConfig(f)
	return f, cfg, err
}

// ggufConfig reads the hyper-parameters of the file's architecture, as
// its family reads them; the vocabulary size is token_embd's row count,
// which the tokenizer, when present, must match.
func ggufConfig(f *gguf.File) (Config, error) {
	arch, err := f.String(keyArchitecture)
	if err != nil {
		return Config{}, err
	}
	a, ok := archByName(arch)
	if !ok {
		a, ok = archByGGUF(arch) // llama.cpp's name for it (qwen3moe)
	}
	if !ok {
		return Config{}, fmt.Errorf("key %s: value %q is not supported (known: %s)", keyArchitecture, arch, knownArchs())
	}
	return a.fam.ggufConfig(f, a.Name)
}

// gpt2GGUFConfig reads llama.cpp's gpt2.* hyper-parameters.
func gpt2GGUFConfig(f *gguf.File) (Config, error) {
	c := Config{ModelType: ArchGPT2, ActivationFunction: "gelu_new"}
	var err error
	for _, s := range []struct {
		key string
		dst *int
	}{
		{keyContextLength, &c.NPositions},
		{keyEmbeddingLen, &c.NEmbd},
		{keyFeedForwardLen, &c.NInner},
		{keyBlockCount, &c.NLayer},
		{keyHeadCount, &c.NHead},
	} {
		if *s.dst, err = weights.Dim(f, s.key); err != nil {
			return Config{}, err
		}
	}
	if c.NEmbd%c.NHead != 0 {
		return Config{}, fmt.Errorf("key %s: value %d is not divisible by %s %d", keyEmbeddingLen, c.NEmbd, keyHeadCount, c.NHead)
	}
	// Checked before anything is sized by it, so a crafted block count
	// cannot allocate more blocks than the file has tensors; a count that
	// is merely too high fails later, naming the first missing tensor.
	if c.NLayer > len(f.Tensors) {
		return Config{}, fmt.Errorf("key %s: value %d is more blocks than the file's %d tensors can hold", keyBlockCount, c.NLayer, len(f.Tensors))
	}
	if c.LayerNormEpsilon, err = weights.PositiveFloat(f, keyLayerNormEps, 0); err != nil {
		return Config{}, err
	}
	if err := ggufVocab(f, &c, 50256, 50256); err != nil {
		return Config{}, err
	}
	return c, nil
}

// ggufVocab sets the vocabulary size, token_embd's row count, which the
// tokenizer, when present, must match; and the BOS and EOS ids, bos and
// eos when the file has none.
func ggufVocab(f *gguf.File, c *Config, bos, eos int) error {
	emb, ok := f.Tensor("token_embd.weight")
	if !ok {
		return fmt.Errorf("missing tensor %q", "token_embd.weight")
	}
	if len(emb.Dims) != 2 || emb.Dims[0] != uint64(c.NEmbd) || emb.Dims[1] == 0 || emb.Dims[1] > maxDim {
		return fmt.Errorf("tensor %q: dims %v contradict the hyper-parameters, which give [%d n_vocab]", emb.Name, emb.Dims, c.NEmbd)
	}
	c.VocabSize = int(emb.Dims[1])
	if v, ok := f.Get(keyTokens); ok {
		if a, isArr := v.V.(gguf.Array); isArr && a.Len() != c.VocabSize {
			return fmt.Errorf("key %s: %d tokens, but token_embd.weight has %d rows", keyTokens, a.Len(), c.VocabSize)
		}
	}
	var err error
	if c.BOSTokenID, err = weights.TokenID(f, keyBOS, bos, c.VocabSize); err != nil {
		return err
	}
	c.EOSTokenID, err = weights.TokenID(f, keyEOS, eos, c.VocabSize)
	return err
}

// ggufMatricesStoredAs is "F16" or "BF16" when the file stores every
// weight matrix (and output.weight, if present) in that type; "" otherwise.
func ggufMatricesStoredAs(f *gguf.File, params []gpt2Param) string {
	names := []string{ggufOutput}
	for _, p := range params {
		if p.dst.mat != nil {
			names = append(names, p.gguf)
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
