package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"
	"unicode/utf8"

	"github.com/llorch/llorch-check/generation"
)

// openAIDefaults are OpenAI's: 16 tokens at temperature 1; 0 tokens is
// allowed, for echo scoring (prompt log-probabilities only).
var openAIDefaults = settingDefaults{maxTokens: 16, minMaxTokens: 0, temperature: 1.0}

// completionFields are the /v1/completions parameters this server reads:
// OpenAI's (user is an end-user id for abuse monitoring, accepted and
// not used) and the sampling extensions vLLM also takes.
var completionFields = []string{"model", "prompt", "max_tokens", "temperature", "top_p", "top_k", "min_p",
	"repetition_penalty", "presence_penalty", "frequency_penalty", "logit_bias", "seed", "stop", "n", "best_of",
	"stream", "stream_options", "echo", "logprobs", "suffix", "user"}

// maxLogprobs bounds logprobs (OpenAI allows 5; lm-eval asks for 1..5).
const maxLogprobs = 20

type completionRequest struct {
	prompts   [][]int
	texts     []string // the prompts' text (decoded when given as ids)
	settings  genSettings
	maxTokens []int // per prompt: settings.MaxTokens fitted to the context
	stream    bool
	echo      bool
	logprobs  int // -1: none
	usage     bool
}

type legacyLogprobs struct {
	Tokens        []string             `json:"tokens"`
	TokenLogprobs []*float64           `json:"token_logprobs"`
	TopLogprobs   []map[string]float64 `json:"top_logprobs"`
	TextOffset    []int                `json:"text_offset"`
}

type completionChoice struct {
	Index        int             `json:"index"`
	Text         string          `json:"text"`
	Logprobs     *legacyLogprobs `json:"logprobs"`
	FinishReason *string         `json:"finish_reason"`
}

type completionResponse struct {
	ID      string             `json:"id"`
	Object  string             `json:"object"`
	Created int64              `json:"created"`
	Model   string             `json:"model"`
	Choices []completionChoice `json:"choices"`
	Usage   *usage             `json:"usage,omitempty"`
}

// parseCompletion reads a /v1/completions body. prompt may be a string,
// a list of strings, a list of token ids or a list of lists of ids.
func (s *Server) parseCompletion(e *engine, f *fields) completionRequest {
	var c completionRequest
	V, n := e.m.Config.VocabSize, e.m.Config.NPositions
	if name, ok := f.str("model", false); ok && name != "" && name != e.name {
		f.bad("model", "exists", fmt.Sprintf("model %q is not served here; this worker serves %q", name, e.name), name)
	}
	c.texts, c.prompts = s.completionPrompts(e, f)
	c.settings = f.settings(openAIDefaults, V)
	if v, ok := f.integer("n"); ok && v != 1 {
		f.bad("n", "range", "only n=1 is supported", v)
	}
	if v, ok := f.integer("best_of"); ok && v != 1 {
		f.bad("best_of", "range", "only best_of=1 is supported (one completion per prompt)", v)
	}
	f.unsupported("suffix", "is not supported: GPT-2 has no insertion mode", `""`)
	if !s.cfg.Lenient {
		f.unknown(completionFields)
	}
	c.stream, _ = f.boolean("stream")
	c.echo, _ = f.boolean("echo")
	c.logprobs = -1
	if f.present("logprobs") {
		c.logprobs = int(f.intIn("logprobs", 0, maxLogprobs, -1))
	}
	if f.present("stream_options") {
		var opt struct {
			IncludeUsage bool `json:"include_usage"`
		}
		if json.Unmarshal(f.raw["stream_options"], &opt) != nil {
			f.bad("stream_options", "type", `must be an object like {"include_usage": true}`, nil)
		}
		c.usage = opt.IncludeUsage
	}
	if f.ok("prompt", "max_tokens") {
		for i, p := range c.prompts {
			m, why := c.settings.maxTokensFor(len(p), n)
			if why != "" {
				name := "prompt"
				if len(c.prompts) > 1 {
					name = fmt.Sprintf("prompt[%d]", i)
				}
				f.bad(name, "context_length", why, nil)
			}
			c.maxTokens = append(c.maxTokens, m)
		}
	}
	return c
}

func (s *Server) completionPrompts(e *engine, f *fields) ([]string, [][]int) {
	if !f.present("prompt") {
		f.bad("prompt", "required", "is required", nil)
		return nil, nil
	}
	raw := f.raw["prompt"]
	// Each attempt decodes into a fresh value: a failed Unmarshal leaves
	// partial results behind.
	var many []string
	var idLists [][]int
	var one string
	var strs []string
	var ids []int
	var lists [][]int
	switch {
	case json.Unmarshal(raw, &one) == nil:
		many = []string{one}
	case json.Unmarshal(raw, &strs) == nil:
		many = strs
	case json.Unmarshal(raw, &ids) == nil:
		idLists = [][]int{ids}
	case json.Unmarshal(raw, &lists) == nil:
		idLists = lists
	default:
		f.bad("prompt", "type", "must be a string, a list of strings, a list of token ids or a list of lists of token ids", nil)
		return nil, nil
	}
	var encoded [][]int
	if len(many)+len(idLists) == 0 || len(many)+len(idLists) > s.cfg.MaxBatch {
		f.bad("prompt", "length", fmt.Sprintf("must hold 1..%d prompts", s.cfg.MaxBatch), nil)
		return nil, nil
	}
	var texts []string
	for i, p := range many {
		name := fmt.Sprintf("prompt[%d]", i)
		if len(many) == 1 {
			name = "prompt"
		}
		f.checkPrompt(name, p)
		texts = append(texts, p)
		encoded = append(encoded, e.tok.Encode(p))
	}
	V := e.m.Config.VocabSize
	for i, l := range idLists {
		if len(l) == 0 {
			f.bad(fmt.Sprintf("prompt[%d]", i), "length", "must hold at least one token id", nil)
			continue
		}
		for j, id := range l {
			if id < 0 || id >= V {
				f.bad(fmt.Sprintf("prompt[%d][%d]", i, j), "vocabulary", fmt.Sprintf("token id must be 0..%d", V-1), id)
			}
		}
		text, _ := e.tok.Decode(l)
		texts = append(texts, text)
		encoded = append(encoded, l)
	}
	return texts, encoded
}

func finishReason(stop string) string {
	if stop == generation.StopMaxTokens {
		return "length"
	}
	return "stop"
}

// handleCompletions is OpenAI's legacy completions endpoint, enough for
// SDKs, benchmarkers and lm-evaluation-harness local-completions.
func (s *Server) handleCompletions(w http.ResponseWriter, r *http.Request) {
	e, f, ok := s.beginRequest(w, r, familyOpenAI)
	if !ok {
		return
	}
	c := s.parseCompletion(e, f)
	if len(f.errs) > 0 {
		if f.errs[0].Constraint == "exists" {
			writeError(w, http.StatusNotFound, "model_not_found", f.errs[0].Message, "model")
			return
		}
		writeFieldErrors(w, familyOpenAI, f.errs)
		return
	}
	ctx, slot, done, ok := s.admitJob(w, r)
	if !ok {
		return
	}
	defer done()
	resp := completionResponse{ID: "cmpl-" + requestID(r.Context()), Object: "text_completion",
		Created: time.Now().Unix(), Model: e.name}
	var sse *sseWriter
	if c.stream {
		sse = startSSE(w, s.cfg.WriteTimeout)
	}
	var total usage
	for i, prompt := range c.prompts {
		choice, err := s.completeOne(ctx, e, slot, c, i, prompt, resp, sse, &total)
		switch {
		case errors.Is(err, errWrite):
			s.endCause(ctx)
			setOutcome(w, outcomeDisconnected)
			return
		case err != nil && ctx.Err() != nil:
			if sse == nil {
				s.writeEnded(w, ctx)
				return
			}
			code, outcome := s.endCause(ctx)
			setOutcome(w, outcome)
			typ := "timeout_error"
			if code == codeShutdown {
				typ = "server_error"
			}
			_ = sse.data(map[string]any{"error": apiError{Message: endMessage(code), Type: typ, Code: code}})
			_ = sse.write("data: [DONE]\n\n")
			return
		case err != nil:
			s.log.Error("completion failed", "request_id", requestID(r.Context()), "error", err)
			if sse == nil {
				writeError(w, http.StatusInternalServerError, codeInference, err.Error(), "")
				return
			}
			setOutcome(w, outcomeServerError)
			_ = sse.data(map[string]any{"error": apiError{Message: err.Error(), Type: "server_error", Code: codeInference}})
			_ = sse.write("data: [DONE]\n\n")
			return
		}
		resp.Choices = append(resp.Choices, choice)
	}
	total.TotalTokens = total.PromptTokens + total.CompletionTokens
	if sse != nil {
		if c.usage {
			final := resp
			final.Choices = []completionChoice{}
			final.Usage = &total
			_ = sse.data(final)
		}
		_ = sse.write("data: [DONE]\n\n")
		return
	}
	resp.Usage = &total
	writeJSON(w, http.StatusOK, resp)
}

// errEnded is a completion whose job context ended midway.
var errEnded = errors.New("job ended")

// completeOne produces choice i: prompt log-probabilities when echo asks
// for them, then the generated tokens, streamed as chunks when sse is set.
func (s *Server) completeOne(ctx context.Context, e *engine, slot *Slot, c completionRequest, i int, prompt []int,
	base completionResponse, sse *sseWriter, total *usage) (completionChoice, error) {
	choice := completionChoice{Index: i}
	var lp *legacyLogprobs
	offset := 0 // characters of prompt+completion before the next token
	if c.logprobs >= 0 {
		lp = &legacyLogprobs{Tokens: []string{}, TokenLogprobs: []*float64{}, TopLogprobs: []map[string]float64{}, TextOffset: []int{}}
	}
	addToken := func(l *legacyLogprobs, id int, logprob *float64, top []generation.TokenLogProb) {
		piece, _ := e.tok.Decode([]int{id})
		l.Tokens = append(l.Tokens, piece)
		l.TokenLogprobs = append(l.TokenLogprobs, logprob)
		l.TextOffset = append(l.TextOffset, offset)
		offset += utf8.RuneCountInString(piece)
		if logprob == nil {
			l.TopLogprobs = append(l.TopLogprobs, nil)
			return
		}
		m := map[string]float64{}
		for _, t := range top {
			text, _ := e.tok.Decode([]int{t.ID})
			if _, dup := m[text]; !dup {
				m[text] = t.LogProb
			}
		}
		// vLLM's convention: the chosen token is always listed.
		if _, ok := m[piece]; !ok {
			m[piece] = *logprob
		}
		l.TopLogprobs = append(l.TopLogprobs, m)
	}
	top := max(c.logprobs, 1) // so the argmax is always in top_logprobs

	total.PromptTokens += len(prompt)
	if c.echo {
		choice.Text = c.texts[i]
		if lp != nil {
			scores, err := generation.PromptLogProbs(ctx, slot.Decoder(e), prompt, top)
			if err != nil {
				if ctx.Err() != nil {
					return choice, errEnded
				}
				return choice, err
			}
			addToken(lp, prompt[0], nil, nil)
			for j, sc := range scores {
				v := sc.LogProb
				addToken(lp, prompt[j+1], &v, sc.TopLogProbs)
			}
		}
		if sse != nil {
			if err := sse.data(chunk(base, i, choice.Text, lp, nil)); err != nil {
				return choice, err
			}
		}
	} else {
		offset = utf8.RuneCountInString(c.texts[i])
	}
	if c.maxTokens[i] == 0 {
		reason := "length"
		choice.FinishReason = &reason
		choice.Logprobs = lp
		if sse != nil {
			return choice, sse.data(chunk(base, i, "", nil, &reason))
		}
		return choice, nil
	}
	req := generation.Request{Prompt: prompt, MaxTokens: c.maxTokens[i], Params: c.settings.Params,
		Seed: c.settings.Seed, Stop: c.settings.Stop, LogProbs: lp != nil, TopLogProbs: top}
	res, err := s.generate(ctx, e, slot, req, func(t generation.Token) error {
		var piece *legacyLogprobs
		if lp != nil {
			v := t.LogProb
			if sse != nil {
				piece = &legacyLogprobs{}
				saved := offset
				addToken(piece, t.ID, &v, t.TopLogProbs)
				offset = saved
			}
			addToken(lp, t.ID, &v, t.TopLogProbs)
		}
		if sse != nil {
			return sse.data(chunk(base, i, t.Text, piece, nil))
		}
		return nil
	})
	if err != nil {
		return choice, err
	}
	if res.StopReason == generation.StopCancelled {
		return choice, errEnded
	}
	total.CompletionTokens += len(res.Tokens)
	reason := finishReason(res.StopReason)
	choice.Text += res.Text
	choice.FinishReason = &reason
	choice.Logprobs = lp
	if sse != nil {
		return choice, sse.data(chunk(base, i, "", nil, &reason))
	}
	return choice, nil
}

// chunk is one streamed piece of choice i.
func chunk(base completionResponse, i int, text string, lp *legacyLogprobs, reason *string) completionResponse {
	base.Choices = []completionChoice{{Index: i, Text: text, Logprobs: lp, FinishReason: reason}}
	return base
}

func (s *Server) handleModels(w http.ResponseWriter, r *http.Request) {
	data := []map[string]any{}
	if e := s.engine.Load(); e != nil {
		data = append(data, map[string]any{"id": e.name, "object": "model", "created": s.started.Unix(),
			"owned_by": "llorch", "max_model_len": e.m.Config.NPositions})
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data})
}

// handleTokenize encodes as the generating routes do (ordinary text);
// "special": true encodes "<|endoftext|>" as the control token, as
// /loglikelihood does.
func (s *Server) handleTokenize(w http.ResponseWriter, r *http.Request) {
	e, f, ok := s.beginRequest(w, r, familyOpenAI)
	if !ok {
		return
	}
	prompt, _ := f.str("prompt", true)
	special, _ := f.boolean("special")
	if len(f.errs) > 0 {
		writeFieldErrors(w, familyOpenAI, f.errs)
		return
	}
	tokens := e.tok.Encode(prompt)
	if special {
		tokens = e.tok.EncodeSpecial(prompt)
	}
	writeJSON(w, http.StatusOK, map[string]any{"tokens": tokens, "count": len(tokens), "max_model_len": e.m.Config.NPositions})
}

func (s *Server) handleDetokenize(w http.ResponseWriter, r *http.Request) {
	e, f, ok := s.beginRequest(w, r, familyOpenAI)
	if !ok {
		return
	}
	var ids []int
	if !f.decode("tokens", "a list of token ids", &ids) && !f.present("tokens") {
		f.bad("tokens", "required", "is required", nil)
	}
	for i, id := range ids {
		if id < 0 || id >= e.m.Config.VocabSize {
			f.bad(fmt.Sprintf("tokens[%d]", i), "vocabulary", fmt.Sprintf("token id must be 0..%d", e.m.Config.VocabSize-1), id)
		}
	}
	if len(f.errs) > 0 {
		writeFieldErrors(w, familyOpenAI, f.errs)
		return
	}
	text, err := e.tok.Decode(ids)
	if err != nil {
		writeError(w, http.StatusBadRequest, codeInvalidRequest, err.Error(), "tokens")
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"prompt": text})
}
