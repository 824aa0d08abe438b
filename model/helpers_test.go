package model

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/internal/fixture"
)

// testCfg is the small model the unit tests build: big enough to have
// several heads, layers and a non-trivial cache, small enough for -race.
var testCfg = Config{
	VocabSize: 97, NPositions: 32, NEmbd: 16, NLayer: 2, NHead: 2, NInner: 64,
	LayerNormEpsilon: 1e-5, ActivationFunction: "gelu_new", BOSTokenID: 96, EOSTokenID: 96,
}

func configJSON(c Config) map[string]any {
	return map[string]any{
		"model_type": "gpt2", "architectures": []string{"GPT2LMHeadModel"},
		"vocab_size": c.VocabSize, "n_positions": c.NPositions, "n_embd": c.NEmbd,
		"n_layer": c.NLayer, "n_head": c.NHead, "n_inner": nil,
		"layer_norm_epsilon": c.LayerNormEpsilon, "activation_function": "gelu_new",
		"bos_token_id": c.BOSTokenID, "eos_token_id": c.EOSTokenID,
		"scale_attn_weights": true, "scale_attn_by_inverse_layer_idx": false,
		"reorder_and_upcast_attn": false, "n_ctx": c.NPositions,
	}
}

// stTensor is one tensor to write; Raw overrides Data for hand-made bytes.
type stTensor struct {
	Name  string
	DType string
	Shape []int
	Data  []float32
	Raw   []byte
}

// testWeights holds a model's parameters by canonical name, in file order.
type testWeights struct {
	names  []string
	shapes map[string][]int
	data   map[string][]float64 // float64 copy for the naive reference
	f32    map[string][]float32
}

// randomWeights draws seeded weights. LayerNorm gains sit around 1 and the
// rest are scaled so activations stay O(1) and every op matters.
func randomWeights(c Config, seed uint64) *testWeights {
	r := rand.New(rand.NewPCG(seed, 1))
	w := &testWeights{shapes: map[string][]int{}, data: map[string][]float64{}, f32: map[string][]float32{}}
	add := func(name string, scale, offset float64, shape ...int) {
		n := 1
		for _, d := range shape {
			n *= d
		}
		f := make([]float32, n)
		d := make([]float64, n)
		for i := range f {
			f[i] = float32(offset + scale*r.NormFloat64())
			d[i] = float64(f[i])
		}
		w.names = append(w.names, name)
		w.shapes[name] = shape
		w.f32[name], w.data[name] = f, d
	}
	C, I := c.NEmbd, c.NInner
	add("wte.weight", 0.5, 0, c.VocabSize, C)
	add("wpe.weight", 0.3, 0, c.NPositions, C)
	for l := 0; l < c.NLayer; l++ {
		p := fmt.Sprintf("h.%d.", l)
		add(p+"ln_1.weight", 0.2, 1, C)
		add(p+"ln_1.bias", 0.1, 0, C)
		add(p+"attn.c_attn.weight", 0.4, 0, C, 3*C)
		add(p+"attn.c_attn.bias", 0.1, 0, 3*C)
		add(p+"attn.c_proj.weight", 0.3, 0, C, C)
		add(p+"attn.c_proj.bias", 0.1, 0, C)
		add(p+"ln_2.weight", 0.2, 1, C)
		add(p+"ln_2.bias", 0.1, 0, C)
		add(p+"mlp.c_fc.weight", 0.3, 0, C, I)
		add(p+"mlp.c_fc.bias", 0.1, 0, I)
		add(p+"mlp.c_proj.weight", 0.15, 0, I, C)
		add(p+"mlp.c_proj.bias", 0.1, 0, C)
	}
	add("ln_f.weight", 0.2, 1, C)
	add("ln_f.bias", 0.1, 0, C)
	return w
}

func (w *testWeights) tensors(prefix string) []stTensor {
	var ts []stTensor
	for _, n := range w.names {
		ts = append(ts, stTensor{Name: prefix + n, DType: "F32", Shape: w.shapes[n], Data: w.f32[n]})
	}
	return ts
}

func f32Bytes(x []float32) []byte {
	b := make([]byte, 4*len(x))
	for i, v := range x {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return b
}

// encodeSafetensors lays tensors out back to back in the given order.
func encodeSafetensors(t testing.TB, ts []stTensor) []byte {
	header := map[string]any{"__metadata__": map[string]string{"format": "pt"}}
	var data []byte
	for _, x := range ts {
		raw := x.Raw
		if raw == nil {
			raw = f32Bytes(x.Data)
		}
		header[x.Name] = map[string]any{"dtype": x.DType, "shape": x.Shape,
			"data_offsets": []int{len(data), len(data) + len(raw)}}
		data = append(data, raw...)
	}
	return fixture.Safetensors(t, header, data)
}

// writeModel writes config.json and model.safetensors into a fresh dir.
func writeModel(t testing.TB, cfg map[string]any, ts []stTensor) string {
	dir := t.TempDir()
	b, err := json.Marshal(cfg)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "config.json"), b, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "model.safetensors"), encodeSafetensors(t, ts), 0o644))
	return dir
}

// testModel loads the seeded small model and returns it with its weights.
func testModel(t testing.TB) (*Model, *testWeights) {
	w := randomWeights(testCfg, 42)
	m, err := Load(writeModel(t, configJSON(testCfg), w.tensors("")))
	require.NoError(t, err)
	return m, w
}

func testTokens(n int, seed uint64) []int {
	r := rand.New(rand.NewPCG(seed, 2))
	toks := make([]int, n)
	for i := range toks {
		toks[i] = r.IntN(testCfg.VocabSize)
	}
	return toks
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// uintptrOf is the address of b's first byte, to tell which range of a
// file image a release was given.
func uintptrOf(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }
