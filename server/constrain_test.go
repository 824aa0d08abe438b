package server_test

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/server"
)

// personSchema is what the structured-output tests ask for: every kind of
// value, a nested object and an array of enums, all required, bounded so
// that a random model's text ends within the context.
var personSchema = map[string]any{
	"type": "object",
	"properties": map[string]any{
		"name":  map[string]any{"type": "string", "maxLength": 6},
		"age":   map[string]any{"type": "integer", "minimum": 0, "maximum": 120},
		"tags":  map[string]any{"type": "array", "items": map[string]any{"enum": []any{"a", "b"}}, "maxItems": 2},
		"happy": map[string]any{"type": "boolean"},
		"home": map[string]any{"type": "object", "properties": map[string]any{
			"city": map[string]any{"enum": []any{"Oslo", "Rome"}},
			"zip":  map[string]any{"type": "integer", "minimum": 0, "maximum": 99},
		}, "required": []any{"city", "zip"}, "additionalProperties": false},
	},
	"required":             []any{"name", "age", "tags", "happy", "home"},
	"additionalProperties": false,
}

// checkPerson parses text as personSchema's JSON, strictly.
func checkPerson(t *testing.T, text string) {
	t.Helper()
	var p struct {
		Name  *string
		Age   *int64
		Tags  *[]string
		Happy *bool
		Home  *struct {
			City *string
			Zip  *int64
		}
	}
	dec := json.NewDecoder(strings.NewReader(text))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&p), "text %q", text)
	require.True(t, p.Name != nil && p.Age != nil && p.Tags != nil && p.Happy != nil && p.Home != nil, "text %q", text)
	require.True(t, p.Home.City != nil && p.Home.Zip != nil, "text %q", text)
	assert.LessOrEqual(t, len([]rune(*p.Name)), 6)
	assert.True(t, *p.Age >= 0 && *p.Age <= 120, "age %d", *p.Age)
	assert.LessOrEqual(t, len(*p.Tags), 2)
	for _, tag := range *p.Tags {
		assert.Contains(t, []string{"a", "b"}, tag)
	}
	assert.Contains(t, []string{"Oslo", "Rome"}, *p.Home.City)
	assert.True(t, *p.Home.Zip >= 0 && *p.Home.Zip <= 99, "zip %d", *p.Home.Zip)
}

// checkYesNo parses text as the JSON string "yes" or "no".
func checkYesNo(t *testing.T, text string) {
	t.Helper()
	var v string
	require.NoError(t, json.Unmarshal([]byte(text), &v), "text %q", text)
	assert.Contains(t, []string{"yes", "no"}, v)
}

// TestStructuredOutput: response_format json_schema with n 2 and a seed
// on completions (streamed, each choice constrained apart) and on chat
// (whole and streamed), json_object on
// completions, a GBNF grammar on completions and /execute, json_schema on
// /execute: every text is in the language asked for and ends on end of
// text, on GPT-2 and every Llama-family model (whose vocabularies spell
// JSON in other pieces). Chat asks for an enum: tiny-llama3's template,
// its header tokens spelt out in Llama 2's vocabulary, leaves 16 of the
// 128 positions.
func TestStructuredOutput(t *testing.T) {
	rf := map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "person", "strict": true, "schema": personSchema}}
	for _, s := range everyModel(t) {
		ts := s.ts
		t.Run(s.name, func(t *testing.T) {
			const prompt = "JSON:"
			n := s.m.Config.NPositions - len(s.tok.EncodePrompt(prompt))
			texts, finishes := map[float64]string{}, map[float64]any{}
			for _, c := range streamChunks(t, ts, "/v1/completions", map[string]any{
				"prompt": prompt, "n": 2, "seed": 1, "max_tokens": n, "response_format": rf, "stream": true}) {
				ch := choice0(t, c)
				i := ch["index"].(float64)
				texts[i] += ch["text"].(string)
				if r := ch["finish_reason"]; r != nil {
					finishes[i] = r
				}
			}
			require.Len(t, texts, 2)
			for i, text := range texts {
				assert.Equal(t, "stop", finishes[i], "choice %v", i)
				checkPerson(t, text)
			}

			yesNo := map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "answer", "schema": map[string]any{"enum": []any{"yes", "no"}}}}
			room := s.m.Config.NPositions - len(s.chatIDs(t, server.ChatMessage{Role: "user", Content: "Hello"}))
			chat := map[string]any{"messages": chatMessages[1:], "n": 2, "seed": 1, "max_tokens": room, "response_format": yesNo}
			for _, c := range ts.call(t, "POST", "/v1/chat/completions", chat, http.StatusOK)["choices"].([]any) {
				c := c.(map[string]any)
				assert.Equal(t, "stop", c["finish_reason"])
				checkYesNo(t, c["message"].(map[string]any)["content"].(string))
			}
			chat["stream"], chat["n"] = true, 1
			var text strings.Builder
			for _, c := range streamChunks(t, ts, "/v1/chat/completions", chat) {
				for _, ch := range c["choices"].([]any) {
					if s, ok := ch.(map[string]any)["delta"].(map[string]any)["content"].(string); ok {
						text.WriteString(s)
					}
				}
			}
			checkYesNo(t, text.String())

			obj := ts.call(t, "POST", "/v1/completions", map[string]any{
				"prompt": "JSON:", "seed": 1, "max_tokens": 40, "response_format": map[string]any{"type": "json_object"}}, http.StatusOK)
			c := choice0(t, obj)
			if c["finish_reason"] == "stop" { // a free-form object may not close within the tokens
				var v map[string]any
				require.NoError(t, json.Unmarshal([]byte(c["text"].(string)), &v), "text %q", c["text"])
			} else {
				assert.True(t, strings.HasPrefix(strings.TrimSpace(c["text"].(string)), "{"), "text %q", c["text"])
			}

			gbnf := `root ::= "The answer is " [0-9]{1,3} "."`
			cmpl := ts.call(t, "POST", "/v1/completions", map[string]any{
				"prompt": "Q:", "temperature": 0, "max_tokens": 20, "grammar": gbnf}, http.StatusOK)
			c = choice0(t, cmpl)
			assert.Regexp(t, regexp.MustCompile(`^The answer is [0-9]{1,3}\.$`), c["text"])
			assert.Equal(t, "stop", c["finish_reason"])

			_, tokens, terminal, end := ts.execute(t, t.Context(), map[string]any{
				"job_id": "g1", "prompt": "Q:", "max_tokens": 20, "grammar": gbnf}).run(t)
			require.Equal(t, "end", terminal)
			assert.Equal(t, "eos", end["stop_reason"])
			assert.Regexp(t, regexp.MustCompile(`^The answer is [0-9]{1,3}\.$`), tokenText(tokens))

			_, tokens, terminal, _ = ts.execute(t, t.Context(), map[string]any{
				"job_id": "g2", "prompt": "Q:", "max_tokens": 120, "seed": 3, "json_schema": personSchema}).run(t)
			require.Equal(t, "end", terminal)
			checkPerson(t, tokenText(tokens))
		})
	}
}

// TestStructuredOutputRefused: what cannot be honoured is a 400 naming
// the field, on the OpenAI routes and /execute.
func TestStructuredOutputRefused(t *testing.T) {
	ts := start(t, server.Config{})
	for _, c := range []struct {
		name  string
		body  map[string]any
		param string
		msg   string
	}{
		{"unknown type", map[string]any{"response_format": map[string]any{"type": "xml"}}, "response_format.type", `must be "text", "json_object" or "json_schema"`},
		{"not an object", map[string]any{"response_format": "json"}, "response_format", "must be an object"},
		{"no schema", map[string]any{"response_format": map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "x"}}}, "response_format.json_schema.schema", "is required"},
		{"unsupported keyword", map[string]any{"response_format": map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "x",
			"schema": map[string]any{"type": "integer", "multipleOf": 3}}}}, "response_format.json_schema.schema", `keyword "multipleOf" is not supported`},
		{"unsupported pattern", map[string]any{"response_format": map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "x",
			"schema": map[string]any{"type": "string", "pattern": "^(?=a)a+$"}}}}, "response_format.json_schema.schema", `#/pattern: pattern at character 2: the group (?= is not supported`},
		{"const beside a type", map[string]any{"json_schema": map[string]any{"const": "a", "type": "integer"}}, "json_schema", `#/const: no value of const satisfies the keywords beside it (type)`},
		{"overlapping oneOf", map[string]any{"response_format": map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "x",
			"schema": map[string]any{"oneOf": []any{map[string]any{"type": "integer"}, map[string]any{"type": "number"}}}}}},
			"response_format.json_schema.schema", `#/oneOf: alternatives 0 and 1 may both match one value`},
		{"fractional number bound", map[string]any{"json_schema": map[string]any{"type": "number", "maximum": 0.5}}, "json_schema", `#/maximum: 0.5 is not supported`},
		{"bad grammar", map[string]any{"grammar": `root ::= foo`}, "grammar", `rule "foo" is used but never defined`},
		{"empty language", map[string]any{"grammar": `root ::= [^\x00-\U0010FFFF]`}, "grammar", `the language is empty`},
		{"lone surrogate", map[string]any{"grammar": `root ::= "\uD800"`}, "grammar", `the language is empty`},
		{"grammar not a string", map[string]any{"grammar": 3}, "grammar", ""},
		{"two constraints", map[string]any{"grammar": `root ::= "a"`, "response_format": map[string]any{"type": "json_object"}}, "grammar", "give one of"},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, route := range []string{"/v1/chat/completions", "/v1/completions"} {
				body := map[string]any{"messages": chatMessages, "prompt": "Hi", "max_tokens": 4}
				if route == "/v1/completions" {
					delete(body, "messages")
				} else {
					delete(body, "prompt")
				}
				for k, v := range c.body {
					body[k] = v
				}
				e := ts.call(t, "POST", route, body, http.StatusBadRequest)["error"].(map[string]any)
				assert.Equal(t, c.param, e["param"], "%s: %s", route, e["message"])
				assert.Contains(t, e["message"], c.msg, route)
			}
		})
	}
	resp := ts.call(t, "POST", "/execute", map[string]any{"job_id": "x", "prompt": "Hi", "json_schema": map[string]any{"type": "integer", "multipleOf": 3}}, http.StatusBadRequest)
	errs := resp["errors"].([]any)
	require.Len(t, errs, 1)
	assert.Equal(t, "json_schema", errs[0].(map[string]any)["field"])
	assert.Contains(t, errs[0].(map[string]any)["message"], `"multipleOf" is not supported`)
}
