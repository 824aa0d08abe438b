package probe

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	"github.com/llorch/llorch-check/checkpoints"
	"github.com/llorch/llorch-check/references"
)

// llama.cpp's own server (llama-server, releases from early 2025 on)
// refuses echo on /v1/completions, so prompt log-probabilities come from
// teacher forcing on its native /completion: each prefix is asked for one
// token with n_probs alternatives, and logit_bias forces the sampled token
// to be the prompt's next one. The server reports the sampled token's
// log-probability from the context's raw logits (populate_token_probs,
// post_sampling_probs false), before the bias, so it is the teacher-forced
// value; its prompt cache makes each prefix cost one token. Ids come from
// the answer's id fields, never from text.

// forceBias is the logit bias that makes the next token the sampled one.
const forceBias = 1e4

// llamaProb is one entry of completion_probabilities.
type llamaProb struct {
	ID      *int     `json:"id"`
	LogProb *float64 `json:"logprob"`
	Top     []struct {
		ID      *int     `json:"id"`
		LogProb *float64 `json:"logprob"`
	} `json:"top_logprobs"`
}

// llamaCompletion is /completion's answer, or one event of its stream.
type llamaCompletion struct {
	Content string      `json:"content"`
	Tokens  []int       `json:"tokens"`
	Stop    bool        `json:"stop"`
	Probs   []llamaProb `json:"completion_probabilities"`
}

type llamaEngine struct {
	p    *prober
	mu   sync.Mutex
	last string
	// unforced counts forced requests whose sampled token was not the
	// forced one (a server that ignores logit_bias).
	unforced int
	// unaligned counts generations whose completion_probabilities left
	// tokens out (those ending inside a UTF-8 character).
	unaligned int
}

func (e *llamaEngine) exposes() exposure { return exposure{} }

func (e *llamaEngine) lastRequest() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.last
}

func (e *llamaEngine) completion(ctx context.Context, body map[string]any, stream bool) (llamaCompletion, error) {
	body["temperature"], body["cache_prompt"], body["return_tokens"] = 0, true, true
	b, _ := json.Marshal(body)
	e.mu.Lock()
	e.last = "POST /completion " + string(b)
	e.mu.Unlock()
	if !stream {
		var c llamaCompletion
		err := e.p.c.call(ctx, "/completion", body, &c)
		return c, err
	}
	body["stream"] = true
	var all llamaCompletion
	err := e.p.c.sse(ctx, "/completion", body, func(_ string, data []byte) (bool, error) {
		var c llamaCompletion
		if err := json.Unmarshal(data, &c); err != nil {
			return false, fmt.Errorf("%w: a /completion stream event is not its JSON: %v", ErrServer, err)
		}
		all.Content += c.Content
		all.Tokens = append(all.Tokens, c.Tokens...)
		all.Probs = append(all.Probs, c.Probs...)
		return c.Stop, nil
	})
	return all, err
}

// steps reads the ids, log-probabilities and alternatives of each
// generated token from completion_probabilities.
func (c llamaCompletion) steps() ([]int, []float64, [][]alt, error) {
	var ids []int
	var lps []float64
	var alts [][]alt
	for i, p := range c.Probs {
		if p.ID == nil || p.LogProb == nil {
			return nil, nil, nil, fmt.Errorf("%w: completion_probabilities[%d] has no id or logprob (a llama.cpp release before 2025 answers probs; upgrade, or probe --api openai)", ErrServer, i)
		}
		ids = append(ids, *p.ID)
		lps = append(lps, *p.LogProb)
		var as []alt
		for j, t := range p.Top {
			if t.ID == nil || t.LogProb == nil || *t.ID < 0 {
				return nil, nil, nil, fmt.Errorf("%w: completion_probabilities[%d].top_logprobs[%d] has no id or logprob, or a negative id", ErrServer, i, j)
			}
			as = append(as, alt{ID: *t.ID, LogProb: *t.LogProb})
		}
		alts = append(alts, as)
	}
	return ids, lps, alts, nil
}

func (e *llamaEngine) generate(ctx context.Context, req genRequest) (genAnswer, error) {
	body := map[string]any{"prompt": req.prompt, "n_predict": req.n}
	if req.top > 0 {
		body["n_probs"] = req.top
	}
	c, err := e.completion(ctx, body, req.stream)
	if err != nil {
		return genAnswer{}, err
	}
	a := genAnswer{ids: c.Tokens, text: c.Content}
	if len(a.ids) == 0 || len(a.ids) > req.n {
		return genAnswer{}, fmt.Errorf("%w: /completion returned %d tokens for n_predict %d", ErrServer, len(a.ids), req.n)
	}
	if req.top == 0 {
		return a, nil
	}
	ids, lps, alts, err := c.steps()
	if err != nil {
		return genAnswer{}, err
	}
	switch {
	case slices.Equal(ids, a.ids):
		a.lps, a.alts = lps, alts
	case subsequence(ids, a.ids):
		// llama.cpp leaves the probabilities of a token that ends inside a
		// UTF-8 character (a SentencePiece byte token) out of
		// completion_probabilities: the steps no longer line up with the
		// tokens, so this generation is judged by its ids and text only.
		e.mu.Lock()
		e.unaligned++
		e.mu.Unlock()
	default:
		return genAnswer{}, fmt.Errorf("%w: /completion's tokens %v and its completion_probabilities ids %v differ", ErrServer, a.ids, ids)
	}
	return a, nil
}

// force asks each prefix for one token, biased to be the next one.
func (e *llamaEngine) force(ctx context.Context, tokens []int, from, top int) ([]forced, error) {
	var out []forced
	for j := from; j < len(tokens)-1; j++ {
		next := tokens[j+1]
		c, err := e.completion(ctx, map[string]any{"prompt": tokens[:j+1], "n_predict": 1, "n_probs": max(top, 1),
			"logit_bias": [][]float64{{float64(next), forceBias}}}, false)
		if err != nil {
			return nil, err
		}
		ids, lps, alts, err := c.steps()
		if err != nil {
			return nil, err
		}
		if len(ids) != 1 {
			return nil, fmt.Errorf("%w: /completion with n_predict 1 gave %d completion_probabilities", ErrServer, len(ids))
		}
		f := forced{lp: lps[0], alts: alts[0]}
		if ids[0] != next {
			e.mu.Lock()
			e.unforced++
			e.mu.Unlock()
			f.lp = altLogProb(alts[0], next)
		}
		out = append(out, f)
	}
	return out, nil
}

// runLlamaCpp checks tokenization (/tokenize), prompt log-probabilities
// and their alternatives (9, 11) by teacher forcing at the rows the set
// keeps, the set's log-likelihoods (9), and the greedy ids, text and first
// alternatives (10, 11, 12) through /completion.
func runLlamaCpp(ctx context.Context, p *prober) ([]checkpoints.Result, error) {
	e := &llamaEngine{p: p}
	out, err := p.collect(ctx, func(ctx context.Context, rc *refCase) ([]checkpoints.Result, error) {
		return p.llamaCase(ctx, e, rc)
	}, func(ctx context.Context, _ int, ll references.Loglikelihood) (float64, *checkpoints.Result, error) {
		f, err := e.force(ctx, slices.Concat(ll.ContextTokens, ll.ContinuationTokens), len(ll.ContextTokens)-1, 1)
		if err != nil {
			return 0, nil, err
		}
		sum := 0.0
		for _, fp := range f {
			sum += fp.lp
		}
		return sum, nil, nil
	})
	if e.unforced > 0 {
		p.limits = append(p.limits, checkpoints.Limit{Check: "teacher forcing",
			Why: fmt.Sprintf("%d forced requests sampled another token than logit_bias forced: their log-probability is known only where listed among the top %d", e.unforced, p.opt.TopK)})
	}
	if e.unaligned > 0 {
		p.limits = append(p.limits, checkpoints.Limit{Check: "generation probabilities",
			Why: fmt.Sprintf("%d generations' completion_probabilities leave out tokens that end inside a UTF-8 character (llama.cpp sends those with the character's last token): their steps' log-probabilities and alternatives are not compared, their ids and text are", e.unaligned)})
	}
	return out, err
}

// subsequence says whether every element of a appears in b in order.
func subsequence(a, b []int) bool {
	i := 0
	for _, v := range b {
		if i < len(a) && a[i] == v {
			i++
		}
	}
	return i == len(a)
}

func (p *prober) llamaCase(ctx context.Context, e *llamaEngine, rc *refCase) ([]checkpoints.Result, error) {
	var out []checkpoints.Result
	if rc.Prompt != nil {
		var tok struct {
			Tokens []int `json:"tokens"`
		}
		if err := p.c.call(ctx, "/tokenize", map[string]any{"content": *rc.Prompt}, &tok); err != nil {
			return nil, err
		}
		// /tokenize encodes the text alone (add_special false): the BOS a
		// Llama prompt starts with is the prompt's, not the text's.
		want := rc.Tokens
		if t := p.opt.Tokenizer; t != nil && len(want) > 0 {
			if bos, add := t.BOS(); add && want[0] == bos {
				want = want[1:]
			}
		}
		if !slices.Equal(tok.Tokens, want) {
			out = append(out, checkpoints.Failed(12, "tokenize", rc.ID,
				"the server's /tokenize encodes the prompt as %v, the reference as %v: a tokenizer mismatch (the other checks send the reference's ids)", tok.Tokens, want))
		} else {
			out = append(out, checkpoints.CompareIDs(12, "tokenize", rc.ID, tok.Tokens, want))
		}
	}
	var dists []topDist
	if len(rc.Rows) > 0 {
		lps := make([]float64, len(rc.Tokens))
		byToken := make([][]alt, len(rc.Tokens))
		for _, pos := range rc.Rows {
			f, err := e.force(ctx, rc.Tokens[:pos+2], pos, p.opt.TopK)
			if err != nil {
				return nil, err
			}
			lps[pos+1], byToken[pos+1] = f[0].lp, f[0].alts
		}
		out = append(out, promptLogprobsResult(rc, lps))
		dists = promptTops(rc, byToken)
	}
	if rc.Gen != nil {
		g, err := e.generate(ctx, genRequest{prompt: rc.Tokens, n: rc.GenN, top: p.opt.TopK})
		if err != nil {
			return nil, err
		}
		out = append(out, greedyIDResults(rc, g.ids, g.alts)...)
		out, dists = generationTail(rc, g, out, dists)
	}
	if len(dists) > 0 {
		out = append(out, topResult(rc.ID, p.opt.TopK, dists))
	}
	return out, nil
}

// generationTail adds a generation's text check and its first step's
// alternatives.
func generationTail(rc *refCase, g genAnswer, out []checkpoints.Result, dists []topDist) ([]checkpoints.Result, []topDist) {
	if rc.Gen.Text != nil {
		out = append(out, greedyTextResult(rc, "generation_text", g.text, g.alts))
	}
	if len(g.alts) > 0 {
		if d, ok := nextTop(rc, g.alts[0]); ok {
			dists = append(dists, d)
		}
	}
	return out, dists
}
