package model

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/llorch/llorch-check/gguf"
	"github.com/llorch/llorch-check/internal/regularfile"
	"github.com/llorch/llorch-check/kernels"
	"github.com/llorch/llorch-check/safetensors"
	"github.com/llorch/llorch-check/weights"
)

// Load reads a model: an HF directory (dir/config.json and
// dir/model.safetensors, or the shards dir/model.safetensors.index.json
// lists) or a GGUF file in llama.cpp's layout of one of
// the Architectures. Any
// regular file, or a missing path ending in .gguf, is taken for GGUF, so
// that the error names the file rather than a config.json beside it. Q8_0
// GGUF weights are dequantised on load.
func Load(path string) (*Model, error) { return LoadWith(path, LoadOptions{}) }

// LoadOptions choose how a loaded model is held in memory.
type LoadOptions struct {
	// Float16 holds the weight matrices (wte and each block's four Conv1D
	// matrices, nearly all the bytes) as float16, which halves the memory
	// a decode step streams; arithmetic stays float32. A float16 file's
	// matrices are kept exactly; other types are rounded to nearest even,
	// and a value beyond float16's range is an error. Model.PrecisionDType
	// tells which reference sets and tolerances then apply.
	Float16 bool
	// AsStored holds the matrices as the file stores them when every one
	// of them is float16, or every one bfloat16 (an HF file's; a GGUF
	// file's float16): nothing is rounded, the kernels give float32
	// weights' bits, and memory and decode traffic halve, where float32
	// would double the file. Other files load as Float16 says.
	AsStored bool
	// WeightsCache, when not empty, is a directory in which the model's
	// weights are kept as the kernels hold them and mapped on the next
	// load instead of re-laid (weightscache.go); Model.WeightsCache says
	// what happened.
	WeightsCache string
	// Layers, when positive, loads and runs only the first Layers blocks,
	// then the final norm and head (an HF checkpoint's; a GGUF file loads
	// whole). Model.Layers records it.
	Layers int
	// WriteCacheLater leaves a cache the load must write to
	// Model.WriteWeightsCache (a server writes it while it serves).
	WriteCacheLater bool
}

// LoadWith is Load with options.
func LoadWith(path string, opt LoadOptions) (*Model, error) {
	return LoadContext(context.Background(), path, opt)
}

// LoadContext is LoadWith that stops, between tensors, when ctx ends: a
// server told to stop while loading a large model stops loading.
func LoadContext(ctx context.Context, path string, opt LoadOptions) (*Model, error) {
	// Converting a tensor leaves its source copy (and for GGUF matrices a
	// transposed one) behind; at the default GOGC the heap doubled its
	// live size before collecting them, and peak RSS with it. The weights
	// hold no pointers, so the extra collections cost little.
	defer debug.SetGCPercent(debug.SetGCPercent(loadGCPercent))
	load := loadHF
	st, err := os.Stat(path)
	isGGUF := (err == nil && st.Mode().IsRegular()) || (err != nil && strings.HasSuffix(path, ".gguf"))
	if isGGUF {
		load = loadGGUF
		if opt.Layers > 0 {
			return nil, fmt.Errorf("%s: --layers takes an HF checkpoint; a GGUF file loads whole", path)
		}
	}
	var key cacheKey
	var cachePath, note string
	if opt.WeightsCache != "" {
		weightsFile := path
		if !isGGUF {
			weightsFile, err = weights.WeightsFile(path)
		}
		// A model the key cannot be made for (no weights file) is the
		// loader's to name.
		if err == nil {
			key, err = weightsCacheKey(weightsFile, opt)
		}
		if err == nil {
			cachePath = weightsCachePath(opt.WeightsCache, key)
			m, err := loadCached(ctx, path, isGGUF, cachePath, key)
			if err == nil {
				m.WeightsCache = "read from " + cachePath
				return m, nil
			}
			if !errors.Is(err, errCacheMiss) {
				note = fmt.Sprintf("%v; ", err)
			}
		}
	}
	m, err := load(ctx, path, opt)
	if err != nil {
		return nil, err
	}
	if err := m.slabBlocks(); err != nil {
		return nil, fmt.Errorf("loading %s: %w", path, err)
	}
	switch {
	case cachePath != "" && opt.WriteCacheLater:
		m.pendingCache = &pendingCache{path: cachePath, key: key, note: note}
		m.WeightsCache = note + "to be written to " + cachePath
	case cachePath != "":
		m.WeightsCache = m.writeCacheNote(note, cachePath, key)
	}
	// The conversion's garbage, collected, still holds pages until the
	// scavenger returns them, minutes later: give them back now, so
	// that a loaded model's RSS is the model.
	debug.FreeOSMemory()
	return m, nil
}

// loadGCPercent is GOGC while a model loads: garbage up to a fifth of the
// live heap.
const loadGCPercent = 20

// slabHead holds the LM head (the token embedding, or the file's own
// output.weight) as the slabs of its transpose (kernels.SlabbedT), so that
// it streams at the slab kernels' rate: float16 rows of 896 (Qwen2.5-0.5B)
// streamed at 8-10 GB/s through the dot-product kernel, 14-27 as slabs.
// Its products then have the slab kernels' bits, so every loader ends
// with it, and a model's logits do not depend on the path that loaded it.
func (m *Model) slabHead() error {
	V, C := m.Config.VocabSize, m.Config.NEmbd
	for _, w := range []*kernels.Matrix{&m.wte, &m.lmW} {
		if w.Len() == 0 {
			continue
		}
		s, err := kernels.SlabbedT(*w, V, C)
		if err != nil {
			return fmt.Errorf("LM head: %w", err)
		}
		*w = s
	}
	return nil
}

// slabBlocks puts the blocks' float matrices in the layout the decode
// kernels stream fastest (kernels.Slabbed); the same bits come out.
func (m *Model) slabBlocks() error {
	shapes := m.Config.matrixShapes()
	for l := range m.h {
		for i, w := range m.h[l].matrices() {
			if w.Len() == 0 {
				continue // held as column blocks (block.attnParts), each already slabbed
			}
			s, err := kernels.Slabbed(*w, shapes[i][0], shapes[i][1])
			if err != nil {
				return fmt.Errorf("layer %d: %w", l, err)
			}
			*w = s
		}
	}
	return nil
}

// CheckPath refuses a model path that is neither a directory nor a
// regular file, and an HF directory whose config.json is not a regular
// file, before anything opens them (IsGGUF and Load open the path as it
// is): opening a named pipe blocks until a writer comes, deaf to SIGINT
// and SIGTERM. What is missing is left for the loader to name. The files
// opened later (weights, tokenizer, chat template) are refused where they
// are opened (internal/regularfile).
func CheckPath(path string) error {
	st, err := os.Stat(path)
	if err != nil {
		return nil
	}
	if st.IsDir() {
		path = filepath.Join(path, "config.json")
		if _, err := os.Stat(path); err != nil {
			return nil
		}
	}
	return regularfile.Check(path)
}

// IsGGUF reports whether path is a regular file starting with the GGUF
// magic.
func IsGGUF(path string) bool {
	// regularfile opens without blocking: os.Open of a FIFO waits for a
	// writer, and this runs on whatever path a user names.
	f, err := regularfile.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	var magic [4]byte
	_, err = io.ReadFull(f, magic[:])
	return err == nil && string(magic[:]) == gguf.Magic
}

func loadHF(ctx context.Context, dir string, opt LoadOptions) (*Model, error) {
	cfg, err := LoadConfig(filepath.Join(dir, "config.json"))
	if err != nil {
		return nil, err
	}
	if err := truncateLayers(&cfg, opt.Layers); err != nil {
		return nil, err
	}
	ckpt, err := weights.MapCheckpoint(dir)
	if err != nil {
		return nil, err
	}
	f := ckpt.File
	if opt.Layers > 0 {
		f = firstLayers(f, opt.Layers)
	}
	m, err := cfg.family().loadHF(ctx, cfg, f, weights.Release, opt)
	if uerr := ckpt.Close(); uerr != nil && err == nil {
		err = fmt.Errorf("unmapping %s: %w", ckpt.Path, uerr)
	}
	if err != nil {
		return nil, fmt.Errorf("loading %s: %w", ckpt.Path, err)
	}
	m.Dir, m.WeightsPath, m.Format, m.Layers = dir, ckpt.Path, FormatHF, opt.Layers
	return m, nil
}

// loadWeights converts every parameter of a file image into fresh float32
// slices; nothing returned aliases data, so the caller may unmap it.
func loadWeights(cfg Config, data []byte, opt LoadOptions) (*Model, error) {
	f, err := safetensors.Parse(data)
	if err != nil {
		return nil, err
	}
	return loadWeightsFrom(context.Background(), cfg, f, nil, opt)
}

// loadWeightsFrom is loadWeights for a file whose data may be file
// mappings: release, if not nil, is called on each converted range of
// data so that the mapping's pages leave the resident set as the copy
// grows (see weights.Float32s).
func loadWeightsFrom(ctx context.Context, cfg Config, f *safetensors.File, release func([]byte), opt LoadOptions) (*Model, error) {
	// Checked before anything is sized by the config: a config.json that
	// claims a million layers must not allocate a million blocks for a
	// file that holds two. A count merely too high fails below, naming the
	// first missing tensor.
	if cfg.NLayer > len(f.Tensors) {
		return nil, fmt.Errorf("config n_layer %d is more blocks than the file's %d tensors can hold", cfg.NLayer, len(f.Tensors))
	}
	m := &Model{Config: cfg, h: make([]block, cfg.NLayer), faultLayer: -1, Float16: opt.Float16}
	params := m.gpt2Params()
	want := map[string]gpt2Param{}
	buffers := map[string]bool{}
	for _, p := range params {
		want[p.hf] = p
	}
	for i := range m.h {
		// The causal-mask buffers older exports save next to the weights.
		buffers[fmt.Sprintf("h.%d.attn.bias", i)] = true
		buffers[fmt.Sprintf("h.%d.attn.masked_bias", i)] = true
	}
	if opt.AsStored {
		m.holdAsStored(matricesStoredAs(f, want))
	}

	found := map[string]string{} // canonical name -> name in the file
	dtypes := map[string]bool{}
	var lmHead, wte *safetensors.Tensor
	var buf []float32 // weights.RoundFloat16's
	for i := range f.Tensors {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("loading stopped: %w", err)
		}
		t := f.Tensors[i]
		name := strings.TrimPrefix(t.Name, "transformer.")
		if prev, dup := found[name]; dup {
			return nil, fmt.Errorf("tensors %q and %q are the same parameter", prev, t.Name)
		}
		found[name] = t.Name
		if buffers[name] {
			continue
		}
		if name == "lm_head.weight" {
			lmHead = &f.Tensors[i]
			continue
		}
		e, ok := want[name]
		if !ok {
			return nil, fmt.Errorf("unexpected tensor %q", t.Name)
		}
		if !slices.Equal(t.Shape, e.shape) {
			return nil, fmt.Errorf("tensor %q: shape %v, expected %v", t.Name, t.Shape, e.shape)
		}
		if name == "wte.weight" {
			wte = &f.Tensors[i]
		}
		switch {
		case e.dst.mat != nil && m.Float16 && t.DType == "F16":
			*e.dst.mat = kernels.Float16(weights.Float16Bits(f, t, release))
		case e.dst.mat != nil && m.BFloat16 && t.DType == "BF16":
			*e.dst.mat = kernels.BFloat16(weights.BFloat16Bits(f, t, release))
		case e.dst.mat != nil && m.Float16:
			h, err := weights.RoundFloat16(f, t, release, &buf)
			if err != nil {
				return nil, fmt.Errorf("tensor %q: %w", t.Name, err)
			}
			*e.dst.mat = kernels.Float16(h)
			m.roundedToF16 = true
		default:
			if err := e.dst.store(m, weights.Float32s(f, t, release), t.DType); err != nil {
				return nil, fmt.Errorf("tensor %q: %w", t.Name, err)
			}
		}
		dtypes[t.DType] = true
	}
	// Same spelling as the reference manifests: "F16", or "F16+F32" if mixed.
	m.WeightsDType = strings.Join(slices.Sorted(maps.Keys(dtypes)), "+")
	var missing []string
	for _, p := range params {
		if p.dst.empty() {
			missing = append(missing, p.hf)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("missing tensor %q (%d missing in all)", missing[0], len(missing))
	}
	if lmHead != nil {
		if err := checkTied(f, *lmHead, *wte, release); err != nil {
			return nil, err
		}
	}
	if err := m.slabHead(); err != nil {
		return nil, err
	}
	return m, nil
}

var errUntied = errors.New("lm_head.weight differs from wte.weight; only a tied LM head is supported")

// checkTied accepts an lm_head that is an exact copy of wte, comparing
// the two tensors value by value in the file, so no copy is materialised
// and wte's precision in memory does not matter.
func checkTied(f *safetensors.File, t, wte safetensors.Tensor, release func([]byte)) error {
	if !slices.Equal(t.Shape, wte.Shape) {
		return fmt.Errorf("tensor %q: shape %v, expected %v (tied to wte): %w", t.Name, t.Shape, wte.Shape, errUntied)
	}
	if i, v, w := weights.FirstDifference(f, t, wte, release); i >= 0 {
		return fmt.Errorf("tensor %q: element %d is %g, wte has %g: %w", t.Name, i, v, w, errUntied)
	}
	return nil
}

// matricesStoredAs is the dtype an HF file stores every tensor the loader
// holds as a matrix in (want's, and an lm_head), "" if they differ.
func matricesStoredAs(f *safetensors.File, want map[string]gpt2Param) string {
	dtype := ""
	for _, t := range f.Tensors {
		name := strings.TrimPrefix(t.Name, "transformer.")
		if e := want[name]; e.dst.mat == nil && name != "lm_head.weight" {
			continue
		}
		if dtype != "" && t.DType != dtype {
			return ""
		}
		dtype = t.DType
	}
	return dtype
}
