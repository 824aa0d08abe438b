package loader

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/gguf"
	"github.com/llorch/llorch-check/internal/fixture"
	"github.com/llorch/llorch-check/model"
)

// tokens are a few of the tiny GPT-2's.
var tokens = []int{1, 450, 7483, 310, 5}

// cacheParts splits a cache file into its header (JSON) and its data.
func cacheParts(t testing.TB, path string) ([]byte, []byte) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	n := binary.LittleEndian.Uint64(b[8:16])
	return b[16 : 16+n], b[pageUp(16+int64(n)):]
}

// writeCacheParts writes a cache file of header js and data.
func writeCacheParts(t testing.TB, path string, js, data []byte) {
	t.Helper()
	head := binary.LittleEndian.AppendUint64([]byte(cacheMagic), uint64(len(js)))
	head = append(head, js...)
	head = append(head, make([]byte, pageUp(int64(len(head)))-int64(len(head)))...)
	require.NoError(t, os.WriteFile(path, append(head, data...), 0o644))
}

// cachedGPT2 is a GGUF file of the tiny GPT-2 and its written cache.
func cachedGPT2(t testing.TB) (path, dir, cache string) {
	t.Helper()
	gpt2, err := Load(fixture.TinyModel())
	require.NoError(t, err)
	path = filepath.Join(t.TempDir(), "m.gguf")
	_, err = WriteGGUF(gpt2, path, GGUFFile{Type: gguf.GGMLTypeQ8_0})
	require.NoError(t, err)
	dir = t.TempDir()
	m, err := LoadWith(path, Options{WeightsCache: dir})
	require.NoError(t, err)
	return path, dir, strings.TrimPrefix(m.WeightsCache, "written to ")
}

// TestWeightsCacheShapes: a cache whose arrays are consistent but not the
// shapes the model's configuration gives is refused (and rewritten),
// never handed to the forward pass.
func TestWeightsCacheShapes(t *testing.T) {
	path, dir, cache := cachedGPT2(t)
	js, data := cacheParts(t, cache)
	var h cacheHeader
	require.NoError(t, json.Unmarshal(js, &h))
	for _, tc := range []struct {
		name  string
		edit  func(*cacheHeader)
		error string
	}{
		{"a vector cut short", func(h *cacheHeader) { *h.Slots[3].Vec-- }, "weight vector 1 holds"},
		// Layer 0's c_fc [C,4C] and MLP c_proj [4C,C]: each image
		// consistent, the same size, each in the other's place.
		{"two matrices swapped", func(h *cacheHeader) {
			const fc = 7 + 12 + 2 // wte..the local rope's invFreq, layer 0's vectors, then attn, proj
			h.Slots[fc], h.Slots[fc+1] = h.Slots[fc+1], h.Slots[fc]
		}, "layer 0: matrix 2 is not ["},
		{"slots missing", func(h *cacheHeader) { h.Slots = h.Slots[:len(h.Slots)-1] }, "weight arrays, the model has"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			requireEditedCacheRewritten(t, editedCache{js, data, cache, path, dir, tokens}, tc.edit, tc.error)
		})
	}
}

// FuzzWeightsCache: whatever a cache's header says, a load gives a model
// that runs (read from the cache, or loaded whole) or an error; never a
// panic. The data stays the written cache's.
func FuzzWeightsCache(f *testing.F) {
	path, dir, cache := cachedGPT2(f)
	js, data := cacheParts(f, cache)
	f.Add(js)
	f.Fuzz(func(t *testing.T, header []byte) {
		// A header that parses is sealed with its digest, so that the
		// checks behind the digest are fuzzed too.
		var h cacheHeader
		if json.Unmarshal(header, &h) == nil {
			if sum, err := cacheDigest(h, [][]byte{data}); err == nil {
				h.Digest = sum
				if js, err := json.Marshal(h); err == nil {
					header = js
				}
			}
		}
		writeCacheParts(t, cache, header, data)
		m, err := LoadWith(path, Options{WeightsCache: dir})
		if err != nil {
			return
		}
		if _, err := m.Forward(context.Background(), m.NewCache(), tokens, model.ForwardOptions{}); err != nil {
			t.Fatalf("a loaded model's forward: %v (%s)", err, m.WeightsCache)
		}
	})
}

// TestWeightsCacheExpertShapes: a mixture's cache whose router or experts
// are not the shapes its configuration gives is refused (and rewritten),
// as a dense one's matrices are.
func TestWeightsCacheExpertShapes(t *testing.T) {
	path, dir := fixture.FamilyModel("tiny-llama-mixtral"), t.TempDir()
	m, err := LoadWith(path, Options{WeightsCache: dir})
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(m.WeightsCache, "written to "), m.WeightsCache)
	cache := strings.TrimPrefix(m.WeightsCache, "written to ")
	js, data := cacheParts(t, cache)
	var h cacheHeader
	require.NoError(t, json.Unmarshal(js, &h))
	C, E := m.Config.NEmbd, m.Config.MoE.Experts
	router := slices.IndexFunc(h.Slots, func(s cacheSlot) bool { return s.Mat != nil && s.Mat.K == C && s.Mat.N == E })
	require.Positive(t, router, "layer 0's router [%d, %d]", C, E)
	for _, tc := range []struct {
		name  string
		edit  func(*cacheHeader)
		error string
	}{
		// The router and expert 0's gate, each consistent, each in the
		// other's place.
		{"the router and an expert swapped", func(h *cacheHeader) {
			h.Slots[router], h.Slots[router+1] = h.Slots[router+1], h.Slots[router]
		}, fmt.Sprintf("layer 0: the router is not [%d, %d]", C, E)},
		{"an expert's down cut to the router's", func(h *cacheHeader) { h.Slots[router+3] = h.Slots[router] },
			"layer 0: expert 0 is not gate and up"},
		{"the last layer's experts missing", func(h *cacheHeader) { h.Slots = h.Slots[:len(h.Slots)-3*E] }, "weight arrays, the model has"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			requireEditedCacheRewritten(t, editedCache{js, data, cache, path, dir, tokens}, tc.edit, tc.error)
		})
	}
}

// editedCache is a written cache's header and data, its file, and the
// model (path, cache dir, tokens) it is of.
type editedCache struct {
	js, data         []byte
	cache, path, dir string
	tokens           []int
}

// requireEditedCacheRewritten seals c's header after edit with a digest
// of the edit, as a cache written by a faulty build would be, and
// requires a load to refuse it naming want, rewrite it, and run.
func requireEditedCacheRewritten(t *testing.T, c editedCache, edit func(*cacheHeader), want string) {
	t.Helper()
	var e cacheHeader
	require.NoError(t, json.Unmarshal(c.js, &e))
	edit(&e)
	var err error
	e.Digest, err = cacheDigest(e, [][]byte{c.data})
	require.NoError(t, err)
	bad, err := json.Marshal(e)
	require.NoError(t, err)
	writeCacheParts(t, c.cache, bad, c.data)
	m, err := LoadWith(c.path, Options{WeightsCache: c.dir})
	require.NoError(t, err)
	require.Contains(t, m.WeightsCache, want)
	require.Contains(t, m.WeightsCache, "; written to ")
	_, err = m.Forward(context.Background(), m.NewCache(), c.tokens, model.ForwardOptions{})
	require.NoError(t, err)
}
