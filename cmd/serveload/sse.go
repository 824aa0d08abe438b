package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// event is what one SSE data payload of an OpenAI-style stream tells the
// load generator. Both our serve and llama-server send one JSON object per
// `data:` line and end with `data: [DONE]`; the fields read here are the
// ones they share (llama.cpp's timings are read too, see cachedTokens).
type event struct {
	done    bool   // data: [DONE]
	text    string // choices[0].text (completions) or choices[0].delta.content (chat)
	usage   *usage // the usage chunk (include_usage) or llama.cpp's final chunk
	timings *timings
	errMsg  string // an {"error": ...} object sent inside the stream
}

type usage struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	PromptTokensDetails *struct {
		CachedTokens *int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
}

// timings is llama-server's per-request report; prompt_n counts only the
// prompt tokens it evaluated, so prompt_tokens - prompt_n is what its
// cache_prompt reused (it reports no cached_tokens of its own).
type timings struct {
	PromptN *int `json:"prompt_n"`
}

// cachedTokens is the prompt tokens the server says it reused, and whether
// it said anything: OpenAI's usage.prompt_tokens_details.cached_tokens when
// present, else llama.cpp's prompt_tokens minus timings.prompt_n.
func (e event) cachedTokens() (int, bool) {
	if e.usage != nil && e.usage.PromptTokensDetails != nil && e.usage.PromptTokensDetails.CachedTokens != nil {
		return *e.usage.PromptTokensDetails.CachedTokens, true
	}
	if e.usage != nil && e.timings != nil && e.timings.PromptN != nil {
		return max(e.usage.PromptTokens-*e.timings.PromptN, 0), true
	}
	return 0, false
}

type wireChunk struct {
	Choices []struct {
		Text  *string `json:"text"`
		Delta *struct {
			Content *string `json:"content"`
		} `json:"delta"`
	} `json:"choices"`
	Usage   *usage   `json:"usage"`
	Timings *timings `json:"timings"`
	Error   *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// parseData decodes one event's data payload.
func parseData(data string) (event, error) {
	if strings.TrimSpace(data) == "[DONE]" {
		return event{done: true}, nil
	}
	var c wireChunk
	if err := json.Unmarshal([]byte(data), &c); err != nil {
		return event{}, fmt.Errorf("bad SSE data %.80q: %w", data, err)
	}
	ev := event{usage: c.Usage, timings: c.Timings}
	if c.Error != nil {
		ev.errMsg = c.Error.Message
		if ev.errMsg == "" {
			ev.errMsg = "error event"
		}
	}
	if len(c.Choices) > 0 {
		ch := c.Choices[0]
		switch {
		case ch.Text != nil:
			ev.text = *ch.Text
		case ch.Delta != nil && ch.Delta.Content != nil:
			ev.text = *ch.Delta.Content
		}
	}
	return ev, nil
}

// readEvents reads an SSE stream and calls fn with each event's data as
// soon as the blank line ending it arrives (the arrival time is what the
// latency columns measure, so nothing is buffered past an event). Several
// data lines of one event are joined with newlines, as the SSE spec says;
// event:, id:, retry: and comment lines are skipped. A last event without
// its blank line is still delivered at EOF.
func readEvents(r io.Reader, fn func(data string) error) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var data []string
	flush := func() error {
		if len(data) == 0 {
			return nil
		}
		d := strings.Join(data, "\n")
		data = data[:0]
		return fn(d)
	}
	for {
		line, err := br.ReadString('\n')
		if line != "" {
			line = strings.TrimRight(line, "\r\n")
			switch {
			case line == "":
				if ferr := flush(); ferr != nil {
					return ferr
				}
			case strings.HasPrefix(line, "data:"):
				data = append(data, strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
			}
		}
		if err == io.EOF {
			return flush()
		}
		if err != nil {
			return err
		}
	}
}
