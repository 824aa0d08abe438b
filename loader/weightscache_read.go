package loader

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"unsafe"

	"github.com/llorch/llorch-check/internal/regularfile"
	"github.com/llorch/llorch-check/kernels"
	"github.com/llorch/llorch-check/model"
	"github.com/llorch/llorch-check/weights"
)

// Reading a weights cache (weightscache.go): the header, then the arrays
// mapped where they lie and checked against the model's shapes.

// readWeightsCacheHeader reads the header of the cache at path, and the
// offset its data starts at; an error if it is not a cache file.
func readWeightsCacheHeader(path string) (cacheHeader, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return cacheHeader{}, 0, err
	}
	defer f.Close()
	var pre [16]byte
	if _, err := io.ReadFull(f, pre[:]); err != nil || string(pre[:8]) != cacheMagic {
		return cacheHeader{}, 0, fmt.Errorf("%s: not a weights cache", path)
	}
	n := binary.LittleEndian.Uint64(pre[8:])
	st, err := f.Stat()
	if err != nil {
		return cacheHeader{}, 0, err
	}
	if n > uint64(st.Size()) {
		return cacheHeader{}, 0, fmt.Errorf("%s: a header of %d bytes in a file of %d", path, n, st.Size())
	}
	js := make([]byte, n)
	if _, err := io.ReadFull(f, js); err != nil {
		return cacheHeader{}, 0, fmt.Errorf("%s: %w", path, err)
	}
	var h cacheHeader
	if err := json.Unmarshal(js, &h); err != nil {
		return cacheHeader{}, 0, fmt.Errorf("%s: header: %w", path, err)
	}
	return h, pageUp(16 + int64(n)), nil
}

// errCacheMiss is a cache that does not hold this model as loaded now.
var errCacheMiss = errors.New("no cache of this file, these options and this build")

// loadCached loads the model at path (a GGUF file, or an HF directory)
// from the weights cache: its configuration from the model (the GGUF
// file's metadata, config.json), the weights from the cache, mapped where
// they lie.
func loadCached(ctx context.Context, path string, isGGUF bool, cachePath string, key cacheKey) (*model.Model, error) {
	h, start, err := readWeightsCacheHeader(cachePath)
	if errors.Is(err, os.ErrNotExist) {
		return nil, errCacheMiss
	}
	if err != nil {
		return nil, err
	}
	if h.Key != key {
		return nil, errCacheMiss
	}
	var m *model.Model
	if isGGUF {
		m, err = ggufSkeleton(path)
	} else {
		m, err = hfSkeleton(path, key.Layers)
	}
	if err != nil {
		return nil, err
	}
	if js, err := json.Marshal(m.Config); err != nil || !bytes.Equal(js, h.Config) {
		return nil, errCacheMiss // a model of the same size and age, with another configuration
	}
	m.Float16, m.BFloat16, m.WeightsDType = h.Float16, h.BFloat16, h.WeightsDType
	if err := m.SetHolding(model.Holding{RoundedToF16: h.RoundedToF16, AttnParts: h.AttnParts, FcParts: h.FcParts}); err != nil {
		return nil, fmt.Errorf("%s: %w", cachePath, err)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("loading stopped: %w", err)
	}
	mapped, unmapCache, err := checkedCache(h, cachePath, start)
	if err != nil {
		return nil, err
	}
	err = restoreArrays(m, h.Slots, mapped, start)
	if err == nil {
		err = m.CheckShapes()
	}
	if err != nil {
		unmapCache()
		return nil, fmt.Errorf("%s: %w", cachePath, err)
	}
	// The mapping lives as long as the process: the model's matrices are
	// views of it.
	return m, nil
}

// checkedCache maps the cache at path, its data (from start) checked
// against h's digest first. The check reads the file (fileChunkSums) and
// the mapping is of the same open file, so what is mapped is what was
// checked.
func checkedCache(h cacheHeader, path string, start int64) ([]byte, func() error, error) {
	f, err := regularfile.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	if start > st.Size() {
		return nil, nil, fmt.Errorf("%s: data at %d past the end (%d bytes)", path, start, st.Size())
	}
	if err := checkCacheDigest(h, f, start, st.Size()-start); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return weights.MapPopulatedFile(f)
}

// ggufSkeleton is the model a GGUF file's metadata describes, without
// weights; the file is unmapped before the cache is mapped, so that a
// peak RSS does not hold both (GPT-2 Q4_K_M: ~1.5 MB of vocabulary).
func ggufSkeleton(path string) (*model.Model, error) {
	data, unmap, err := weights.Map(path)
	if err != nil {
		return nil, err
	}
	defer unmap()
	f, cfg, err := parseGGUF(data)
	if err != nil {
		return nil, err
	}
	m := model.NewModel(cfg)
	m.Format, m.Dir, m.WeightsPath = model.FormatGGUF, filepath.Dir(path), path
	if m.SourceSHA256, err = weights.SHA256(f, model.KeySourceSHA256); err != nil {
		return nil, err
	}
	return m, nil
}

// hfSkeleton is the model an HF directory's config.json describes,
// without weights.
func hfSkeleton(dir string, layers int) (*model.Model, error) {
	cfg, err := model.LoadConfig(filepath.Join(dir, "config.json"))
	if err != nil {
		return nil, err
	}
	if err := cfg.TruncateLayers(layers); err != nil {
		return nil, err
	}
	path, err := weights.WeightsFile(dir)
	if err != nil {
		return nil, err
	}
	m := model.NewModel(cfg)
	m.Format, m.Dir, m.WeightsPath, m.Layers = model.FormatHF, dir, path, layers
	return m, nil
}

// restoreArrays points each of the model's weight arrays at its arrays in
// mapped, whose data starts at start.
func restoreArrays(m *model.Model, slots []cacheSlot, mapped []byte, start int64) error {
	dsts := m.WeightArrays()
	if len(slots) != len(dsts) {
		return fmt.Errorf("%d weight arrays, the model has %d", len(slots), len(dsts))
	}
	array := func(off int64, n int, slack int64) ([]byte, error) {
		at := start + off
		if off < 0 || n < 0 || at%4 != 0 || at+int64(n)+slack > int64(len(mapped)) {
			return nil, fmt.Errorf("an array of %d bytes at %d is outside the file's %d", n, at, len(mapped))
		}
		return mapped[at : at+int64(n) : at+int64(n)+slack], nil
	}
	for i, s := range slots {
		d := dsts[i]
		switch {
		case d.Vec != nil && s.Vec != nil && len(s.Offsets) == 1:
			a, err := array(s.Offsets[0], 4**s.Vec, 0)
			if err != nil {
				return err
			}
			*d.Vec = bytesFloats(a)
		case d.Mat != nil && s.Mat != nil && len(s.Offsets) == len(s.Mat.Arrays):
			as := make([][]byte, len(s.Offsets))
			for j, off := range s.Offsets {
				a, err := array(off, s.Mat.Arrays[j], s.slack(j))
				if err != nil {
					return err
				}
				as[j] = a
			}
			w, err := kernels.RestoreMatrix(*s.Mat, as)
			if err != nil {
				return fmt.Errorf("weight array %d: %w", i, err)
			}
			*d.Mat = w
		default:
			return fmt.Errorf("weight array %d is not what the model holds there", i)
		}
	}
	return nil
}

func pageUp(n int64) int64 { return (n + cachePage - 1) / cachePage * cachePage }

func floatBytes(v []float32) []byte {
	if len(v) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(v))), 4*len(v))
}

func bytesFloats(b []byte) []float32 {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/4)
}
