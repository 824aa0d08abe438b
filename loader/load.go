package loader

import (
	"context"
	"errors"
	"fmt"
	"github.com/llorch/llorch-check/model"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"

	"github.com/llorch/llorch-check/gguf"
	"github.com/llorch/llorch-check/internal/regularfile"
	"github.com/llorch/llorch-check/weights"
)

// Load reads a model: an HF directory (dir/config.json and
// dir/model.safetensors, or the shards dir/model.safetensors.index.json
// lists) or a GGUF file in llama.cpp's layout of one of
// model.Architectures. Any regular file, or a missing path ending in
// .gguf, is taken for GGUF, so that the error names the file rather than
// a config.json beside it.
func Load(path string) (*model.Model, error) { return LoadWith(path, Options{}) }

// Options choose how a loaded model is held in memory.
type Options struct {
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
	// WriteWeightsCache (a server writes it while it serves).
	WriteCacheLater bool
}

// LoadWith is Load with options.
func LoadWith(path string, opt Options) (*model.Model, error) {
	return LoadContext(context.Background(), path, opt)
}

// LoadContext is LoadWith that stops, between tensors, when ctx ends: a
// server told to stop while loading a large model stops loading.
func LoadContext(ctx context.Context, path string, opt Options) (*model.Model, error) {
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
			key, cachePath, err = weightsCacheKey(weightsFile, opt)
		}
		if err == nil {
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
	if err := m.SlabBlocks(); err != nil {
		return nil, fmt.Errorf("loading %s: %w", path, err)
	}
	switch {
	case cachePath != "" && opt.WriteCacheLater:
		leaveCache(m, &pendingCache{path: cachePath, key: key, note: note})
		m.WeightsCache = note + "to be written to " + cachePath
	case cachePath != "":
		m.WeightsCache = writeCacheNote(m, note, cachePath, key)
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

// loadHF loads an HF checkpoint through the HF loader of its family's
// placement (placings: GPT-2's, hf_gpt2.go, or the Llama family's,
// hf_llama.go).
func loadHF(ctx context.Context, dir string, opt Options) (*model.Model, error) {
	cfg, err := model.LoadConfig(filepath.Join(dir, "config.json"))
	if err != nil {
		return nil, err
	}
	if err := cfg.TruncateLayers(opt.Layers); err != nil {
		return nil, err
	}
	pc, err := placingOf(cfg)
	if err != nil {
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
	release, done := releaseFor(ckpt.Files, ckpt.Data)
	m, err := pc.hf(ctx, cfg, f, release, opt)
	done()
	if uerr := ckpt.Close(); uerr != nil && err == nil {
		err = fmt.Errorf("unmapping %s: %w", ckpt.Path, uerr)
	}
	if err != nil {
		return nil, fmt.Errorf("loading %s: %w", ckpt.Path, err)
	}
	m.Dir, m.WeightsPath, m.Format, m.Layers = dir, ckpt.Path, model.FormatHF, opt.Layers
	return m, nil
}
