package probe

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/checkpoints"
	"github.com/llorch/llorch-check/model"
)

var invarianceNames = []string{"logprobs on vs off", "streamed vs not", "4 concurrent copies",
	"repeated (prompt cache)", "prefix-extended", "decode vs teacher-forced"}

func invarianceByName(rep *checkpoints.Report) map[string]checkpoints.Invariance {
	out := map[string]checkpoints.Invariance{}
	for _, inv := range rep.Invariance {
		out[inv.Name] = inv
	}
	return out
}

// TestInvarianceOwnServe: llorch-check serve passes every invariance
// check, each with its numbers; none is skipped.
func TestInvarianceOwnServe(t *testing.T) {
	rep, err := Run(context.Background(), tinySet(t), Options{Endpoint: serve(t, model.FaultNone)})
	require.NoError(t, err)
	require.True(t, rep.Passed, rep.Verdict())
	got := invarianceByName(rep)
	require.Len(t, rep.Invariance, len(invarianceNames))
	for _, name := range invarianceNames {
		inv, ok := got[name]
		require.True(t, ok, name)
		require.Equal(t, checkpoints.StatusPassed, inv.Status, "%s: %s", name, inv.Detail)
		if name != "logprobs on vs off" {
			require.NotNil(t, inv.MaxDelta, "%s reports its |Δ log p|", name)
		}
	}
	var table bytes.Buffer
	require.NoError(t, rep.WriteTable(&table))
	require.Contains(t, table.String(), "invariance (the engine against itself)")
	require.Contains(t, table.String(), "invariance 6/6 passed")
}

// relayIf forwards to target and rewrites the answer with rewrite, which
// sees the request body and how many requests were in flight on arrival.
func relayIf(t *testing.T, target string, rewrite func(req []byte, inFlight int, answer []byte) []byte) http.Handler {
	var flying atomic.Int32
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := int(flying.Add(1))
		defer flying.Add(-1)
		body, _ := io.ReadAll(r.Body)
		time.Sleep(20 * time.Millisecond) // so that concurrent copies overlap here
		req, err := http.NewRequestWithContext(r.Context(), r.Method, target+r.URL.Path, bytes.NewReader(body))
		require.NoError(t, err)
		req.Header = r.Header.Clone()
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		answer, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		w.Header().Set("Content-Type", resp.Header.Get("Content-Type"))
		w.WriteHeader(resp.StatusCode)
		w.Write(rewrite(body, n, answer))
	})
}

// shiftLogprobs adds d to every token log-probability of an OpenAI
// answer, streamed or not.
func shiftLogprobs(answer []byte, d float64) []byte {
	shift := func(js []byte) []byte {
		var c map[string]any
		if json.Unmarshal(js, &c) != nil {
			return js
		}
		chs, _ := c["choices"].([]any)
		for _, ch := range chs {
			lp, _ := ch.(map[string]any)["logprobs"].(map[string]any)
			if lp == nil {
				continue
			}
			tl, _ := lp["token_logprobs"].([]any)
			for i, v := range tl {
				if f, ok := v.(float64); ok {
					tl[i] = f + d
				}
			}
		}
		out, _ := json.Marshal(c)
		return out
	}
	if !bytes.HasPrefix(answer, []byte("data:")) {
		return shift(answer)
	}
	var out []string
	for _, line := range strings.Split(string(answer), "\n") {
		if js, ok := strings.CutPrefix(line, "data: "); ok && strings.HasPrefix(js, "{") {
			line = "data: " + string(shift([]byte(js)))
		}
		out = append(out, line)
	}
	return []byte(strings.Join(out, "\n"))
}

// TestInvarianceCatches: an engine that answers one way of asking
// differently fails that check, named, with its numbers and the request
// that shows it, and the others still pass.
func TestInvarianceCatches(t *testing.T) {
	own := serve(t, model.FaultNone)
	has := func(req []byte, s string) bool { return bytes.Contains(req, []byte(s)) }
	for _, tc := range []struct {
		check   string
		rewrite func(req []byte, inFlight int, answer []byte) []byte
	}{
		{"logprobs on vs off", func(req []byte, _ int, a []byte) []byte {
			if has(req, `"logprobs"`) {
				return a
			}
			return bytes.Replace(a, []byte(`"text":"`), []byte(`"text":"x`), 1)
		}},
		{"streamed vs not", func(req []byte, _ int, a []byte) []byte {
			if has(req, `"stream":true`) {
				return shiftLogprobs(a, 0.01)
			}
			return a
		}},
		{"4 concurrent copies", func(_ []byte, inFlight int, a []byte) []byte {
			if inFlight > 1 {
				return shiftLogprobs(a, 0.01)
			}
			return a
		}},
		{"decode vs teacher-forced", func(req []byte, _ int, a []byte) []byte {
			if has(req, `"echo":true`) {
				return shiftLogprobs(a, 0.01)
			}
			return a
		}},
	} {
		t.Run(tc.check, func(t *testing.T) {
			url := startServer(t, relayIf(t, own, tc.rewrite))
			rep, err := Run(context.Background(), tinySet(t), Options{Endpoint: url, API: "openai"})
			require.NoError(t, err)
			require.False(t, rep.Passed)
			for name, inv := range invarianceByName(rep) {
				if name != tc.check {
					require.Equal(t, checkpoints.StatusPassed, inv.Status, "%s: %s", name, inv.Detail)
					continue
				}
				require.Equal(t, checkpoints.StatusFailed, inv.Status, name)
				require.Contains(t, inv.Request, "POST /v1/completions {")
				if inv.MaxDelta != nil {
					require.InDelta(t, 0.01, float64(*inv.MaxDelta), 1e-6)
				}
			}
		})
	}
}

// TestStrictOpenAIServer: a server that refuses what it does not know
// (streaming, vLLM's return_tokens_as_token_ids; like the C-API shim) is
// probed with what it takes: every check it cannot answer is reported as
// not exposed, with its refusal, and the rest still pass; never exit 2.
func TestStrictOpenAIServer(t *testing.T) {
	own := serve(t, model.FaultNone)
	strict := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		for _, field := range []string{"return_tokens_as_token_ids", `"stream"`} {
			if bytes.Contains(body, []byte(field)) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusBadRequest)
				io.WriteString(w, `{"error":{"message":"unknown field `+strings.Trim(field, `"`)+`"}}`)
				return
			}
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		relay(t, own, func(b []byte) []byte { return b }).ServeHTTP(w, r)
	})
	rep, err := Run(context.Background(), tinySet(t), Options{Endpoint: startServer(t, strict), API: "openai",
		Corpus: corpusDir(), CorpusChunks: 1})
	require.NoError(t, err)
	require.True(t, rep.Passed, rep.Verdict())
	got := invarianceByName(rep)
	for name, want := range map[string]string{
		"streamed vs not":          "unknown field stream",
		"prefix-extended":          "no token ids",
		"decode vs teacher-forced": "no token ids",
	} {
		require.Equal(t, checkpoints.StatusNotExposed, got[name].Status, name)
		require.Contains(t, got[name].Detail, want, name)
	}
	for _, name := range []string{"logprobs on vs off", "4 concurrent copies", "repeated (prompt cache)"} {
		require.Equal(t, checkpoints.StatusPassed, got[name].Status, "%s: %s", name, got[name].Detail)
	}
	require.NotNil(t, rep.Corpus, "echo still scores the corpus")
}
