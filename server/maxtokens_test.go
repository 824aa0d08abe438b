package server_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestMaxTokensBoundedByTheModel: on every generating route, a max_tokens
// the context cannot hold gets the one message naming the model's
// context length, however large (there is no fixed cap below it, such
// as the 2048 that once answered "must be 1..2048" to 4096 while 1000
// got the context's message); below the least it is a range error. On
// GPT-2 and every Llama-family model.
func TestMaxTokensBoundedByTheModel(t *testing.T) {
	routes := []struct {
		path, field string
		body        func(maxTokens any) map[string]any
	}{
		{"/execute", "max_tokens", func(n any) map[string]any { return map[string]any{"job_id": "m", "prompt": "Hi", "max_tokens": n} }},
		{"/generate", "max_tokens", func(n any) map[string]any { return map[string]any{"prompts": []string{"Hi"}, "max_tokens": n} }},
		{"/v1/completions", "max_tokens", func(n any) map[string]any { return map[string]any{"prompt": "Hi", "max_tokens": n} }},
		{"/v1/chat/completions", "max_tokens", func(n any) map[string]any {
			return map[string]any{"messages": []map[string]string{{"role": "user", "content": "Hi"}}, "max_tokens": n}
		}},
		{"/v1/chat/completions", "max_completion_tokens", func(n any) map[string]any {
			return map[string]any{"messages": []map[string]string{{"role": "user", "content": "Hi"}}, "max_completion_tokens": n}
		}},
	}
	// field and message of the one error of a 400, on either family.
	errorOf := func(t *testing.T, out map[string]any) (field, constraint, message string) {
		t.Helper()
		if list, ok := out["errors"].([]any); ok {
			require.Len(t, list, 1, "%v", out)
			e := list[0].(map[string]any)
			return e["field"].(string), e["constraint"].(string), e["message"].(string)
		}
		e := out["error"].(map[string]any)
		return e["param"].(string), e["code"].(string), e["message"].(string)
	}
	for _, s := range everyModel(t) {
		ts, ctx := s.ts, s.m.Config.NPositions
		for _, r := range routes {
			for _, n := range []int64{200, 1000, 2049, 4096, 1 << 40} {
				t.Run(fmt.Sprintf("%s%s %d", s.name, r.path, n), func(t *testing.T) {
					field, _, msg := errorOf(t, ts.call(t, "POST", r.path, r.body(n), http.StatusBadRequest))
					require.Equal(t, r.field, field)
					require.Contains(t, msg, fmt.Sprintf("+ %d new tokens", n))
					require.Contains(t, msg, fmt.Sprintf("exceeds the context length %d", ctx))
				})
			}
			t.Run(s.name+r.path+" below the least", func(t *testing.T) {
				body := r.body(-1)
				field, _, msg := errorOf(t, ts.call(t, "POST", r.path, body, http.StatusBadRequest))
				require.Contains(t, []string{"max_tokens", "max_completion_tokens"}, field)
				require.Contains(t, msg, "must be ≥")
			})
		}
		// What fits the context is accepted (and ended at once by its EOS).
		ts.call(t, "POST", "/v1/completions", map[string]any{"prompt": "Hi", "max_tokens": ctx - len(s.tok.EncodePrompt("Hi")), "temperature": 0,
			"logit_bias": map[string]int{fmt.Sprint(s.eos()): 100}}, http.StatusOK)
	}
}
