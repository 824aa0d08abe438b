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
}

// decodeBody reads a JSON object body field by field, so that validation
// can name every bad field instead of stopping at the first type error.
func decodeBody(r *http.Request) (*fields, *requestError) {
	ct, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || ct != "application/json" {
		return nil, &requestError{status: http.StatusUnsupportedMediaType, code: codeMediaType,
			message: fmt.Sprintf("Content-Type %q: want application/json", r.Header.Get("Content-Type"))}
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
	return &fields{raw: raw}, nil
}

// fields reads typed values out of a JSON object, collecting every error.
type fields struct {
	raw  map[string]json.RawMessage
	errs []FieldError
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

// Prompt limits of API.md.
const (
	maxPromptChars = 32768
	maxStopBytes   = 100
)

// checkPrompt enforces 1..32768 characters (Unicode code points).
func (f *fields) checkPrompt(name, p string) {
	switch n := utf8.RuneCountInString(p); {
	case n == 0:
		f.bad(name, "length", "must not be empty", p)
	case n > maxPromptChars:
		f.bad(name, "length", fmt.Sprintf("has %d characters, at most %d are allowed", n, maxPromptChars), nil)
	}
}

// genSettings are the sampling settings every generating route shares.
type genSettings struct {
	MaxTokens int
	Params    sampling.Params
	Seed      *uint64
	Stop      []string

	maxTokensSet bool // false: MaxTokens is the family's default
	minMaxTokens int
}

// maxTokensFor is how many tokens a prompt of promptTokens may generate,
// or a message saying why none fit. An explicit max_tokens beyond the
// context is a 400 (API.md), never a silent truncation; the default shrinks
// to the room the context leaves, so leaving max_tokens out never fails a
// prompt that fits.
func (g genSettings) maxTokensFor(promptTokens, contextLength int) (int, string) {
	room := contextLength - promptTokens
	if g.maxTokensSet {
		if g.MaxTokens > room {
			return 0, fmt.Sprintf("prompt of %d tokens + max_tokens %d exceeds the context length %d",
				promptTokens, g.MaxTokens, contextLength)
		}
		return g.MaxTokens, ""
	}
	if n := min(g.MaxTokens, room); n >= g.minMaxTokens {
		return n, ""
	}
	return 0, fmt.Sprintf("prompt of %d tokens leaves no room to generate in the context length %d",
		promptTokens, contextLength)
}

// settingDefaults differ per family: API.md's worker defaults, the batch
// API's, OpenAI's.
type settingDefaults struct {
	maxTokens, minMaxTokens int
	temperature             float64
}

const maxMaxTokens = 2048

// settings reads max_tokens, the sampling processors, seed and stop.
func (f *fields) settings(d settingDefaults, vocabSize int) genSettings {
	var g genSettings
	g.MaxTokens = int(f.intIn("max_tokens", int64(d.minMaxTokens), maxMaxTokens, int64(d.maxTokens)))
	g.maxTokensSet, g.minMaxTokens = f.present("max_tokens"), d.minMaxTokens
	g.Params = sampling.Params{
		Temperature:       f.floatIn("temperature", 0, 2, false, d.temperature),
		TopP:              f.floatIn("top_p", 0, 1, true, 1),
		TopK:              int(f.intIn("top_k", 0, int64(vocabSize), 0)),
		RepetitionPenalty: f.floatIn("repetition_penalty", 0, 2, true, 1),
		MinP:              f.floatIn("min_p", 0, 1, false, 0),
		PresencePenalty:   f.floatIn("presence_penalty", -sampling.MaxPenalty, sampling.MaxPenalty, false, 0),
		FrequencyPenalty:  f.floatIn("frequency_penalty", -sampling.MaxPenalty, sampling.MaxPenalty, false, 0),
		LogitBias:         f.logitBias(vocabSize),
	}
	if f.present("seed") {
		if v, ok := f.integer("seed"); ok {
			if v < 0 {
				f.bad("seed", "range", "must be ≥ 0", v)
			} else {
				seed := uint64(v)
				g.Seed = &seed
			}
		}
	}
	g.Stop = f.stop()
	return g
}

// logitBias reads OpenAI's {"token id": bias} map: ids in the vocabulary,
// biases in [-100, 100]; each bad entry is named.
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
		if id < 0 || id >= vocabSize {
			f.bad(name, "range", fmt.Sprintf("token %d is outside the vocabulary [0,%d)", id, vocabSize), id)
			continue
		}
		var b float64
		if json.Unmarshal(raw[key], &b) != nil {
			f.bad(name, "type", "bias must be a number", json.RawMessage(raw[key]))
			continue
		}
		if math.Abs(b) > sampling.MaxLogitBias {
			f.bad(name, "range", fmt.Sprintf("bias must be in [-%d, %d]", sampling.MaxLogitBias, sampling.MaxLogitBias), b)
			continue
		}
		out[id] = b
	}
	return out
}

// stop accepts a string or a list of 1..4 strings of 1..100 bytes.
func (f *fields) stop() []string {
	if !f.present("stop") {
		return nil
	}
	var one string
	if json.Unmarshal(f.raw["stop"], &one) == nil {
		list, _ := json.Marshal([]string{one})
		f.raw["stop"] = list
	}
	list, ok := f.strings("stop")
	if !ok {
		return nil
	}
	if len(list) > generation.MaxStop {
		f.bad("stop", "length", fmt.Sprintf("has %d strings, at most %d are allowed", len(list), generation.MaxStop), len(list))
		return nil
	}
	for i, s := range list {
		name := fmt.Sprintf("stop[%d]", i)
		switch {
		case len(s) < 1 || len(s) > maxStopBytes:
			f.bad(name, "length", fmt.Sprintf("must be 1..%d bytes", maxStopBytes), s)
		case !utf8.ValidString(s):
			f.bad(name, "utf8", "must be valid UTF-8", nil)
		}
	}
	return list
}
