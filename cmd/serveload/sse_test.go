package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseData(t *testing.T) {
	type want struct {
		done      bool
		text      string
		errMsg    string
		usageToks int // -1: no usage
		cached    int // -1: the server said nothing
	}
	for _, tc := range []struct {
		name, data string
		want       want
	}{
		{"ours: completions chunk",
			`{"id":"cmpl-1","object":"text_completion","created":1,"model":"bench-gguf","choices":[{"index":0,"text":" associated","logprobs":null,"finish_reason":null}]}`,
			want{text: " associated", usageToks: -1, cached: -1}},
		{"ours: finish chunk carries no text",
			`{"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":"","logprobs":null,"finish_reason":"length"}]}`,
			want{usageToks: -1, cached: -1}},
		{"ours: include_usage chunk, empty choices",
			`{"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":7,"completion_tokens":5,"total_tokens":12}}`,
			want{usageToks: 5, cached: -1}},
		{"OpenAI usage with cached_tokens",
			`{"choices":[],"usage":{"prompt_tokens":220,"completion_tokens":64,"prompt_tokens_details":{"cached_tokens":192}}}`,
			want{usageToks: 64, cached: 192}},
		{"chat delta content",
			`{"object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}]}`,
			want{text: "Hi", usageToks: -1, cached: -1}},
		{"chat role-only first delta has no text",
			`{"object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant"}}]}`,
			want{usageToks: -1, cached: -1}},
		{"llama.cpp: completions chunk",
			`{"choices":[{"text":" associated","index":0,"logprobs":null,"finish_reason":null}],"created":1,"model":"x","system_fingerprint":"b4748-c392e5094","object":"text_completion","id":"chatcmpl-3q"}`,
			want{text: " associated", usageToks: -1, cached: -1}},
		{"llama.cpp: final chunk, usage and timings (cache_prompt reuse)",
			`{"choices":[{"text":"","index":0,"logprobs":null,"finish_reason":"length"}],"object":"text_completion","usage":{"completion_tokens":5,"prompt_tokens":207,"total_tokens":212},"timings":{"prompt_n":7,"prompt_ms":25.5,"predicted_n":5}}`,
			want{usageToks: 5, cached: 200}},
		{"[DONE]", `[DONE]`, want{done: true, usageToks: -1, cached: -1}},
		{"error inside the stream",
			`{"error":{"message":"cancelled","type":"server_error","code":"CANCELLED"}}`,
			want{errMsg: "cancelled", usageToks: -1, cached: -1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev, err := parseData(tc.data)
			require.NoError(t, err)
			assert.Equal(t, tc.want.done, ev.done)
			assert.Equal(t, tc.want.text, ev.text)
			assert.Equal(t, tc.want.errMsg, ev.errMsg)
			if tc.want.usageToks < 0 {
				assert.Nil(t, ev.usage)
			} else if assert.NotNil(t, ev.usage) {
				assert.Equal(t, tc.want.usageToks, ev.usage.CompletionTokens)
			}
			n, ok := ev.cachedTokens()
			assert.Equal(t, tc.want.cached >= 0, ok)
			if ok {
				assert.Equal(t, tc.want.cached, n)
			}
		})
	}
	_, err := parseData(`{"choices":[`)
	assert.Error(t, err)
}

func TestReadEvents(t *testing.T) {
	for _, tc := range []struct {
		name, stream string
		want         []string
	}{
		{"ours and llama.cpp: one data line an event",
			"data: {\"a\":1}\n\ndata: {\"a\":2}\n\ndata: [DONE]\n\n",
			[]string{`{"a":1}`, `{"a":2}`, "[DONE]"}},
		{"CRLF line ends, no space after the colon",
			"data:{\"a\":1}\r\n\r\ndata: [DONE]\r\n\r\n",
			[]string{`{"a":1}`, "[DONE]"}},
		{"event:, id: and comment lines are skipped",
			": keep-alive\n\nevent: token\nid: 3\ndata: {\"t\":\"x\"}\n\n",
			[]string{`{"t":"x"}`}},
		{"several data lines join with newlines",
			"data: {\"a\":\ndata: 1}\n\n",
			[]string{"{\"a\":\n1}"}},
		{"last event without its blank line",
			"data: {\"a\":1}\n\ndata: [DONE]",
			[]string{`{"a":1}`, "[DONE]"}},
		{"blank lines alone dispatch nothing", "\n\n\n", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			require.NoError(t, readEvents(strings.NewReader(tc.stream), func(d string) error {
				got = append(got, d)
				return nil
			}))
			assert.Equal(t, tc.want, got)
		})
	}
	stop := errors.New("stop")
	assert.ErrorIs(t, readEvents(strings.NewReader("data: 1\n\ndata: 2\n\n"), func(string) error { return stop }), stop)
}
