package server_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/server"
)

// TestResponsesStore: a stored response continues by previous_response_id
// (a three-turn chat) or by its output item's id (the AI SDK's
// item_reference), exactly as the conversation sent whole; store:false,
// an unknown id and an evicted one are a 404 naming the field (issue #42
// item 5).
func TestResponsesStore(t *testing.T) {
	ts := start(t, server.Config{})
	turn := func(body map[string]any) map[string]any {
		body["max_output_tokens"], body["temperature"] = 4, 0
		return ts.call(t, "POST", "/v1/responses", body, http.StatusOK)
	}
	chat := func(msgs ...map[string]any) string {
		out := ts.call(t, "POST", "/v1/chat/completions", map[string]any{"messages": msgs, "max_tokens": 4, "temperature": 0}, http.StatusOK)
		return choice0(t, out)["message"].(map[string]any)["content"].(string)
	}
	user := func(s string) map[string]any { return map[string]any{"role": "user", "content": s} }
	assistant := func(s string) map[string]any { return map[string]any{"role": "assistant", "content": s} }

	first := turn(map[string]any{"input": "Hello"})
	require.Equal(t, true, first["store"])
	a1 := responseText(t, first)
	second := turn(map[string]any{"input": "And then?", "previous_response_id": first["id"]})
	require.Equal(t, first["id"], second["previous_response_id"])
	a2 := responseText(t, second)
	require.Equal(t, chat(user("Hello"), assistant(a1), user("And then?")), a2, "turn 2 continues turn 1")
	third := turn(map[string]any{"input": "Why?", "previous_response_id": second["id"]})
	require.Equal(t, chat(user("Hello"), assistant(a1), user("And then?"), assistant(a2), user("Why?")), responseText(t, third), "turn 3 continues both")

	// A streamed response is stored too, by its last event.
	events := responseEvents(t, ts, map[string]any{"input": "Hello", "max_output_tokens": 4, "temperature": 0, "stream": true})
	streamed := events[len(events)-1]["response"].(map[string]any)
	require.Equal(t, a2, responseText(t, turn(map[string]any{"input": "And then?", "previous_response_id": streamed["id"]})))

	// The AI SDK's default provider: earlier replies by reference.
	item := first["output"].([]any)[0].(map[string]any)["id"]
	byRef := turn(map[string]any{"input": []any{user("Hello"), map[string]any{"type": "item_reference", "id": item}, user("And then?")}})
	require.Equal(t, a2, responseText(t, byRef))

	notFound := func(body map[string]any, param string) {
		t.Helper()
		out := ts.call(t, "POST", "/v1/responses", body, http.StatusNotFound)
		e := out["error"].(map[string]any)
		require.Equal(t, param, e["param"])
		require.Equal(t, "not_found", e["code"])
		require.Contains(t, e["message"], "not found")
	}
	unstored := turn(map[string]any{"input": "Hello", "store": false})
	require.Equal(t, false, unstored["store"])
	notFound(map[string]any{"input": "Hi", "previous_response_id": unstored["id"]}, "previous_response_id")
	notFound(map[string]any{"input": "Hi", "previous_response_id": "resp_unknown"}, "previous_response_id")
	notFound(map[string]any{"input": []any{map[string]any{"type": "item_reference", "id": "msg_unknown"}}}, "input[0].id")
	unstoredItem := unstored["output"].([]any)[0].(map[string]any)["id"]
	notFound(map[string]any{"input": []any{map[string]any{"type": "item_reference", "id": unstoredItem}}}, "input[0].id")
}

// TestResponsesStoreBounds: the oldest response goes first when the count
// or the bytes bound is reached, and its id is then a 404. A response's
// bytes are its conversation's roles and texts.
func TestResponsesStoreBounds(t *testing.T) {
	inputs := []string{"Hello, number 1", "Hello, number 2", "Hello, number 3"}
	respond := func(ts *testServer, input string) map[string]any {
		return ts.call(t, "POST", "/v1/responses", map[string]any{"input": input, "max_output_tokens": 4, "temperature": 0}, http.StatusOK)
	}
	free := start(t, server.Config{})
	var size []int64
	for _, in := range inputs {
		size = append(size, int64(len("user"+in+"assistant"+responseText(t, respond(free, in)))))
	}
	for _, c := range []struct {
		name string
		cfg  server.Config
	}{
		{"count", server.Config{StoredResponses: 2}},
		{"bytes", server.Config{StoredResponseBytes: size[1] + size[2]}}, // the last two fit, not all three
	} {
		t.Run(c.name, func(t *testing.T) {
			ts := start(t, c.cfg)
			var ids []any
			for _, in := range inputs {
				ids = append(ids, respond(ts, in)["id"])
			}
			next := func(id any, status int) map[string]any {
				return ts.call(t, "POST", "/v1/responses", map[string]any{"input": "Hi", "max_output_tokens": 1, "previous_response_id": id, "store": false}, status)
			}
			out := next(ids[0], http.StatusNotFound)
			require.Contains(t, out["error"].(map[string]any)["message"], "evicted")
			for _, id := range ids[1:] {
				next(id, http.StatusOK)
			}
		})
	}
}
