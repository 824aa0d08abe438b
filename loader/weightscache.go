package loader

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/llorch/llorch-check/model"
	"io"
	"os"
	"path/filepath"
	"sync"
	"unsafe"

	"github.com/llorch/llorch-check/internal/atomicfile"
	"github.com/llorch/llorch-check/internal/buildid"
	"github.com/llorch/llorch-check/kernels"
	"github.com/llorch/llorch-check/references"
	"github.com/llorch/llorch-check/weights"
)

// A weights cache keeps a model's weights as the kernels hold them (slabs,
// quantised blocks), so that the next load maps them instead of decoding
// and re-laying every matrix: llama.cpp maps a GGUF file and uses its
// bytes as they are, where our layouts differ from the file's
// (scripts/bench/notes/19-weights-cache.md). One file a model, in the
// directory Options.WeightsCache names, keyed by the weights file's
// path, size, modification time and sha256 (a GGUF file, an HF
// directory's model.safetensors or shards; the configuration is compared
// whole; weightscache_digest.go), the load
// options that shape the layout and the executable's build (any change of
// the code may move a layout); a file whose key differs is rewritten
// after a full load, as is one whose checksum (Digest) does not match.
//
// Layout: "LLORCHWC", the header's length (uint64, little-endian), the
// header (JSON), then from the first page boundary after it every array
// at a 64-byte aligned offset (a cache line), a quantised matrix's
// integers followed by kernels.ArraySlack bytes.

const (
	cacheMagic   = "LLORCHWC"
	cacheVersion = 2 // 2: keyed by the weights' sha256, with a digest
	cachePage    = 4096
	cacheAlign   = 64
)

// cacheKey is what a cache file must match to be read.
type cacheKey struct {
	Version      int    `json:"version"`
	Build        string `json:"build"`
	Source       string `json:"source"`
	Size         int64  `json:"size"`
	ModTime      int64  `json:"mod_time_ns"`
	SourceSHA256 string `json:"source_sha256"`
	Float16      bool   `json:"float16"`
	AsStored     bool   `json:"as_stored"`
	Layers       int    `json:"layers,omitempty"`
}

// cacheHeader is the key, what of the model is not an array, and where
// each array is.
type cacheHeader struct {
	Key          cacheKey        `json:"key"`
	Config       json.RawMessage `json:"config"`
	WeightsDType string          `json:"weights_dtype"`
	Float16      bool            `json:"float16"`
	BFloat16     bool            `json:"bfloat16"`
	RoundedToF16 bool            `json:"rounded_to_f16"`
	AttnParts    [][]int         `json:"attn_parts"` // per block, each column block's width
	FcParts      [][]int         `json:"fc_parts"`
	Slots        []cacheSlot     `json:"slots"`
	Digest       string          `json:"digest"` // cacheDigest (weightscache_digest.go): CRC-32C of the rest
}

// cacheSlot is one of Model.WeightArrays: a vector's length, or a matrix's image,
// and its arrays' offsets from the start of the data.
type cacheSlot struct {
	Vec     *int                 `json:"vec,omitempty"` // float32 elements
	Mat     *kernels.MatrixImage `json:"mat,omitempty"`
	Offsets []int64              `json:"offsets"`
}

// slack is the readable bytes array j of the slot needs past its end.
func (s cacheSlot) slack(j int) int64 {
	if s.Mat == nil {
		return 0
	}
	return int64(s.Mat.Slack(j))
}

// arraySpan is where the next array starts after one of n bytes and its slack.
func arraySpan(n, slack int64) int64 { return (n + slack + cacheAlign - 1) / cacheAlign * cacheAlign }

// weightsCacheKey is the key of the cache for the weights file path (a
// GGUF file, an HF directory's model.safetensors or index) loaded with opt.
func weightsCacheKey(path string, opt Options) (cacheKey, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return cacheKey{}, err
	}
	size, modTime, err := weights.Stamp(abs)
	if err != nil {
		return cacheKey{}, err
	}
	build, err := buildid.ID()
	if err != nil {
		return cacheKey{}, err
	}
	sum, err := references.WeightsSHA256(abs)
	if err != nil {
		return cacheKey{}, err
	}
	return cacheKey{Version: cacheVersion, Build: build, Source: abs, Size: size, ModTime: modTime, SourceSHA256: sum,
		Float16: opt.Float16, AsStored: opt.AsStored, Layers: opt.Layers}, nil
}

// weightsCachePath is the cache file of the model at key.Source: one a
// model, so a model's caches do not pile up as builds change.
func weightsCachePath(dir string, key cacheKey) string {
	h := sha256.Sum256([]byte(key.Source))
	return filepath.Join(dir, hex.EncodeToString(h[:12])+".weights")
}

// pendingCache is a cache a load left to WriteWeightsCache.
type pendingCache struct {
	path string
	key  cacheKey
	note string // what went wrong reading it, if anything
}

// pending holds, by model, the caches loads with WriteCacheLater left
// to write; WriteWeightsCache takes each out.
var pending sync.Map // *model.Model -> *pendingCache

// WriteWeightsCache writes the weights cache a load of m with
// WriteCacheLater left to write, once, and says what it did ("written to
// PATH" or why not); "" if there is none. It may run beside forward
// passes: it only reads the weights.
func WriteWeightsCache(m *model.Model) string {
	v, ok := pending.LoadAndDelete(m)
	if !ok {
		return ""
	}
	p := v.(*pendingCache)
	return writeCacheNote(m, p.note, p.path, p.key)
}

// writeCacheNote writes the cache and says how it went, after note.
func writeCacheNote(m *model.Model, note, path string, key cacheKey) string {
	if err := writeWeightsCache(m, path, key); err != nil {
		return note + "not written: " + err.Error()
	}
	return note + "written to " + path
}

// writeWeightsCache writes m's weights to the cache at path.
func writeWeightsCache(m *model.Model, path string, key cacheKey) error {
	if m.Config.MoE != nil {
		return errMoENotCached
	}
	cfg, err := json.Marshal(m.Config)
	if err != nil {
		return err
	}
	held := m.Holding()
	h := cacheHeader{Key: key, Config: cfg, WeightsDType: m.WeightsDType, Float16: m.Float16, BFloat16: m.BFloat16,
		RoundedToF16: held.RoundedToF16, AttnParts: held.AttnParts, FcParts: held.FcParts}
	var arrays [][]byte
	var gaps []int64 // the zeros after each array
	var off int64
	for _, d := range m.WeightArrays() {
		var slot cacheSlot
		var as [][]byte
		if d.Vec != nil {
			n := len(*d.Vec)
			slot.Vec, as = &n, [][]byte{floatBytes(*d.Vec)}
		} else {
			img, a := d.Mat.Image()
			slot.Mat, as = &img, a
		}
		for j, a := range as {
			slot.Offsets = append(slot.Offsets, off)
			off += arraySpan(int64(len(a)), slot.slack(j))
			gaps = append(gaps, arraySpan(int64(len(a)), slot.slack(j))-int64(len(a)))
		}
		arrays = append(arrays, as...)
		h.Slots = append(h.Slots, slot)
	}
	var data [][]byte // as the file holds it: each array, then its zeros
	for i, a := range arrays {
		data = append(data, a, make([]byte, gaps[i]))
	}
	if h.Digest, err = cacheDigest(h, data); err != nil {
		return err
	}
	js, err := json.Marshal(h)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return atomicfile.Write(path, func(w io.Writer) error {
		head := binary.LittleEndian.AppendUint64([]byte(cacheMagic), uint64(len(js)))
		head = append(head, js...)
		head = append(head, make([]byte, pageUp(int64(len(head)))-int64(len(head)))...)
		if _, err := w.Write(head); err != nil {
			return err
		}
		for i, a := range arrays {
			if _, err := w.Write(a); err != nil {
				return err
			}
			if _, err := w.Write(make([]byte, gaps[i])); err != nil {
				return err
			}
		}
		return nil
	})
}

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

// errMoENotCached: the weights cache's slots are a dense block's; a
// mixture of experts loads from its file every time.
var errMoENotCached = errors.New("the weights cache does not hold experts (qwen3_moe, mixtral): not written")

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
	mapped, unmapCache, err := weights.MapPopulated(cachePath)
	if err != nil {
		return nil, err
	}
	if start > int64(len(mapped)) {
		err = fmt.Errorf("data at %d past the end (%d bytes)", start, len(mapped))
	} else {
		err = checkCacheDigest(h, mapped[start:])
	}
	if err == nil {
		err = restoreArrays(m, h.Slots, mapped, start)
	}
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
