package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"
)

// request is one streaming completion to send.
type request struct {
	prompt    string
	maxTokens int
	long      bool // the long-prompt scenario's long request
}

// result is what one request measured. Times are offsets from the level's
// start, so streams of one level can be laid side by side (long-prompt
// asks which short-stream gaps overlap the long prompt's prefill).
type result struct {
	req      request
	status   int    // HTTP status; 0 when the request never got one
	errKind  string // "" when the stream ended with [DONE]; else the errors column's key
	errText  string // what went wrong, for the log
	sent     time.Duration
	chunks   []time.Duration // arrival of each chunk carrying text
	end      time.Duration
	tokens   int // usage.completion_tokens when sent, else len(chunks)
	cached   int
	hasCache bool
}

func (r result) ok() bool { return r.errKind == "" }

// ttft is the time from sending to the first text chunk.
func (r result) ttft() (time.Duration, bool) {
	if len(r.chunks) == 0 {
		return 0, false
	}
	return r.chunks[0] - r.sent, true
}

// client sends requests to one OpenAI-compatible server.
type client struct {
	http      *http.Client
	url       string // base URL, no trailing slash
	apiKey    string
	model     string
	ignoreEOS bool
}

// body is the JSON of a request: greedy (temperature 0) so both servers do
// the same work per token, streamed, with include_usage so the server's own
// token count and cached-prompt count arrive in the last chunk.
func (c *client) body(req request) ([]byte, error) {
	b := map[string]any{
		"prompt":         req.prompt,
		"max_tokens":     req.maxTokens,
		"temperature":    0,
		"stream":         true,
		"stream_options": map[string]any{"include_usage": true},
	}
	if c.model != "" {
		b["model"] = c.model
	}
	if c.ignoreEOS {
		// Every request generates max_tokens, so runs compare equal work.
		b["ignore_eos"] = true
	}
	return json.Marshal(b)
}

func (c *client) post(ctx context.Context, path string, body []byte) (*http.Response, error) {
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url+path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	hr.Header.Set("Content-Type", "application/json")
	if c.apiKey != "" {
		hr.Header.Set("Authorization", "Bearer "+c.apiKey)
	}
	return c.http.Do(hr)
}

// stream sends req to /v1/completions and times every text chunk against
// start; onChunk (if set) runs with the count of text chunks so far as
// each one arrives.
func (c *client) stream(ctx context.Context, start time.Time, req request, onChunk func(k int)) result {
	res := result{req: req}
	body, err := c.body(req)
	if err != nil {
		res.errKind = "client"
		return res
	}
	res.sent = time.Since(start)
	resp, err := c.post(ctx, "/v1/completions", body)
	if err != nil {
		res.errKind, res.errText, res.end = "conn", err.Error(), time.Since(start)
		return res
	}
	defer resp.Body.Close()
	res.status = resp.StatusCode
	if resp.StatusCode/100 != 2 {
		// Drained so the connection is reused; the errors column counts
		// by status (429 is the server's backpressure at --max-queue).
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		_, _ = io.Copy(io.Discard, resp.Body)
		res.errKind, res.end = strconv.Itoa(resp.StatusCode), time.Since(start)
		res.errText = resp.Status + ": " + string(bytes.TrimSpace(msg))
		return res
	}
	done := false
	var usageTokens *int
	err = readEvents(resp.Body, func(data string) error {
		at := time.Since(start)
		ev, err := parseData(data)
		if err != nil {
			return err
		}
		switch {
		case ev.done:
			done = true
		case ev.errMsg != "":
			return fmt.Errorf("server: %s", ev.errMsg)
		}
		if ev.text != "" {
			res.chunks = append(res.chunks, at)
			if onChunk != nil {
				onChunk(len(res.chunks))
			}
		}
		if ev.usage != nil {
			n := ev.usage.CompletionTokens
			usageTokens = &n
		}
		if n, ok := ev.cachedTokens(); ok {
			res.cached, res.hasCache = n, true
		}
		return nil
	})
	res.end = time.Since(start)
	res.tokens = len(res.chunks)
	if usageTokens != nil {
		// A chunk can hold several tokens (text held back to a UTF-8
		// boundary) or none; the server's count is the truth.
		res.tokens = *usageTokens
	}
	switch {
	case err != nil:
		res.errKind, res.errText = "stream", err.Error()
	case !done:
		res.errKind, res.errText = "no-done", "the stream closed before data: [DONE]"
	}
	return res
}

// probeIgnoreEOS asks the server whether it takes ignore_eos: llama-server
// does; our serve answers 400 naming the unknown field (unless --lenient,
// where it is accepted and ignored; a probe cannot tell that apart).
func (c *client) probeIgnoreEOS(ctx context.Context) (bool, error) {
	b := map[string]any{"prompt": "Hello", "max_tokens": 1, "temperature": 0, "ignore_eos": true}
	if c.model != "" {
		b["model"] = c.model
	}
	body, _ := json.Marshal(b)
	resp, err := c.post(ctx, "/v1/completions", body)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	switch {
	case resp.StatusCode/100 == 2:
		return true, nil
	case resp.StatusCode == http.StatusBadRequest && bytes.Contains(msg, []byte("ignore_eos")):
		return false, nil
	}
	return false, fmt.Errorf("probe: %s: %s", resp.Status, bytes.TrimSpace(msg))
}

// serverInfo asks for the model id to send (our serve answers 404 to any
// other; llama-server ignores it) and the context length, from
// /v1/models (ours: max_model_len) or llama-server's /props (n_ctx of
// one slot). Either may be missing; zero values then.
func (c *client) serverInfo(ctx context.Context) (model string, ctxLen int) {
	var models struct {
		Data []struct {
			ID          string `json:"id"`
			MaxModelLen int    `json:"max_model_len"`
		} `json:"data"`
	}
	if c.getJSON(ctx, "/v1/models", &models) == nil && len(models.Data) > 0 {
		model, ctxLen = models.Data[0].ID, models.Data[0].MaxModelLen
	}
	if ctxLen == 0 {
		var props struct {
			Default struct {
				NCtx int `json:"n_ctx"`
			} `json:"default_generation_settings"`
		}
		if c.getJSON(ctx, "/props", &props) == nil {
			ctxLen = props.Default.NCtx
		}
	}
	return model, ctxLen
}

// kvPeak is the most KV cache memory the server has held at once, from
// our serve's /health; false from a server that does not say
// (llama-server allocates its whole cache up front).
func (c *client) kvPeak(ctx context.Context) (int64, bool) {
	var h struct {
		KV *struct {
			PeakBytes *int64 `json:"peak_bytes"`
		} `json:"kv_cache"`
	}
	if c.getJSON(ctx, "/health", &h) != nil || h.KV == nil || h.KV.PeakBytes == nil {
		return 0, false
	}
	return *h.KV.PeakBytes, true
}

func (c *client) getJSON(ctx context.Context, path string, v any) error {
	hr, err := http.NewRequestWithContext(ctx, http.MethodGet, c.url+path, nil)
	if err != nil {
		return err
	}
	if c.apiKey != "" {
		hr.Header.Set("Authorization", "Bearer "+c.apiKey)
	}
	resp, err := c.http.Do(hr)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", path, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}
