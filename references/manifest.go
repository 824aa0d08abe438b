// Package references reads and writes reference sets: a directory with
// manifest.json and one .npy file per tensor, as pinned by FORMAT.md.
//
// Open validates the whole manifest against the model configuration it
// records and checks that every file exists, so that a run fails before any
// forward pass on a broken set. Tensor data is read lazily (Set.Tensor),
// with its own checks of dtype, shape, size and finiteness.
package references

import (
	"bytes"
	"encoding/json"
	"github.com/llorch/llorch-check/tensors"
	"strconv"

	"github.com/llorch/llorch-check/sampling"
)

// FormatVersion is the manifest format this package reads and writes.
const FormatVersion = 1

// ManifestFile is the name of the manifest inside a reference set.
const ManifestFile = "manifest.json"

// Manifest is manifest.json. Field meanings are in FORMAT.md.
type Manifest struct {
	FormatVersion int             `json:"format_version"`
	Model         ModelInfo       `json:"model"`
	Generator     map[string]any  `json:"generator"`
	Cases         []Case          `json:"cases"`
	Tensors       []TensorInfo    `json:"tensors"`
	Sampling      []Sampling      `json:"sampling"`
	Greedy        []Greedy        `json:"greedy"`
	Generation    *Generation     `json:"generation"`
	Loglikelihood []Loglikelihood `json:"loglikelihood"`
}

// Float16 is ModelInfo.MatricesHeldAs for float16 weight matrices.
const Float16 = "float16"

// ModelInfo identifies the model a set was made from.
type ModelInfo struct {
	Path          string `json:"path"`
	WeightsFile   string `json:"weights_file"`
	WeightsSHA256 string `json:"weights_sha256"`
	WeightsDType  string `json:"weights_dtype"`
	// MatricesHeldAs is "float16" when the set was made with the weight
	// matrices rounded to float16 (dump_references.py --weight-dtype f16),
	// the reference of a model loaded that way; empty otherwise.
	MatricesHeldAs string `json:"matrices_held_as,omitempty"`
	// Layers is the number of blocks the set's forward ran when it ran
	// only the first ones (dump_references.py --layers N), then the final
	// norm and head; 0 when it ran them all. Config stays config.json's.
	Layers int `json:"layers,omitempty"`
	// TokenizerFile and TokenizerSHA256 name the tokenizer that gave the
	// set's ids: the file of the model directory tokenizer.Load reads
	// ("vocab.json" for GPT-2's vocab.json + merges.txt, "tokenizer.json",
	// or a *.gguf vocabulary such as "tokenizer.gguf") and the sha256 of
	// its bytes (of vocab.json's then merges.txt's). Both empty in sets
	// made before they existed, from a GGUF model file, or from a
	// directory without a tokenizer: CheckTokenizer then checks nothing.
	TokenizerFile   string          `json:"tokenizer_file,omitempty"`
	TokenizerSHA256 string          `json:"tokenizer_sha256,omitempty"`
	Config          json.RawMessage `json:"config"` // config.json, verbatim
}

// Case is one prompt; Prompt is nil when the case was given as token ids.
type Case struct {
	ID     string  `json:"id"`
	Prompt *string `json:"prompt"`
	Tokens []int   `json:"tokens"`
}

// TensorInfo describes one reference tensor and where its files are.
type TensorInfo struct {
	Case       string  `json:"case"`
	Checkpoint int     `json:"checkpoint"`
	Layer      *int    `json:"layer"`    // nil for tensors that are not per layer
	Name       string  `json:"name"`     // see the table in FORMAT.md
	File       string  `json:"file"`     // relative to the set, '/' separated
	FileF64    *string `json:"file_f64"` // float64 twin; nil in sets without twins
	DType      string  `json:"dtype"`    // always "float32"
	Shape      []int   `json:"shape"`
	Rows       []int   `json:"rows"` // kept token positions of logits; nil = all
}

// NoLayer is what LayerIndex returns for tensors that are not per layer.
const NoLayer = -1

// LayerIndex is the block index, or NoLayer (-1) when Layer is nil.
func (t TensorInfo) LayerIndex() int {
	if t.Layer == nil {
		return NoLayer
	}
	return *t.Layer
}

// Key names the tensor uniquely within a set, e.g. "hello/cp1/l0/ln_1" or
// "hello/cp8/-/logits".
func (t TensorInfo) Key() string {
	layer := "-"
	if t.Layer != nil {
		layer = "l" + strconv.Itoa(*t.Layer)
	}
	return t.Case + "/cp" + strconv.Itoa(t.Checkpoint) + "/" + layer + "/" + t.Name
}

// Sampling is one logit-processor configuration of checkpoint 11.
type Sampling struct {
	Name              string  `json:"name"`
	Temperature       float64 `json:"temperature"`
	TopK              int     `json:"top_k"`
	TopP              float64 `json:"top_p"`
	MinP              float64 `json:"min_p"`
	RepetitionPenalty float64 `json:"repetition_penalty"`
	// OpenAI's processors, absent (0, none) in sets made before them.
	PresencePenalty  float64            `json:"presence_penalty,omitempty"`
	FrequencyPenalty float64            `json:"frequency_penalty,omitempty"`
	LogitBias        map[string]float64 `json:"logit_bias,omitempty"` // token id (decimal) -> bias
}

// Params are the logit-processor settings of the configuration.
func (s Sampling) Params() sampling.Params {
	p := sampling.Params{Temperature: s.Temperature, TopK: s.TopK, TopP: s.TopP, MinP: s.MinP,
		RepetitionPenalty: s.RepetitionPenalty, PresencePenalty: s.PresencePenalty, FrequencyPenalty: s.FrequencyPenalty}
	if len(s.LogitBias) > 0 {
		p.LogitBias = make(map[int]float64, len(s.LogitBias))
		for id, b := range s.LogitBias {
			n, _ := strconv.Atoi(id) // validated: a decimal token id
			p.LogitBias[n] = b
		}
	}
	return p
}

// Greedy is the expected argmax token of a case (checkpoint 10).
type Greedy struct {
	Case  string `json:"case"`
	Token int    `json:"token"`
}

// Generation holds the expected greedy continuations (checkpoint 12).
type Generation struct {
	N       int                `json:"n"`
	Results []GenerationResult `json:"results"`
}

// Stop reasons of a GenerationResult.
const (
	StopMaxTokens     = "max_tokens"
	StopEOS           = "eos"
	StopContextLength = "context_length"
)

// EOSToken is GPT-2's <|endoftext|>, which ends a generation early.
const EOSToken = 50256

// GenerationResult is the continuation of one case. Text is nil when the
// model directory had no tokenizer.
type GenerationResult struct {
	Case       string  `json:"case"`
	Tokens     []int   `json:"tokens"`
	Text       *string `json:"text"`
	StopReason string  `json:"stop_reason"`
}

// Loglikelihood is the expected log-likelihood of a continuation given a
// context; LLF64 is the float64 twin, nil in sets without twins.
type Loglikelihood struct {
	Context            string   `json:"context"`
	Continuation       string   `json:"continuation"`
	ContextTokens      []int    `json:"context_tokens"`
	ContinuationTokens []int    `json:"continuation_tokens"`
	LL                 float64  `json:"ll"`
	LLF64              *float64 `json:"ll_f64"`
	IsGreedy           bool     `json:"is_greedy"`
	// KVCache is, in a set of the f16-kv profile, the float16 KV cache the
	// forward over the pair's input stores: one K and one V file a layer,
	// [Hkv, T, D] (Set.PairKVCache).
	KVCache *PairKVCache `json:"kv_cache,omitempty"`
}

// PairKVCache names a log-likelihood pair's KV cache files, by layer.
type PairKVCache struct {
	K []string `json:"k"`
	V []string `json:"v"`
}

// ModelDims are the config.json values the tensor shapes depend on.
// NKVHead, HeadDim and NInner are the Llama family's (0 for GPT-2);
// Family is tensors.GPT2 or tensors.Llama.
type ModelDims struct {
	VocabSize, NPositions, NEmbd, NHead, NLayer int
	NKVHead, HeadDim, NInner                    int
	NExperts, TopK, MoEInner                    int // a mixture of experts' (moeDims); 0 for a dense model
	Family                                      string
}

// ModelConfig reads the dimensions from Model.Config. Errors name the
// config field, relative to manifest.json.
func (m Manifest) ModelConfig() (ModelDims, error) {
	return m.modelConfig(ManifestFile)
}

// modelConfig is the dimensions of the forward the set ran: its config's,
// with model.layers blocks when the set ran only the first ones.
func (m Manifest) modelConfig(path string) (ModelDims, error) {
	d, err := m.configDims(path)
	if err != nil || m.Model.Layers == 0 {
		return d, err
	}
	if m.Model.Layers < 0 || m.Model.Layers > d.NLayer {
		return ModelDims{}, errorf(path, "model.layers", "want 1 to the config's %d layers, got %d", d.NLayer, m.Model.Layers)
	}
	d.NLayer = m.Model.Layers
	return d, nil
}

// configDims is the dimensions model.config gives.
func (m Manifest) configDims(path string) (ModelDims, error) {
	if len(bytes.TrimSpace(m.Model.Config)) == 0 || bytes.Equal(bytes.TrimSpace(m.Model.Config), []byte("null")) {
		return ModelDims{}, errorf(path, "model.config", "missing")
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(m.Model.Config, &raw); err != nil {
		return ModelDims{}, errorf(path, "model.config", "not a JSON object: %v", err)
	}
	var modelType string
	if v, ok := raw["model_type"]; ok {
		_ = json.Unmarshal(v, &modelType)
	}
	d := ModelDims{Family: tensors.FamilyOf(modelType)}
	if d.Family == tensors.Llama {
		return d, d.llamaDims(raw, path)
	}
	fields := []dimField{
		{"vocab_size", &d.VocabSize},
		{"n_positions", &d.NPositions},
		{"n_embd", &d.NEmbd},
		{"n_head", &d.NHead},
		{"n_layer", &d.NLayer},
	}
	if err := readDims(raw, path, fields); err != nil {
		return ModelDims{}, err
	}
	// HF sizes the MLP by n_inner when set; FORMAT.md's gelu shape [T,4C]
	// assumes the GPT-2 default, so anything else cannot be validated.
	if v, ok := raw["n_inner"]; ok && !isNull(v) {
		var inner int
		if err := json.Unmarshal(v, &inner); err != nil || inner != 4*d.NEmbd {
			return ModelDims{}, errorf(path, "model.config.n_inner", "%s is not supported, want null or 4*n_embd=%d", v, 4*d.NEmbd)
		}
	}
	if d.NEmbd%d.NHead != 0 {
		return ModelDims{}, errorf(path, "model.config.n_head", "n_embd %d is not a multiple of n_head %d", d.NEmbd, d.NHead)
	}
	return d, nil
}

// llamaDims reads a Llama-family config's dimensions under HF's names;
// num_key_value_heads and head_dim default as the config classes do.
func (d *ModelDims) llamaDims(raw map[string]json.RawMessage, path string) error {
	err := readDims(raw, path, []dimField{
		{"vocab_size", &d.VocabSize},
		{"max_position_embeddings", &d.NPositions},
		{"hidden_size", &d.NEmbd},
		{"num_attention_heads", &d.NHead},
		{"num_hidden_layers", &d.NLayer},
		{"intermediate_size", &d.NInner},
	})
	if err != nil {
		return err
	}
	d.NKVHead, d.HeadDim = d.NHead, 0
	var optional []dimField
	for _, f := range []dimField{{"num_key_value_heads", &d.NKVHead}, {"head_dim", &d.HeadDim}} {
		if v, ok := raw[f.name]; ok && !isNull(v) {
			optional = append(optional, f)
		}
	}
	if err := readDims(raw, path, optional); err != nil {
		return err
	}
	if d.HeadDim == 0 {
		if d.NEmbd%d.NHead != 0 {
			return errorf(path, "model.config.num_attention_heads", "hidden_size %d is not a multiple of %d and head_dim is not set", d.NEmbd, d.NHead)
		}
		d.HeadDim = d.NEmbd / d.NHead
	}
	if d.NHead%d.NKVHead != 0 {
		return errorf(path, "model.config.num_key_value_heads", "%d does not divide num_attention_heads %d", d.NKVHead, d.NHead)
	}
	return d.moeDims(raw, path)
}

// dimField is a config field read into a dimension.
type dimField struct {
	name string
	dst  *int
}

// readDims reads positive integer fields of a config.
func readDims(raw map[string]json.RawMessage, path string, fields []dimField) error {
	for _, f := range fields {
		field := "model.config." + f.name
		v, ok := raw[f.name]
		if !ok {
			return errorf(path, field, "missing")
		}
		if err := json.Unmarshal(v, f.dst); err != nil {
			return errorf(path, field, "want a positive integer, got %s", v)
		}
		if *f.dst <= 0 {
			return errorf(path, field, "want a positive integer, got %d", *f.dst)
		}
	}
	return nil
}

// parseManifest decodes and validates manifest.json (at path, for errors)
// without touching any other file.
func parseManifest(data []byte, path string) (Manifest, ModelDims, error) {
	var m Manifest
	if err := checkRequired(data, path); err != nil {
		return m, ModelDims{}, err
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return m, ModelDims{}, jsonError(path, err)
	}
	dims, err := validate(&m, path)
	return m, dims, err
}

// jsonError turns a decoding error into one that names the field.
func jsonError(path string, err error) error {
	switch e := err.(type) {
	case *json.UnmarshalTypeError:
		field := e.Field
		if field == "" {
			field = "(top level)"
		}
		return errorf(path, field, "want %v, got JSON %s", e.Type, e.Value)
	case *json.SyntaxError:
		return errorf(path, "", "not valid JSON at byte %d: %v", e.Offset, e)
	}
	return errorf(path, "", "not valid JSON: %v", err)
}
