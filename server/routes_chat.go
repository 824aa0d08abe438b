package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/llorch/llorch-check/chat"
)

// chatFields are the /v1/chat/completions parameters this server reads;
// chatUnsupported are OpenAI's that it refuses unless at a neutral value,
// chatUnused (extrafields.go) those it accepts and does not use.
var chatFields = append(slices.Clip(samplingFields), "messages", "max_completion_tokens", "logprobs", "top_logprobs",
	"response_format", "grammar", "json_schema", "modalities", "tools", "tool_choice", "functions", "function_call", "audio", "web_search_options")

var chatUnsupported = []struct {
	name, why string
	neutral   []string
}{
	{"tools", "is not supported: this server does not call tools", []string{"[]"}},
	{"tool_choice", "is not supported: this server does not call tools", []string{`"none"`}},
	{"functions", "is not supported: this server does not call functions", []string{"[]"}},
	{"function_call", "is not supported: this server does not call functions", []string{`"none"`}},
	{"audio", "is not supported: this server answers in text only", nil},
	{"web_search_options", "is not supported: this server cannot search the web", nil},
}

// chatDefaults are OpenAI's for chat: without max_tokens a reply runs
// until it stops or fills the context; at least one token.
var chatDefaults = settingDefaults{maxTokens: untilContext, minMaxTokens: 1, temperature: 1.0}

// chatRoles are the message roles a plain template can render.
var chatRoles = []string{"system", "developer", "user", "assistant"}

type chatMessageOut struct {
	Role    string `json:"role,omitempty"`
	Content string `json:"content"`
}

// chatLogprob is one token of the chat logprobs shape; bytes are the
// token's UTF-8 bytes (a token may hold part of a character).
type chatLogprob struct {
	Token       string        `json:"token"`
	Logprob     float64       `json:"logprob"`
	Bytes       []int         `json:"bytes"`
	TopLogprobs []chatLogprob `json:"top_logprobs,omitempty"`
}

type chatLogprobs struct {
	Content []chatLogprob `json:"content"`
	Refusal []chatLogprob `json:"refusal"`
}

type chatChoice struct {
	Index        int             `json:"index"`
	Message      *chatMessageOut `json:"message,omitempty"`
	Delta        *chatMessageOut `json:"delta,omitempty"`
	Logprobs     *chatLogprobs   `json:"logprobs"`
	FinishReason *string         `json:"finish_reason"`
}

// handleChat is OpenAI's chat completions: the messages rendered by the
// chat template into one prompt, then the completions pipeline.
func (s *Server) handleChat(w http.ResponseWriter, r *http.Request, e *engine, f *fields) func() {
	renamed := f.alias("max_completion_tokens", "max_tokens")
	job := s.parseOpenAI(e, f, chatDefaults, chatFields, chatUnused)
	for _, u := range chatUnsupported {
		f.unsupported(u.name, u.why, u.neutral...)
	}
	if modalities, ok := f.strings("modalities"); ok {
		if slices.ContainsFunc(modalities, func(m string) bool { return m != "text" }) {
			f.bad("modalities", "unsupported", `only ["text"] is supported: this server answers in text only`, modalities)
		} else {
			f.unused = append(f.unused, "modalities")
		}
	}
	job.settings.Grammar = f.constraint(e)
	job.logprobs, _ = f.boolean("logprobs")
	job.top = int(f.intIn("top_logprobs", 0, maxLogprobs, 0))
	if job.top > 0 && !job.logprobs {
		f.bad("top_logprobs", "requires", "needs logprobs: true", job.top)
	}
	var prompts [][]int
	if prompt, ids, ok := s.chatPrompt(e, f); ok {
		job.texts, prompts = []string{prompt}, [][]int{ids}
	}
	job.requests(f, e, "messages", prompts)
	if renamed { // after the context's rules, which may name max_tokens too
		f.rename("max_tokens", "max_completion_tokens")
	}
	return func() {
		base := newOpenAIBase(r, e, "chatcmpl-")
		base.Object = "chat.completion"
		if job.stream {
			base.Object = "chat.completion.chunk"
		}
		s.runOpenAI(w, r, e, job, &chatShape{base: base, e: e, logprobs: job.logprobs, started: map[int]bool{}})
	}
}

// chatPrompt reads messages and renders them with the chat template.
func (s *Server) chatPrompt(e *engine, f *fields) (string, []int, bool) {
	var raw []map[string]json.RawMessage
	if !f.decode("messages", "an array of message objects", &raw) {
		if !f.present("messages") {
			f.bad("messages", "required", "is required", nil)
		}
		return "", nil, false
	}
	if len(raw) == 0 {
		f.bad("messages", "length", "must hold at least one message", nil)
		return "", nil, false
	}
	n := len(f.errs)
	var msgs []ChatMessage
	for i, m := range raw {
		msgs = append(msgs, s.chatMessage(f, fmt.Sprintf("messages[%d]", i), m, chatMessageForm))
	}
	if len(f.errs) > n {
		return "", nil, false
	}
	return f.renderChat(e, "messages", msgs)
}

// renderChat renders msgs with the model's chat template into the prompt
// and its tokens (the template's special tokens as single ids when it
// writes them itself); errors are name's. /v1/chat/completions and
// /v1/responses both build their prompts here.
func (f *fields) renderChat(e *engine, name string, msgs []ChatMessage) (string, []int, bool) {
	prompt, err := e.chat.Format(msgs)
	if err != nil {
		msg := err.Error()
		if re, ok := errors.AsType[*chat.RaisedError](err); ok {
			msg = "the model's chat template refuses the conversation: " + re.Message
		}
		f.bad(name, "template", msg, nil)
		return "", nil, false
	}
	if !f.checkPrompt(name, prompt) {
		return "", nil, false // refused before the tokenizer's work
	}
	ids := e.encode(prompt)
	if e.chat.Special() {
		ids = e.tok.EncodeSpecial(prompt)
	}
	return prompt, ids, true
}

// messageForm is what a route's messages may hold beside role and
// content: the types of the content parts that carry text, and other keys.
type messageForm struct {
	parts []string
	keys  []string
}

// chatMessageForm is chat's: text parts and an optional name.
var chatMessageForm = messageForm{parts: []string{"text"}, keys: []string{"name"}}

// chatMessage reads one message: a role, content as a string or as text
// parts, and form's other keys (a name on chat); other keys must be null.
func (s *Server) chatMessage(f *fields, name string, m map[string]json.RawMessage, form messageForm) ChatMessage {
	sub := &fields{raw: m}
	var msg ChatMessage
	msg.Role, _ = sub.str("role", true)
	if msg.Role != "" && !slices.Contains(chatRoles, msg.Role) {
		sub.bad("role", "enum", "must be one of "+strings.Join(chatRoles, ", ")+" (tool messages need tools, which llorch-check does not serve)", msg.Role)
	}
	if slices.Contains(form.keys, "name") {
		msg.Name, _ = sub.str("name", false)
	}
	var parts []struct{ Type, Text string }
	switch {
	case !sub.present("content"):
		sub.bad("content", "required", "is required", nil)
	case json.Unmarshal(m["content"], &msg.Content) == nil:
	case json.Unmarshal(m["content"], &parts) == nil:
		var texts []string
		for j, p := range parts {
			if !slices.Contains(form.parts, p.Type) {
				sub.bad(fmt.Sprintf("content[%d].type", j), "unsupported", "only "+strings.Join(form.parts, " and ")+" parts are supported", p.Type)
			}
			texts = append(texts, p.Text)
		}
		msg.Content = strings.Join(texts, "\n")
	default:
		sub.bad("content", "type", fmt.Sprintf(`must be a string or an array of {"type": %q, "text": ...} parts`, form.parts[0]), nil)
	}
	keys := append([]string{"role", "content"}, form.keys...)
	list, _, _ := strings.Cut(name, "[")
	for _, k := range slices.Sorted(maps.Keys(m)) {
		switch {
		case slices.Contains(keys, k) || !sub.present(k):
		case s.cfg.Lenient:
			f.ignored = append(f.ignored, list+"[]."+k)
		default:
			sub.bad(k, "unsupported", "is not supported in a message (only "+strings.Join(keys[:len(keys)-1], ", ")+" and "+keys[len(keys)-1]+")", nil)
		}
	}
	for _, e := range sub.errs {
		e.Field = name + "." + e.Field
		f.errs = append(f.errs, e)
	}
	return msg
}

// chatShape writes chat.completion and chat.completion.chunk objects.
type chatShape struct {
	base     openAIBase
	e        *engine
	logprobs bool
	started  map[int]bool // choices whose first chunk (with the role) went out
}

// tokenLogprob is a token as OpenAI lists it: the text it adds to the
// message and that text's exact bytes, so the bytes joined are the text.
func tokenLogprob(p piece, logprob float64) chatLogprob {
	ints := make([]int, len(p.bytes))
	for i, x := range p.bytes {
		ints[i] = int(x)
	}
	return chatLogprob{Token: p.text, Logprob: logprob, Bytes: ints}
}

func (c *chatShape) logprobsOf(tokens []scoredToken) *chatLogprobs {
	if !c.logprobs {
		return nil
	}
	out := &chatLogprobs{Content: []chatLogprob{}}
	for _, t := range tokens {
		lp := tokenLogprob(t.piece, *t.logprob)
		lp.TopLogprobs = []chatLogprob{}
		for k, a := range t.top {
			lp.TopLogprobs = append(lp.TopLogprobs, tokenLogprob(t.topPieces[k], a.LogProb))
		}
		out.Content = append(out.Content, lp)
	}
	return out
}

func (c *chatShape) chunk(i int, text string, tokens []scoredToken, reason string) any {
	ch := chatChoice{Index: i, Delta: &chatMessageOut{Content: text}}
	if !c.started[i] {
		c.started[i] = true
		ch.Delta.Role = "assistant"
	}
	if reason != "" {
		ch.FinishReason = &reason
	} else {
		ch.Logprobs = c.logprobsOf(tokens)
	}
	return openAIResponse[chatChoice]{openAIBase: c.base, Choices: []chatChoice{ch}}
}

func (c *chatShape) usageChunk(u usage) any { return usageOnly[chatChoice](c.base, u) }

func (c *chatShape) response(choices []choiceResult, u usage) any {
	return answer(c.base, choices, u, func(i int, ch choiceResult) chatChoice {
		return chatChoice{Index: i, FinishReason: &ch.reason,
			Message: &chatMessageOut{Role: "assistant", Content: ch.text}, Logprobs: c.logprobsOf(ch.tokens)}
	})
}

// alias lets field from stand for to (OpenAI's max_completion_tokens
// for max_tokens); both at once must agree. It reports whether from
// now stands in to's place.
func (f *fields) alias(from, to string) bool {
	if !f.present(from) {
		return false
	}
	if f.present(to) {
		if !bytes.Equal(bytes.TrimSpace(f.raw[from]), bytes.TrimSpace(f.raw[to])) {
			f.bad(from, "conflict", "differs from "+to+"; give one of them", json.RawMessage(f.raw[from]))
		}
		return false
	}
	f.raw[to] = f.raw[from]
	return true
}

// rename reports errors of field from under name to.
func (f *fields) rename(from, to string) {
	for i := range f.errs {
		if f.errs[i].Field == from {
			f.errs[i].Field = to
		}
	}
}
