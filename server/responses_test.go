package server_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/server"
)

// responseText is the text of a response's one output message.
func responseText(t *testing.T, resp map[string]any) string {
	t.Helper()
	output := resp["output"].([]any)
	require.Len(t, output, 1)
	msg := output[0].(map[string]any)
	require.Equal(t, "message", msg["type"])
	require.Equal(t, "assistant", msg["role"])
	require.Regexp(t, "^msg_", msg["id"])
	content := msg["content"].([]any)
	require.Len(t, content, 1)
	part := content[0].(map[string]any)
	require.Equal(t, "output_text", part["type"])
	require.Equal(t, []any{}, part["annotations"])
	return part["text"].(string)
}

// TestResponsesInputForms: every form of input (a string, messages with
// string or part content, message items, earlier assistant output,
// instructions) is the chat completion of the same conversation: the
// prompt is rendered by the chat route's template code, so text and
// token counts agree, on GPT-2 and every family with its own template; a
// conversation a template refuses is refused by both routes.
func TestResponsesInputForms(t *testing.T) {
	models := everyModel(t)
	parts := func(typ, text string) []map[string]any { return []map[string]any{{"type": typ, "text": text}} }
	tests := []struct {
		name     string
		body     map[string]any
		messages []map[string]any
	}{
		{"string", map[string]any{"input": "Hello"},
			[]map[string]any{{"role": "user", "content": "Hello"}}},
		{"instructions", map[string]any{"input": "Hello", "instructions": "Be brief."}, chatMessages},
		{"messages", map[string]any{"input": chatMessages}, chatMessages},
		{"input_text parts", map[string]any{"input": []map[string]any{
			{"role": "developer", "content": parts("input_text", "Be brief.")},
			{"role": "user", "content": []map[string]any{{"type": "input_text", "text": "Hel"}, {"type": "input_text", "text": "lo"}}}}},
			[]map[string]any{{"role": "developer", "content": "Be brief."}, {"role": "user", "content": "Hel\nlo"}}},
		{"message items with earlier output", map[string]any{"instructions": "Be brief.", "input": []map[string]any{
			{"type": "message", "role": "user", "content": parts("input_text", "Hello")},
			{"type": "message", "role": "assistant", "id": "msg_1", "status": "completed", "content": []map[string]any{
				{"type": "output_text", "text": "Hi.", "annotations": []any{}}}},
			{"type": "message", "role": "user", "content": "Again"}}},
			[]map[string]any{{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hello"},
				{"role": "assistant", "content": "Hi."}, {"role": "user", "content": "Again"}}},
	}
	for _, s := range models {
		for _, tc := range tests {
			t.Run(s.name+"/"+tc.name, func(t *testing.T) {
				ts := s.ts
				status, chatBody := ts.callAny(t, "POST", "/v1/chat/completions", map[string]any{
					"messages": tc.messages, "max_tokens": 6, "temperature": 0})
				body := map[string]any{"max_output_tokens": 6, "temperature": 0}
				for k, v := range tc.body {
					body[k] = v
				}
				if status != http.StatusOK {
					require.Equal(t, http.StatusBadRequest, status, "chat: %v", chatBody)
					e := ts.call(t, "POST", "/v1/responses", body, http.StatusBadRequest)["error"].(map[string]any)
					require.Equal(t, "input", e["param"])
					// The same words, each under its route's field.
					why, ok := strings.CutPrefix(chatBody["error"].(map[string]any)["message"].(string), "messages: ")
					require.True(t, ok, "chat names messages: %v", chatBody)
					require.Equal(t, "input: "+why, e["message"])
					return
				}
				resp := ts.call(t, "POST", "/v1/responses", body, http.StatusOK)
				require.Equal(t, "response", resp["object"])
				require.Regexp(t, "^resp_", resp["id"])
				require.Equal(t, chatBody["model"], resp["model"])
				require.Equal(t, choice0(t, chatBody)["message"].(map[string]any)["content"], responseText(t, resp))
				cu, ru := chatBody["usage"].(map[string]any), resp["usage"].(map[string]any)
				require.Equal(t, cu["prompt_tokens"], ru["input_tokens"])
				require.Equal(t, cu["completion_tokens"], ru["output_tokens"])
				require.Equal(t, cu["total_tokens"], ru["total_tokens"])
				require.Equal(t, map[string]any{"reasoning_tokens": 0.0}, ru["output_tokens_details"])
			})
		}
	}
}

// TestResponsesStatus: a response cut by max_output_tokens is incomplete
// (reason max_output_tokens, output_tokens the bound); one that stops
// before it is completed; both echo the request's settings.
func TestResponsesStatus(t *testing.T) {
	ts := start(t, server.Config{})
	cut := ts.call(t, "POST", "/v1/responses", map[string]any{"input": "Hello", "max_output_tokens": 5, "temperature": 0,
		"include": []string{"message.output_text.logprobs"}}, http.StatusOK)
	require.Equal(t, "incomplete", cut["status"])
	require.Equal(t, map[string]any{"reason": "max_output_tokens"}, cut["incomplete_details"])
	require.Equal(t, "incomplete", cut["output"].([]any)[0].(map[string]any)["status"])
	require.EqualValues(t, 5, cut["usage"].(map[string]any)["output_tokens"])
	require.EqualValues(t, 5, cut["max_output_tokens"])
	require.EqualValues(t, 0, cut["temperature"])
	require.EqualValues(t, 1, cut["top_p"])
	require.Nil(t, cut["error"])

	// A stop string inside that text ends the response before the bound.
	stop, before := stopInside(t, ts, "Hello")
	done := ts.call(t, "POST", "/v1/responses", map[string]any{"input": "Hello", "max_output_tokens": 5, "temperature": 0,
		"stop": stop}, http.StatusOK)
	require.Equal(t, "completed", done["status"])
	require.Nil(t, done["incomplete_details"])
	require.Equal(t, "completed", done["output"].([]any)[0].(map[string]any)["status"])
	require.Equal(t, before, responseText(t, done))
	require.Less(t, done["usage"].(map[string]any)["output_tokens"], 5.0)
	require.EqualValues(t, 5, done["max_output_tokens"])
}

// stopInside finds a stop string in the greedy 5-token reply to input: a
// token, after the first, whose text first occurs where it stands. It
// returns it and the text before it.
func stopInside(t *testing.T, ts *testServer, input string) (stop, before string) {
	t.Helper()
	resp := ts.call(t, "POST", "/v1/responses", map[string]any{"input": input, "max_output_tokens": 5, "temperature": 0,
		"include": []string{"message.output_text.logprobs"}}, http.StatusOK)
	text := responseText(t, resp)
	logprobs := resp["output"].([]any)[0].(map[string]any)["content"].([]any)[0].(map[string]any)["logprobs"].([]any)
	require.Len(t, logprobs, 5)
	var prefix strings.Builder
	for i, lp := range logprobs {
		tok := lp.(map[string]any)["token"].(string)
		if i > 0 && strings.TrimSpace(tok) != "" && strings.Index(text, tok) == prefix.Len() {
			return tok, prefix.String()
		}
		prefix.WriteString(tok)
	}
	t.Fatalf("no token of %q to stop at", text)
	return "", ""
}

// responseEvents reads a Responses stream to its end, checking that each
// event's name is its data's type and that sequence numbers count from 0.
func responseEvents(t *testing.T, ts *testServer, body map[string]any) []map[string]any {
	t.Helper()
	resp := ts.do(t, "POST", "/v1/responses", body)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	sse := newSSEReader(resp.Body)
	var events []map[string]any
	for {
		ev, err := sse.Next()
		if err == io.EOF {
			return events
		}
		require.NoError(t, err)
		var data map[string]any
		require.NoError(t, json.Unmarshal([]byte(ev.Data), &data), "event %s: %q", ev.Name, ev.Data)
		require.Equal(t, ev.Name, data["type"], "event line and data type disagree")
		require.EqualValues(t, len(events), data["sequence_number"])
		events = append(events, data)
	}
}

// eventTypes lists the events' types, each run of deltas as one.
func eventTypes(events []map[string]any) []string {
	var types []string
	for _, ev := range events {
		typ := ev["type"].(string)
		if len(types) > 0 && typ == "response.output_text.delta" && types[len(types)-1] == typ {
			continue
		}
		types = append(types, typ)
	}
	return types
}

// TestResponsesStream: the stream is the Responses API's events in order,
// its deltas add up to the text of the same request unstreamed, and its
// last event carries that response whole, completed or incomplete.
func TestResponsesStream(t *testing.T) {
	ts := start(t, server.Config{})
	stop, _ := stopInside(t, ts, "Hello")
	for _, tc := range []struct {
		name   string
		body   map[string]any
		status string
	}{
		{"incomplete", map[string]any{"input": chatMessages, "max_output_tokens": 6, "temperature": 0}, "incomplete"},
		{"completed", map[string]any{"input": "Hello", "max_output_tokens": 5, "temperature": 0, "stop": stop}, "completed"},
		{"logprobs", map[string]any{"input": "Hello", "max_output_tokens": 4, "temperature": 0,
			"include": []string{"message.output_text.logprobs"}, "top_logprobs": 2}, "incomplete"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := ts.call(t, "POST", "/v1/responses", tc.body, http.StatusOK)
			require.Equal(t, tc.status, want["status"])
			body := map[string]any{"stream": true}
			for k, v := range tc.body {
				body[k] = v
			}
			events := responseEvents(t, ts, body)
			require.Equal(t, []string{"response.created", "response.in_progress", "response.output_item.added",
				"response.content_part.added", "response.output_text.delta", "response.output_text.done",
				"response.content_part.done", "response.output_item.done", "response." + want["status"].(string)}, eventTypes(events))

			created := events[0]["response"].(map[string]any)
			require.Equal(t, "in_progress", created["status"])
			require.Equal(t, []any{}, created["output"])
			require.Nil(t, created["usage"])
			require.Regexp(t, "^resp_", created["id"])
			item := events[2]["item"].(map[string]any)
			require.Equal(t, "in_progress", item["status"])
			itemID := item["id"].(string)

			var text strings.Builder
			logprobs := []any{}
			for _, ev := range events[4 : len(events)-4] {
				require.Equal(t, itemID, ev["item_id"])
				require.EqualValues(t, 0, ev["output_index"])
				require.EqualValues(t, 0, ev["content_index"])
				text.WriteString(ev["delta"].(string))
				logprobs = append(logprobs, ev["logprobs"].([]any)...)
			}
			wantText := responseText(t, want)
			require.Equal(t, wantText, text.String())
			wantPart := want["output"].([]any)[0].(map[string]any)["content"].([]any)[0].(map[string]any)
			require.Equal(t, wantPart["logprobs"], logprobs)
			if body["include"] != nil {
				require.NotEmpty(t, logprobs)
				for _, lp := range logprobs {
					require.Len(t, lp.(map[string]any)["top_logprobs"], 2)
				}
			}
			require.Equal(t, wantText, events[len(events)-4]["text"])
			require.Equal(t, wantPart, events[len(events)-3]["part"])

			last := events[len(events)-1]["response"].(map[string]any)
			require.Equal(t, created["id"], last["id"])
			require.Equal(t, want["output"].([]any)[0].(map[string]any)["status"], events[len(events)-2]["item"].(map[string]any)["status"])
			for _, k := range []string{"status", "incomplete_details", "temperature", "max_output_tokens", "instructions", "text"} {
				require.Equal(t, want[k], last[k], k)
			}
			require.Equal(t, wantText, responseText(t, last))
			require.Equal(t, want["usage"].(map[string]any)["output_tokens"], last["usage"].(map[string]any)["output_tokens"])
		})
	}
}

// TestResponsesStreamFails: a stream cut short (here by the request
// timeout) ends with an error event the SDKs raise, then response.failed,
// which carries the text streamed so far; nothing follows it.
func TestResponsesStreamFails(t *testing.T) {
	ts := oneSlot(t, server.Config{RequestTimeout: 150 * time.Millisecond})
	events := responseEvents(t, ts, map[string]any{"input": "Hello", "max_output_tokens": 100, "stream": true})
	types := eventTypes(events)
	require.Equal(t, []string{"response.created", "response.in_progress", "response.output_item.added",
		"response.content_part.added", "response.output_text.delta", "error", "response.failed"}, types)
	errEv := events[len(events)-2]
	require.Equal(t, "TIMEOUT", errEv["code"])
	require.Equal(t, "TIMEOUT", errEv["error"].(map[string]any)["code"])
	require.Equal(t, "timeout_error", errEv["error"].(map[string]any)["type"])
	require.NotEmpty(t, errEv["message"])
	failed := events[len(events)-1]["response"].(map[string]any)
	require.Equal(t, "failed", failed["status"])
	require.Equal(t, "TIMEOUT", failed["error"].(map[string]any)["code"])
	var streamed strings.Builder
	for _, ev := range events[4 : len(events)-2] {
		streamed.WriteString(ev["delta"].(string))
	}
	require.Equal(t, streamed.String(), responseText(t, failed))
}

// TestResponsesFields: what the SDKs send beside the prompt is accepted,
// echoed where the response reports it and listed in X-Unused-Fields
// where it has no effect; what cannot be honoured is a 400 naming the
// field and why.
func TestResponsesFields(t *testing.T) {
	ts := start(t, server.Config{})
	accepted := map[string]any{"model": "tiny-gpt2", "input": "Hello", "max_output_tokens": 2, "store": true,
		"metadata": map[string]string{"k": "v"}, "user": "u1", "parallel_tool_calls": false, "truncation": "auto",
		"reasoning": map[string]any{}, "include": []string{"reasoning.encrypted_content"}, "service_tier": "auto",
		"prompt_cache_key": "p", "safety_identifier": "s", "tools": []any{}, "tool_choice": "none", "seed": 7,
		"text": map[string]any{"format": map[string]any{"type": "text"}, "verbosity": "low"}, "top_p": 0.5, "temperature": 0.7,
		"previous_response_id": nil, "background": false, "max_tool_calls": 3}
	resp := ts.do(t, "POST", "/v1/responses", accepted)
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", b)
	unused := strings.Split(resp.Header.Get("X-Unused-Fields"), ", ")
	require.NotContains(t, unused, "store")
	require.Subset(t, unused, []string{"metadata", "user", "parallel_tool_calls", "truncation", "reasoning",
		"service_tier", "prompt_cache_key", "safety_identifier", "max_tool_calls", "text.verbosity"})
	var out map[string]any
	require.NoError(t, json.Unmarshal(b, &out))
	require.Equal(t, map[string]any{"k": "v"}, out["metadata"])
	require.Equal(t, false, out["parallel_tool_calls"])
	require.Equal(t, true, out["store"])
	require.Equal(t, "none", out["tool_choice"])
	require.Equal(t, map[string]any{"format": map[string]any{"type": "text"}, "verbosity": "low"}, out["text"])
	require.EqualValues(t, 0.5, out["top_p"])
	require.EqualValues(t, 0.7, out["temperature"])
	seeded := ts.call(t, "POST", "/v1/responses", accepted, http.StatusOK)
	require.Equal(t, responseText(t, out), responseText(t, seeded), "a seed makes sampling repeatable")

	tests := []struct {
		name    string
		body    map[string]any
		param   string
		message string
	}{
		{"no input", map[string]any{}, "input", "is required"},
		{"empty input", map[string]any{"input": ""}, "input", "must not be empty"},
		{"no items", map[string]any{"input": []any{}}, "input", "at least one item"},
		{"input of numbers", map[string]any{"input": 3}, "input", "must be a string or an array"},
		{"conversation", map[string]any{"input": "Hi", "conversation": "conv_1"}, "conversation", "stores no conversations"},
		{"tools", map[string]any{"input": "Hi", "tools": []any{map[string]any{"type": "function", "name": "f"}}}, "tools", "does not call tools"},
		{"tool_choice required", map[string]any{"input": "Hi", "tool_choice": "required"}, "tool_choice", "does not call tools"},
		{"background", map[string]any{"input": "Hi", "background": true}, "background", "generated during its request"},
		{"format of another type", map[string]any{"input": "Hi", "text": map[string]any{"format": map[string]any{"type": "xml"}}},
			"text.format.type", `must be "text", "json_object" or "json_schema"`},
		{"format not an object", map[string]any{"input": "Hi", "text": map[string]any{"format": "json"}}, "text.format", "must be an object"},
		{"json_schema without a schema", map[string]any{"input": "Hi", "text": map[string]any{"format": map[string]any{"type": "json_schema", "name": "x"}}},
			"text.format.schema", "is required"},
		{"json_schema of an unsupported keyword", map[string]any{"input": "Hi", "text": map[string]any{"format": map[string]any{"type": "json_schema",
			"name": "x", "schema": map[string]any{"type": "integer", "multipleOf": 3}}}}, "text.format.schema", `keyword "multipleOf" is not supported`},
		{"text of another key", map[string]any{"input": "Hi", "text": map[string]any{"style": "terse"}}, "text.style", "only format and verbosity"},
		{"verbosity", map[string]any{"input": "Hi", "text": map[string]any{"verbosity": "loud"}}, "text.verbosity", "must be"},
		{"function_call_output", map[string]any{"input": []any{map[string]any{"type": "function_call_output", "call_id": "c", "output": "x"}}},
			"input[0].type", "does not call tools"},
		{"image part", map[string]any{"input": []any{map[string]any{"role": "user", "content": []any{
			map[string]any{"type": "input_image", "image_url": "https://x"}}}}}, "input[0].content[0].type", "only input_text and output_text parts"},
		{"tool role", map[string]any{"input": []any{map[string]any{"role": "tool", "content": "x"}}}, "input[0].role", "must be one of"},
		{"name in a message", map[string]any{"input": []any{map[string]any{"role": "user", "content": "x", "name": "ann"}}},
			"input[0].name", "only role, content, type, id, status and phase"},
		{"max_tokens", map[string]any{"input": "Hi", "max_tokens": 5}, "max_tokens", "max_output_tokens"},
		{"n", map[string]any{"input": "Hi", "n": 2}, "n", "one output"},
		{"max_output_tokens 0", map[string]any{"input": "Hi", "max_output_tokens": 0}, "max_output_tokens", "must be ≥ 1"},
		{"max_output_tokens beyond the context", map[string]any{"input": "Hi", "max_output_tokens": 1 << 20}, "max_output_tokens", "context"},
		{"top_logprobs alone", map[string]any{"input": "Hi", "top_logprobs": 3}, "top_logprobs", "message.output_text.logprobs"},
		{"include unknown", map[string]any{"input": "Hi", "include": []string{"everything"}}, "include[0]", "must be one of"},
		{"truncation", map[string]any{"input": "Hi", "truncation": "middle"}, "truncation", `"auto" or "disabled"`},
		{"stream_options without stream", map[string]any{"input": "Hi", "stream_options": map[string]any{}}, "stream_options", "needs stream"},
		{"unknown field", map[string]any{"input": "Hi", "top_a": 1}, "top_a", "not a parameter"},
		{"metadata of numbers", map[string]any{"input": "Hi", "metadata": map[string]any{"k": 1}}, "metadata", "an object of strings"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := ts.call(t, "POST", "/v1/responses", tc.body, http.StatusBadRequest)["error"].(map[string]any)
			require.Equal(t, tc.param, e["param"], "%v", e["message"])
			require.Contains(t, e["message"], tc.message)
			require.Equal(t, "invalid_request_error", e["type"])
		})
	}
	e := ts.call(t, "POST", "/v1/responses", map[string]any{"model": "gpt-4o", "input": "Hi"}, http.StatusNotFound)["error"].(map[string]any)
	require.Equal(t, "model_not_found", e["code"])
}

// TestResponsesLenient: with --lenient, chat's max_tokens and n and
// unknown fields (a message's too) are ignored, not used: one output of
// max_output_tokens tokens, and X-Unused-Fields names what was ignored.
func TestResponsesLenient(t *testing.T) {
	ts := start(t, server.Config{Lenient: true})
	resp := ts.do(t, "POST", "/v1/responses", map[string]any{"input": []map[string]any{{"role": "user", "content": "Hi", "name": "ann"}},
		"max_output_tokens": 3, "max_tokens": 9, "n": 2, "top_a": 1, "temperature": 0})
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", b)
	require.ElementsMatch(t, []string{"input[].name", "max_tokens", "n", "top_a"}, strings.Split(resp.Header.Get("X-Unused-Fields"), ", "))
	var out map[string]any
	require.NoError(t, json.Unmarshal(b, &out))
	require.EqualValues(t, 3, out["usage"].(map[string]any)["output_tokens"])
	require.EqualValues(t, 3, out["max_output_tokens"])
	responseText(t, out)
}

// TestResponsesFamilyTemplate: on a model with its own chat template,
// instructions and input are rendered as chat renders the same messages
// (special tokens as single ids), and a conversation the template refuses
// is a 400 under input carrying the template's message.
func TestResponsesFamilyTemplate(t *testing.T) {
	for _, tc := range []struct {
		model  string
		status int
	}{{"tiny-llama-qwen2", http.StatusOK}, {"tiny-llama", http.StatusBadRequest}} {
		t.Run(tc.model, func(t *testing.T) {
			ts, _, _ := familyServer(t, tc.model)
			resp := ts.call(t, "POST", "/v1/responses", map[string]any{"instructions": "Be brief.", "input": "Hello",
				"max_output_tokens": 6, "temperature": 0}, tc.status)
			if tc.status != http.StatusOK {
				e := resp["error"].(map[string]any)
				require.Equal(t, "input", e["param"])
				require.Contains(t, e["message"], "Conversation roles must alternate user/assistant")
				return
			}
			chat := ts.call(t, "POST", "/v1/chat/completions", map[string]any{"messages": chatMessages, "max_tokens": 6, "temperature": 0}, http.StatusOK)
			require.Equal(t, chat["usage"].(map[string]any)["prompt_tokens"], resp["usage"].(map[string]any)["input_tokens"])
			require.Equal(t, choice0(t, chat)["message"].(map[string]any)["content"], responseText(t, resp))
		})
	}
}

// TestResponsesStructuredOutput: text.format json_schema (the Responses
// API's flat form) constrains the output to the schema, for every seed
// and streamed, finishing completed; json_object to a JSON object; the
// format is echoed as given.
func TestResponsesStructuredOutput(t *testing.T) {
	ts := start(t, server.Config{})
	format := map[string]any{"type": "json_schema", "name": "person", "strict": true, "schema": personSchema}
	for seed := range 3 {
		out := ts.call(t, "POST", "/v1/responses", map[string]any{"input": chatMessages, "seed": seed, "max_output_tokens": 80,
			"text": map[string]any{"format": format}}, http.StatusOK)
		require.Equal(t, "completed", out["status"])
		checkPerson(t, responseText(t, out))
		echoed, err := json.Marshal(out["text"].(map[string]any)["format"])
		require.NoError(t, err)
		want, err := json.Marshal(format)
		require.NoError(t, err)
		require.JSONEq(t, string(want), string(echoed))
	}
	events := responseEvents(t, ts, map[string]any{"input": "Hello", "seed": 7, "max_output_tokens": 80,
		"text": map[string]any{"format": format}, "stream": true})
	var text strings.Builder
	for _, ev := range events {
		if ev["type"] == "response.output_text.delta" {
			text.WriteString(ev["delta"].(string))
		}
	}
	checkPerson(t, text.String())
	require.Equal(t, "response.completed", events[len(events)-1]["type"])

	obj := ts.call(t, "POST", "/v1/responses", map[string]any{"input": "JSON:", "seed": 1, "max_output_tokens": 100,
		"text": map[string]any{"format": map[string]any{"type": "json_object"}}}, http.StatusOK)
	if obj["status"] == "completed" { // a free-form object may not close within the tokens
		var v map[string]any
		require.NoError(t, json.Unmarshal([]byte(responseText(t, obj)), &v), "text %q", responseText(t, obj))
	} else {
		require.True(t, strings.HasPrefix(strings.TrimSpace(responseText(t, obj)), "{"), "text %q", responseText(t, obj))
	}
}
