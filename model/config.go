package model

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"strconv"

	"github.com/llorch/llorch-check/internal/regularfile"
)

// Config is the subset of a Hugging Face config that the forward pass
// depends on, named as GPT2Config names it; the Llama family's fields
// (llama_config.go) map onto the same names where they mean the same
// thing (hidden_size is NEmbd, intermediate_size NInner,
// max_position_embeddings NPositions). LoadConfig only returns configs
// this package implements.
type Config struct {
	VocabSize          int
	NPositions         int
	NEmbd              int
	NLayer             int
	NHead              int
	NInner             int // MLP width; 4*NEmbd when null or absent in GPT-2's JSON
	LayerNormEpsilon   float64
	ActivationFunction string
	BOSTokenID         int
	EOSTokenID         int
	ModelType          string // the architecture (Architectures); empty is GPT-2's

	Llama // zero for GPT-2
}

// HeadDim is the per-head width D: NEmbd/NHead, unless the config sets
// its own (Qwen3's head_dim).
func (c Config) HeadDim() int {
	if c.HeadSize > 0 {
		return c.HeadSize
	}
	if c.NHead == 0 {
		return 0
	}
	return c.NEmbd / c.NHead
}

// KVHeads is the number of key/value heads: NHead unless the attention
// is grouped.
func (c Config) KVHeads() int {
	if c.NKVHead > 0 {
		return c.NKVHead
	}
	return c.NHead
}

// maxDim bounds every size so that products of two or three of them cannot
// overflow int and absurd configs fail before any allocation; a GGUF
// file's sizes have the same bound.
const maxDim = 1 << 24

// LoadConfig reads and validates a Hugging Face config.json, and the
// end-of-sequence ids of the generation_config.json beside it. Fields
// that change GPT-2 semantics in ways this package does not implement
// are rejected rather than silently ignored.
func LoadConfig(path string) (Config, error) {
	b, err := regularfile.ReadFileMax(path, regularfile.MaxConfigJSON)
	if err != nil {
		return Config{}, fmt.Errorf("reading config %s: %w", path, err)
	}
	c, err := parseConfig(b)
	if err != nil {
		return Config{}, fmt.Errorf("config %s: %w", path, err)
	}
	if err := addGenerationEOS(&c, filepath.Dir(path)); err != nil {
		return Config{}, err
	}
	return c, nil
}

type rawConfig map[string]json.RawMessage

func parseConfig(b []byte) (Config, error) {
	var raw rawConfig
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&raw); err != nil {
		return Config{}, fmt.Errorf("parsing JSON: %w", err)
	}
	if raw == nil {
		return Config{}, fmt.Errorf("top level is not a JSON object")
	}
	var c Config
	if err := raw.checkModelType(&c); err != nil {
		return Config{}, err
	}
	return c.family().jsonConfig(raw, c.ModelType)
}

func (r rawConfig) present(field string) (json.RawMessage, bool) {
	v, ok := r[field]
	if !ok || string(bytes.TrimSpace(v)) == "null" {
		return nil, false
	}
	return v, true
}

func (r rawConfig) checkModelType(c *Config) error {
	if v, ok := r.present("model_type"); ok {
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return fmt.Errorf("field \"model_type\": value %s is not a string", v)
		}
		a, ok := archByName(s)
		if !ok {
			return fmt.Errorf("field \"model_type\": value %q is not supported (known: %s)", s, knownArchs())
		}
		c.ModelType = a.Name
		return nil
	}
	v, ok := r.present("architectures")
	if !ok {
		return fmt.Errorf("field \"model_type\" is missing and no \"architectures\" names a known model class (%s)", knownClasses())
	}
	var classes []string
	if err := json.Unmarshal(v, &classes); err != nil {
		return fmt.Errorf("field \"architectures\": value %s is not a list of strings", v)
	}
	for _, cl := range classes {
		if a, ok := archByClass(cl); ok {
			c.ModelType = a.Name
			return nil
		}
	}
	return fmt.Errorf("field \"architectures\": value %s names no known model class (%s) and model_type is absent", v, knownClasses())
}

// positiveInt parses an integer field in [1, maxDim]; absent or null gives
// def when the field is optional.
func (r rawConfig) positiveInt(field string, required bool, def int) (int, error) {
	v, ok := r.present(field)
	if !ok {
		if required {
			return 0, fmt.Errorf("field %q is missing", field)
		}
		return def, nil
	}
	n, err := strconv.ParseInt(string(bytes.TrimSpace(v)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("field %q: value %s is not an integer", field, v)
	}
	if n <= 0 || n > maxDim {
		return 0, fmt.Errorf("field %q: value %d is out of range [1, %d]", field, n, maxDim)
	}
	return int(n), nil
}

// nonNegativeInt parses an optional integer field in [0, maxDim]; absent
// or null gives def.
func (r rawConfig) nonNegativeInt(field string, def int) (int, error) {
	if _, ok := r.present(field); !ok {
		return def, nil
	}
	if string(bytes.TrimSpace(r[field])) == "0" {
		return 0, nil
	}
	return r.positiveInt(field, false, def)
}

// slidingWindow is sliding_window: def when the key is absent (the config
// class's default), 0 (none) when it is null.
func (r rawConfig) slidingWindow(def int) (int, error) {
	v, ok := r["sliding_window"]
	switch {
	case !ok:
		return def, nil
	case string(bytes.TrimSpace(v)) == "null":
		return 0, nil
	}
	return r.positiveInt("sliding_window", true, 0)
}

func (r rawConfig) tokenID(field string, def int) (int, error) {
	v, ok := r.present(field)
	if !ok {
		return def, nil
	}
	n, err := strconv.ParseInt(string(bytes.TrimSpace(v)), 10, 64)
	if err != nil || n < 0 || n > math.MaxInt32 {
		return 0, fmt.Errorf("field %q: value %s is not a non-negative integer", field, v)
	}
	return int(n), nil
}

func (r rawConfig) epsilon() (float64, error) {
	const field = "layer_norm_epsilon"
	v, ok := r.present(field)
	if !ok {
		return 1e-5, nil // the GPT2Config default
	}
	eps, err := strconv.ParseFloat(string(bytes.TrimSpace(v)), 64)
	if err != nil {
		return 0, fmt.Errorf("field %q: value %s is not a number", field, v)
	}
	if !(eps > 0) || math.IsInf(eps, 0) {
		return 0, fmt.Errorf("field %q: value %s must be a positive finite number", field, v)
	}
	return eps, nil
}

func (r rawConfig) str(field, def string) (string, error) {
	v, ok := r.present(field)
	if !ok {
		return def, nil
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		return "", fmt.Errorf("field %q: value %s is not a string", field, v)
	}
	return s, nil
}

func (r rawConfig) requireBool(field string, want bool) error {
	v, ok := r.present(field)
	if !ok {
		return nil
	}
	var b bool
	if err := json.Unmarshal(v, &b); err != nil {
		return fmt.Errorf("field %q: value %s is not a boolean", field, v)
	}
	if b != want {
		return fmt.Errorf("field %q: value %v is not supported (only %v)", field, b, want)
	}
	return nil
}

// TruncateLayers makes c a model of its first n blocks (n = 0 keeps them
// all), then its final norm and head, as vLLM's num_hidden_layers
// override does: a check of a large model's first layers that loads
// only their weights.
func (c *Config) TruncateLayers(n int) error {
	switch {
	case n == 0:
		return nil
	case n < 0 || n > c.NLayer:
		return fmt.Errorf("--layers %d: want 1 to the model's %d layers", n, c.NLayer)
	}
	c.NLayer = n
	if c.Windows != nil {
		c.Windows = c.Windows[:n]
	}
	return nil
}
