package references

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestOpenValid(t *testing.T) {
	m := validManifest()
	dir := writeSet(t, m)
	s, err := Open(dir)
	require.NoError(t, err)
	require.Equal(t, dir, s.Dir)
	require.Len(t, s.Manifest.Tensors, len(m.Tensors))

	c, ok := s.Case("hello")
	require.True(t, ok)
	require.Equal(t, []int{1, 2, 3}, c.Tokens)
	_, ok = s.Case("nope")
	require.False(t, ok)

	got, ok := s.Find("hello", "ln_1", 1)
	require.True(t, ok)
	require.Equal(t, "hello/cp1/l1/ln_1", got.Key())
	require.Equal(t, 1, got.LayerIndex())
	got, ok = s.Find("hello", "logits", NoLayer)
	require.True(t, ok)
	require.Equal(t, "hello/cp8/-/logits", got.Key())
	require.Equal(t, -1, got.LayerIndex())
	_, ok = s.Find("hello", "ln_1", NoLayer)
	require.False(t, ok)

	dims, err := s.Manifest.ModelConfig()
	require.NoError(t, err)
	require.Equal(t, ModelDims{VocabSize: 16, NPositions: 8, NEmbd: 4, NHead: 2, NLayer: 2, Family: "gpt2"}, dims)
}

// TestOpenInvalid breaks a valid set in one way per case and checks that
// Open refuses it with an error that wraps ErrInvalid and names the place.
func TestOpenInvalid(t *testing.T) {
	tests := []struct {
		name  string
		edit  func(m *Manifest)              // typed edit of the manifest
		raw   func(m map[string]any)         // edit of the decoded JSON
		files func(t *testing.T, dir string) // edit of the directory
		want  []string                       // substrings of the error
		is    error                          // extra errors.Is target
	}{
		// manifest.json itself
		{name: "manifest missing", files: func(t *testing.T, dir string) {
			require.NoError(t, os.Remove(filepath.Join(dir, ManifestFile)))
		}, want: []string{"manifest.json: "}, is: fs.ErrNotExist},
		{name: "not JSON", files: func(t *testing.T, dir string) {
			writeManifestJSON(t, dir, []byte(`{"format_version": 1,`))
		}, want: []string{"manifest.json: not valid JSON"}},
		{name: "JSON array", files: func(t *testing.T, dir string) {
			writeManifestJSON(t, dir, []byte(`[1, 2]`))
		}, want: []string{"manifest.json: (top level): want map"}},
		{name: "wrong type", raw: func(m map[string]any) { at(m, "tensors", 3)["shape"] = "2x3x2" },
			want: []string{"manifest.json: tensors.shape: want []int"}},
		{name: "unknown format version", edit: func(m *Manifest) { m.FormatVersion = 2 },
			want: []string{"format_version: unsupported version 2"}},
		{name: "format version missing", raw: func(m map[string]any) { delete(m, "format_version") },
			want: []string{"format_version: missing"}},
		{name: "sha missing", raw: func(m map[string]any) { delete(at(m, "model"), "weights_sha256") },
			want: []string{"model.weights_sha256: missing"}},
		{name: "sha not hex", edit: func(m *Manifest) { m.Model.WeightsSHA256 = strings.Repeat("g", 64) },
			want: []string{"model.weights_sha256: want 64 hex digits"}},
		{name: "sha short", edit: func(m *Manifest) { m.Model.WeightsSHA256 = "abcd" },
			want: []string{"model.weights_sha256: want 64 hex digits", `"abcd"`}},
		{name: "matrices_held_as unknown", edit: func(m *Manifest) { m.Model.MatricesHeldAs = "bfloat16" },
			want: []string{`model.matrices_held_as: want "float16" or absent, got "bfloat16"`}},
		{name: "config missing", raw: func(m map[string]any) { delete(at(m, "model"), "config") },
			want: []string{"model.config: missing"}},
		{name: "config without n_head", edit: func(m *Manifest) {
			m.Model.Config = json.RawMessage(`{"vocab_size": 16, "n_positions": 8, "n_embd": 4, "n_layer": 2}`)
		}, want: []string{"model.config.n_head: missing"}},
		{name: "config n_embd not multiple of n_head", edit: func(m *Manifest) {
			m.Model.Config = json.RawMessage(`{"vocab_size": 16, "n_positions": 8, "n_embd": 5, "n_head": 2, "n_layer": 2}`)
		}, want: []string{"model.config.n_head: n_embd 5 is not a multiple of n_head 2"}},
		{name: "config with another MLP width", edit: func(m *Manifest) {
			m.Model.Config = json.RawMessage(`{"vocab_size": 16, "n_positions": 8, "n_embd": 4, "n_head": 2, "n_layer": 2, "n_inner": 8}`)
		}, want: []string{"model.config.n_inner: 8 is not supported, want null or 4*n_embd=16"}},
		{name: "config negative", edit: func(m *Manifest) {
			m.Model.Config = json.RawMessage(`{"vocab_size": -1, "n_positions": 8, "n_embd": 4, "n_head": 2, "n_layer": 2}`)
		}, want: []string{"model.config.vocab_size: want a positive integer, got -1"}},

		// cases
		{name: "cases missing", raw: func(m map[string]any) { delete(m, "cases") },
			want: []string{"manifest.json: cases: missing"}},
		{name: "cases empty", edit: func(m *Manifest) { m.Cases = []Case{} },
			want: []string{"cases: empty"}},
		{name: "duplicate case id", edit: func(m *Manifest) { m.Cases[1].ID = "hello" },
			want: []string{`cases[1].id: duplicate case id "hello"`}},
		{name: "empty case id", edit: func(m *Manifest) { m.Cases[1].ID = "" },
			want: []string{"cases[1].id: empty"}},
		{name: "case without tokens", edit: func(m *Manifest) { m.Cases[1].Tokens = []int{} },
			want: []string{`cases[1].tokens: case "one" has no tokens`}},
		{name: "token beyond vocabulary", edit: func(m *Manifest) { m.Cases[0].Tokens[1] = 16 },
			want: []string{`cases[0].tokens[1]: case "hello": token 16 outside the vocabulary [0, 16)`}},
		{name: "negative token", edit: func(m *Manifest) { m.Cases[1].Tokens[0] = -1 },
			want: []string{`cases[1].tokens[0]: case "one": token -1 outside the vocabulary`}},
		{name: "prompt longer than the context", edit: func(m *Manifest) { m.Cases[1].Tokens = make([]int, 9) },
			want: []string{`cases[1].tokens: case "one" has 9 tokens, more than the context length n_positions=8`}},

		// tensors
		{name: "tensors missing", raw: func(m map[string]any) { delete(m, "tensors") },
			want: []string{"tensors: missing"}},
		{name: "tensors empty", edit: func(m *Manifest) { m.Tensors = []TensorInfo{} },
			want: []string{"tensors: empty"}},
		{name: "tensor field missing", raw: func(m map[string]any) { delete(at(m, "tensors", 2), "shape") },
			want: []string{"tensors[2].shape: missing"}},
		{name: "tensor of unknown case", edit: func(m *Manifest) { m.Tensors[0].Case = "nope" },
			want: []string{`tensors[0].case: nope/cp7/-/embeddings: no case "nope"`}},
		{name: "checkpoint out of range", edit: func(m *Manifest) { m.Tensors[1].Checkpoint = 13 },
			want: []string{"tensors[1].checkpoint: hello/cp13/l0/ln_1: checkpoint 13 outside 1..12"}},
		{name: "checkpoint missing", raw: func(m map[string]any) { delete(at(m, "tensors", 1), "checkpoint") },
			want: []string{"tensors[1].checkpoint: missing"}},
		{name: "unknown name", edit: func(m *Manifest) { m.Tensors[1].Name = "ln_3" },
			want: []string{`tensors[1].name: hello/cp1/l0/ln_3: unknown tensor name "ln_3" for checkpoint 1 of a gpt2-family model (known: ln_1, ln_2)`}},
		{name: "name at the wrong checkpoint", edit: func(m *Manifest) { m.Tensors[1].Checkpoint = 2 },
			want: []string{"tensors[1].checkpoint: hello/cp2/l0/ln_1: ln_1 belongs to checkpoint 1, not 2"}},
		{name: "checkpoint without tensors", edit: func(m *Manifest) { m.Tensors[7].Checkpoint = 10; m.Tensors[7].Name = "greedy" },
			want: []string{"tensors[7].name", "known: none"}},
		{name: "sampling tensor of unknown config", edit: func(m *Manifest) { m.Tensors[10].Name = "sampling_hot" },
			want: []string{`tensors[10].name: hello/cp11/-/sampling_hot: no sampling configuration "hot"`}},
		{name: "per-layer tensor without layer", edit: func(m *Manifest) { m.Tensors[1].Layer = nil; m.Tensors[1].File = "x.npy" },
			want: []string{"tensors[1].layer: hello/cp1/-/ln_1: ln_1 is per layer, layer is null"}},
		{name: "layer on a non-layer tensor", edit: func(m *Manifest) { m.Tensors[0].Layer = intp(0) },
			want: []string{"tensors[0].layer: hello/cp7/l0/embeddings: embeddings is not per layer, want layer null, got 0"}},
		{name: "layer beyond n_layer", edit: func(m *Manifest) { m.Tensors[2].Layer = intp(2) },
			want: []string{"tensors[2].layer: hello/cp1/l2/ln_1: layer 2 outside [0, n_layer=2)"}},
		{name: "dtype", edit: func(m *Manifest) { m.Tensors[0].DType = "float64" },
			want: []string{`tensors[0].dtype: hello/cp7/-/embeddings: want "float32", got "float64"`}},
		{name: "shape [T,C]", edit: func(m *Manifest) { m.Tensors[0].Shape = []int{2, 4} },
			want: []string{`tensors[0].shape: hello/cp7/-/embeddings: want [3 4]`, "got [2 4]"}},
		{name: "shape [H,T,D]", edit: func(m *Manifest) { m.Tensors[3].Shape = []int{3, 2, 2} },
			want: []string{"tensors[3].shape: hello/cp2/l0/q: want [2 3 2]"}},
		{name: "shape [T,4C]", edit: func(m *Manifest) { m.Tensors[5].Shape = []int{3, 4} },
			want: []string{"tensors[5].shape: hello/cp6/l1/gelu: want [3 16]"}},
		{name: "shape [V]", edit: func(m *Manifest) { m.Tensors[7].Shape = []int{1, 16} },
			want: []string{"tensors[7].shape: hello/cp9/-/last_logits: want [16]"}},
		{name: "logits shape ignores rows", edit: func(m *Manifest) { m.Tensors[6].Shape = []int{3, 16} },
			want: []string{"tensors[6].shape: hello/cp8/-/logits: want [2 16]"}},
		{name: "rows unsorted", edit: func(m *Manifest) { m.Tensors[6].Rows = []int{2, 0} },
			want: []string{"tensors[6].rows[1]: hello/cp8/-/logits: rows must be sorted and unique, 0 follows 2"}},
		{name: "rows duplicate", edit: func(m *Manifest) { m.Tensors[6].Rows = []int{2, 2} },
			want: []string{"tensors[6].rows[1]", "sorted and unique"}},
		{name: "rows without last position", edit: func(m *Manifest) { m.Tensors[6].Rows = []int{0, 1} },
			want: []string{"tensors[6].rows: hello/cp8/-/logits: rows must include the last position 2"}},
		{name: "rows empty", edit: func(m *Manifest) { m.Tensors[6].Rows = []int{} },
			want: []string{"tensors[6].rows: hello/cp8/-/logits: rows must include the last position 2"}},
		{name: "rows out of range", edit: func(m *Manifest) { m.Tensors[6].Rows = []int{0, 3} },
			want: []string{"tensors[6].rows[1]: hello/cp8/-/logits: row 3 outside [0, T=3)"}},
		{name: "rows on another tensor", edit: func(m *Manifest) { m.Tensors[0].Rows = []int{2} },
			want: []string{"tensors[0].rows: hello/cp7/-/embeddings: only the checkpoint 8 logits tensor may have rows"}},
		{name: "checkpoint 3 on one token", edit: func(m *Manifest) {
			m.Tensors = append(m.Tensors, TensorInfo{Case: "one", Checkpoint: 3, Name: "step_logits", File: "one/step.npy", DType: "float32", Shape: []int{16}})
		}, want: []string{`tensors[13].checkpoint: one/cp3/-/step_logits: checkpoint 3 needs at least 2 tokens, case "one" has 1`}},
		{name: "duplicate tensor", edit: func(m *Manifest) {
			d := m.Tensors[0]
			d.File = "other.npy"
			m.Tensors = append(m.Tensors, d)
		}, want: []string{"tensors[13]: duplicate tensor hello/cp7/-/embeddings, also tensors[0]"}},
		{name: "duplicate file", edit: func(m *Manifest) { m.Tensors[1].File = "./" + m.Tensors[0].File },
			want: []string{`tensors[1].file: "./hello/embeddings.npy" is also tensors[0].file`}},
		{name: "file with ..", edit: func(m *Manifest) { m.Tensors[0].File = "../outside.npy" },
			want: []string{`tensors[0].file: path "../outside.npy" leaves the set directory`}},
		{name: "file with inner ..", edit: func(m *Manifest) { m.Tensors[0].File = "hello/../../outside.npy" },
			want: []string{"tensors[0].file", "leaves the set directory"}},
		{name: "absolute file", edit: func(m *Manifest) { m.Tensors[0].File = "/etc/passwd" },
			want: []string{`tensors[0].file: path "/etc/passwd" is absolute`}},
		{name: "backslash file", edit: func(m *Manifest) { m.Tensors[0].File = `hello\embeddings.npy` },
			want: []string{"tensors[0].file", "use '/' separators"}},
		{name: "empty file", edit: func(m *Manifest) { m.Tensors[0].File = "" },
			want: []string{"tensors[0].file: empty path"}},
		{name: "set directory as file", edit: func(m *Manifest) { m.Tensors[0].File = "hello/.." },
			want: []string{"tensors[0].file", "the set directory itself"}},
		{name: "twin with ..", edit: func(m *Manifest) {
			for i := range m.Tensors {
				m.Tensors[i].FileF64 = strp(m.Tensors[i].File + ".f64")
			}
			m.Tensors[4].FileF64 = strp("../x.f64.npy")
		}, want: []string{`tensors[4].file_f64: path "../x.f64.npy" leaves the set directory`}},
		{name: "twins for some tensors only", edit: func(m *Manifest) { m.Tensors[0].FileF64 = strp("t.f64.npy") },
			want: []string{"tensors: 1 of 13 tensors have a file_f64: want all or none"}},

		// files on disk
		{name: "tensor file missing", files: func(t *testing.T, dir string) {
			require.NoError(t, os.Remove(filepath.Join(dir, "hello", "l1_gelu.npy")))
		}, want: []string{filepath.Join("hello", "l1_gelu.npy") + ": listed as tensors[5].file in manifest.json"}, is: fs.ErrNotExist},
		{name: "twin file missing", edit: func(m *Manifest) {
			for i := range m.Tensors {
				m.Tensors[i].FileF64 = strp(m.Tensors[i].File)
			}
			m.Tensors[2].FileF64 = strp("hello/l1_ln_1.f64.npy")
		}, want: []string{"tensors[0].file_f64"}},
		{name: "tensor file is a directory", files: func(t *testing.T, dir string) {
			p := filepath.Join(dir, "hello", "l1_gelu.npy")
			require.NoError(t, os.Remove(p))
			require.NoError(t, os.Mkdir(p, 0o755))
		}, want: []string{"l1_gelu.npy: listed as tensors[5].file in manifest.json: a directory, not a regular file"}},
		{name: "symlink out of the set", files: func(t *testing.T, dir string) {
			outside := filepath.Join(t.TempDir(), "outside.npy")
			require.NoError(t, os.WriteFile(outside, nil, 0o644))
			p := filepath.Join(dir, "hello", "l1_gelu.npy")
			require.NoError(t, os.Remove(p))
			require.NoError(t, os.Symlink(outside, p))
		}, want: []string{"l1_gelu.npy: listed as tensors[5].file", "escapes"}},

		// sampling, greedy, generation, loglikelihood
		{name: "sampling key missing", raw: func(m map[string]any) { delete(at(m, "sampling", 0), "top_p") },
			want: []string{"sampling[0].top_p: missing"}},
		{name: "sampling duplicate name", edit: func(m *Manifest) { m.Sampling = append(m.Sampling, m.Sampling[0]) },
			want: []string{`sampling[1].name: duplicate sampling name "temp"`}},
		{name: "sampling empty name", edit: func(m *Manifest) { m.Sampling = append(m.Sampling, Sampling{TopP: 1, RepetitionPenalty: 1}) },
			want: []string{"sampling[1].name: empty"}},
		{name: "negative temperature", edit: func(m *Manifest) { m.Sampling[0].Temperature = -0.5 },
			want: []string{"sampling[0].temperature: want a finite value >= 0, got -0.5"}},
		{name: "negative top_k", edit: func(m *Manifest) { m.Sampling[0].TopK = -1 },
			want: []string{"sampling[0].top_k: want >= 0"}},
		{name: "zero top_p", edit: func(m *Manifest) { m.Sampling[0].TopP = 0 },
			want: []string{"sampling[0].top_p: want 0 < top_p <= 1"}},
		{name: "top_p above one", edit: func(m *Manifest) { m.Sampling[0].TopP = 1.5 },
			want: []string{"sampling[0].top_p", "got 1.5"}},
		{name: "min_p above one", edit: func(m *Manifest) { m.Sampling[0].MinP = 2 },
			want: []string{"sampling[0].min_p: want 0 <= min_p <= 1"}},
		{name: "zero repetition penalty", edit: func(m *Manifest) { m.Sampling[0].RepetitionPenalty = 0 },
			want: []string{"sampling[0].repetition_penalty: want a finite value > 0"}},
		{name: "presence penalty beyond 2", edit: func(m *Manifest) { m.Sampling[0].PresencePenalty = 3 },
			want: []string{"sampling[0].presence_penalty: want -2..2"}},
		{name: "frequency penalty below -2", edit: func(m *Manifest) { m.Sampling[0].FrequencyPenalty = -2.5 },
			want: []string{"sampling[0].frequency_penalty"}},
		{name: "logit bias key not an id", edit: func(m *Manifest) { m.Sampling[0].LogitBias = map[string]float64{"07": 1} },
			want: []string{`sampling[0].logit_bias: key "07": want a token id`}},
		{name: "logit bias beyond 100", edit: func(m *Manifest) { m.Sampling[0].LogitBias = map[string]float64{"3": -101} },
			want: []string{"sampling[0].logit_bias: key 3: want a bias in -100..100"}},
		{name: "greedy token beyond vocabulary", edit: func(m *Manifest) { m.Greedy[0].Token = 99 },
			want: []string{`greedy[0].token: greedy token of case "hello": 99 outside the vocabulary [0, 16)`}},
		{name: "greedy of unknown case", edit: func(m *Manifest) { m.Greedy[0].Case = "nope" },
			want: []string{`greedy[0].case: no case "nope"`}},
		{name: "greedy twice", edit: func(m *Manifest) { m.Greedy[1].Case = "hello" },
			want: []string{`greedy[1].case: duplicate greedy result for case "hello"`}},
		{name: "greedy token missing", raw: func(m map[string]any) { delete(at(m, "greedy", 1), "token") },
			want: []string{"greedy[1].token: missing"}},
		{name: "generation token beyond vocabulary", edit: func(m *Manifest) { m.Generation.Results[0].Tokens[1] = 16 },
			want: []string{`generation.results[0].tokens[1]: generation of case "hello": token 16 outside the vocabulary`}},
		{name: "generation n", edit: func(m *Manifest) { m.Generation.N = 0 },
			want: []string{"generation.n: want >= 1, got 0"}},
		{name: "generation longer than n", edit: func(m *Manifest) { m.Generation.N = 1 },
			want: []string{"generation.results[0].tokens", "2 tokens, more than n=1"}},
		{name: "generation stop reason", edit: func(m *Manifest) { m.Generation.Results[0].StopReason = "done" },
			want: []string{`generation.results[0].stop_reason`, `got "done"`}},
		{name: "generation short without reason", edit: func(m *Manifest) { m.Generation.N = 3 },
			want: []string{`stop_reason "max_tokens" with 2 tokens, want n=3`}},
		{name: "generation eos without eos token", edit: func(m *Manifest) { m.Generation.Results[0].StopReason = StopEOS },
			want: []string{`stop_reason "eos" but the last token is not 50256`}},
		{name: "generation result missing key", raw: func(m map[string]any) { delete(at(m, "generation", "results", 0), "stop_reason") },
			want: []string{"generation.results[0].stop_reason: missing"}},
		{name: "loglikelihood token beyond vocabulary", edit: func(m *Manifest) { m.Loglikelihood[0].ContinuationTokens[0] = 20 },
			want: []string{`loglikelihood[0].continuation_tokens[0]: continuation " cat": token 20 outside the vocabulary`}},
		{name: "loglikelihood empty continuation", edit: func(m *Manifest) { m.Loglikelihood[0].ContinuationTokens = []int{} },
			want: []string{"loglikelihood[0].continuation_tokens: continuation \" cat\": empty"}},
		{name: "loglikelihood ll missing", raw: func(m map[string]any) { delete(at(m, "loglikelihood", 0), "ll") },
			want: []string{"loglikelihood[0].ll: missing"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := writeSet(t, validManifest())
			if tt.edit != nil {
				m := validManifest()
				tt.edit(&m)
				data, err := json.Marshal(m)
				require.NoError(t, err)
				writeManifestJSON(t, dir, data)
			}
			if tt.raw != nil {
				mutateJSON(t, dir, tt.raw)
			}
			if tt.files != nil {
				tt.files(t, dir)
			}
			s, err := Open(dir)
			require.Error(t, err)
			require.Nil(t, s)
			require.ErrorIs(t, err, ErrInvalid)
			if tt.is != nil {
				require.ErrorIs(t, err, tt.is)
			}
			require.Contains(t, err.Error(), dir, "the error must name the file")
			for _, w := range tt.want {
				require.Contains(t, err.Error(), w)
			}
		})
	}
}

func TestOpenMissingDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "nope")
	_, err := Open(dir)
	require.ErrorIs(t, err, ErrInvalid)
	require.ErrorIs(t, err, fs.ErrNotExist)
	require.Contains(t, err.Error(), dir)
}

// TestOpenCapsProblems checks that a generator repeating one mistake for
// every tensor yields a bounded error that still says how much was cut.
func TestOpenCapsProblems(t *testing.T) {
	dir := writeSet(t, validManifest())
	m := validManifest()
	for i := 0; i < 30; i++ {
		m.Tensors = append(m.Tensors, TensorInfo{Case: "hello", Checkpoint: 13, Name: "x", File: "x.npy", DType: "float32", Shape: []int{1}})
	}
	data, err := json.Marshal(m)
	require.NoError(t, err)
	writeManifestJSON(t, dir, data)
	_, err = Open(dir)
	require.ErrorIs(t, err, ErrInvalid)
	var e *Error
	require.True(t, errors.As(err, &e))
	require.Contains(t, err.Error(), "more problems not shown")
	require.LessOrEqual(t, strings.Count(err.Error(), "\n"), maxProblems)
}

func TestKey(t *testing.T) {
	require.Equal(t, "c/cp1/l11/ln_2", TensorInfo{Case: "c", Checkpoint: 1, Layer: intp(11), Name: "ln_2"}.Key())
	require.Equal(t, "c/cp11/-/sampling_x", TensorInfo{Case: "c", Checkpoint: 11, Name: "sampling_x"}.Key())
}
