package probe

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/model"
)

// badEndpoint is a server that breaks its API one way; fails 0 means the
// probe must end in an error saying says, else fail first at checkpoint
// fails with says in the failure.
type badEndpoint struct {
	name, endpoint, api string
	fails               int
	says                string
}

func answer(code int, contentType, body string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(code)
		io.WriteString(w, body)
	})
}

// events streams the given (event, data) pairs as Server-Sent Events and
// then ends the response.
func events(pairs ...string) http.Handler {
	var b bytes.Buffer
	for i := 0; i+1 < len(pairs); i += 2 {
		fmt.Fprintf(&b, "event: %s\ndata: %s\n\n", pairs[i], pairs[i+1])
	}
	return answer(http.StatusOK, "text/event-stream", b.String())
}

const started = `{"type":"started","job_id":"j","prompt_tokens":2}`

// relay forwards every request to target and answers with rewrite of its
// answer: a server that computes correctly but reports one thing wrong.
func relay(t *testing.T, target string, rewrite func([]byte) []byte) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req, err := http.NewRequestWithContext(r.Context(), r.Method, target+r.URL.Path, r.Body)
		require.NoError(t, err)
		req.Header = r.Header.Clone()
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		w.Header().Set("Content-Type", resp.Header.Get("Content-Type"))
		w.WriteHeader(resp.StatusCode)
		w.Write(rewrite(body))
	})
}

// promptTokensOff adds one to every prompt_tokens count: a server that
// tokenizes prompts otherwise.
func promptTokensOff(body []byte) []byte {
	re := regexp.MustCompile(`"prompt_tokens":(\d+)`)
	return re.ReplaceAllFunc(body, func(m []byte) []byte {
		n, _ := strconv.Atoi(string(re.FindSubmatch(m)[1]))
		return fmt.Appendf(nil, `"prompt_tokens":%d`, n+1)
	})
}

// oneAlternative keeps only the most likely of each top_logprobs entry.
func oneAlternative(body []byte) []byte {
	var c map[string]any
	if json.Unmarshal(body, &c) != nil {
		return body
	}
	chs, _ := c["choices"].([]any)
	for _, ch := range chs {
		lp, _ := ch.(map[string]any)["logprobs"].(map[string]any)
		if lp == nil {
			continue
		}
		tops, _ := lp["top_logprobs"].([]any)
		for _, top := range tops {
			m, _ := top.(map[string]any)
			best := ""
			for k, v := range m {
				if best == "" || v.(float64) > m[best].(float64) {
					best = k
				}
			}
			for k := range m {
				if k != best {
					delete(m, k)
				}
			}
		}
	}
	out, _ := json.Marshal(c)
	return out
}

func badEndpoints(t *testing.T) []badEndpoint {
	// down's port is freed only after every other server here has taken
	// its own: freed first, one of them was once given it, and "refused"
	// got an answer.
	down := httptest.NewServer(http.NotFoundHandler())
	defer down.Close()
	own := serve(t, model.FaultNone)
	srv := func(h http.Handler) string { return startServer(t, h) }
	const jsonType = "application/json"
	return []badEndpoint{
		{"refused", down.URL, "", 0, "connection refused"},
		{"refused/worker", down.URL, "worker", 0, "connection refused"},
		{"500", srv(answer(500, jsonType, `{"error":"boom"}`)), "openai", 0, "answered 500"},
		{"500/detect", srv(answer(500, jsonType, `{"error":"boom"}`)), "", 0, "answered none of GET /info (TGI: 500 Internal Server Error)"},
		{"401/detect", srv(answer(401, jsonType, `{"error":"no key"}`)), "", 0, "answered 401 Unauthorized (the server wants an API key"},
		{"html", srv(answer(200, "text/html", "<html>")), "openai", 0, "not its JSON"},
		{"no choices", srv(answer(200, jsonType, `{"choices":[]}`)), "openai", 0, "no choice with logprobs"},
		{"short logprobs", srv(answer(200, jsonType, `{"choices":[{"text":"","logprobs":{"token_logprobs":[null],"top_logprobs":[null]}}]}`)), "openai", 0,
			"1 token log-probabilities for a prompt of"},
		{"long logprobs", srv(answer(200, jsonType, `{"choices":[{"text":"","logprobs":{"token_logprobs":[null,-1,-1,-1],"top_logprobs":[null]}}]}`)), "openai", 0,
			"4 token log-probabilities for a prompt of 2 tokens and 1 generated"},
		{"null logprob", srv(answer(200, jsonType, `{"choices":[{"text":"","logprobs":{"token_logprobs":[null,null]}}]}`)), "openai", 0,
			"no log-probability for prompt token 1"},
		{"truncated SSE", srv(events("started", started, "token", `{"type":"token","t":"x","i":0,"id":7}`)), "worker", 0, "truncated"},
		{"SSE token count", srv(events("started", started, "token", `{"type":"token","t":"x","i":0,"id":7}`, "end", `{"type":"end","tokens_out":5}`)), "worker", 0,
			"counts 5 tokens after 1 token events"},
		{"SSE index gap", srv(events("started", started, "token", `{"type":"token","t":"x","i":1,"id":7}`)), "worker", 0, "has index 1"},
		{"SSE error event", srv(events("started", started, "error", `{"type":"error","code":"INFERENCE_FAILED","message":"gpu on fire"}`)), "worker", 0,
			"ended with error INFERENCE_FAILED: gpu on fire"},
		{"SSE before started", srv(events("token", `{"type":"token","t":"x","i":0,"id":7}`)), "worker", 0, `sent "token" before started`},
		{"SSE garbage", srv(events("started", "{not json")), "worker", 0, "is not JSON"},
		{"not SSE", srv(answer(200, jsonType, `{"ok":true}`)), "worker", 0, "not an event stream"},
		{"TGI without details", srv(answer(200, jsonType, `[{"generated_text":"x"}]`)), "tgi", 0, "not its JSON"},
		{"TGI no details", srv(answer(200, jsonType, `{"generated_text":"x"}`)), "tgi", 0, "without details"},
		{"TGI token count", srv(answer(200, jsonType, `{"generated_text":"x","details":{"generated_tokens":3,"prefill":[],"tokens":[{"id":1,"logprob":-1}]}}`)), "tgi", 0,
			"generated_tokens 3 but lists 1"},
		{"TGI no prefill", srv(answer(200, jsonType, `{"generated_text":"x","details":{"generated_tokens":1,"prefill":[],"tokens":[{"id":1,"logprob":-1}]}}`)), "tgi", 0,
			"without prefill details"},
		{"TGI negative id", srv(answer(200, jsonType, `{"generated_text":"x","details":{"generated_tokens":1,"prefill":[{"id":15496,"logprob":null},{"id":13,"logprob":-1}],"tokens":[{"id":1,"logprob":-1}],"top_tokens":[[{"id":-3,"logprob":-1}]]}}`)), "tgi", 0,
			"negative id"},
		{"llama.cpp before 2025", srv(answer(200, jsonType, `{"tokens":[15496,13],"content":"x","completion_probabilities":[{"content":"x","probs":[{"tok_str":"x","prob":0.5}]}]}`)), "llamacpp", 0,
			"a llama.cpp release before 2025"},
		{"llama.cpp negative id", srv(answer(200, jsonType, `{"tokens":[15496,13],"content":"x","completion_probabilities":[{"id":7,"logprob":-1,"top_logprobs":[{"id":-2,"logprob":-1}]}]}`)), "llamacpp", 0,
			"negative id"},
		{"llama.cpp tokens vs probs", srv(answer(200, jsonType, `{"tokens":[7,8],"content":"x","completion_probabilities":[{"id":7,"logprob":-1,"top_logprobs":[]},{"id":9,"logprob":-1,"top_logprobs":[]}]}`)), "llamacpp", 0,
			"/completion with n_predict 1 gave 2 completion_probabilities"},
		{"ollama not done", srv(answer(200, jsonType, `{"response":"x","done":false,"prompt_eval_count":2}`)), "ollama", 0, "without done"},
		{"ollama no logprobs", srv(answer(200, jsonType, `{"response":"x","done":true,"prompt_eval_count":2}`)), "ollama", 0, "without logprobs"},
		{"ollama null logprob", srv(answer(200, jsonType, `{"response":"x","done":true,"prompt_eval_count":2,"logprobs":[{"token":"x","logprob":null}]}`)), "ollama", 0, "has no logprob"},
		{"ollama other tokenizer", srv(answer(200, jsonType, `{"response":"x","done":true,"prompt_eval_count":3,"logprobs":[{"token":"x","logprob":-1}]}`)), "ollama", 12, "the server counted 3 prompt tokens"},
		{"batch completions", srv(answer(200, jsonType, `{"completions":["a","b"],"usage":{"prompt_tokens":2}}`)), "llorch", 0, "2 completions"},
		{"prompt_tokens off/worker", srv(relay(t, own, promptTokensOff)), "worker", 12, "encoded the prompt as"},
		{"prompt_tokens off/llorch", srv(relay(t, own, promptTokensOff)), "llorch", 12, "encoded the prompt as"},
		{"merged alternatives", srv(relay(t, own, oneAlternative)), "openai", 11, "the server listed 1 alternatives, 5 were asked for"},
	}
}

// TestProbeNeverPassesGarbage: whatever JSON a server answers with, every
// dialect ends in an error or a failed report, never a pass or a panic.
func TestProbeNeverPassesGarbage(t *testing.T) {
	bodies := []string{`{}`, `null`, `[]`, `""`, `{"choices":null}`, `{"choices":[{}]}`,
		`{"choices":[{"text":"x","logprobs":{}}]}`, `{"details":{}}`, `{"details":{"generated_tokens":0,"tokens":[]}}`,
		`{"completions":[],"usage":{}}`, `{"ll":[],"is_greedy":[]}`, `{"model_id":"x","object":"list","data":[]}`}
	set := tinySet(t)
	for _, api := range append([]string{""}, APIs...) {
		for _, body := range bodies {
			for _, ct := range []string{"application/json", "text/event-stream"} {
				url := startServer(t, answer(http.StatusOK, ct, body))
				rep, err := Run(context.Background(), set, Options{Endpoint: url, API: api})
				require.True(t, err != nil || !rep.Passed, "--api %q, %s %s passed", api, ct, body)
			}
		}
	}
}
