package server

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/llorch/llorch-check/generation"
	"github.com/llorch/llorch-check/grammar"
)

// responsesFields are the /v1/responses parameters this server reads:
// OpenAI's and the sampling extensions the other OpenAI routes take.
// max_tokens and n are chat's: a client's own are refused (chatOnly), and
// max_output_tokens is read under max_tokens's name by the shared
// settings.
var responsesFields = append(slices.Clip(samplingFields), "input", "instructions", "max_output_tokens", "text",
	"include", "top_logprobs", "truncation", "tools", "tool_choice", "previous_response_id", "conversation",
	"background", "prompt", "store")

// responsesUnused are OpenAI's Responses fields accepted and not used:
// there is one service tier, the model neither reasons nor calls tools.
var responsesUnused = append(pickUnused(chatUnused, "user", "metadata", "safety_identifier",
	"prompt_cache_key", "prompt_cache_retention", "service_tier", "parallel_tool_calls"),
	objectField("reasoning"), objectField("prompt_cache_options"),
	unusedField{"max_tool_calls", "an integer", func() any { return new(int64) }})

// pickUnused are the fields of list with the given names.
func pickUnused(list []unusedField, names ...string) []unusedField {
	var out []unusedField
	for _, u := range list {
		if slices.Contains(names, u.name) {
			out = append(out, u)
		}
	}
	return out
}

// responsesUnsupported are the Responses fields refused unless at a
// neutral value.
var responsesUnsupported = []struct {
	name, why string
	neutral   []string
}{
	{"tools", "is not supported: this server does not call tools", []string{"[]"}},
	{"tool_choice", `is not supported: this server does not call tools (only "auto" and "none")`, []string{`"auto"`, `"none"`}},
	{"conversation", "is not supported: this server stores no conversations; send the conversation in input", nil},
	{"background", "is not supported: a response is generated during its request", []string{"false"}},
	{"prompt", "is not supported: this server stores no prompt templates; send the prompt in input and instructions", nil},
}

// chatOnly are chat's names that parseOpenAI reads and the Responses API
// does not have, and what to send instead.
var chatOnly = []struct{ name, why string }{
	{"max_tokens", "is not a parameter of /v1/responses: its name here is max_output_tokens"},
	{"n", "is not a parameter of /v1/responses: a response has one output"},
}

// responsesIncludable are the values of include: the logprobs of the
// output text, and the rest, which concern items (tool calls, images,
// reasoning) this server never produces, so there is nothing to include.
var responsesIncludable = []string{"message.output_text.logprobs", "reasoning.encrypted_content",
	"file_search_call.results", "web_search_call.results", "web_search_call.action.sources",
	"message.input_image.image_url", "computer_call_output.output.image_url", "code_interpreter_call.outputs"}

// responsesMessage is what an input message may hold: a Responses message
// item (type "message", an id and status when it is an earlier output)
// with input_text or output_text parts.
var responsesMessage = messageForm{parts: []string{"input_text", "output_text"}, keys: []string{"type", "id", "status", "phase"}}

// handleResponses is OpenAI's Responses API for text: input and
// instructions rendered by the chat template as /v1/chat/completions
// renders messages, one assistant message out, streamed as the Responses
// API's events when asked.
func (s *Server) handleResponses(w http.ResponseWriter, r *http.Request, e *engine, f *fields) func() {
	var refused []string
	for _, c := range chatOnly {
		if _, sent := f.raw[c.name]; sent {
			delete(f.raw, c.name)
			refused = append(refused, c.name)
		}
	}
	renamed := f.alias("max_output_tokens", "max_tokens")
	job := s.parseOpenAI(e, f, chatDefaults, responsesFields, responsesUnused)
	for _, c := range chatOnly {
		switch {
		case !slices.Contains(refused, c.name):
		case s.cfg.Lenient:
			f.ignored = append(f.ignored, c.name)
		default:
			f.bad(c.name, "unknown", c.why, nil)
		}
	}
	for _, u := range responsesUnsupported {
		f.unsupported(u.name, u.why, u.neutral...)
	}
	resp := newResponseObject(r, e, job.settings)
	job.settings.Grammar = f.startable(e, "text.format", f.responsesText(&resp.Text))
	job.logprobs, job.top = f.responsesLogprobs()
	resp.TopLogprobs = job.top
	if mode, ok := f.str("truncation", false); ok {
		if mode != "auto" && mode != "disabled" {
			f.bad("truncation", "enum", `must be "auto" or "disabled"`, mode)
		} else {
			f.unused = append(f.unused, "truncation") // nothing is ever truncated: input beyond the context is a 400
		}
	}
	resp.echo(f)
	resp.Store = true // OpenAI's default
	if v, ok := f.boolean("store"); ok && f.present("store") {
		resp.Store = v
	}
	var prompts [][]int
	var conv []ChatMessage // what a stored response keeps: the conversation without instructions
	if system, msgs, ok := s.responsesInput(f); ok {
		conv = msgs
		if prev, ok := f.str("previous_response_id", false); ok && prev != "" {
			resp.PreviousResponseID = &prev
			if earlier, found := s.responses.conversation(prev); found {
				conv = append(earlier, msgs...)
			} else {
				f.bad("previous_response_id", "not_found", notStored("response", prev), prev)
			}
		}
		if prompt, ids, ok := f.renderChat(e, "input", append(system, conv...)); ok {
			job.texts, prompts = []string{prompt}, [][]int{ids}
		}
	}
	job.requests(f, e, "input", prompts)
	if renamed { // after the context's rules, which may name max_tokens too
		f.rename("max_tokens", "max_output_tokens")
	}
	return func() {
		rs := &responseShape{resp: resp, e: e, logprobs: job.logprobs}
		if resp.Store {
			rs.keep = func(o *responseObject) {
				out := o.Output[0]
				s.responses.put(&storedResponse{id: o.ID, itemID: out.ID,
					msgs: append(conv, ChatMessage{Role: "assistant", Content: out.Content[0].Text})})
			}
		}
		s.runResponse(w, r, e, job, rs)
	}
}

// notStored says an id is not held: never stored, stored with store
// false, or evicted, the store being bounded.
func notStored(what, id string) string {
	return fmt.Sprintf("%s %q not found: this server keeps responses in memory, a bounded number of them, "+
		"oldest evicted first, and none sent with store false or before a restart; send the conversation in input", what, id)
}

// responsesInput reads instructions (a system message, to go first) and
// input: a string (one user message) or a list of message items and
// references to stored output items.
func (s *Server) responsesInput(f *fields) (system, msgs []ChatMessage, ok bool) {
	if instructions, ok := f.str("instructions", false); ok && instructions != "" {
		system = []ChatMessage{{Role: "system", Content: instructions}}
	}
	var text string
	var items []map[string]json.RawMessage
	switch {
	case !f.present("input"):
		f.bad("input", "required", "is required", nil)
		return nil, nil, false
	case json.Unmarshal(f.raw["input"], &text) == nil:
		if text == "" {
			f.bad("input", "length", "must not be empty", text)
			return nil, nil, false
		}
		return system, []ChatMessage{{Role: "user", Content: text}}, true
	case json.Unmarshal(f.raw["input"], &items) != nil:
		f.bad("input", "type", "must be a string or an array of message items", nil)
		return nil, nil, false
	case len(items) == 0:
		f.bad("input", "length", "must hold at least one item", nil)
		return nil, nil, false
	}
	n := len(f.errs)
	for i, item := range items {
		name := fmt.Sprintf("input[%d]", i)
		var typ string
		if raw, ok := item["type"]; ok && json.Unmarshal(raw, &typ) != nil {
			f.bad(name+".type", "type", "must be a string", json.RawMessage(item["type"]))
			continue
		}
		if typ == "item_reference" {
			if m, ok := s.referencedItem(f, name, item); ok {
				msgs = append(msgs, m)
			}
			continue
		}
		if typ != "" && typ != "message" {
			f.bad(name+".type", "unsupported", itemRefusal(typ), typ)
			continue
		}
		msgs = append(msgs, s.chatMessage(f, name, item, responsesMessage))
	}
	return system, msgs, len(f.errs) == n
}

// referencedItem is the stored output message an item_reference names
// (the AI SDK sends earlier replies so unless store is false).
func (s *Server) referencedItem(f *fields, name string, item map[string]json.RawMessage) (ChatMessage, bool) {
	var id string
	if json.Unmarshal(item["id"], &id) != nil || id == "" {
		f.bad(name+".id", "required", "an item_reference needs the id of a stored output item", nil)
		return ChatMessage{}, false
	}
	for k := range item {
		if k != "type" && k != "id" {
			f.bad(name+"."+k, "unsupported", "is not a key of an item_reference (only type and id)", nil)
		}
	}
	m, ok := s.responses.item(id)
	if !ok {
		f.bad(name+".id", "not_found", notStored("item", id), id)
	}
	return m, ok
}

// itemRefusal says why an input item other than a message is refused.
func itemRefusal(typ string) string {
	switch {
	case strings.HasSuffix(typ, "_call") || strings.HasSuffix(typ, "_call_output"):
		return "is not supported: this server does not call tools"
	}
	return `is not supported: only message items (type "message", or role and content) are read`
}

// responsesText reads text into the response's text configuration: its
// format, {"type": "text"}, or JSON (an object, or text matching a
// schema) as a grammar constraining the generation; and its verbosity,
// accepted and unused.
func (f *fields) responsesText(config *responseTextConfig) *grammar.Grammar {
	var text map[string]json.RawMessage
	if !f.decode("text", `an object like {"format": {"type": "text"}}`, &text) {
		return nil
	}
	sub := &fields{raw: text}
	var g *grammar.Grammar
	if sub.present("format") {
		g = sub.responsesFormat(text["format"])
		if len(sub.errs) == 0 {
			config.Format = text["format"]
		}
	}
	if v, ok := sub.str("verbosity", false); ok {
		if slices.Contains([]string{"low", "medium", "high"}, v) {
			config.Verbosity = v
			f.unused = append(f.unused, "text.verbosity") // a hint to OpenAI's models; this one's replies are as long as max_output_tokens lets them be
		} else {
			sub.bad("verbosity", "enum", `must be "low", "medium" or "high"`, v)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(text)) {
		if k != "format" && k != "verbosity" {
			sub.bad(k, "unknown", "is not a field of text (only format and verbosity)", nil)
		}
	}
	for _, e := range sub.errs {
		e.Field = "text." + e.Field
		f.errs = append(f.errs, e)
	}
	return g
}

// responsesFormat reads text.format: {"type": "text"}, {"type":
// "json_object"} or {"type": "json_schema", "name": ..., "schema": {...},
// "strict": ...} (the Responses API's flat form of chat's
// response_format). Every schema is followed strictly, as on chat.
func (f *fields) responsesFormat(raw json.RawMessage) *grammar.Grammar {
	var format struct {
		Type   string          `json:"type"`
		Schema json.RawMessage `json:"schema"`
	}
	if json.Unmarshal(raw, &format) != nil {
		f.bad("format", "type", `must be an object like {"type": "json_object"}`, json.RawMessage(raw))
		return nil
	}
	switch format.Type {
	case "text":
		return nil
	case "json_object":
		return grammar.JSONObject()
	case "json_schema":
		if len(format.Schema) == 0 || string(format.Schema) == "null" {
			f.bad("format.schema", "required", "is required with type json_schema", nil)
			return nil
		}
		return f.schema("format.schema", format.Schema)
	}
	f.bad("format.type", "enum", `must be "text", "json_object" or "json_schema"`, format.Type)
	return nil
}

// responsesLogprobs reads include and top_logprobs: the output text's
// log-probabilities when include names them, with top_logprobs
// alternatives a token.
func (f *fields) responsesLogprobs() (logprobs bool, top int) {
	include, _ := f.strings("include")
	for i, v := range include {
		switch {
		case v == responsesIncludable[0]:
			logprobs = true
		case !slices.Contains(responsesIncludable, v):
			f.bad(fmt.Sprintf("include[%d]", i), "enum", "must be one of "+strings.Join(responsesIncludable, ", "), v)
		}
	}
	top = int(f.intIn("top_logprobs", 0, maxLogprobs, 0))
	if top > 0 && !logprobs {
		f.bad("top_logprobs", "requires", `needs include: ["message.output_text.logprobs"]`, top)
	}
	return logprobs, top
}

// responseObject is the Responses API's response: the answer without
// stream, and the snapshot the stream's lifecycle events carry. Beside
// the output it echoes the request's settings, as OpenAI does.
type responseObject struct {
	ID                 string             `json:"id"`
	Object             string             `json:"object"`
	CreatedAt          int64              `json:"created_at"`
	Status             string             `json:"status"`
	Background         bool               `json:"background"`
	Error              *responseError     `json:"error"`
	IncompleteDetails  *incompleteDetails `json:"incomplete_details"`
	Instructions       *string            `json:"instructions"`
	MaxOutputTokens    *int               `json:"max_output_tokens"`
	Metadata           map[string]string  `json:"metadata"`
	Model              string             `json:"model"`
	Output             []responseMessage  `json:"output"`
	ParallelToolCalls  bool               `json:"parallel_tool_calls"`
	PreviousResponseID *string            `json:"previous_response_id"`
	Reasoning          responseReasoning  `json:"reasoning"`
	ServiceTier        string             `json:"service_tier"`
	Store              bool               `json:"store"`
	Temperature        float64            `json:"temperature"`
	Text               responseTextConfig `json:"text"`
	ToolChoice         string             `json:"tool_choice"`
	Tools              []struct{}         `json:"tools"`
	TopLogprobs        int                `json:"top_logprobs"`
	TopP               float64            `json:"top_p"`
	Truncation         string             `json:"truncation"`
	Usage              *responseUsage     `json:"usage"`
}

type responseError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

type incompleteDetails struct {
	Reason string `json:"reason"`
}

// responseReasoning is the reasoning configuration echoed: none, the
// model does not reason.
type responseReasoning struct {
	Effort  *string `json:"effort"`
	Summary *string `json:"summary"`
}

// responseTextConfig is the text configuration echoed: the format as
// the request gave it.
type responseTextConfig struct {
	Format    json.RawMessage `json:"format"`
	Verbosity string          `json:"verbosity"`
}

// responseMessage is the one output item, the assistant's message.
type responseMessage struct {
	ID      string       `json:"id"`
	Type    string       `json:"type"`
	Status  string       `json:"status"`
	Role    string       `json:"role"`
	Content []outputText `json:"content"`
}

type outputText struct {
	Type        string            `json:"type"`
	Text        string            `json:"text"`
	Annotations []struct{}        `json:"annotations"`
	Logprobs    []responseLogprob `json:"logprobs"`
}

// responseLogprob is one output token's log-probability, its UTF-8 bytes
// and its most probable alternatives.
type responseLogprob struct {
	Token       string        `json:"token"`
	Bytes       []int         `json:"bytes"`
	Logprob     float64       `json:"logprob"`
	TopLogprobs []chatLogprob `json:"top_logprobs"`
}

type responseUsage struct {
	InputTokens         int            `json:"input_tokens"`
	InputTokensDetails  promptTokenUse `json:"input_tokens_details"`
	OutputTokens        int            `json:"output_tokens"`
	OutputTokensDetails struct {
		ReasoningTokens int `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
	TotalTokens int `json:"total_tokens"`
}

// newResponseObject is the response in progress: no output yet, the
// request's effective settings.
func newResponseObject(r *http.Request, e *engine, settings generation.Request) responseObject {
	return responseObject{
		ID: "resp_" + requestID(r.Context()), Object: "response", CreatedAt: time.Now().Unix(), Status: "in_progress",
		Metadata: map[string]string{}, Model: e.name, Output: []responseMessage{}, ParallelToolCalls: true,
		ServiceTier: "default", Temperature: settings.Params.Temperature, TopP: settings.Params.TopP,
		Text: responseTextConfig{Format: json.RawMessage(`{"type":"text"}`), Verbosity: "medium"}, ToolChoice: "auto",
		Tools: []struct{}{}, Truncation: "disabled",
	}
}

// echo copies what the request set of what the response reports: its
// instructions, max_output_tokens, metadata, parallel_tool_calls and
// tool_choice (the fields are valid by now, or already reported).
func (o *responseObject) echo(f *fields) {
	if v, ok := f.str("instructions", false); ok {
		o.Instructions = &v
	}
	if f.present("max_output_tokens") {
		var n int
		if json.Unmarshal(f.raw["max_output_tokens"], &n) == nil {
			o.MaxOutputTokens = &n
		}
	}
	_ = json.Unmarshal(f.raw["metadata"], &o.Metadata)
	_ = json.Unmarshal(f.raw["parallel_tool_calls"], &o.ParallelToolCalls)
	_ = json.Unmarshal(f.raw["tool_choice"], &o.ToolChoice)
}

// responseShape writes a response: as one object, or as the Responses
// API's stream of events, numbered in order.
type responseShape struct {
	resp     responseObject
	e        *engine
	logprobs bool
	seq      int
	text     strings.Builder // streamed so far, for a stream that fails
	// keep stores the finished response (store true), before the client
	// hears of it, so its next turn finds it.
	keep func(*responseObject)
}

const responseOutputIndex, responseContentIndex = 0, 0

func (rs *responseShape) itemID() string { return "msg_" + strings.TrimPrefix(rs.resp.ID, "resp_") }

// message is the output message with status and the part.
func (rs *responseShape) message(status string, part *outputText) responseMessage {
	m := responseMessage{ID: rs.itemID(), Type: "message", Status: status, Role: "assistant", Content: []outputText{}}
	if part != nil {
		m.Content = append(m.Content, *part)
	}
	return m
}

func newOutputText(text string, logprobs []responseLogprob) outputText {
	return outputText{Type: "output_text", Text: text, Annotations: []struct{}{}, Logprobs: logprobs}
}

// event writes one event of the stream: data holds its type and sequence
// number beside fields.
func (rs *responseShape) event(sse *sseWriter, typ string, fields map[string]any) error {
	fields["type"], fields["sequence_number"] = typ, rs.seq
	rs.seq++
	return sse.event(typ, fields)
}

// part is the event fields naming the output text part.
func (rs *responseShape) part(fields map[string]any) map[string]any {
	fields["item_id"], fields["output_index"], fields["content_index"] = rs.itemID(), responseOutputIndex, responseContentIndex
	return fields
}

// begin opens the stream: the response created and in progress, its
// message and the message's text part added, still empty.
func (rs *responseShape) begin(sse *sseWriter) error {
	empty := newOutputText("", []responseLogprob{})
	for _, ev := range []struct {
		typ    string
		fields map[string]any
	}{
		{"response.created", map[string]any{"response": rs.resp}},
		{"response.in_progress", map[string]any{"response": rs.resp}},
		{"response.output_item.added", map[string]any{"output_index": responseOutputIndex, "item": rs.message("in_progress", nil)}},
		{"response.content_part.added", rs.part(map[string]any{"part": empty})},
	} {
		if err := rs.event(sse, ev.typ, ev.fields); err != nil {
			return err
		}
	}
	return nil
}

// delta streams a piece of the output text (a token may release none, or
// only its log-probability); the end is written by end.
func (rs *responseShape) delta(sse *sseWriter, text string, tokens []scoredToken) error {
	logprobs := rs.logprobsOf(tokens)
	if text == "" && len(logprobs) == 0 {
		return nil
	}
	rs.text.WriteString(text)
	return rs.event(sse, "response.output_text.delta", rs.part(map[string]any{"delta": text, "logprobs": logprobs}))
}

// finish completes the response with the choice and the usage:
// completed, or incomplete when max_output_tokens (or the context) cut
// it short.
func (rs *responseShape) finish(ch choiceResult, u usage) {
	status := "completed"
	if ch.reason == finishReason(generation.StopMaxTokens) {
		status = "incomplete"
		rs.resp.IncompleteDetails = &incompleteDetails{Reason: "max_output_tokens"}
	}
	part := newOutputText(ch.text, rs.logprobsOf(ch.tokens))
	rs.resp.Status = status
	rs.resp.Output = []responseMessage{rs.message(status, &part)}
	ru := &responseUsage{InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens, TotalTokens: u.TotalTokens}
	if u.PromptTokensDetails != nil {
		ru.InputTokensDetails = *u.PromptTokensDetails
	}
	rs.resp.Usage = ru
}

// end closes a finished stream: the text, its part and the message done,
// then the response completed or incomplete, the stream's last event.
func (rs *responseShape) end(sse *sseWriter) error {
	item := rs.resp.Output[0]
	part := item.Content[0]
	for _, ev := range []struct {
		typ    string
		fields map[string]any
	}{
		{"response.output_text.done", rs.part(map[string]any{"text": part.Text, "logprobs": part.Logprobs})},
		{"response.content_part.done", rs.part(map[string]any{"part": part})},
		{"response.output_item.done", map[string]any{"output_index": responseOutputIndex, "item": item}},
		{"response." + rs.resp.Status, map[string]any{"response": rs.resp}},
	} {
		if err := rs.event(sse, ev.typ, ev.fields); err != nil {
			return err
		}
	}
	return nil
}

// fail ends a stream that could not finish: an error event (the SDKs
// raise it), then the response failed, with the text streamed so far, as
// the stream's last event.
func (rs *responseShape) fail(sse *sseWriter, end jobEnd) {
	typ := "timeout_error"
	if end.code == codeShutdown || end.code == codeInference {
		typ = "server_error"
	}
	// OpenAI's SDK reads code, message and param beside type; the AI SDK
	// reads them under error.
	apiErr := apiError{Message: end.message, Type: typ, Code: end.code}
	if rs.event(sse, "error", map[string]any{"code": end.code, "message": end.message, "param": nil, "error": apiErr}) != nil {
		return
	}
	part := newOutputText(rs.text.String(), []responseLogprob{})
	rs.resp.Status = "failed"
	rs.resp.Error = &responseError{Code: end.code, Message: end.message}
	rs.resp.Output = []responseMessage{rs.message("incomplete", &part)}
	_ = rs.event(sse, "response.failed", map[string]any{"response": rs.resp})
}

// logprobsOf lists tokens' log-probabilities when the request asked for
// them (none otherwise: an empty list, as OpenAI sends).
func (rs *responseShape) logprobsOf(tokens []scoredToken) []responseLogprob {
	out := []responseLogprob{}
	if !rs.logprobs {
		return out
	}
	for _, t := range tokens {
		lp := tokenLogprob(t.piece, *t.logprob)
		alts := make([]chatLogprob, 0, len(t.top))
		for k, a := range t.top {
			alts = append(alts, tokenLogprob(t.topPieces[k], a.LogProb))
		}
		out = append(out, responseLogprob{Token: lp.Token, Bytes: lp.Bytes, Logprob: lp.Logprob, TopLogprobs: alts})
	}
	return out
}

// responseStream is the sink of a streamed response: before the stream
// opened a status, after it the failure events.
type responseStream struct {
	stream
	shape *responseShape
}

func (k *responseStream) ended(w http.ResponseWriter, end jobEnd) {
	if k.sse == nil {
		jsonAnswer{}.ended(w, end)
		return
	}
	k.shape.fail(k.sse, end)
}

// runResponse runs the job's one generation in a slot and writes it
// through rs, as one object or as the stream of events.
func (s *Server) runResponse(w http.ResponseWriter, r *http.Request, e *engine, job openAIJob, rs *responseShape) {
	var sk sink = jsonAnswer{}
	var st *responseStream
	if job.stream {
		st = &responseStream{stream: stream{timeout: s.cfg.WriteTimeout}, shape: rs}
		sk = st
	}
	s.runJob(w, r, "", sk, func(ctx context.Context, slot *Slot) error {
		var emit emitFunc
		if st != nil {
			sse := st.open(w)
			if err := rs.begin(sse); err != nil {
				return err
			}
			emit = func(text string, tokens []scoredToken, reason string) error {
				if reason != "" {
					return nil // the end events follow once the usage is known
				}
				return rs.delta(sse, text, tokens)
			}
		}
		var total usage
		ch, err := s.runChoice(ctx, e, slot, job, 0, emit, &total)
		if err != nil {
			return err
		}
		total.TotalTokens = total.PromptTokens + total.CompletionTokens
		rs.finish(ch, total)
		if rs.keep != nil {
			rs.keep(&rs.resp)
		}
		if st == nil {
			writeJSON(w, http.StatusOK, rs.resp)
			return nil
		}
		return rs.end(st.sse)
	})
}
