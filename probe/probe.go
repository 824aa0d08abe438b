// Package probe checks a running inference server from the outside: it
// asks an OpenAI-compatible /v1/completions for what a server exposes
// (prompt log-probabilities with echo, greedy continuations) on the cases
// of a reference set, and compares them with the references as the
// checkpoints compare llorch-check's own forward pass. It sees no tensor,
// so it covers checkpoints 9 (log-probabilities and log-likelihoods) and
// 12 (greedy continuation text); a server that is unreachable or answers
// something other than the API is an error, never a pass.
package probe

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/llorch/llorch-check/checkpoints"
	"github.com/llorch/llorch-check/references"
	"github.com/llorch/llorch-check/sampling"
)

// Options say where the server is and how to reach it.
type Options struct {
	Endpoint string // base URL, e.g. http://127.0.0.1:8080
	APIKey   string // sent as a bearer token when set
	Model    string // the "model" field of requests; empty: none
	Client   *http.Client
}

// ErrServer wraps every failure to get a usable answer from the server.
var ErrServer = errors.New("server")

// Run checks the server against every case and log-likelihood pair of set.
func Run(ctx context.Context, set *references.Set, opt Options) (*checkpoints.Report, error) {
	if opt.Client == nil {
		opt.Client = &http.Client{Timeout: 2 * time.Minute}
	}
	opt.Endpoint = strings.TrimRight(opt.Endpoint, "/")
	var results []checkpoints.Result
	for _, c := range set.Manifest.Cases {
		rs, err := checkCase(ctx, set, c, opt)
		if err != nil {
			return nil, fmt.Errorf("case %s: %w", c.ID, err)
		}
		results = append(results, rs...)
	}
	for i, ll := range set.Manifest.Loglikelihood {
		prompt := slices.Concat(ll.ContextTokens, ll.ContinuationTokens)
		lps, err := promptLogProbs(ctx, opt, prompt)
		if err != nil {
			return nil, fmt.Errorf("loglikelihood[%d]: %w", i, err)
		}
		sum := 0.0
		for _, v := range lps[len(ll.ContextTokens):] {
			sum += v
		}
		var truth []float64
		if ll.LLF64 != nil {
			truth = []float64{*ll.LLF64}
		}
		results = append(results, checkpoints.CompareValues(9, "loglikelihood", fmt.Sprintf("loglikelihood[%d]", i),
			[]float64{sum}, []float32{float32(ll.LL)}, truth, "pair", checkpoints.Tolerance{Atol: 1e-4}))
	}
	return checkpoints.NewReport(opt.Endpoint, set.Dir, results), nil
}

// checkCase compares the prompt's log-probabilities at the positions whose
// logits the reference keeps, and the greedy continuation's text.
func checkCase(ctx context.Context, set *references.Set, c references.Case, opt Options) ([]checkpoints.Result, error) {
	var out []checkpoints.Result
	if ti, ok := set.Find(c.ID, "logits", references.NoLayer); ok && len(c.Tokens) >= 2 {
		lps, err := promptLogProbs(ctx, opt, c.Tokens)
		if err != nil {
			return nil, err
		}
		want, err := set.Tensor(ti)
		if err != nil {
			return nil, err
		}
		truth, err := set.TensorF64(ti)
		if err != nil {
			return nil, err
		}
		rows := ti.Rows
		if rows == nil {
			for r := range ti.Shape[0] {
				rows = append(rows, r)
			}
		}
		V := ti.Shape[1]
		var got []float64
		var w []float32
		var tr []float64
		for i, pos := range rows {
			if pos+1 >= len(c.Tokens) {
				continue // the last position predicts past the prompt
			}
			next := c.Tokens[pos+1]
			got = append(got, lps[pos+1])
			w = append(w, float32(sampling.LogSoftmax(want[i*V : (i+1)*V])[next]))
			if truth != nil {
				tr = append(tr, logSoftmaxAt64(truth[i*V:(i+1)*V], next))
			}
		}
		out = append(out, checkpoints.CompareValues(9, "prompt_logprobs", c.ID, got, w, tr, "position", checkpoints.Tolerance{}))
	}
	if gen := set.Manifest.Generation; gen != nil {
		for _, r := range gen.Results {
			if r.Case != c.ID || r.Text == nil {
				continue
			}
			n := min(gen.N, len(r.Tokens))
			if n == 0 {
				continue
			}
			text, err := greedy(ctx, opt, c.Tokens, n)
			if err != nil {
				return nil, err
			}
			out = append(out, checkpoints.CompareText(12, "generation", c.ID, text, *r.Text))
		}
	}
	return out, nil
}

func logSoftmaxAt64(row []float64, id int) float64 {
	m := math.Inf(-1)
	for _, v := range row {
		m = max(m, v)
	}
	sum := 0.0
	for _, v := range row {
		sum += math.Exp(v - m)
	}
	return row[id] - m - math.Log(sum)
}

// completion is the part of a /v1/completions answer the probe reads.
type completion struct {
	Choices []struct {
		Text     string `json:"text"`
		Logprobs *struct {
			TokenLogprobs []*float64 `json:"token_logprobs"`
		} `json:"logprobs"`
	} `json:"choices"`
}

// promptLogProbs asks for the prompt echoed with log-probabilities (as
// lm-evaluation-harness does) and returns them by position; position 0,
// which has no context, is NaN.
func promptLogProbs(ctx context.Context, opt Options, tokens []int) ([]float64, error) {
	var c completion
	if err := post(ctx, opt, map[string]any{"prompt": tokens, "max_tokens": 0, "echo": true, "logprobs": 1, "temperature": 0}, &c); err != nil {
		return nil, err
	}
	if len(c.Choices) != 1 || c.Choices[0].Logprobs == nil {
		return nil, fmt.Errorf("%w: no choice with logprobs in the answer", ErrServer)
	}
	lps := c.Choices[0].Logprobs.TokenLogprobs
	if len(lps) < len(tokens) {
		return nil, fmt.Errorf("%w: %d token log-probabilities for a prompt of %d tokens", ErrServer, len(lps), len(tokens))
	}
	out := make([]float64, len(tokens))
	for i := range tokens {
		if lps[i] == nil {
			out[i] = math.NaN()
			if i > 0 {
				return nil, fmt.Errorf("%w: no log-probability for prompt token %d", ErrServer, i)
			}
			continue
		}
		out[i] = *lps[i]
	}
	return out, nil
}

// greedy asks for n greedy tokens after the prompt and returns their text.
func greedy(ctx context.Context, opt Options, tokens []int, n int) (string, error) {
	var c completion
	if err := post(ctx, opt, map[string]any{"prompt": tokens, "max_tokens": n, "temperature": 0}, &c); err != nil {
		return "", err
	}
	if len(c.Choices) != 1 {
		return "", fmt.Errorf("%w: %d choices in the answer, want 1", ErrServer, len(c.Choices))
	}
	return c.Choices[0].Text, nil
}

func post(ctx context.Context, opt Options, body map[string]any, out any) error {
	if opt.Model != "" {
		body["model"] = opt.Model
	}
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, opt.Endpoint+"/v1/completions", bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("%w: --endpoint %s: %v", ErrServer, opt.Endpoint, err)
	}
	req.Header.Set("Content-Type", "application/json")
	if opt.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+opt.APIKey)
	}
	resp, err := opt.Client.Do(req)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrServer, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("%w: reading the answer: %v", ErrServer, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%w: %s/v1/completions answered %d: %.300s", ErrServer, opt.Endpoint, resp.StatusCode, data)
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("%w: %s/v1/completions answered something that is not its JSON: %v", ErrServer, opt.Endpoint, err)
	}
	return nil
}
