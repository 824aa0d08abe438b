package probe

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/generation"
	"github.com/llorch/llorch-check/internal/fixture"
	"github.com/llorch/llorch-check/internal/fixture/tiny"
	"github.com/llorch/llorch-check/model"
	"github.com/llorch/llorch-check/references"
	"github.com/llorch/llorch-check/sampling"
	"github.com/llorch/llorch-check/server"
	"github.com/llorch/llorch-check/tokenizer"
)

// tinyModel loads the default tiny model with fault injected when not
// FaultNone.
func tinyModel(t *testing.T, fault model.Fault) (*model.Model, *tokenizer.Tokenizer) {
	t.Helper()
	m, tok := tiny.Fresh(t)
	if fault != model.FaultNone {
		m.InjectFault(fault, -1)
	}
	return m, tok
}

// serve runs llorch-check's own server on the tiny model on loopback,
// with fault injected into the model when not FaultNone.
func serve(t *testing.T, fault model.Fault) string {
	t.Helper()
	m, tok := tinyModel(t, fault)
	srv := server.New(server.Config{})
	require.NoError(t, srv.SetModel(m, tok))
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	return ts.URL
}

func tinySet(t testing.TB) *references.Set {
	t.Helper()
	set, err := references.Open(fixture.TinyReferences())
	require.NoError(t, err)
	return set
}

// startServer serves h on loopback for the test.
func startServer(t *testing.T, h http.Handler) string {
	t.Helper()
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return ts.URL
}

// TGI cannot run here. tgiServer answers TGI's documented wire shape
// (GET /info; POST /generate with inputs, parameters, details,
// decoder_input_details, top_n_tokens) from the tiny model's own numbers,
// so that the probe's TGI parser is tested against real model output; it
// says nothing about TGI's numerics.
func tgiServer(t *testing.T, fault model.Fault) string {
	t.Helper()
	m, tok := tinyModel(t, fault)
	return tgiServerFor(t, m, tok)
}

func tgiServerFor(t *testing.T, m *model.Model, tok *tokenizer.Tokenizer) string {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /info", func(w http.ResponseWriter, r *http.Request) {
		writeTestJSON(w, map[string]any{"model_id": "tiny-gpt2", "model_dtype": "float32", "version": "loopback", "router": "text-generation-router"})
	})
	mux.HandleFunc("POST /generate", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Inputs     string `json:"inputs"`
			Parameters struct {
				MaxNewTokens        int  `json:"max_new_tokens"`
				DoSample            bool `json:"do_sample"`
				Details             bool `json:"details"`
				DecoderInputDetails bool `json:"decoder_input_details"`
				TopNTokens          int  `json:"top_n_tokens"`
			} `json:"parameters"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Parameters.DoSample || !req.Parameters.Details {
			http.Error(w, `{"error":"this loopback TGI answers greedy requests with details only","error_type":"validation"}`, http.StatusUnprocessableEntity)
			return
		}
		ans, err := tgiGenerate(r.Context(), m, tok, req.Inputs, req.Parameters.MaxNewTokens, req.Parameters.TopNTokens, req.Parameters.DecoderInputDetails)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		writeTestJSON(w, ans)
	})
	return startServer(t, mux)
}

type tgiTok struct {
	ID      int      `json:"id"`
	Text    string   `json:"text"`
	LogProb *float64 `json:"logprob"`
	Special bool     `json:"special"`
}

func tgiGenerate(ctx context.Context, m *model.Model, tok *tokenizer.Tokenizer, input string, n, topN int, prefill bool) (map[string]any, error) {
	ids := tok.EncodeSpecial(input) // TGI's tokenizer parses special tokens in inputs
	piece := func(id int, lp *float64) tgiTok {
		text, _ := tok.Decode([]int{id})
		return tgiTok{ID: id, Text: text, LogProb: lp, Special: id == generation.EOSToken}
	}
	details := map[string]any{"seed": nil}
	if prefill {
		scores, err := generation.PromptLogProbs(ctx, generation.NewModelDecoder(m), ids, 0)
		if err != nil {
			return nil, err
		}
		pre := []tgiTok{piece(ids[0], nil)}
		for i, s := range scores {
			pre = append(pre, piece(ids[i+1], &s.LogProb))
		}
		details["prefill"] = pre
	}
	var tokens []tgiTok
	var tops [][]tgiTok
	req := generation.Request{Prompt: ids, MaxTokens: n, Params: sampling.Params{Temperature: 0}, LogProbs: true, TopLogProbs: topN}
	res, err := generation.Generate(ctx, generation.NewModelDecoder(m), tok, req, func(t generation.Token) error {
		tokens = append(tokens, piece(t.ID, &t.LogProb))
		var top []tgiTok
		for _, a := range t.TopLogProbs {
			top = append(top, piece(a.ID, &a.LogProb))
		}
		tops = append(tops, top)
		return nil
	})
	if err != nil {
		return nil, err
	}
	details["tokens"], details["generated_tokens"] = tokens, len(tokens)
	details["finish_reason"] = map[string]string{generation.StopEOS: "eos_token"}[res.StopReason]
	if details["finish_reason"] == "" {
		details["finish_reason"] = "length"
	}
	if topN > 0 {
		details["top_tokens"] = tops
	}
	return map[string]any{"generated_text": res.Text, "details": details}, nil
}

func writeTestJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
