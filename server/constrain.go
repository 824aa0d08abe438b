package server

import (
	"encoding/json"

	"github.com/llorch/llorch-check/grammar"
)

// constraintFields are the fields that constrain a generation: OpenAI's
// response_format, and llama.cpp's grammar (GBNF) and json_schema, which
// it takes on /completion and the OpenAI routes alike.
var constraintFields = []string{"response_format", "grammar", "json_schema"}

// constraint reads the constraint fields into a compiled grammar (nil if
// none, or response_format {"type": "text"}); at most one may be given,
// and e's vocabulary must be able to begin it (startable).
func (f *fields) constraint(e *engine) *grammar.Grammar {
	name, g := f.readConstraint()
	return f.startable(e, name, g)
}

// readConstraint is constraint's grammar and the field it came from.
func (f *fields) readConstraint() (string, *grammar.Grammar) {
	var given []string
	for _, name := range constraintFields {
		if f.present(name) && string(f.raw[name]) != "null" {
			given = append(given, name)
		}
	}
	switch len(given) {
	case 0:
		return "", nil
	case 1:
	default:
		f.bad(given[1], "conflict", "give one of response_format, grammar and json_schema, not "+given[0]+" and "+given[1], nil)
		return "", nil
	}
	switch given[0] {
	case "grammar":
		src, ok := f.str("grammar", false)
		if !ok {
			return "", nil
		}
		g, err := grammar.Parse(src)
		if err != nil {
			f.bad("grammar", "grammar", err.Error(), nil)
			return "", nil
		}
		return "grammar", g
	case "json_schema":
		return "json_schema", f.schema("json_schema", f.raw["json_schema"])
	}
	return "response_format", f.responseFormat()
}

// responseFormat reads OpenAI's response_format: {"type": "text"},
// {"type": "json_object"} or {"type": "json_schema", "json_schema":
// {"name": ..., "schema": {...}, "strict": ...}}. Every json_schema is
// followed strictly: the text is constrained whatever strict says.
func (f *fields) responseFormat() *grammar.Grammar {
	var rf struct {
		Type       string `json:"type"`
		JSONSchema *struct {
			Name   string          `json:"name"`
			Schema json.RawMessage `json:"schema"`
		} `json:"json_schema"`
	}
	raw := f.raw["response_format"]
	if json.Unmarshal(raw, &rf) != nil {
		f.bad("response_format", "type", `must be an object like {"type": "json_object"}`, nil)
		return nil
	}
	switch rf.Type {
	case "text":
		return nil
	case "json_object":
		return grammar.JSONObject()
	case "json_schema":
		if rf.JSONSchema == nil || len(rf.JSONSchema.Schema) == 0 {
			f.bad("response_format.json_schema.schema", "required", "is required with type json_schema", nil)
			return nil
		}
		return f.schema("response_format.json_schema.schema", rf.JSONSchema.Schema)
	}
	f.bad("response_format.type", "enum", `must be "text", "json_object" or "json_schema"`, rf.Type)
	return nil
}

// schema compiles a JSON schema given in field name.
func (f *fields) schema(name string, raw json.RawMessage) *grammar.Grammar {
	g, err := grammar.FromJSONSchema(raw)
	if err != nil {
		f.bad(name, "schema", err.Error(), nil)
		return nil
	}
	return g
}
