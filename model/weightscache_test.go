package model

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/gguf"
	"github.com/llorch/llorch-check/references"
)

// toF32 rewrites one tensor as F32, so that its fused matrix is held as
// column blocks of two types.
var toF32 = func(name string) ggufEdit {
	return editTensor(name, func(td *gguf.TensorData) {
		vals := make([]float32, td.Dims[0]*td.Dims[1])
		if err := gguf.DecodeFloat32(td.Type, td.Data, vals); err != nil {
			panic(err)
		}
		td.Type = gguf.GGMLTypeF32
		td.Data, _ = gguf.EncodeFloat32(td.Type, vals)
	})
}

// TestWeightsCache: the first load with a cache writes it, the next reads
// it, and the model read from it is the model loaded without one: the
// same configuration, types and bytes, and the same logits bit for bit,
// prefill and step, for every storage a GGUF load makes (float32 and
// float16 slabs, quantised blocks, the LM head's transposed slabs, column
// blocks, RoPE's frequencies).
func TestWeightsCache(t *testing.T) {
	gpt2, _ := testModel(t)
	llama, llama3 := loadLlamaTiny(t, "tiny-llama"), loadLlamaTiny(t, "tiny-llama3")
	mixtral := loadLlamaTiny(t, "tiny-llama-mixtral")
	for _, tc := range []struct {
		name   string
		img    []byte
		opt    LoadOptions
		tokens []int
	}{
		{"gpt2 Q8_0", ggufImage(t, gpt2, gguf.GGMLTypeQ8_0, nil), LoadOptions{}, testTokens(9, 1)},
		{"gpt2 F16 held as float16", ggufImage(t, gpt2, gguf.GGMLTypeF16, nil), LoadOptions{AsStored: true}, testTokens(9, 2)},
		{"gpt2 F32", ggufImage(t, gpt2, gguf.GGMLTypeF32, nil), LoadOptions{}, testTokens(9, 3)},
		{"llama Q8_0 with a fused matrix in column blocks", llamaImage(t, llama, gguf.GGMLTypeQ8_0, llamaSPMVocab, toF32("blk.1.ffn_up.weight")), LoadOptions{}, llamaTokens},
		{"llama3 F16 (rope factors)", llamaImage(t, llama3, gguf.GGMLTypeF16, llamaSPMVocab, nil), LoadOptions{AsStored: true}, llamaTokens},
		// A mixture's router and experts: quantised experts held quantised
		// (loader/gguf_moe.go), float16 ones as the file's bits.
		{"mixtral Q8_0 (quantised experts)", llamaImage(t, mixtral, gguf.GGMLTypeQ8_0, llamaSPMVocab, nil), LoadOptions{}, llamaTokens},
		{"mixtral F16 experts held as float16", llamaImage(t, mixtral, gguf.GGMLTypeF16, llamaSPMVocab, nil), LoadOptions{AsStored: true}, llamaTokens},
		{"mixtral F32 experts as float32 slabs", llamaImage(t, mixtral, gguf.GGMLTypeF32, llamaSPMVocab, nil), LoadOptions{}, llamaTokens},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "m.gguf")
			require.NoError(t, os.WriteFile(path, tc.img, 0o644))
			want, err := LoadWith(path, tc.opt)
			require.NoError(t, err)
			assert.Empty(t, want.WeightsCache)
			wantAll, wantStep := prefillThenStep(t, want, tc.tokens)

			opt := tc.opt
			opt.WeightsCache = t.TempDir()
			for i, note := range []string{"written to ", "read from "} {
				m, err := LoadWith(path, opt)
				require.NoError(t, err)
				require.True(t, strings.HasPrefix(m.WeightsCache, note+opt.WeightsCache), "load %d: %s", i, m.WeightsCache)
				require.Equal(t, want.Config, m.Config)
				assert.Equal(t, want.WeightsDType, m.WeightsDType)
				assert.Equal(t, want.Float16, m.Float16)
				assert.Equal(t, want.BFloat16, m.BFloat16)
				assert.Equal(t, want.PrecisionDType(), m.PrecisionDType())
				assert.Equal(t, want.SourceSHA256, m.SourceSHA256)
				assert.Equal(t, want.WeightsBytes(), m.WeightsBytes())
				assert.Equal(t, want.TiedHead(), m.TiedHead())
				assert.Equal(t, want.rope, m.rope)
				assert.Equal(t, path, m.WeightsPath)
				requireSameWeights(t, want, m)
				gotAll, gotStep := prefillThenStep(t, m, tc.tokens)
				require.Equal(t, wantAll, gotAll, "load %d: prefill logits", i)
				require.Equal(t, wantStep, gotStep, "load %d: step logits", i)
			}
		})
	}
}

// TestWeightsCacheMisses: a cache is read only for the file, options and
// build it was written for; anything else loads the file whole and
// rewrites the cache; a damaged cache is reported, never trusted, and an
// unwritable one leaves the load as it was.
func TestWeightsCacheMisses(t *testing.T) {
	gpt2, _ := testModel(t)
	path := filepath.Join(t.TempDir(), "m.gguf")
	require.NoError(t, os.WriteFile(path, ggufImage(t, gpt2, gguf.GGMLTypeQ8_0, nil), 0o644))
	tokens := testTokens(7, 4)
	dir := t.TempDir()
	load := func(opt LoadOptions) *Model {
		t.Helper()
		plain, err := LoadWith(path, opt)
		require.NoError(t, err)
		opt.WeightsCache = dir
		m, err := LoadWith(path, opt)
		require.NoError(t, err)
		require.Equal(t, logitsOf(t, plain, tokens), logitsOf(t, m, tokens), "%+v: %s", opt, m.WeightsCache)
		return m
	}
	first := load(LoadOptions{})
	require.True(t, strings.HasPrefix(first.WeightsCache, "written to "), first.WeightsCache)
	cache := strings.TrimPrefix(first.WeightsCache, "written to ")
	require.True(t, strings.HasPrefix(load(LoadOptions{}).WeightsCache, "read from "))

	// Other options: the cache is rewritten for them.
	require.True(t, strings.HasPrefix(load(LoadOptions{Float16: true}).WeightsCache, "written to "))
	require.True(t, strings.HasPrefix(load(LoadOptions{Float16: true}).WeightsCache, "read from "))
	require.True(t, strings.HasPrefix(load(LoadOptions{}).WeightsCache, "written to "))

	// The file touched: its modification time is part of the key.
	later := time.Now().Add(time.Minute)
	require.NoError(t, os.Chtimes(path, later, later))
	require.True(t, strings.HasPrefix(load(LoadOptions{}).WeightsCache, "written to "))
	require.True(t, strings.HasPrefix(load(LoadOptions{}).WeightsCache, "read from "))

	// Damaged: cut short, or not a cache at all. Reported, then rewritten.
	st, err := os.Stat(cache)
	require.NoError(t, err)
	require.NoError(t, os.Truncate(cache, st.Size()/2))
	m := load(LoadOptions{})
	require.Contains(t, m.WeightsCache, "damaged: its digest is")
	require.Contains(t, m.WeightsCache, "; written to ")
	require.NoError(t, os.WriteFile(cache, []byte("GGUF, not a cache"), 0o644))
	m = load(LoadOptions{})
	require.Contains(t, m.WeightsCache, "not a weights cache; written to ")
	require.True(t, strings.HasPrefix(load(LoadOptions{}).WeightsCache, "read from "))

	// 2 KB overwritten inside the cache's arrays, its size kept: refused
	// by the digest and rewritten (load compares the logits with a load
	// without the cache). Issue 43 item 4.
	b, err := os.ReadFile(cache)
	require.NoError(t, err)
	for i := len(b) - 4096; i < len(b)-2048; i++ {
		b[i] ^= 0x5a
	}
	require.NoError(t, os.WriteFile(cache, b, 0o644))
	m = load(LoadOptions{})
	require.Contains(t, m.WeightsCache, "damaged: its digest is")
	require.Contains(t, m.WeightsCache, "; written to ")
	require.True(t, strings.HasPrefix(load(LoadOptions{}).WeightsCache, "read from "))

	// A cache directory that cannot be made: the load stands, unwritten.
	blocker := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(blocker, nil, 0o644))
	m, err = LoadWith(path, LoadOptions{WeightsCache: filepath.Join(blocker, "cache")})
	require.NoError(t, err)
	require.Contains(t, m.WeightsCache, "not written: ")
	require.Equal(t, logitsOf(t, first, tokens), logitsOf(t, m, tokens))

	// The weights changed in place at the same size and modification time
	// (reproducible images normalise times): the key holds their sha256,
	// so the cache is rewritten, not read (a new process would hash the
	// file again; this one forgets its record of the hash).
	st, err = os.Stat(path)
	require.NoError(t, err)
	b, err = os.ReadFile(path)
	require.NoError(t, err)
	b[len(b)-1] ^= 0x01 // the last tensor's last byte: still a valid file
	require.NoError(t, os.WriteFile(path, b, 0o644))
	require.NoError(t, os.Chtimes(path, st.ModTime(), st.ModTime()))
	references.ForgetWeightsSHA256()
	require.True(t, strings.HasPrefix(load(LoadOptions{}).WeightsCache, "written to "))
	require.True(t, strings.HasPrefix(load(LoadOptions{}).WeightsCache, "read from "))
}

// requireSameWeights fails unless m holds got's weights: the same arrays
// in the same order, each of the same kind, shape and bytes.
func requireSameWeights(t testing.TB, want, got *Model) {
	t.Helper()
	wa, ga := want.WeightArrays(), got.WeightArrays()
	require.Len(t, ga, len(wa))
	for i := range wa {
		if wa[i].Vec != nil {
			require.NotNil(t, ga[i].Vec, "weight array %d", i)
			require.Equal(t, *wa[i].Vec, *ga[i].Vec, "weight array %d", i)
			continue
		}
		require.NotNil(t, ga[i].Mat, "weight array %d", i)
		wi, wb := wa[i].Mat.Image()
		gi, gb := ga[i].Mat.Image()
		require.Equal(t, wi, gi, "weight array %d", i)
		require.Equal(t, wb, gb, "weight array %d", i)
	}
}

// An HF directory's weights are cached as a GGUF file's: keyed by its
// model.safetensors, its configuration compared whole. The mixtures of
// experts' (qwen3_moe with a dense layer, mixtral) are cached too, their
// float16 experts also as the file's bits (AsStored).
func TestWeightsCacheHF(t *testing.T) {
	for _, tc := range []struct {
		name string
		opt  LoadOptions
	}{
		{"tiny-gpt2", LoadOptions{}},
		{"tiny-llama-qwen3", LoadOptions{}},
		{"tiny-llama-qwen3moe", LoadOptions{}},
		{"tiny-llama-qwen3moe", LoadOptions{AsStored: true}},
		{"tiny-llama-mixtral", LoadOptions{}},
		{"tiny-llama-mixtral", LoadOptions{AsStored: true}},
	} {
		name, label := tc.name, tc.name
		if tc.opt.AsStored {
			label += " held as stored"
		}
		t.Run(label, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), name)
			require.NoError(t, os.MkdirAll(dir, 0o755))
			for _, f := range []string{"config.json", "model.safetensors"} {
				b, err := os.ReadFile(filepath.Join("..", "testdata", name, f))
				require.NoError(t, err)
				require.NoError(t, os.WriteFile(filepath.Join(dir, f), b, 0o644))
			}
			want, err := LoadWith(dir, tc.opt)
			require.NoError(t, err)
			tokens := testTokens(8, 6)
			wantAll, wantStep := prefillThenStep(t, want, tokens)
			cache := t.TempDir()
			opt := tc.opt
			opt.WeightsCache = cache
			for i, note := range []string{"written to ", "read from "} {
				m, err := LoadWith(dir, opt)
				require.NoError(t, err)
				require.True(t, strings.HasPrefix(m.WeightsCache, note+cache), "load %d: %s", i, m.WeightsCache)
				require.Equal(t, want.Config, m.Config)
				assert.Equal(t, FormatHF, m.Format)
				assert.Equal(t, want.WeightsPath, m.WeightsPath)
				assert.Equal(t, want.WeightsDType, m.WeightsDType)
				assert.Equal(t, want.MatricesHeldAs(), m.MatricesHeldAs())
				requireSameWeights(t, want, m)
				gotAll, gotStep := prefillThenStep(t, m, tokens)
				require.Equal(t, wantAll, gotAll, "load %d", i)
				require.Equal(t, wantStep, gotStep, "load %d", i)
			}
			// Another configuration beside the same weights: not read.
			cfg, err := os.ReadFile(filepath.Join(dir, "config.json"))
			require.NoError(t, err)
			var c map[string]any
			require.NoError(t, json.Unmarshal(cfg, &c))
			c["layer_norm_epsilon"], c["rms_norm_eps"] = 1e-3, 1e-3
			cfg, err = json.Marshal(c)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join(dir, "config.json"), cfg, 0o644))
			m, err := LoadWith(dir, opt)
			require.NoError(t, err)
			require.True(t, strings.HasPrefix(m.WeightsCache, "written to "), m.WeightsCache)
		})
	}
}

// With WriteCacheLater a load leaves the cache to WriteWeightsCache,
// which writes it once, beside forward passes; the next load reads it.
func TestWeightsCacheWriteLater(t *testing.T) {
	gpt2, _ := testModel(t)
	path := filepath.Join(t.TempDir(), "m.gguf")
	require.NoError(t, os.WriteFile(path, ggufImage(t, gpt2, gguf.GGMLTypeQ8_0, nil), 0o644))
	dir := t.TempDir()
	m, err := LoadWith(path, LoadOptions{WeightsCache: dir, WriteCacheLater: true})
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(m.WeightsCache, "to be written to "), m.WeightsCache)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Empty(t, entries, "nothing written by the load")

	tokens := testTokens(6, 5)
	want := logitsOf(t, m, tokens)
	done := make(chan string)
	go func() { done <- m.WriteWeightsCache() }()
	for range 3 {
		require.Equal(t, want, logitsOf(t, m, tokens), "forward passes beside the write")
	}
	require.True(t, strings.HasPrefix(<-done, "written to "+dir))
	require.Empty(t, m.WriteWeightsCache(), "written once")

	again, err := LoadWith(path, LoadOptions{WeightsCache: dir, WriteCacheLater: true})
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(again.WeightsCache, "read from "), again.WeightsCache)
	require.Empty(t, again.WriteWeightsCache(), "nothing left to write")
	require.Equal(t, want, logitsOf(t, again, tokens))
}
