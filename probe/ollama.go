package probe

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"unicode/utf8"

	"github.com/llorch/llorch-check/checkpoints"
	"github.com/llorch/llorch-check/tokenizer"
)

// Ollama (0.12 on; checked with 0.17.4) takes text prompts only, has no
// logit bias and lists at most 20 alternatives, so everything goes through
// /api/generate in raw mode: a prompt is the reference's tokens decoded
// to text, used only where the reference's tokenizer encodes that text
// back to the same tokens and the server's prompt_eval_count agrees. The
// answer names tokens by text and by "bytes", which are the token's text
// after invalid UTF-8 became U+FFFD, so ids are recovered through the
// same lossy key of every vocabulary entry, where it is unique.

// ollamaMaxTop is the most alternatives Ollama lists.
const ollamaMaxTop = 20

type ollamaToken struct {
	Token   string   `json:"token"`
	LogProb *float64 `json:"logprob"`
	Bytes   []int    `json:"bytes"`
}

type ollamaLogprob struct {
	ollamaToken
	Top []ollamaToken `json:"top_logprobs"`
}

// ollamaAnswer is /api/generate's answer, or one line of its stream.
type ollamaAnswer struct {
	Response        string          `json:"response"`
	Done            bool            `json:"done"`
	DoneReason      string          `json:"done_reason"`
	PromptEvalCount *int            `json:"prompt_eval_count"`
	Logprobs        []ollamaLogprob `json:"logprobs"`
	Error           string          `json:"error"`
}

// errTextPrompt marks token sequences a text prompt cannot carry (an API
// limit); errTokenCount a server that tokenized a text otherwise than the
// reference (a failure).
// errEndOfText marks an answer whose generated token gave no text (the
// end of text, or bytes of a character not yet complete): Ollama reports
// log-probabilities with text pieces, so none for it (an API limit).
var (
	errTextPrompt = errors.New("not representable as a text prompt")
	errTokenCount = errors.New("tokenized otherwise")
	errEndOfText  = errors.New("the greedy token gave no text (end of text, or part of a character), and Ollama reports log-probabilities with text only")
)

type ollamaEngine struct {
	p     *prober
	tok   *tokenizer.Tokenizer
	model string
	byKey map[string]int // lossy text of a token -> id; -1 where several share it
	mu    sync.Mutex
	last  string
}

func newOllamaEngine(p *prober) (*ollamaEngine, error) {
	if p.opt.Tokenizer == nil {
		return nil, fmt.Errorf("--api ollama takes text prompts: it needs the model's tokenizer (--model)")
	}
	e := &ollamaEngine{p: p, tok: p.opt.Tokenizer, model: p.opt.Model, byKey: map[string]int{}}
	for id := range e.tok.VocabSize() {
		b, err := e.tok.TokenBytes(id) // as the token reads in a generation: "▁naam" is " naam"
		if err != nil || len(b) == 0 {
			continue
		}
		k := lossyKey(b)
		if _, dup := e.byKey[k]; dup {
			e.byKey[k] = -1
		} else {
			e.byKey[k] = id
		}
	}
	return e, nil
}

// lossyKey is b with every byte that is not part of valid UTF-8 replaced
// by U+FFFD, as Ollama (Go's string conversion of C strings) reports it.
func lossyKey(b []byte) string {
	out := make([]byte, 0, len(b))
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if r == utf8.RuneError && n == 1 {
			out = utf8.AppendRune(out, utf8.RuneError)
		} else {
			out = append(out, b[:n]...)
		}
		b = b[n:]
	}
	return string(out)
}

// id maps a reported token to its id, byText when no single token has
// that lossy text.
func (e *ollamaEngine) id(t ollamaToken) int {
	key := t.Token
	if len(t.Bytes) > 0 {
		b := make([]byte, len(t.Bytes))
		for i, v := range t.Bytes {
			b[i] = byte(v)
		}
		key = string(b)
	}
	if id, ok := e.byKey[key]; ok && id >= 0 {
		return id
	}
	return byText
}

func (e *ollamaEngine) exposes() exposure {
	return exposure{target: "Ollama has no logit bias: a forced token's log-probability is known only where it is among the top 20"}
}

func (e *ollamaEngine) lastRequest() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.last
}

// text is the prompt text for tokens, when the reference's tokenizer
// encodes it back to exactly those tokens. A leading BOS the model's
// tokenizer adds to every prompt (the Llama family's <s>) is left to the
// server, which adds it as it encodes the text; prompt_eval_count still
// counts it.
func (e *ollamaEngine) text(tokens []int) (string, error) {
	if bos, add := e.tok.BOS(); add && len(tokens) > 0 && tokens[0] == bos {
		tokens = tokens[1:]
		if len(tokens) == 0 {
			return "", fmt.Errorf("%w: a prompt of only the BOS token is an empty text, which Ollama does not evaluate", errTextPrompt)
		}
	}
	s, err := e.tok.Decode(tokens)
	if err != nil {
		return "", err
	}
	if !slices.Equal(e.tok.EncodeSpecial(s), tokens) {
		return "", fmt.Errorf("%w: the %d tokens decode to a text (ending %q) that the reference's tokenizer encodes otherwise", errTextPrompt, len(tokens), tail(s, 24))
	}
	return s, nil
}

func (e *ollamaEngine) call(ctx context.Context, prompt []int, n, top int, stream bool) (ollamaAnswer, error) {
	text, err := e.text(prompt)
	if err != nil {
		return ollamaAnswer{}, err
	}
	body := map[string]any{"model": e.model, "prompt": text, "raw": true, "stream": stream,
		"options": map[string]any{"num_predict": n, "temperature": 0, "seed": 0, "repeat_penalty": 1, "presence_penalty": 0, "frequency_penalty": 0}}
	if top > 0 {
		body["logprobs"], body["top_logprobs"] = true, min(top, ollamaMaxTop)
	}
	b, _ := json.Marshal(body)
	e.mu.Lock()
	e.last = "POST /api/generate " + string(b)
	e.mu.Unlock()
	var a ollamaAnswer
	if !stream {
		err = e.p.c.call(ctx, "/api/generate", body, &a)
	} else {
		err = e.p.c.ndjson(ctx, "/api/generate", body, func(line []byte) (bool, error) {
			var c ollamaAnswer
			if err := json.Unmarshal(line, &c); err != nil {
				return false, fmt.Errorf("%w: a line of /api/generate's stream is not its JSON: %v", ErrServer, err)
			}
			if c.Error != "" {
				return false, fmt.Errorf("%w: /api/generate's stream ended with error %q", ErrServer, c.Error)
			}
			a.Response += c.Response
			a.Logprobs = append(a.Logprobs, c.Logprobs...)
			if c.Done {
				a.Done, a.PromptEvalCount, a.DoneReason = true, c.PromptEvalCount, c.DoneReason
			}
			return c.Done, nil
		})
	}
	if err != nil {
		return ollamaAnswer{}, err
	}
	switch {
	case !a.Done:
		return ollamaAnswer{}, fmt.Errorf("%w: /api/generate answered without done", ErrServer)
	case a.PromptEvalCount == nil || *a.PromptEvalCount != len(prompt):
		return ollamaAnswer{}, fmt.Errorf("%w: the server counted %s prompt tokens for %q, which the reference encodes as %d", errTokenCount, intOrNone(a.PromptEvalCount), text, len(prompt))
	case top > 0 && len(a.Logprobs) == 0 && a.Response == "":
		return ollamaAnswer{}, errEndOfText
	case top > 0 && len(a.Logprobs) == 0:
		return ollamaAnswer{}, fmt.Errorf("%w: /api/generate answered without logprobs (Ollama before 0.12?)", ErrServer)
	}
	return a, nil
}

// tail is the last n runes of s.
func tail(s string, n int) string {
	r := []rune(s)
	return string(r[max(0, len(r)-n):])
}

// steps reads each generated token's id, log-probability and
// alternatives; ids is nil when one cannot be mapped.
func (e *ollamaEngine) steps(a ollamaAnswer) ([]int, []float64, [][]alt, error) {
	var ids []int
	var lps []float64
	var alts [][]alt
	for i, lp := range a.Logprobs {
		if lp.LogProb == nil {
			return nil, nil, nil, fmt.Errorf("%w: logprobs[%d] has no logprob", ErrServer, i)
		}
		ids = append(ids, e.id(lp.ollamaToken))
		lps = append(lps, *lp.LogProb)
		var as []alt
		for j, t := range lp.Top {
			if t.LogProb == nil {
				return nil, nil, nil, fmt.Errorf("%w: logprobs[%d].top_logprobs[%d] has no logprob", ErrServer, i, j)
			}
			as = append(as, alt{ID: e.id(t), LogProb: *t.LogProb})
		}
		alts = append(alts, as)
	}
	if slices.Contains(ids, byText) {
		ids = nil
	}
	return ids, lps, alts, nil
}

func (e *ollamaEngine) generate(ctx context.Context, req genRequest) (genAnswer, error) {
	a, err := e.call(ctx, req.prompt, req.n, req.top, req.stream)
	if err != nil {
		return genAnswer{}, err
	}
	g := genAnswer{text: a.Response}
	if req.top == 0 {
		return g, nil
	}
	g.ids, g.lps, g.alts, err = e.steps(a)
	if g.ids == nil {
		g.lps, g.alts = nil, nil
	}
	return g, err
}

// force asks each prefix for one greedy token; the next token's
// log-probability is known where it is listed (or is the greedy one).
func (e *ollamaEngine) force(ctx context.Context, tokens []int, from, top int) ([]forced, error) {
	var out []forced
	for j := from; j < len(tokens)-1; j++ {
		a, err := e.call(ctx, tokens[:j+1], 1, max(top, 1), false)
		if errors.Is(err, errTextPrompt) || errors.Is(err, errTokenCount) || errors.Is(err, errEndOfText) {
			out = append(out, forced{lp: math.NaN(), skip: err.Error()})
			continue
		}
		if err != nil {
			return nil, err
		}
		ids, lps, alts, err := e.steps(a)
		if err != nil {
			return nil, err
		}
		if len(lps) != 1 {
			return nil, fmt.Errorf("%w: /api/generate with num_predict 1 listed %d logprobs", ErrServer, len(lps))
		}
		f := forced{lp: altLogProb(alts[0], tokens[j+1]), alts: alts[0]}
		if ids != nil && ids[0] == tokens[j+1] {
			f.lp = lps[0]
		}
		out = append(out, f)
	}
	return out, nil
}

// runOllama checks, through /api/generate in raw mode: the log-probability
// of the first greedy token and of each prompt token the server lists
// among its alternatives (9), the greedy ids and text (10, 12) and the
// alternatives at the rows the set keeps and at the first generated token
// (11).
func runOllama(ctx context.Context, p *prober) ([]checkpoints.Result, error) {
	e, err := newOllamaEngine(p)
	if err != nil {
		return nil, err
	}
	if e.model == "" {
		var tags struct {
			Models []struct {
				Name string `json:"name"`
			} `json:"models"`
		}
		if err := p.c.call(ctx, "/api/tags", nil, &tags); err != nil {
			return nil, err
		}
		if len(tags.Models) == 0 {
			return nil, fmt.Errorf("%w: /api/tags lists no model", ErrServer)
		}
		e.model = tags.Models[0].Name
		p.opt.Model = e.model
	}
	p.engine = e
	p.limits = append(p.limits,
		checkpoints.Limit{Check: "tokenization", Why: "Ollama has no tokenize route and takes text prompts: each prompt is the reference's tokens as text, checked by the server's prompt_eval_count"},
		checkpoints.Limit{Check: "log-likelihood pairs", Why: "Ollama has no logit bias and lists at most 20 alternatives: a continuation token's log-probability is unknown unless listed"})
	var n ollamaCounts
	out, err := p.collect(ctx, func(ctx context.Context, rc *refCase) ([]checkpoints.Result, error) {
		return p.ollamaCase(ctx, e, rc, &n)
	}, nil)
	listed, rows := n.listed, n.rows
	if n.textSkipped > 0 {
		p.limits = append(p.limits, checkpoints.Limit{Check: "text prompts",
			Why: fmt.Sprintf("%d prompts are token sequences whose text the reference's tokenizer encodes otherwise; they were not sent", n.textSkipped)})
	}
	if n.endOfText > 0 {
		p.limits = append(p.limits, checkpoints.Limit{Check: "prompt rows",
			Why: fmt.Sprintf("at %d kept rows %s", n.endOfText, errEndOfText)})
	}
	if rows > listed {
		p.limits = append(p.limits, checkpoints.Limit{Check: "prompt log-probabilities",
			Why: fmt.Sprintf("the next prompt token was among the server's top %d at %d of %d kept rows; only those are compared", min(p.opt.TopK, ollamaMaxTop), listed, rows)})
	}
	return out, err
}

// ollamaCounts tally what the API let the cases compare.
type ollamaCounts struct{ listed, rows, textSkipped, endOfText int }

func (p *prober) ollamaCase(ctx context.Context, e *ollamaEngine, rc *refCase, n *ollamaCounts) ([]checkpoints.Result, error) {
	var out []checkpoints.Result
	var dists []topDist
	if len(rc.Rows) > 0 {
		v := checkpoints.Values{Axes: []string{"position"}}
		byToken := make([][]alt, len(rc.Tokens))
		for i, pos := range rc.Rows {
			a, err := e.call(ctx, rc.Tokens[:pos+1], 1, p.opt.TopK, false)
			switch {
			case errors.Is(err, errTextPrompt):
				n.textSkipped++
				continue
			case errors.Is(err, errEndOfText):
				n.endOfText++
				continue
			case errors.Is(err, errTokenCount):
				out = append(out, checkpoints.Failed(12, "tokenize", rc.ID, "position %d: %v", pos, err))
				continue
			case err != nil:
				return nil, err
			}
			_, _, alts, err := e.steps(a)
			if err != nil {
				return nil, err
			}
			if len(alts) != 1 {
				return nil, fmt.Errorf("%w: /api/generate with num_predict 1 listed %d logprobs", ErrServer, len(alts))
			}
			n.rows++
			byToken[pos+1] = alts[0]
			lp := altLogProb(alts[0], rc.Tokens[pos+1])
			if math.IsNaN(lp) {
				continue
			}
			n.listed++
			next := rc.Tokens[pos+1]
			v.Rows, v.Got, v.Want = append(v.Rows, pos), append(v.Got, lp), append(v.Want, float32(rc.RowLP[i][next]))
			if rc.RowTruth != nil {
				v.Truth = append(v.Truth, rc.RowTruth[i][next])
			}
		}
		if len(v.Got) > 0 {
			out = append(out, checkpoints.CompareValues(9, "prompt_logprobs", rc.ID, v, checkpoints.Tolerance{}))
		}
		for _, d := range promptTops(rc, byToken) {
			if d.alts != nil {
				dists = append(dists, d)
			}
		}
	}
	if rc.Gen != nil {
		g, err := e.generate(ctx, genRequest{prompt: rc.Tokens, n: rc.GenN, top: p.opt.TopK})
		switch {
		case errors.Is(err, errTextPrompt) || errors.Is(err, errEndOfText):
			p.limits = append(p.limits, checkpoints.Limit{Check: "case " + rc.ID + " generation", Why: err.Error()})
			return out, nil
		case errors.Is(err, errTokenCount):
			return append(out, checkpoints.Failed(12, "tokenize", rc.ID, "%v", err)), nil
		case err != nil:
			return nil, err
		}
		if g.ids == nil {
			out = append(out, checkpoints.Failed(12, "generation", rc.ID, "a generated token's text matches no single vocabulary entry: %q", g.text))
		} else {
			out = append(out, greedyIDResults(rc, g.ids, g.alts)...)
			if rc.LastLP != nil && len(g.lps) > 0 {
				v := checkpoints.Values{Got: g.lps[:1], Want: []float32{rc.LastLP[g.ids[0]]}, Axes: []string{"step"}}
				if rc.LastTruth != nil {
					v.Truth = []float64{rc.LastTruth[g.ids[0]]}
				}
				out = append(out, checkpoints.CompareValues(9, "greedy_logprob", rc.ID, v, checkpoints.Tolerance{}))
			}
		}
		out, dists = generationTail(rc, g, out, dists)
	}
	if len(dists) > 0 {
		out = append(out, topResult(rc.ID, min(p.opt.TopK, ollamaMaxTop), dists))
	}
	return out, nil
}
