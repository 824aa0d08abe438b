package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"
	"unicode/utf8"

	"github.com/llorch/llorch-check/generation"
)

// openAIJob is a parsed generating request of /v1/completions or
// /v1/chat/completions: n choices per prompt, shared settings.
type openAIJob struct {
	reqs     []generation.Request // one per choice
	texts    []string             // the prompts' text (decoded when given as ids)
	settings generation.Request   // what every choice shares
	stream   bool
	usage    bool // stream_options.include_usage
	echo     bool // the prompt is part of the choice (completions only)
	fromText bool // the prompts were text, encoded after the BOS (not ids)
	tokenIDs bool // logprobs name tokens "token_id:N" (vLLM's return_tokens_as_token_ids)
	logprobs bool
	top      int // alternatives per token when logprobs
	n        int // choices per prompt
}

// parseOpenAI reads what both generating OpenAI routes share: model, the
// sampling settings, n, stream and stream_options; the route's known
// fields are read by it, its unused ones accepted (extraFields), the rest
// are a 400 naming them unless --lenient.
func (s *Server) parseOpenAI(e *engine, f *fields, d settingDefaults, known []string, unused []unusedField) openAIJob {
	var j openAIJob
	f.model(e)
	j.settings = f.settings(d, e.m.Config.VocabSize)
	j.n = 1
	if v, ok := f.integer("n"); ok {
		if v < 1 || v > int64(s.cfg.MaxBatch) {
			f.bad("n", "range", fmt.Sprintf("must be 1..%d (--max-batch)", s.cfg.MaxBatch), v)
		} else {
			j.n = int(v)
		}
	}
	s.extraFields(f, known, unused)
	j.stream, _ = f.boolean("stream")
	if f.present("stream_options") {
		var opt struct {
			IncludeUsage bool `json:"include_usage"`
		}
		switch {
		case json.Unmarshal(f.raw["stream_options"], &opt) != nil:
			f.bad("stream_options", "type", `must be an object like {"include_usage": true}`, nil)
		case !j.stream:
			f.bad("stream_options", "requires", "needs stream: true (as OpenAI and vLLM refuse it otherwise)", nil)
		}
		j.usage = opt.IncludeUsage
	}
	return j
}

// model checks the optional model field against the served model.
func (f *fields) model(e *engine) {
	if name, ok := f.str("model", false); ok && name != "" && name != e.name {
		f.bad("model", "exists", fmt.Sprintf("model %q is not served here; this worker serves %q", name, e.name), name)
	}
}

// requests makes each prompt's request (see fields.requests), its errors
// under name, indexed when there are several prompts.
func (j *openAIJob) requests(f *fields, e *engine, name string, prompts [][]int) {
	tmpl := j.settings
	tmpl.LogProbs, tmpl.TopLogProbs = j.logprobs, j.top
	j.reqs = f.requests(e, tmpl, prompts, promptNames(name, len(prompts) == 1))
	if j.n <= 1 || len(j.reqs) == 0 {
		return
	}
	// n choices a prompt, in prompt order as OpenAI lists them. They run
	// one after another in the job's slot, so each after the first starts
	// from the prompt's blocks in the prefix cache. A request's seed gives
	// choice k seed+k, so the choices differ and are reproducible.
	reqs, texts := make([]generation.Request, 0, len(j.reqs)*j.n), make([]string, 0, len(j.texts)*j.n)
	for p, r := range j.reqs {
		for k := range j.n {
			c := r
			if r.Seed != nil {
				seed := *r.Seed + uint64(k)
				c.Seed = &seed
			}
			reqs = append(reqs, c)
			if p < len(j.texts) {
				texts = append(texts, j.texts[p])
			}
		}
	}
	j.reqs, j.texts = reqs, texts
}

// writeOpenAIErrors answers a request with fields at fault; a model
// that is not served is OpenAI's 404.
func writeOpenAIErrors(w http.ResponseWriter, errs []FieldError) {
	switch errs[0].Constraint {
	case "exists":
		writeError(w, http.StatusNotFound, "model_not_found", errs[0].Message, "model")
		return
	case "not_found": // a stored response or item the store does not hold
		writeError(w, http.StatusNotFound, "not_found", errs[0].Message, errs[0].Field)
		return
	}
	writeFieldErrors(w, familyOpenAI, errs)
}

// scoredToken is a token with its log-probability (nil for the first
// prompt position) and its most probable alternatives, each rendered as
// the text it adds to the choice's text (tokenText).
type scoredToken struct {
	id        int
	logprob   *float64
	top       []generation.TokenLogProb
	piece     piece   // what the token adds to the text
	offset    int     // characters of the choice's text before it
	end       int     // and with it (offset: it completes no character)
	topPieces []piece // what each alternative would add in its place
}

// choiceResult is one finished choice as the runner produced it; text and
// tokens include the echoed prompt when the job echoes.
type choiceResult struct {
	text   string
	tokens []scoredToken
	reason string // OpenAI's finish_reason
}

// openAIShape is a route's wire format: the runner calls chunk for each
// streamed piece of choice i (reason set on the last), then either
// usageChunk (streams with include_usage) or response (no stream).
type openAIShape interface {
	chunk(i int, text string, tokens []scoredToken, reason string) any
	usageChunk(u usage) any
	response(choices []choiceResult, u usage) any
}

// openAIBase is the head every OpenAI answer and chunk carries.
type openAIBase struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	Model   string `json:"model"`
}

// openAIResponse is an answer or a chunk of a route whose choices are C.
type openAIResponse[C any] struct {
	openAIBase
	Choices []C    `json:"choices"`
	Usage   *usage `json:"usage,omitempty"`
}

// usageOnly is a stream's include_usage chunk of C choices: none, and the
// usage.
func usageOnly[C any](base openAIBase, u usage) any {
	return openAIResponse[C]{openAIBase: base, Choices: []C{}, Usage: &u}
}

// answer is the response without stream: choice i made by choice, and the
// usage.
func answer[C any](base openAIBase, choices []choiceResult, u usage, choice func(i int, ch choiceResult) C) any {
	out := openAIResponse[C]{openAIBase: base, Usage: &u}
	for i, ch := range choices {
		out.Choices = append(out.Choices, choice(i, ch))
	}
	return out
}

func newOpenAIBase(r *http.Request, e *engine, idPrefix string) openAIBase {
	return openAIBase{ID: idPrefix + requestID(r.Context()), Created: time.Now().Unix(), Model: e.name}
}

func finishReason(stop string) string {
	if stop == generation.StopMaxTokens {
		return "length"
	}
	return "stop"
}

// runOpenAI runs job's choices one after another in one slot and writes
// them through shape, as a stream or as one answer.
func (s *Server) runOpenAI(w http.ResponseWriter, r *http.Request, e *engine, job openAIJob, shape openAIShape) {
	var sk sink = jsonAnswer{}
	var st *openAIStream
	if job.stream {
		st = &openAIStream{stream{timeout: s.cfg.WriteTimeout}}
		sk = st
	}
	s.runJob(w, r, "", sk, func(ctx context.Context, slot *Slot) error {
		var sse *sseWriter
		if st != nil {
			sse = st.open(w)
		}
		var total usage
		var choices []choiceResult
		for i := range job.reqs {
			var emit emitFunc
			if sse != nil {
				emit = func(text string, tokens []scoredToken, reason string) error {
					return sse.data(shape.chunk(i, text, tokens, reason))
				}
			}
			ch, err := s.runChoice(ctx, e, slot, job, i, emit, &total)
			if err != nil {
				return err
			}
			choices = append(choices, ch)
		}
		total.TotalTokens = total.PromptTokens + total.CompletionTokens
		if sse == nil {
			writeJSON(w, http.StatusOK, shape.response(choices, total))
			return nil
		}
		if job.usage {
			_ = sse.data(shape.usageChunk(total))
		}
		_ = sse.write("data: [DONE]\n\n")
		return nil
	})
}

// emitFunc streams a piece of a choice: its text and scored tokens, or
// with reason set its end.
type emitFunc func(text string, tokens []scoredToken, reason string) error

// runChoice produces choice i: prompt log-probabilities when echo asks for
// them, then the generated tokens, each piece passed to emit when the
// answer is streamed (emit set).
func (s *Server) runChoice(ctx context.Context, e *engine, slot *Slot, job openAIJob, i int,
	emit emitFunc, total *usage) (choiceResult, error) {
	var ch choiceResult
	req := job.reqs[i]
	prompt := req.Prompt
	send := func(text string, tokens []scoredToken, reason string) error {
		if emit == nil {
			return nil
		}
		return emit(text, tokens, reason)
	}
	// A prompt counts once however many choices it has, as OpenAI and
	// vLLM count it; so do the tokens of it the prefix cache served.
	first := job.n <= 1 || i%job.n == 0
	if first {
		total.PromptTokens += len(prompt)
	}
	var render *tokenText
	if job.logprobs {
		render = newGeneratedText(e)
	}
	if job.echo {
		ch.text = job.texts[i]
		if job.logprobs {
			scores, err := generation.PromptLogProbs(ctx, slot.Decoder(e), prompt, job.top)
			if err != nil {
				return ch, err
			}
			ch.tokens = append(ch.tokens, scoredToken{id: prompt[0]})
			for j, sc := range scores {
				ch.tokens = append(ch.tokens, scoredToken{id: prompt[j+1], logprob: &sc.LogProb, top: sc.TopLogProbs})
			}
			render = renderPrompt(e, ch.tokens, ch.text, job.fromText)
		}
		if err := send(ch.text, ch.tokens, ""); err != nil {
			return ch, err
		}
	}
	cover := newCoverage(utf8.RuneCountInString(ch.text))
	res, err := s.generate(ctx, e, slot, req, func(t generation.Token) error {
		var tokens []scoredToken
		if job.logprobs {
			tokens = cover.add(render.add(t), t.Text)
			ch.tokens = append(ch.tokens, tokens...)
		}
		return send(t.Text, tokens, "")
	})
	if err != nil {
		return ch, err
	}
	total.CompletionTokens += len(res.Tokens)
	if first {
		total.addCached(e, res.CachedTokens)
	}
	ch.text += res.Text
	ch.reason = finishReason(res.StopReason)
	if rest := cover.finish(res.StopReason == generation.StopSequence); len(rest) > 0 {
		ch.tokens = append(ch.tokens, rest...)
		if err := send("", rest, ""); err != nil {
			return ch, err
		}
	}
	return ch, send("", nil, ch.reason)
}
