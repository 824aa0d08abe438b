package server

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"math"
	"net/http"

	"github.com/llorch/llorch-check/generation"
	"github.com/llorch/llorch-check/model"
	"github.com/llorch/llorch-check/tensors"
)

// embeddingFields are the /v1/embeddings parameters this server reads
// (and user, accepted and not used).
var embeddingFields = []string{"model", "input", "encoding_format", "dimensions"}

type embedding struct {
	Object    string `json:"object"`
	Index     int    `json:"index"`
	Embedding any    `json:"embedding"` // []float32, or base64 of little-endian float32
}

type embeddingUsage struct {
	PromptTokens int `json:"prompt_tokens"`
	TotalTokens  int `json:"total_tokens"`
}

type embeddingResponse struct {
	Object string         `json:"object"`
	Data   []embedding    `json:"data"`
	Model  string         `json:"model"`
	Usage  embeddingUsage `json:"usage"`
}

// handleEmbeddings is OpenAI's embeddings: per input, the mean over its
// positions of GPT-2's final hidden state (the output of ln_f, what the
// LM head reads), not normalised.
func (s *Server) handleEmbeddings(w http.ResponseWriter, r *http.Request, e *engine, f *fields) func() {
	f.model(e)
	_, inputs := s.promptsField(e, f, "input")
	format, _ := f.str("encoding_format", false)
	if format != "" && format != "float" && format != "base64" {
		f.bad("encoding_format", "enum", `must be "float" or "base64"`, format)
	}
	C := e.m.Config.NEmbd
	if d, ok := f.integer("dimensions"); ok && d != int64(C) {
		f.bad("dimensions", "unsupported", fmt.Sprintf("must be %d: the model's hidden size (no truncation)", C), d)
	}
	s.extraFields(f, embeddingFields, []unusedField{userField})
	names := promptNames("input", len(inputs) == 1)
	for i, in := range inputs {
		f.check(generation.ValidatePrompt(in, e.positions(), e.m.Config.VocabSize), names(i))
	}
	return func() {
		s.runJob(w, r, "", jsonAnswer{}, func(ctx context.Context, slot *Slot) error {
			data := []embedding{}
			tokens := 0
			for i, in := range inputs {
				vec, err := slot.embed(ctx, e, in)
				if err != nil {
					return err
				}
				e.obs.promptTokens.Add(float64(len(in)))
				tokens += len(in)
				data = append(data, embedding{Object: "embedding", Index: i, Embedding: encodeEmbedding(vec, format)})
			}
			writeJSON(w, http.StatusOK, embeddingResponse{Object: "list", Data: data, Model: e.name,
				Usage: embeddingUsage{PromptTokens: tokens, TotalTokens: tokens}})
			return nil
		})
	}
}

// encodeEmbedding is vec as OpenAI sends it: a JSON array, or with
// "base64" the little-endian float32 bytes in standard base64.
func encodeEmbedding(vec []float32, format string) any {
	if format != "base64" {
		return vec
	}
	b := make([]byte, 4*len(vec))
	for i, v := range vec {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return base64.StdEncoding.EncodeToString(b)
}

// embed runs tokens through the slot's decoder and returns the mean of
// their final norm's rows (GPT-2's ln_f, the Llama family's norm), summed
// in float64 in position order.
func (sl *Slot) embed(ctx context.Context, e *engine, tokens []int) ([]float32, error) {
	C := e.m.Config.NEmbd
	sum := make([]float64, C)
	final := tensors.FinalNorm(e.m.Config.Family())
	probe := model.ProbeFunc(func(t model.Captured) {
		if t.Name != final {
			return
		}
		for j, v := range t.Data {
			sum[j%C] += float64(v)
		}
	})
	if err := sl.Decoder(e).Probe(ctx, tokens, probe); err != nil {
		return nil, fmt.Errorf("embedding: %w", err)
	}
	out := make([]float32, C)
	for j, v := range sum {
		out[j] = float32(v / float64(len(tokens)))
	}
	return out, nil
}
