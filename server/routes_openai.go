package server

import (
	"fmt"
	"net/http"
	"slices"
	"unicode/utf8"

	"github.com/llorch/llorch-check/generation"
)

// openAIDefaults are OpenAI's: 16 tokens at temperature 1; 0 tokens is
// allowed, for echo scoring (prompt log-probabilities only).
var openAIDefaults = settingDefaults{maxTokens: 16, minMaxTokens: 0, temperature: 1.0}

// samplingFields are the parameters both generating OpenAI routes read:
// OpenAI's and the sampling extensions vLLM also takes.
var samplingFields = []string{"model", "max_tokens", "temperature", "top_p", "top_k", "min_p",
	"repetition_penalty", "presence_penalty", "frequency_penalty", "logit_bias", "seed", "stop", "n",
	"stream", "stream_options"}

// completionFields are those of /v1/completions.
// return_tokens_as_token_ids is vLLM's: tokens named "token_id:N", so a
// client gets ids where text would merge tokens that decode alike.
var completionFields = append(slices.Clip(samplingFields), "prompt", "best_of", "echo", "logprobs", "suffix", "return_tokens_as_token_ids",
	"response_format", "grammar", "json_schema")

// maxLogprobs bounds logprobs (OpenAI allows 5; lm-eval asks for 1..5).
const maxLogprobs = 20

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

// handleCompletions is OpenAI's legacy completions endpoint, enough for
// SDKs, benchmarkers and lm-evaluation-harness local-completions.
func (s *Server) handleCompletions(w http.ResponseWriter, r *http.Request, e *engine, f *fields) func() {
	job := s.parseOpenAI(e, f, openAIDefaults, completionFields, []unusedField{userField})
	texts, prompts := s.promptsField(e, f, "prompt")
	job.texts, job.fromText = texts, promptIsText(f.raw["prompt"])
	if v, ok := f.integer("best_of"); ok && v != 1 {
		f.bad("best_of", "range", "only best_of=1 is supported (one completion per prompt)", v)
	}
	f.unsupported("suffix", "is not supported: this server has no insertion (fill-in-the-middle) mode", `""`)
	job.echo, _ = f.boolean("echo")
	job.tokenIDs, _ = f.boolean("return_tokens_as_token_ids")
	job.settings.Grammar = f.constraint(e)
	if f.present("logprobs") {
		n := int(f.intIn("logprobs", 0, maxLogprobs, 0))
		job.logprobs, job.top = true, max(n, 1) // so the argmax is always listed
	}
	job.requests(f, e, "prompt", prompts)
	return func() {
		base := newOpenAIBase(r, e, "cmpl-")
		base.Object = "text_completion"
		s.runOpenAI(w, r, e, job, &completionShape{base: base, e: e, job: job})
	}
}

// completionShape writes the legacy text_completion form.
type completionShape struct {
	base openAIBase
	e    *engine
	job  openAIJob
}

// start is where choice i's text offsets begin: the prompt's start when
// it is echoed, else its end.
func (c *completionShape) start(i int) int {
	if c.job.echo {
		return 0
	}
	return utf8.RuneCountInString(c.job.texts[i])
}

// legacy lists choice i's tokens as OpenAI's legacy logprobs. Each token
// is the text it adds to the choice's text and its text_offset indexes
// that text (with the prompt before it). top_logprobs is keyed by text
// and, as vLLM does, always lists the chosen token.
func (c *completionShape) legacy(i int, tokens []scoredToken) *legacyLogprobs {
	l := &legacyLogprobs{Tokens: []string{}, TokenLogprobs: []*float64{}, TopLogprobs: []map[string]float64{}, TextOffset: []int{}}
	name := func(id int, p piece) string {
		if c.job.tokenIDs {
			return fmt.Sprintf("token_id:%d", id)
		}
		return p.text
	}
	for _, t := range tokens {
		chosen := name(t.id, t.piece)
		l.Tokens = append(l.Tokens, chosen)
		l.TokenLogprobs = append(l.TokenLogprobs, t.logprob)
		l.TextOffset = append(l.TextOffset, c.start(i)+t.offset)
		if t.logprob == nil {
			l.TopLogprobs = append(l.TopLogprobs, nil)
			continue
		}
		m := map[string]float64{}
		for k, a := range t.top {
			if key := name(a.ID, t.topPieces[k]); !hasKey(m, key) {
				m[key] = a.LogProb
			}
		}
		if _, ok := m[chosen]; !ok {
			m[chosen] = *t.logprob
		}
		l.TopLogprobs = append(l.TopLogprobs, m)
	}
	return l
}

func hasKey(m map[string]float64, k string) bool {
	_, ok := m[k]
	return ok
}

func (c *completionShape) chunk(i int, text string, tokens []scoredToken, reason string) any {
	ch := completionChoice{Index: i, Text: text}
	if reason != "" {
		ch.FinishReason = &reason
	} else if c.job.logprobs {
		ch.Logprobs = c.legacy(i, tokens)
	}
	return openAIResponse[completionChoice]{openAIBase: c.base, Choices: []completionChoice{ch}}
}

func (c *completionShape) usageChunk(u usage) any { return usageOnly[completionChoice](c.base, u) }

func (c *completionShape) response(choices []choiceResult, u usage) any {
	return answer(c.base, choices, u, func(i int, ch choiceResult) completionChoice {
		cc := completionChoice{Index: i, Text: ch.text, FinishReason: &ch.reason}
		if c.job.logprobs {
			cc.Logprobs = c.legacy(i, ch.tokens)
		}
		return cc
	})
}

func (s *Server) handleModels(w http.ResponseWriter, r *http.Request) {
	data := []modelInfo{}
	if e := s.engine.Load(); e != nil {
		data = append(data, s.modelInfo(e))
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data})
}

// handleModel is GET /v1/models/{id}: the served model, or OpenAI's 404.
func (s *Server) handleModel(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	e := s.engine.Load()
	if e == nil || id != e.name {
		writeError(w, http.StatusNotFound, "model_not_found", fmt.Sprintf("model %q is not served here", id), "model")
		return
	}
	writeJSON(w, http.StatusOK, s.modelInfo(e))
}

// modelInfo is OpenAI's model object plus what a client cannot guess: a
// GPT-2 base model, never trained to chat, whose chat route renders the
// messages with a plain template.
type modelInfo struct {
	ID           string `json:"id"`
	Object       string `json:"object"`
	Created      int64  `json:"created"`
	OwnedBy      string `json:"owned_by"`
	MaxModelLen  int    `json:"max_model_len"`
	Architecture string `json:"architecture"`
	VocabSize    int    `json:"vocab_size"`
	EmbeddingDim int    `json:"embedding_dimensions"`
	ChatTemplate string `json:"chat_template"`
	Description  string `json:"description"`
}

func (s *Server) modelInfo(e *engine) modelInfo {
	tmpl := e.chat.Name()
	desc := e.m.Config.ModelType + " model: /v1/chat/completions renders the messages with the chat template " + tmpl
	if e.chat == defaultChatTemplate {
		desc = "GPT-2 base model (not trained to chat): /v1/chat/completions renders the messages as plain \"role: content\" lines followed by \"assistant:\""
	}
	return modelInfo{ID: e.name, Object: "model", Created: s.started.Unix(), OwnedBy: "llorch-check",
		MaxModelLen: e.m.Config.NPositions, Architecture: e.m.Config.ModelType, VocabSize: e.m.Config.VocabSize,
		EmbeddingDim: e.m.Config.NEmbd, ChatTemplate: tmpl, Description: desc}
}

// handleTokenize encodes as the generating routes do (ordinary text);
// "special": true encodes "<|endoftext|>" as the control token, as
// /loglikelihood does.
func (s *Server) handleTokenize(w http.ResponseWriter, r *http.Request, e *engine, f *fields) func() {
	prompt, _ := f.str("prompt", true)
	special, _ := f.boolean("special")
	return func() {
		tokens := e.encode(prompt)
		if special {
			tokens = e.tok.EncodeSpecial(prompt)
		}
		writeJSON(w, http.StatusOK, map[string]any{"tokens": tokens, "count": len(tokens), "max_model_len": e.m.Config.NPositions})
	}
}

func (s *Server) handleDetokenize(w http.ResponseWriter, r *http.Request, e *engine, f *fields) func() {
	var ids []int
	if !f.decode("tokens", "a list of token ids", &ids) && !f.present("tokens") {
		f.bad("tokens", "required", "is required", nil)
	}
	for i, id := range ids {
		f.rule(generation.TokenRule(fmt.Sprintf("tokens[%d]", i), id, e.m.Config.VocabSize))
	}
	return func() {
		text, err := e.tok.Decode(ids)
		if err != nil {
			writeError(w, http.StatusBadRequest, codeInvalidRequest, err.Error(), "tokens")
			return
		}
		writeJSON(w, http.StatusOK, map[string]string{"prompt": text})
	}
}
