package references

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/internal/fixture"
)

// The tests use a toy model small enough to write every shape by hand.
const testConfig = `{"vocab_size": 16, "n_positions": 8, "n_embd": 4, "n_head": 2, "n_layer": 2,
  "activation_function": "gelu_new", "layer_norm_epsilon": 1e-05}`

// testWeights is the content of the toy "weights file"; testSHA is its sha256.
const (
	testWeights = "not really safetensors"
	testSHA     = "84c58b88943fcf6fad2514e8cd2e058ab370c1affc8f99b544b27d2646da6e97"
)

func intp(i int) *int         { return &i }
func strp(s string) *string   { return &s }
func f64p(f float64) *float64 { return &f }

// ti builds a TensorInfo whose file name follows the Python generator's
// layout.
func ti(c string, cp int, layer *int, name string, shape ...int) TensorInfo {
	file := c + "/" + name + ".npy"
	if layer != nil {
		file = c + "/l" + string(rune('0'+*layer)) + "_" + name + ".npy"
	}
	return TensorInfo{Case: c, Checkpoint: cp, Layer: layer, Name: name, File: file, DType: "float32", Shape: shape}
}

// validManifest is a small but complete set: two cases (3 tokens and 1
// token), tensors of every shape family, and every optional section.
func validManifest() Manifest {
	logits := ti("hello", 8, nil, "logits", 2, 16)
	logits.Rows = []int{0, 2}
	return Manifest{
		FormatVersion: FormatVersion,
		Model: ModelInfo{
			Path: "testdata/toy", WeightsFile: "model.safetensors", WeightsSHA256: testSHA,
			WeightsDType: "F32", Config: json.RawMessage(testConfig),
		},
		Generator: map[string]any{"script": "go test", "float64_twins": false},
		Cases: []Case{
			{ID: "hello", Prompt: strp("Hello <|endoftext|>"), Tokens: []int{1, 2, 3}},
			{ID: "one", Tokens: []int{5}},
		},
		Tensors: []TensorInfo{
			ti("hello", 7, nil, "embeddings", 3, 4),
			ti("hello", 1, intp(0), "ln_1", 3, 4),
			ti("hello", 1, intp(1), "ln_1", 3, 4),
			ti("hello", 2, intp(0), "q", 2, 3, 2),
			ti("hello", 4, intp(0), "scores", 2, 3, 3),
			ti("hello", 6, intp(1), "gelu", 3, 16),
			logits,
			ti("hello", 9, nil, "last_logits", 16),
			ti("hello", 3, intp(0), "k_cache", 2, 3, 2),
			ti("hello", 3, nil, "step_logits", 16),
			ti("hello", 11, nil, "sampling_temp", 16),
			ti("one", 8, nil, "ln_f", 1, 4),
			ti("one", 8, nil, "logits", 1, 16),
		},
		Sampling:   []Sampling{{Name: "temp", Temperature: 0.7, TopK: 0, TopP: 1, MinP: 0, RepetitionPenalty: 1}},
		Greedy:     []Greedy{{Case: "hello", Token: 7}, {Case: "one", Token: 0}},
		Generation: &Generation{N: 2, Results: []GenerationResult{{Case: "hello", Tokens: []int{7, 8}, Text: strp("ab"), StopReason: StopMaxTokens}}},
		Loglikelihood: []Loglikelihood{{Context: "The", Continuation: " cat", ContextTokens: []int{4},
			ContinuationTokens: []int{9}, LL: -2.5, LLF64: f64p(-2.5000001)}},
	}
}

// values is deterministic, distinct, finite test data for a shape.
func values(shape []int) []float32 {
	n, _ := numElems(shape, 4)
	out := make([]float32, n)
	for i := range out {
		out[i] = float32(i)*0.25 - 1
	}
	return out
}

// writeSet writes m with the Writer into a fresh directory and returns it.
func writeSet(t *testing.T, m Manifest) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "set")
	w, err := NewWriter(dir, false)
	require.NoError(t, err)
	defer w.Abort()
	for _, ti := range m.Tensors {
		require.NoError(t, w.AddTensor(ti, values(ti.Shape)))
	}
	require.NoError(t, w.Commit(m))
	return dir
}

// writeManifestJSON replaces manifest.json of dir, bypassing validation.
func writeManifestJSON(t *testing.T, dir string, data []byte) {
	t.Helper()
	require.NoError(t, os.WriteFile(filepath.Join(dir, ManifestFile), data, 0o644))
}

// mutateJSON decodes manifest.json generically, lets f change it, and
// writes it back; for edits the typed Manifest cannot express, such as a
// missing key.
func mutateJSON(t *testing.T, dir string, f func(m map[string]any)) {
	t.Helper()
	fixture.EditJSON(t, filepath.Join(dir, ManifestFile), f)
}

// at walks a decoded JSON document: at(m, "tensors", 0) is the first tensor.
func at(v any, path ...any) map[string]any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			v = v.(map[string]any)[k]
		case int:
			v = v.([]any)[k]
		}
	}
	return v.(map[string]any)
}

// rawNPY builds a .npy file from parts, so tests can break any of them.
func rawNPY(descr string, shape []int, payload []byte) []byte {
	return append(npyHeaderBytes(descr, shape), payload...)
}

func f32bytes(xs []float32) []byte {
	var b []byte
	for _, x := range xs {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
	}
	return b
}

func f64bytes(xs []float64) []byte {
	var b []byte
	for _, x := range xs {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(x))
	}
	return b
}

func nan() float64 { return math.NaN() }
