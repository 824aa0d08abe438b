package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/llorch/llorch-check/generation"
	"github.com/llorch/llorch-check/sampling"
)

// requestError is a body that cannot be read as a JSON object at all.
type requestError struct {
	status     int
	code       string
	constraint string
	message    string
	fields     []FieldError // a 400 naming fields, such as text that is not UTF-8
}

// headError is what the request's head alone shows wrong with a JSON
// body: its Content-Type (415), a Content-Length beyond limit (413; a
// negative limit skips this check, MaxBytesReader enforces it anyway) or
// of 0 (400: no JSON object). It costs no read, so a job route answers it
// before a 429 (docs/api.md, "Order of checks").
func headError(r *http.Request, limit int64) *requestError {
	switch {
	case !isJSON(r.Header.Get("Content-Type")):
		return &requestError{status: http.StatusUnsupportedMediaType, code: codeMediaType,
			message: fmt.Sprintf("Content-Type %q: want application/json", r.Header.Get("Content-Type"))}
	case limit >= 0 && r.ContentLength > limit:
		return &requestError{status: http.StatusRequestEntityTooLarge, code: codeTooLarge,
			message: fmt.Sprintf("body exceeds the limit of %d bytes (Content-Length %d)", limit, r.ContentLength)}
	case r.ContentLength == 0:
		return &requestError{status: http.StatusBadRequest, constraint: "json_object", message: "empty body; want one JSON object"}
	}
	return nil
}

// isJSON: the media type is application/json, parameters aside. The
// common exact form costs no parse (a refusal must stay cheap).
func isJSON(contentType string) bool {
	if contentType == "application/json" {
		return true
	}
	ct, _, err := mime.ParseMediaType(contentType)
	return err == nil && ct == "application/json"
}

// decodeBody reads a JSON object body field by field, so that validation
// can name every bad field instead of stopping at the first type error.
func decodeBody(r *http.Request) (*fields, *requestError) {
	if re := headError(r, -1); re != nil {
		return nil, re
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return nil, &requestError{status: http.StatusRequestEntityTooLarge, code: codeTooLarge,
				message: fmt.Sprintf("body exceeds the limit of %d bytes", tooBig.Limit)}
		}
		return nil, &requestError{status: http.StatusBadRequest, constraint: "readable", message: "reading the body: " + err.Error()}
	}
	raw := map[string]json.RawMessage{}
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&raw); err != nil || dec.More() {
		msg := "malformed JSON"
		if err != nil {
			msg += ": " + err.Error()
		}
		return nil, &requestError{status: http.StatusBadRequest, constraint: "json_object", message: msg + "; want one JSON object"}
	}
	if errs := invalidText(body, raw); len(errs) > 0 {
		return nil, &requestError{status: http.StatusBadRequest, fields: errs}
	}
	return &fields{raw: raw}, nil
}

// fields reads typed values out of a JSON object, collecting every error.
type fields struct {
	raw     map[string]json.RawMessage
	errs    []FieldError
	unused  []string // OpenAI's fields given, accepted and not used (extraFields)
	ignored []string // unknown fields given and ignored (--lenient)
}

// unknown reports every field not in known as a 400 naming it: a
// parameter a client believes it set must never be silently dropped.
func (f *fields) unknown(known []string) {
	for _, name := range slices.Sorted(maps.Keys(f.raw)) {
		if !slices.Contains(known, name) {
			f.bad(name, "unknown", "is not a parameter of this endpoint (serve --lenient ignores unknown fields)", nil)
		}
	}
}

// unsupported reports a field that is present and not at its neutral
// value (null, or neutral) as a 400 naming it and why.
func (f *fields) unsupported(name, why string, neutral ...string) {
	if !f.present(name) {
		return
	}
	v := strings.TrimSpace(string(f.raw[name]))
	if slices.Contains(neutral, v) {
		return
	}
	f.bad(name, "unsupported", why, json.RawMessage(f.raw[name]))
}

// ok reports whether none of the named fields has an error yet, so a
// check that combines them (prompt + max_tokens vs. the context) runs even
// when other fields are bad.
func (f *fields) ok(names ...string) bool {
	for _, e := range f.errs {
		for _, n := range names {
			if e.Field == n || strings.HasPrefix(e.Field, n+"[") {
				return false
			}
		}
	}
	return true
}

func (f *fields) bad(field, constraint, message string, value any) {
	f.errs = append(f.errs, FieldError{Field: field, Constraint: constraint, Message: message, Value: value})
}

// present is true for a field that is there and not null.
func (f *fields) present(name string) bool {
	v, ok := f.raw[name]
	return ok && !bytes.Equal(bytes.TrimSpace(v), []byte("null"))
}

func (f *fields) decode(name, kind string, dst any) bool {
	if !f.present(name) {
		return false
	}
	if err := json.Unmarshal(f.raw[name], dst); err != nil {
		f.bad(name, "type", "must be "+kind, json.RawMessage(f.raw[name]))
		return false
	}
	return true
}

// str reads a string field; required ones that are missing are errors.
func (f *fields) str(name string, required bool) (string, bool) {
	var s string
	if !f.decode(name, "a string", &s) {
		if required && !f.present(name) {
			f.bad(name, "required", "is required", nil)
		}
		return "", false
	}
	return s, true
}

// integer reads an integral JSON number (1.0 is accepted, 1.5 is not).
func (f *fields) integer(name string) (int64, bool) {
	var x float64
	if !f.decode(name, "an integer", &x) {
		return 0, false
	}
	if x != math.Trunc(x) || math.Abs(x) > 1<<53 {
		f.bad(name, "type", "must be an integer", x)
		return 0, false
	}
	return int64(x), true
}

func (f *fields) number(name string) (float64, bool) {
	var x float64
	ok := f.decode(name, "a number", &x)
	return x, ok
}

func (f *fields) boolean(name string) (bool, bool) {
	var b bool
	ok := f.decode(name, "a boolean", &b)
	return b, ok
}

func (f *fields) strings(name string) ([]string, bool) {
	var s []string
	ok := f.decode(name, "an array of strings", &s)
	return s, ok
}

// intIn reads an integer in [lo, hi], or def when absent.
func (f *fields) intIn(name string, lo, hi, def int64) int64 {
	v, ok := f.integer(name)
	if !ok {
		return def
	}
	if v < lo || v > hi {
		f.bad(name, "range", fmt.Sprintf("must be %d..%d", lo, hi), v)
		return def
	}
	return v
}

// atLeast reads an integer ≥ lo, or def when absent. Its upper bound is
// the model's, not a constant: the context-length rule (generation's)
// judges it with the prompt, so that every value too large gets the one
// message naming the context.
func (f *fields) atLeast(name string, lo, def int64) int64 {
	v, ok := f.integer(name)
	if !ok {
		return def
	}
	if v < lo {
		f.bad(name, "range", fmt.Sprintf("must be ≥ %d", lo), v)
		return def
	}
	return v
}

// floatIn reads a number in [lo, hi] (or (lo, hi] with openLo), or def.
func (f *fields) floatIn(name string, lo, hi float64, openLo bool, def float64) float64 {
	v, ok := f.number(name)
	if !ok {
		return def
	}
	if v < lo || v > hi || (openLo && v == lo) {
		interval := fmt.Sprintf("[%g, %g]", lo, hi)
		if openLo {
			interval = fmt.Sprintf("(%g, %g]", lo, hi)
		}
		f.bad(name, "range", "must be in "+interval, v)
		return def
	}
	return v
}

// maxPromptChars is docs/api.md's limit on a prompt's characters.
const maxPromptChars = 32768

// checkPrompt enforces 1..32768 characters (Unicode code points) and
// says whether p passed. Callers tokenize only a prompt that passed:
// counting characters is cheap, while tokenizing a 1 MB prompt costs a
// second of CPU and tens of MB, and a refused request is not admitted, so
// --parallel and --max-queue would not bound that work.
func (f *fields) checkPrompt(name, p string) bool {
	switch n := utf8.RuneCountInString(p); {
	case n == 0:
		f.bad(name, "length", "must not be empty", p)
		return false
	case n > maxPromptChars:
		f.bad(name, "length", fmt.Sprintf("has %d characters, at most %d are allowed", n, maxPromptChars), nil)
		return false
	}
	return true
}

// rule reports one broken generation rule (nil: none) under its own field.
func (f *fields) rule(e *generation.FieldError) {
	if e != nil {
		f.bad(e.Field, e.Code, e.Message, e.Value)
	}
}

// check reports the rules a generation validator found broken (err holds
// generation.FieldErrors) under the route's names: rename maps
// generation's field names to the route's (prompt → prompts[2]), the rest
// keep theirs. A field already reported is not reported again, and the
// context-length rule only when the prompt and max_tokens it measured were
// read without error.
func (f *fields) check(err error, rename map[string]string) {
	measured := append([]string{"prompt", "max_tokens", "max_completion_tokens"}, slices.Collect(maps.Values(rename))...)
	for _, e := range generation.AsFieldErrors(err) {
		name := e.Field
		if n, ok := rename[name]; ok {
			name = n
		}
		if !f.ok(name) || (e.Code == generation.CodeContextLength && !f.ok(measured...)) {
			continue
		}
		f.bad(name, e.Code, e.Message, e.Value)
	}
}

// requests gives each prompt a copy of tmpl, validated by generation and
// its errors reported under names(i), prompt i's renames (see check).
// Without prompts (the route has said why) tmpl's settings are still
// checked, under names(-1).
func (f *fields) requests(e *engine, tmpl generation.Request, prompts [][]int, names func(i int) map[string]string) []generation.Request {
	n, V := e.m.Config.NPositions, e.m.Config.VocabSize
	if len(prompts) == 0 {
		f.check(tmpl.Validate(n, V), names(-1))
		return nil
	}
	reqs := make([]generation.Request, len(prompts))
	for i, p := range prompts {
		reqs[i] = tmpl
		reqs[i].Prompt = p
		f.check(reqs[i].Validate(n, V), blame(names(i), len(prompts), len(p), n))
		room := e.positions()
		if reqs[i].DefaultMaxTokens && room < n && len(p) < room {
			// A KV cache bounded below the context (--kv-cache-tokens, or
			// the memory an 8B model leaves) bounds what a request that
			// sent no max_tokens generates, as the context would: a value
			// the client never sent must not fail it.
			reqs[i].MaxTokens = min(reqs[i].MaxTokens, room-len(p))
		}
		f.check(kvRule(e, reqs[i].Fit(n)), blame(names(i), len(prompts), len(p), room))
	}
	return reqs
}

// blame is prompt i's renames with its context-length rule left on
// max_tokens when the request's one prompt fits the limit alone: then the
// client's max_tokens is what does not fit, and the field to change (a
// chat's messages are not). A prompt that fills the limit by itself, or
// one of several (max_tokens is theirs together), keeps the prompt's name.
func blame(rename map[string]string, prompts, promptTokens, limit int) map[string]string {
	if prompts != 1 || promptTokens >= limit {
		return rename
	}
	rename = maps.Clone(rename)
	delete(rename, "max_tokens")
	return rename
}

// kvRule refuses a generation the server's KV cache could never hold at
// once (--kv-cache-tokens below the context): its prompt and max_tokens
// together, as the context-length rule counts them.
func kvRule(e *engine, r generation.Request) error {
	max, need := e.pool.MaxTokens(), len(r.Prompt)+r.MaxTokens
	if max == 0 || need <= max || need > e.m.Config.NPositions {
		return nil // unbounded, fits, or already the context's error
	}
	return &generation.FieldError{Field: "max_tokens", Code: generation.CodeContextLength, Value: r.MaxTokens,
		Message: fmt.Sprintf("prompt of %d tokens plus max_tokens %d needs %d positions; the server's KV cache holds %d for all sequences (--kv-cache-tokens)",
			len(r.Prompt), r.MaxTokens, need, max)}
}

// promptNames puts prompt i's rules, the context's included, on list[i],
// or on list itself when it is the only one (single) or there is none.
func promptNames(list string, single bool) func(i int) map[string]string {
	return func(i int) map[string]string {
		name := list
		if i >= 0 && !single {
			name = fmt.Sprintf("%s[%d]", list, i)
		}
		return map[string]string{"prompt": name, "max_tokens": name}
	}
}

// settingDefaults differ per family: docs/api.md's worker defaults, the batch
// API's, OpenAI's.
type settingDefaults struct {
	maxTokens, minMaxTokens int
	temperature             float64
}

// untilContext is a default max_tokens that generates until the context
// is full (Request.Fit shrinks it to the room the prompt leaves).
const untilContext = math.MaxInt32

// settings reads max_tokens, the sampling processors, seed and stop into a
// request without a prompt; generation's Validate judges what the wire
// form cannot (the context, the stop strings).
func (f *fields) settings(d settingDefaults, vocabSize int) generation.Request {
	return generation.Request{
		MaxTokens:        int(f.atLeast("max_tokens", int64(d.minMaxTokens), int64(d.maxTokens))),
		DefaultMaxTokens: !f.present("max_tokens"),
		AllowEmpty:       d.minMaxTokens == 0,
		Params: sampling.Params{
			Temperature:       f.floatIn("temperature", 0, 2, false, d.temperature),
			TopP:              f.floatIn("top_p", 0, 1, true, 1),
			TopK:              int(f.intIn("top_k", 0, int64(vocabSize), 0)),
			RepetitionPenalty: f.floatIn("repetition_penalty", 0, 2, true, 1),
			MinP:              f.floatIn("min_p", 0, 1, false, 0),
			PresencePenalty:   f.floatIn("presence_penalty", -sampling.MaxPenalty, sampling.MaxPenalty, false, 0),
			FrequencyPenalty:  f.floatIn("frequency_penalty", -sampling.MaxPenalty, sampling.MaxPenalty, false, 0),
			LogitBias:         f.logitBias(vocabSize),
		},
		Seed: f.seed(),
		Stop: f.stop(),
	}
}

func (f *fields) seed() *uint64 {
	v, ok := f.integer("seed")
	switch {
	case !ok:
		return nil
	case v < 0:
		f.bad("seed", "range", "must be ≥ 0", v)
		return nil
	}
	seed := uint64(v)
	return &seed
}

// logitBias reads OpenAI's {"token id": bias} map, each entry judged by
// sampling's rule and each bad one named.
func (f *fields) logitBias(vocabSize int) map[int]float64 {
	var raw map[string]json.RawMessage
	if !f.decode("logit_bias", `an object mapping token ids to biases, like {"50256": -100}`, &raw) {
		return nil
	}
	out := make(map[int]float64, len(raw))
	for _, key := range slices.Sorted(maps.Keys(raw)) {
		name := "logit_bias." + key
		id, err := strconv.Atoi(key)
		if err != nil || strconv.Itoa(id) != key {
			f.bad(name, "type", "key must be a token id (a decimal integer)", key)
			continue
		}
		var b float64
		if json.Unmarshal(raw[key], &b) != nil {
			f.bad(name, "type", "bias must be a number", json.RawMessage(raw[key]))
			continue
		}
		if err := sampling.CheckLogitBias(id, b, vocabSize); err != nil {
			f.bad(name, "range", err.Error(), b)
			continue
		}
		out[id] = b
	}
	return out
}

// stop reads a string or a list of strings; generation judges them.
func (f *fields) stop() []string {
	if !f.present("stop") {
		return nil
	}
	var one string
	if json.Unmarshal(f.raw["stop"], &one) == nil {
		return []string{one}
	}
	list, _ := f.strings("stop")
	return list
}
