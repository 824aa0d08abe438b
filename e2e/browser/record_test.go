//go:build browser

package browser

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// recorded passes requests to next and keeps each chat request with the
// stream that answered it.
type recorded struct {
	next http.Handler
	mu   sync.Mutex
	list []*exchange
}

type exchange struct {
	request struct {
		Messages    []chatMessage `json:"messages"`
		Stream      bool          `json:"stream"`
		Logprobs    bool          `json:"logprobs"`
		TopLogprobs int           `json:"top_logprobs"`
	}
	mu   sync.Mutex
	body bytes.Buffer
}

func (r *recorded) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.URL.Path != "/v1/chat/completions" {
		r.next.ServeHTTP(w, req)
		return
	}
	raw, err := io.ReadAll(req.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	req.Body = io.NopCloser(bytes.NewReader(raw))
	ex := &exchange{}
	if err := json.Unmarshal(raw, &ex.request); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	// Kept before the answer: the page may finish reading it before this
	// handler returns.
	r.mu.Lock()
	r.list = append(r.list, ex)
	r.mu.Unlock()
	r.next.ServeHTTP(&tee{ResponseWriter: w, ex: ex}, req)
}

func (r *recorded) all() []*exchange {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*exchange(nil), r.list...)
}

// tee writes through to the client and into the exchange; it flushes
// and unwraps as the server's streams need.
type tee struct {
	http.ResponseWriter
	ex *exchange
}

func (t *tee) Write(p []byte) (int, error) {
	t.ex.mu.Lock()
	t.ex.body.Write(p)
	t.ex.mu.Unlock()
	return t.ResponseWriter.Write(p)
}

func (t *tee) Flush() { http.NewResponseController(t.ResponseWriter).Flush() }

func (t *tee) Unwrap() http.ResponseWriter { return t.ResponseWriter }

type apiToken struct {
	Token   string  `json:"token"`
	Logprob float64 `json:"logprob"`
	Top     []struct {
		Token   string  `json:"token"`
		Logprob float64 `json:"logprob"`
	} `json:"top_logprobs"`
}

// answer reads the recorded stream: the reply's text and its tokens.
func (ex *exchange) answer(t *testing.T) (string, []apiToken) {
	t.Helper()
	ex.mu.Lock()
	stream := ex.body.String()
	ex.mu.Unlock()
	var content strings.Builder
	var tokens []apiToken
	done := false
	for _, event := range strings.Split(strings.TrimSpace(stream), "\n\n") {
		data, ok := strings.CutPrefix(event, "data: ")
		require.True(t, ok, "not a data event: %q", event)
		if data == "[DONE]" {
			done = true
			continue
		}
		var chunk struct {
			Choices []struct {
				Delta    struct{ Content string }
				Logprobs *struct{ Content []apiToken }
			}
		}
		require.NoError(t, json.Unmarshal([]byte(data), &chunk), "%s", data)
		for _, ch := range chunk.Choices {
			content.WriteString(ch.Delta.Content)
			if ch.Logprobs != nil {
				tokens = append(tokens, ch.Logprobs.Content...)
			}
		}
	}
	require.True(t, done, "the stream ends with [DONE]")
	return content.String(), tokens
}
