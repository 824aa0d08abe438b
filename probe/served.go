package probe

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/llorch/llorch-check/references"
)

// modelEntry is one model of a /v1/models list: OpenAI's id, and what some
// servers add that says which model it is.
type modelEntry struct {
	ID      string `json:"id"`
	OwnedBy string `json:"owned_by"`
	// Architecture and VocabSize are llorch-check serve's.
	Architecture string `json:"architecture"`
	VocabSize    int    `json:"vocab_size"`
	// Meta is llama.cpp's server's: n_vocab is its vocabulary.
	Meta *struct {
		NVocab int `json:"n_vocab"`
	} `json:"meta"`
}

// vocab is the vocabulary size the entry reports; 0 when it says none.
func (m modelEntry) vocab() int {
	if m.VocabSize > 0 {
		return m.VocabSize
	}
	if m.Meta != nil {
		return m.Meta.NVocab
	}
	return 0
}

// checkServedModel compares what a server's /v1/models says of the served
// model with the model the reference set was made from (its manifest's
// model.config), before any case is sent: a set of another model would
// only draw the server's refusals (a token id beyond its vocabulary) or
// meaningless numbers. Only what the server reports is compared.
func checkServedModel(set *references.Set, endpoint string, m modelEntry) error {
	var cfg struct {
		ModelType string `json:"model_type"`
	}
	_ = json.Unmarshal(set.Manifest.Model.Config, &cfg) // the set was validated when opened
	dims, err := set.Manifest.ModelConfig()
	if err != nil {
		return err
	}
	var differ []string
	if m.Architecture != "" && cfg.ModelType != "" && m.Architecture != cfg.ModelType {
		differ = append(differ, fmt.Sprintf("architecture %s (the set's: %s)", m.Architecture, cfg.ModelType))
	}
	if v := m.vocab(); v > 0 && dims.VocabSize > 0 && v != dims.VocabSize {
		differ = append(differ, fmt.Sprintf("vocab_size %d (the set's: %d)", v, dims.VocabSize))
	}
	if len(differ) == 0 {
		return nil
	}
	made := fmt.Sprintf("a %s model with vocab_size %d", cfg.ModelType, dims.VocabSize)
	if p := set.Manifest.Model.Path; p != "" {
		made += " (" + p + ")"
	}
	return fmt.Errorf("the reference set %s is for another model: it was made from %s, and %s/v1/models says model %q has %s; probe with the served model's reference set (--references, made by pytorch/dump_references.py --model from its directory)",
		set.Dir, made, endpoint, m.ID, strings.Join(differ, " and "))
}
