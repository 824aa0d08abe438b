package server

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
)

// unusedField is one of OpenAI's own request fields that a route accepts
// and does not use, because what it asks for does not arise here (nothing
// is stored, there is one service tier, the model does not reason); it is
// still checked to have OpenAI's type.
type unusedField struct {
	name, kind string
	dst        func() any // a value of the field's type to decode into
}

func stringField(name string) unusedField {
	return unusedField{name, "a string", func() any { return new(string) }}
}

func boolField(name string) unusedField {
	return unusedField{name, "a boolean", func() any { return new(bool) }}
}

func objectField(name string) unusedField {
	return unusedField{name, "an object", func() any { return new(map[string]json.RawMessage) }}
}

// userField is OpenAI's end-user id (for its abuse monitoring), on every
// route that has it.
var userField = stringField("user")

// chatUnused are OpenAI's chat fields accepted and not used (docs/serve.md
// lists why each does not apply).
var chatUnused = []unusedField{
	userField,
	{"metadata", "an object of strings", func() any { return new(map[string]string) }},
	boolField("store"),
	stringField("safety_identifier"),
	stringField("prompt_cache_key"),
	stringField("prompt_cache_retention"),
	stringField("service_tier"),
	stringField("reasoning_effort"),
	stringField("verbosity"),
	boolField("parallel_tool_calls"),
	objectField("prediction"),
}

// unusedNames are the names of fields.
func unusedNames(fields []unusedField) []string {
	names := make([]string, len(fields))
	for i, u := range fields {
		names[i] = u.name
	}
	return names
}

// maxUnusedHeader bounds the names X-Unused-Fields lists.
const maxUnusedHeader = 16

// extraFields handles the fields of an OpenAI route's body that it does
// not read: OpenAI's own that it accepts and does not use (type-checked),
// and unknown ones, a 400 naming each or, with --lenient, ignored and
// logged once per name (see ignoredFields). Both kinds are recorded on f
// for the X-Unused-Fields header (setUnusedHeader).
func (s *Server) extraFields(f *fields, known []string, unused []unusedField) {
	for _, u := range unused {
		if f.decode(u.name, u.kind, u.dst()) {
			f.unused = append(f.unused, u.name)
		}
	}
	known = append(slices.Clip(known), unusedNames(unused)...)
	if !s.cfg.Lenient {
		f.unknown(known)
		return
	}
	for _, name := range slices.Sorted(maps.Keys(f.raw)) {
		if !slices.Contains(known, name) {
			f.ignored = append(f.ignored, name)
		}
	}
}

// setUnusedHeader logs the fields --lenient ignored (each name once) and
// lists them, with the accepted and unused ones, in X-Unused-Fields, so a
// client can see what it sent that had no effect.
func (s *Server) setUnusedHeader(w http.ResponseWriter, r *http.Request, f *fields) {
	for _, name := range f.ignored {
		s.ignored.note(r, name)
	}
	var names []string
	for _, name := range slices.Concat(f.unused, f.ignored) {
		if headerSafe(name) {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return
	}
	if len(names) > maxUnusedHeader {
		names = append(names[:maxUnusedHeader], fmt.Sprintf("and %d more", len(names)-maxUnusedHeader))
	}
	w.Header().Set("X-Unused-Fields", strings.Join(names, ", "))
}

// headerSafe is a field name fit for a header: 1..64 characters of
// letters, digits, '_', '-', '.', '[' and ']' (a client's unknown names
// may hold anything).
func headerSafe(name string) bool {
	if name == "" || len(name) > 64 {
		return false
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("_-.[]", c)) {
			return false
		}
	}
	return true
}

// maxIgnoredNames bounds the field names --lenient remembers having
// logged: a client can send any number of made-up names.
const maxIgnoredNames = 256

// ignoredFields logs each field name --lenient ignores the first time it
// is seen in this process, not for every request that sends it.
type ignoredFields struct {
	log  *slog.Logger
	mu   sync.Mutex
	seen map[string]bool
	full bool // maxIgnoredNames were logged; the rest are not
}

func (g *ignoredFields) note(r *http.Request, name string) {
	g.mu.Lock()
	first, full := false, false
	switch {
	case g.seen[name]:
	case len(g.seen) < maxIgnoredNames:
		g.seen[name], first = true, true
	case !g.full:
		g.full, full = true, true
	}
	g.mu.Unlock()
	switch {
	case first:
		g.log.Warn("an unknown request field is ignored (--lenient); logged once per field name", "field", name,
			"path", r.URL.Path, "request_id", requestID(r.Context()))
	case full:
		g.log.Warn(fmt.Sprintf("%d unknown field names ignored and logged (--lenient); further new names are ignored without a log line", maxIgnoredNames),
			"path", r.URL.Path, "request_id", requestID(r.Context()))
	}
}
