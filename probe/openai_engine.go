package probe

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
)

// openAIEngine answers the generic checks through /v1/completions with
// token-id prompts, asking for vLLM's return_tokens_as_token_ids so that
// tokens and alternatives come back as ids (vLLM, llorch-check serve). A
// server that names tokens by text gives text only.
type openAIEngine struct {
	p    *prober
	mu   sync.Mutex
	last string
	// echoZero: echo with max_tokens 0, which a server took after refusing
	// max_tokens 1 (a prompt that fills the context leaves no room for one
	// more token).
	echoZero bool
	// textOnly: the server refused return_tokens_as_token_ids (a strict
	// OpenAI server), so tokens come back as text.
	textOnly bool
}

// legacyLogprobs is OpenAI's legacy logprobs object.
type legacyLogprobs struct {
	Tokens        []string             `json:"tokens"`
	TokenLogprobs []*float64           `json:"token_logprobs"`
	TopLogprobs   []map[string]float64 `json:"top_logprobs"`
}

type legacyChoice struct {
	Text     string          `json:"text"`
	Logprobs *legacyLogprobs `json:"logprobs"`
}

func (e *openAIEngine) body(prompt []int, n, top int) map[string]any {
	b := map[string]any{"prompt": prompt, "max_tokens": n, "temperature": 0}
	if top > 0 {
		b["logprobs"] = top
		if !e.isTextOnly() {
			b["return_tokens_as_token_ids"] = true
		}
	}
	if e.p.opt.Model != "" {
		b["model"] = e.p.opt.Model
	}
	return b
}

func (e *openAIEngine) isTextOnly() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.textOnly
}

// withTokenIDs sends a request built by build; a server that refuses it
// while it asks for vLLM's return_tokens_as_token_ids is asked once more
// without, and from then on never with it.
func (e *openAIEngine) withTokenIDs(send func() error, asked bool) error {
	err := send()
	if asked && refused(err) && !e.isTextOnly() {
		e.mu.Lock()
		e.textOnly = true
		e.mu.Unlock()
		err = send()
	}
	return err
}

func (e *openAIEngine) note(body map[string]any) {
	b, _ := json.Marshal(body)
	e.mu.Lock()
	e.last = "POST /v1/completions " + string(b)
	e.mu.Unlock()
}

func (e *openAIEngine) lastRequest() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.last
}

func (e *openAIEngine) exposes() exposure { return exposure{} }

func (e *openAIEngine) generate(ctx context.Context, req genRequest) (genAnswer, error) {
	var choices []legacyChoice
	err := e.withTokenIDs(func() (err error) {
		choices, err = e.generateOnce(ctx, req)
		return err
	}, req.top > 0)
	if err != nil {
		return genAnswer{}, err
	}
	return legacyAnswer(choices, req.top > 0)
}

func (e *openAIEngine) generateOnce(ctx context.Context, req genRequest) ([]legacyChoice, error) {
	body := e.body(req.prompt, req.n, req.top)
	var choices []legacyChoice
	if req.stream {
		body["stream"] = true
		e.note(body)
		err := e.p.c.sse(ctx, "/v1/completions", body, func(_ string, data []byte) (bool, error) {
			if string(data) == "[DONE]" {
				return true, nil
			}
			var c completion
			if err := json.Unmarshal(data, &c); err != nil {
				return false, fmt.Errorf("%w: a /v1/completions stream event is not its JSON: %v", ErrServer, err)
			}
			choices = append(choices, c.Choices...)
			return false, nil
		})
		return choices, err
	}
	e.note(body)
	var c completion
	if err := e.p.c.call(ctx, "/v1/completions", body, &c); err != nil {
		return nil, err
	}
	if len(c.Choices) != 1 {
		return nil, fmt.Errorf("%w: %d choices in the answer, want 1", ErrServer, len(c.Choices))
	}
	return c.Choices, nil
}

// legacyAnswer joins one answer's choices (a stream's chunks) into a
// generation.
func legacyAnswer(choices []legacyChoice, withLogprobs bool) (genAnswer, error) {
	var a genAnswer
	named := true
	for _, c := range choices {
		a.text += c.Text
		lp := c.Logprobs
		if lp == nil {
			continue
		}
		if len(lp.TokenLogprobs) != len(lp.Tokens) {
			return genAnswer{}, fmt.Errorf("%w: logprobs lists %d tokens and %d token_logprobs", ErrServer, len(lp.Tokens), len(lp.TokenLogprobs))
		}
		for i, tok := range lp.Tokens {
			id, ok := tokenID(tok)
			named = named && ok
			a.ids = append(a.ids, id)
			if lp.TokenLogprobs[i] == nil {
				return genAnswer{}, fmt.Errorf("%w: generated token %d has no log-probability", ErrServer, len(a.lps))
			}
			a.lps = append(a.lps, *lp.TokenLogprobs[i])
			var tops map[string]float64
			if i < len(lp.TopLogprobs) {
				tops = lp.TopLogprobs[i]
			}
			a.alts = append(a.alts, namedAlts(tops))
		}
	}
	if !named {
		a.ids = nil
	}
	if !withLogprobs {
		a.ids, a.lps, a.alts = nil, nil, nil
	}
	return a, nil
}

// tokenID reads vLLM's "token_id:N".
func tokenID(s string) (int, bool) {
	v, ok := strings.CutPrefix(s, "token_id:")
	if !ok {
		return 0, false
	}
	id, err := strconv.Atoi(v)
	return id, err == nil && id >= 0
}

// namedAlts turns top_logprobs into alternatives, by id where the keys
// are token_id:N, else by text.
func namedAlts(tops map[string]float64) []alt {
	var out []alt
	for k, lp := range tops {
		id, ok := tokenID(k)
		if !ok {
			id = byText
		}
		out = append(out, alt{ID: id, LogProb: lp})
	}
	return out
}

// force echoes the tokens with log-probabilities: one request scores them all.
func (e *openAIEngine) force(ctx context.Context, tokens []int, from, top int) ([]forced, error) {
	var c completion
	echo := func(n int) error {
		body := e.body(tokens, n, top)
		body["echo"] = true
		e.note(body)
		return e.p.c.call(ctx, "/v1/completions", body, &c)
	}
	// max_tokens 1, as lm-evaluation-harness asks: vLLM refuses 0.
	err := e.withTokenIDs(func() error {
		err := errors.New("not asked")
		if !e.echoZero {
			err = echo(1)
		}
		if e.echoZero || refused(err) {
			if err = echo(0); err == nil {
				e.echoZero = true
			}
		}
		return err
	}, top > 0)
	if err != nil {
		return nil, err
	}
	if len(c.Choices) != 1 || c.Choices[0].Logprobs == nil {
		return nil, fmt.Errorf("%w: no choice with logprobs in the echo answer", ErrServer)
	}
	lp := c.Choices[0].Logprobs
	if n := len(lp.TokenLogprobs); n < len(tokens) {
		return nil, fmt.Errorf("%w: %d token log-probabilities for an echoed prompt of %d tokens", ErrServer, n, len(tokens))
	}
	out := make([]forced, 0, len(tokens)-1-from)
	for j := from; j < len(tokens)-1; j++ {
		f := forced{lp: math.NaN()}
		if v := lp.TokenLogprobs[j+1]; v != nil {
			f.lp = *v
		}
		if j+1 < len(lp.TopLogprobs) {
			f.alts = namedAlts(lp.TopLogprobs[j+1])
		}
		out = append(out, f)
	}
	return out, nil
}
