//go:build llamacpp

package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"github.com/llorch/llorch-check/sampling"
)

// eosToken is GPT-2's <|endoftext|>; greedy generation stops after it.
const eosToken = 50256

// maxTopLogprobs bounds logprobs: k, as OpenAI's legacy API does (5)
// with room for probe's --top-k.
const maxTopLogprobs = 20

// shim is a minimal OpenAI-compatible /v1/completions whose numbers are
// llama.cpp's: its logits through the C API, one llama_decode per prompt
// and per generated token. It is not llama.cpp's server (no tokenizer
// route, no sampling besides greedy, one request at a time); it exists so
// that `llorch-check probe` can measure llama.cpp from the outside.
type shim struct {
	e    *engine
	ctx  unsafe.Pointer
	name string
	mu   sync.Mutex // one llama_context, one request at a time
}

func serve(args []string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	model := fs.String("model", "", "GGUF file")
	addr := fs.String("addr", "127.0.0.1:0", "listen address (port 0: any free port, printed)")
	openEngine := engineFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *model == "" {
		return errors.New("serve: -model is required")
	}
	return withContext(openEngine, *model, func(e *engine, ctx unsafe.Pointer, o ctxOptions) error {
		return listen(&shim{e: e, ctx: ctx, name: filepath.Base(*model)}, *addr, o)
	})
}

// listen serves the shim on addr until SIGINT or SIGTERM.
func listen(s *shim, addr string, o ctxOptions) error {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/models", s.models)
	mux.HandleFunc("POST /v1/completions", s.completions)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	// The address on stdout, so a script can wait for it and read the port.
	fmt.Printf("listening on http://%s (llama.cpp C API shim, %s, %s)\n", ln.Addr(), s.name, o)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		<-stop
		c, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(c)
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func (s *shim) models(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": []map[string]any{
		{"id": s.name, "object": "model", "owned_by": "llama.cpp (C API shim)"}}})
}

// completionRequest is the part of OpenAI's legacy completions request the
// shim honours; anything else is refused by name rather than ignored.
type completionRequest struct {
	Model       string   `json:"model"`
	Prompt      []int    `json:"prompt"`
	MaxTokens   *int     `json:"max_tokens"`
	Echo        bool     `json:"echo"`
	Logprobs    *int     `json:"logprobs"`
	Temperature *float64 `json:"temperature"`
}

type logprobs struct {
	Tokens        []string             `json:"tokens"`
	TokenLogprobs []*float64           `json:"token_logprobs"`
	TopLogprobs   []map[string]float64 `json:"top_logprobs"`
	TextOffset    []int                `json:"text_offset"`
}

func (s *shim) completions(w http.ResponseWriter, r *http.Request) {
	var req completionRequest
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		apiError(w, http.StatusBadRequest, "this shim takes prompt (token ids), max_tokens, echo, logprobs, temperature 0 and model: "+err.Error())
		return
	}
	maxTokens := 16
	if req.MaxTokens != nil {
		maxTokens = *req.MaxTokens
	}
	switch {
	case len(req.Prompt) == 0:
		apiError(w, http.StatusBadRequest, "prompt: want a non-empty array of token ids")
		return
	case req.Temperature != nil && *req.Temperature != 0:
		apiError(w, http.StatusBadRequest, "temperature: this shim only decodes greedily (0)")
		return
	case maxTokens < 0 || req.Logprobs != nil && (*req.Logprobs < 0 || *req.Logprobs > maxTopLogprobs):
		apiError(w, http.StatusBadRequest, fmt.Sprintf("max_tokens must be >= 0 and logprobs within 0..%d", maxTopLogprobs))
		return
	}
	s.mu.Lock()
	choice, err := s.complete(req, maxTokens)
	s.mu.Unlock()
	if err != nil {
		apiError(w, http.StatusBadRequest, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"id": "cmpl-llamacpp", "object": "text_completion", "created": time.Now().Unix(), "model": s.name,
		"choices": []any{choice},
	})
}

// complete evaluates the prompt with every position's logits, then
// decodes greedily (argmax, ties to the lowest id) one token per step.
func (s *shim) complete(req completionRequest, maxTokens int) (map[string]any, error) {
	e, ctx := s.e, s.ctx
	T := len(req.Prompt)
	e.clear(ctx)
	if err := e.decode(ctx, req.Prompt, 0, true); err != nil {
		return nil, err
	}
	var lp logprobs
	var text []byte
	add := func(tok int, logits []float32) {
		piece := e.tokenPiece(tok)
		lp.Tokens = append(lp.Tokens, string(piece))
		lp.TextOffset = append(lp.TextOffset, len(text))
		text = append(text, piece...)
		if logits == nil { // the first prompt token has no context
			lp.TokenLogprobs = append(lp.TokenLogprobs, nil)
			lp.TopLogprobs = append(lp.TopLogprobs, nil)
			return
		}
		ls := sampling.LogSoftmax(logits)
		v := ls[tok]
		lp.TokenLogprobs = append(lp.TokenLogprobs, &v)
		lp.TopLogprobs = append(lp.TopLogprobs, s.top(ls, req.Logprobs))
	}
	var prev []float32
	for i, tok := range req.Prompt {
		if req.Echo {
			add(tok, prev)
		}
		l, err := e.logits(ctx, i)
		if err != nil {
			return nil, err
		}
		prev = l
	}
	finish := "length"
	for n := range maxTokens {
		if T+n >= e.nCtxTrain {
			break
		}
		tok := argmax(prev)
		add(tok, prev)
		if tok == eosToken {
			finish = "stop"
			text = text[:lp.TextOffset[len(lp.TextOffset)-1]] // OpenAI leaves the stop token out of the text
			break
		}
		if n == maxTokens-1 {
			break
		}
		if err := e.decode(ctx, []int{tok}, T+n, false); err != nil {
			return nil, err
		}
		l, err := e.logits(ctx, -1)
		if err != nil {
			return nil, err
		}
		prev = l
	}
	choice := map[string]any{"index": 0, "text": string(text), "finish_reason": finish, "logprobs": nil}
	if req.Logprobs != nil {
		choice["logprobs"] = lp
	}
	return choice, nil
}

// top is the k most likely tokens by text, as OpenAI's legacy API keys
// them; tokens of the same text (partial UTF-8 bytes) share one entry.
func (s *shim) top(ls []float64, k *int) map[string]float64 {
	if k == nil || *k == 0 {
		return nil
	}
	idx := make([]int, len(ls))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return ls[idx[a]] > ls[idx[b]] })
	out := map[string]float64{}
	for _, i := range idx[:*k] {
		if t := string(s.e.tokenPiece(i)); !has(out, t) {
			out[t] = ls[i]
		}
	}
	return out
}

func has(m map[string]float64, k string) bool {
	_, ok := m[k]
	return ok
}

func argmax(x []float32) int {
	best := 0
	for i, v := range x {
		if v > x[best] {
			best = i
		}
	}
	return best
}

func apiError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, map[string]any{"error": map[string]any{"message": msg, "type": "invalid_request_error"}})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}
