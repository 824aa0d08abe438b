package loader

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"github.com/llorch/llorch-check/model"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"weak"

	"github.com/llorch/llorch-check/internal/atomicfile"
	"github.com/llorch/llorch-check/internal/buildid"
	"github.com/llorch/llorch-check/kernels"
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
// whole; weightscache_digest.go; the sha256 is kept beside the cache,
// weightscache_sha256.go), the load
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
	cacheVersion = 3 // 2: keyed by the weights' sha256, with a digest; 3: the digest of chunk sums
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
// GGUF file, an HF directory's model.safetensors or index) loaded with
// opt into opt.WeightsCache, and that cache's path. The weights' sha256 is the one
// recorded beside the cache while the files' identity stays the one
// recorded with it (recalledSHA256), and is hashed again otherwise: a
// cached load of a 3.7 GB file spent 59% of its time hashing it (notes 37).
func weightsCacheKey(path string, opt Options) (key cacheKey, cachePath string, err error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return cacheKey{}, "", err
	}
	size, modTime, err := weights.Stamp(abs)
	if err != nil {
		return cacheKey{}, "", err
	}
	build, err := buildid.ID()
	if err != nil {
		return cacheKey{}, "", err
	}
	cachePath = weightsCachePath(opt.WeightsCache, abs)
	sum, err := recalledSHA256(cachePath, abs)
	if err != nil {
		return cacheKey{}, "", err
	}
	return cacheKey{Version: cacheVersion, Build: build, Source: abs, Size: size, ModTime: modTime, SourceSHA256: sum,
		Float16: opt.Float16, AsStored: opt.AsStored, Layers: opt.Layers}, cachePath, nil
}

// weightsCachePath is the cache file in dir of the model at source (an
// absolute path): one a model, so a model's caches do not pile up as
// builds change.
func weightsCachePath(dir, source string) string {
	h := sha256.Sum256([]byte(source))
	return filepath.Join(dir, hex.EncodeToString(h[:12])+".weights")
}

// pendingCache is a cache a load left to WriteWeightsCache.
type pendingCache struct {
	path string
	key  cacheKey
	note string // what went wrong reading it, if anything
}

// pending holds, by model, the caches loads with WriteCacheLater left
// to write; WriteWeightsCache takes each out. Its keys are weak: a model
// whose cache is never written (a command that failed after its load)
// is not kept alive by it, and its entry goes when the model does.
var pending sync.Map // weak.Pointer[model.Model] -> *pendingCache

// leaveCache records a cache for WriteWeightsCache to write for m.
func leaveCache(m *model.Model, p *pendingCache) {
	key := weak.Make(m)
	pending.Store(key, p)
	runtime.AddCleanup(m, func(k weak.Pointer[model.Model]) { pending.Delete(k) }, key)
}

// WriteWeightsCache writes the weights cache a load of m with
// WriteCacheLater left to write, once, and says what it did ("written to
// PATH" or why not); "" if there is none. It may run beside forward
// passes: it only reads the weights.
func WriteWeightsCache(m *model.Model) string {
	v, ok := pending.LoadAndDelete(weak.Make(m))
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
