package grammar

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFromJSONSchema(t *testing.T) {
	for _, tc := range []struct {
		name, schema string
		yes, no      []string
	}{
		{"any", `{}`, []string{`1`, `"x"`, `{"a":[]}`, `null`}, []string{``, `x`}},
		{"true", `true`, []string{`[1]`}, []string{`[1`}},
		{"integer", `{"type":"integer"}`, []string{`0`, `-12`, `1234567890123456`}, []string{`1.5`, `01`, `12345678901234567`, `"1"`}},
		{"number", `{"type":"number"}`, []string{`0.5`, `-3e+10`, `2E-7`}, []string{`.5`, `1e`, `1e100`}},
		{"type list", `{"type":["string","null"]}`, []string{`"a"`, `null`}, []string{`1`}},
		{"string lengths", `{"type":"string","minLength":2,"maxLength":3}`, []string{`"ab"`, `"a\"c"`, `"中文字"`}, []string{`"a"`, `"abcd"`}},
		// A bounded string's characters beyond U+FFFF come as \u escape
		// pairs (counted two, their UTF-16 length), never as themselves:
		// zod's .max() counts UTF-16 units, JSON Schema characters.
		{"maxLength in UTF-16 units", `{"type":"string","maxLength":2}`, []string{`"ab"`, `"\ud83d\ude00"`}, []string{`"😀"`, `"a😀"`}},
		{"minLength alone", `{"type":"string","minLength":1}`, []string{`"😀"`, `"a😀b"`}, []string{`""`}},
		{"enum", `{"enum":["red",1,null,{"a":[true]}]}`, []string{`"red"`, `1`, `null`, `{"a":[true]}`}, []string{`"blue"`, `{"a":[false]}`, `{ "a":[true]}`}},
		{"const", `{"const":"a<b&c"}`, []string{`"a<b&c"`}, []string{`"a\u003cb&c"`}},
		{"anyOf", `{"anyOf":[{"type":"integer"},{"type":"array","items":{"type":"string"}}]}`, []string{`3`, `["a","b"]`, `[]`}, []string{`[1]`, `"a"`}},
		{"array bounds", `{"type":"array","items":{"type":"integer"},"minItems":1,"maxItems":2}`, []string{`[1]`, `[1, 2]`}, []string{`[]`, `[1,2,3]`}},
		{"array exact", `{"type":"array","minItems":2,"maxItems":2}`, []string{`[1,"x"]`}, []string{`[1]`, `[1,2,3]`}},
		{"array none", `{"type":"array","maxItems":0}`, []string{`[]`}, []string{`[1]`}},
		{
			"object", `{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"},"ok":{"type":"boolean"}},"required":["age"],"additionalProperties":false}`,
			[]string{`{"age":1}`, `{"age": 1, "name": "x"}`, `{"age":1,"ok":true}`, `{"age":1,"name":"x","ok":false}`, "{\n  \"age\": 1\n}"},
			[]string{`{}`, `{"name":"x"}`, `{"age":1,"extra":2}`, `{"age":1,}`, `{"age":"1"}`},
		},
		{
			"optional only", `{"properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"additionalProperties":false}`,
			[]string{`{}`, `{"a":1}`, `{"b":2}`, `{"a":1,"b":2}`}, []string{`{,"b":2}`, `{"a":1,}`, `{"c":1}`},
		},
		{
			"additional properties", `{"type":"object","properties":{"a":{"type":"integer"}},"additionalProperties":{"type":"string"}}`,
			[]string{`{"a":1,"x":"y"}`, `{"x":"y","z":"w"}`, `{}`}, []string{`{"x":1}`},
		},
		{
			"refs and recursion", `{"$defs":{"node":{"type":"object","properties":{"v":{"type":"integer"},"kids":{"type":"array","items":{"$ref":"#/$defs/node"}}},"required":["v"],"additionalProperties":false}},"$ref":"#/$defs/node"}`,
			[]string{`{"v":1}`, `{"v":1,"kids":[{"v":2,"kids":[]},{"v":3}]}`}, []string{`{"v":1,"kids":[{}]}`},
		},
		{"definitions", `{"definitions":{"x":{"type":"null"}},"type":"array","items":{"$ref":"#/definitions/x"}}`, []string{`[null, null]`}, []string{`[1]`}},
		{"non-negative", `{"type":"integer","minimum":0}`, []string{`0`, `12`}, []string{`-1`, `-0`}},
		{"zod's integer", `{"type":"integer","minimum":-9007199254740991,"maximum":9007199254740991}`,
			[]string{`123456789012345`, `-5`, `9007199254740991`, `-9007199254740991`}, []string{`9007199254740992`, `-9007199254740992`, `1.5`}},
		{"zod's positive integer", `{"type":"integer","exclusiveMinimum":0}`, []string{`1`, `10`, `9999999999999999`}, []string{`0`, `-1`, `-0`}},
		{"zod's min and max", `{"type":"integer","minimum":18,"maximum":120}`, []string{`18`, `99`, `120`}, []string{`17`, `121`, `5`, `1000`}},
		{"bounded number", `{"type":"number","exclusiveMinimum":-1,"maximum":100}`, []string{`99.5`, `0`, `7`, `100`, `-0.5`}, []string{`100.5`, `-1`, `1e1`}},
		{"zod's positive number", `{"type":"number","exclusiveMinimum":0}`, []string{`0.5`, `3`, `0.001`}, []string{`0`, `0.0`, `-0.5`}},
		{"zod's non-negative number", `{"type":"number","minimum":0}`, []string{`0`, `0.0`, `12.25`}, []string{`-0.5`, `-1`}},
		{"enum beside a type", `{"enum":["a",1,2.5,"b",null],"type":"integer"}`, []string{`1`}, []string{`"a"`, `2.5`, `null`}},
		{"enum beside a length", `{"type":"string","enum":["ab","abcd","x"],"maxLength":3}`, []string{`"ab"`, `"x"`}, []string{`"abcd"`}},
		{"const beside a type", `{"type":"string","const":"a"}`, []string{`"a"`}, []string{`"b"`}},
		{"ref beside a type", `{"$defs":{"s":{"type":["string","integer"]}},"$ref":"#/$defs/s","type":"integer"}`, []string{`1`}, []string{`"a"`}},
		{"ref beside a bound", `{"$defs":{"s":{"type":"integer"}},"$ref":"#/$defs/s","minimum":1,"description":"d"}`, []string{`1`}, []string{`0`}},
		{"allOf beside a bound", `{"allOf":[{"type":"integer"}],"maximum":3}`, []string{`3`}, []string{`4`, `"a"`}},
		{
			"allOf of objects", `{"type":"object","allOf":[{"properties":{"a":{"type":"integer"}},"required":["a"]},{"properties":{"b":{"type":"string"},"a":{"minimum":1}},"required":["b"]}]}`,
			[]string{`{"a":1,"b":"x"}`}, []string{`{"a":1}`, `{"b":"x"}`, `{"a":0,"b":"x"}`},
		},
		{"anyOf beside a bound", `{"anyOf":[{"type":"integer"},{"type":"string"}],"minimum":5}`, []string{`5`, `"x"`}, []string{`4`}},
		{"anyOf beside a type", `{"anyOf":[{"type":"integer"},{"type":"string"}],"type":"string"}`, []string{`"x"`}, []string{`4`}},
		{"OpenAPI's int64", `{"type":"integer","format":"int64","minimum":0}`, []string{`0`, `9999999999999999`}, []string{`-1`}},
		{"annotations ignored", `{"title":"T","description":"d","default":1,"examples":[1],"$schema":"x","type":"integer"}`, []string{`1`}, []string{`"1"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := FromJSONSchema([]byte(tc.schema))
			require.NoError(t, err)
			for _, s := range tc.yes {
				assert.True(t, g.Matches([]byte(s)), "%s should match\n%s", s, g)
			}
			for _, s := range tc.no {
				assert.False(t, g.Matches([]byte(s)), "%s should not match\n%s", s, g)
			}
		})
	}
}

func TestFromJSONSchemaErrors(t *testing.T) {
	for _, tc := range []struct{ name, schema, want string }{
		{"not JSON", `{`, "JSON schema at #: not JSON"},
		{"false", `false`, "false accepts nothing"},
		{"lookahead", `{"type":"object","properties":{"a":{"type":"string","pattern":"(?=x)y"}}}`, `JSON schema at #/properties/a/pattern: pattern at character 2: the group (?= is not supported`},
		{"backreference", `{"type":"string","pattern":"(a)\\1"}`, `#/pattern: pattern at character 4: the escape \1 is not supported`},
		{"word boundary", `{"type":"string","pattern":"\\bx"}`, `the escape \b is not supported`},
		{"inner anchor", `{"type":"string","pattern":"a^b"}`, `the anchor ^ is supported only at the pattern's start`},
		{"possessive", `{"type":"string","pattern":"a++"}`, `possessive repetitions are not supported`},
		{"pattern not a string", `{"type":"string","pattern":1}`, `#/pattern: must be a string`},
		{"unknown format", `{"type":"string","format":"ipv6"}`, `#/format: the format "ipv6" is not supported (date, time, date-time, uuid, email)`},
		{"format and pattern", `{"type":"string","format":"date","pattern":"^2"}`, `format and pattern together are not supported`},
		{"format and length", `{"type":"string","format":"email","maxLength":20}`, `format and maxLength together are not supported`},
		{"int32", `{"type":"integer","format":"int32"}`, `#/format: the format "int32" of a number is not supported (int64, float, double)`},
		{"format without a type", `{"format":"date"}`, `#/format: format needs "type": "string"`},
		{"fractional number bound", `{"type":"number","maximum":0.5}`, "#/maximum: 0.5 is not supported: a number's bounds must be whole numbers"},
		{"bounds without a type", `{"minimum":0}`, `numeric bounds need "type": "integer" or "number"`},
		{"bound not a number", `{"type":"integer","maximum":"9"}`, "#/maximum: must be a number"},
		{"unknown type", `{"type":"text"}`, `unknown type "text"`},
		{"bad type", `{"type":3}`, "must be a type name"},
		{"required missing", `{"properties":{"a":{}},"required":["b"]}`, `"b" is not among the properties`},
		{"bad ref", `{"$ref":"http://x"}`, "only references to #"},
		{"missing def", `{"$ref":"#/$defs/x"}`, "the schema has no $defs"},
		{"bounds", `{"type":"string","minLength":3,"maxLength":2}`, "2 is below minLength 3"},
		{"too long", `{"type":"string","maxLength":100000}`, "must be an integer 0..1000"},
		{"const beside a type", `{"const":"a","type":"integer"}`, "#/const: no value of const satisfies the keywords beside it (type)"},
		{"enum beside a length", `{"enum":["abc"],"type":"string","maxLength":2}`, "#/enum: no value of enum satisfies the keywords beside it (type, maxLength)"},
		{"allOf conflict", `{"allOf":[{"type":"integer","minimum":1},{"minimum":2}]}`, `#/allOf/1: cannot merge with the schemas beside it: "minimum" is given twice with different values (1 and 2)`},
		{"allOf types", `{"allOf":[{"type":"string"}],"type":"integer"}`, `no value is of type "integer" and of type "string"`},
		{"ref beside a conflict", `{"$defs":{"s":{"type":"integer","maximum":3}},"$ref":"#/$defs/s","maximum":4}`, `#: the keywords beside $ref (maximum) cannot be merged into it: "maximum" is given twice`},
		{"anyOf ruled out", `{"anyOf":[{"type":"string"},{"type":"boolean"}],"type":"integer"}`, `#/anyOf: no alternative satisfies the keywords beside anyOf (type)`},
		{"closed object merged", `{"allOf":[{"properties":{"a":{}}}],"additionalProperties":false}`, `property "a" is merged into a schema whose additionalProperties limits it`},
		{"empty enum", `{"enum":[]}`, "must be a non-empty array"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := FromJSONSchema([]byte(tc.schema))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// TestSchemaSentencesValidate walks random paths through schema grammars
// one byte at a time, every byte drawn from what the mask allows, and
// checks each finished text with encoding/json and a validator written
// apart from the grammar: whatever a model picks, the text it ends with
// parses and satisfies the schema.
func TestSchemaSentencesValidate(t *testing.T) {
	schemas := []string{
		`{"type":"object","properties":{"name":{"type":"string","maxLength":5},"age":{"type":"integer"},"score":{"type":"number"},"tags":{"type":"array","items":{"enum":["a","b",null]},"maxItems":3},"ok":{"type":["boolean","null"]}},"required":["name","tags"],"additionalProperties":false}`,
		`{"type":"array","items":{"anyOf":[{"type":"integer"},{"type":"string","minLength":1,"maxLength":2}]},"minItems":1,"maxItems":4}`,
		`{"$defs":{"n":{"type":"object","properties":{"v":{"const":7},"k":{"type":"array","items":{"$ref":"#/$defs/n"},"maxItems":2}},"required":["v"],"additionalProperties":false}},"$ref":"#/$defs/n"}`,
	}
	r := rand.New(rand.NewPCG(3, 4))
	v := byteVocab()
	for si, src := range schemas {
		g, err := FromJSONSchema([]byte(src))
		require.NoError(t, err)
		var schema any
		require.NoError(t, json.Unmarshal([]byte(src), &schema))
		for trial := range 30 {
			text := randomSentence(t, g, v, r)
			require.NotNil(t, text, "schema %d trial %d: unfinished", si, trial)
			require.True(t, utf8.Valid(text), "%q", text)
			var got any
			require.NoError(t, json.Unmarshal(text, &got), "schema %d: %q", si, text)
			defs, _ := schema.(map[string]any)["$defs"].(map[string]any)
			require.NoError(t, validate(schema, got, defs, "#"), "schema %d: %s", si, text)
		}
	}
}

// byteVocab has a token for each byte and end of text (256).
func byteVocab() *Vocab {
	tokens := make([][]byte, 257)
	for b := range 256 {
		tokens[b] = []byte{byte(b)}
	}
	return NewVocab(tokens, []int{256}, nil)
}

// randomSentence walks a random path through g one byte at a time, every
// byte drawn from what the mask of v (byteVocab) allows, leaning towards
// closing: it ends when end of text is allowed, and half the time takes
// structure over more characters. Nil if 400 bytes did not finish it.
func randomSentence(t *testing.T, g *Grammar, v *Vocab, r *rand.Rand) []byte {
	t.Helper()
	const eos = 256
	m := g.NewMatcher()
	var text []byte
	for len(text) < 400 {
		mask := m.Mask(v)
		var ids []int
		for id := range 257 {
			if Allowed(mask, id) {
				ids = append(ids, id)
			}
		}
		require.NotEmpty(t, ids, "dead end after %q", text)
		if Allowed(mask, eos) {
			return text
		}
		id := ids[r.IntN(len(ids))]
		if r.IntN(2) == 0 {
			for _, c := range []int{'"', '}', ']', ','} {
				if Allowed(mask, c) {
					id = c
					break
				}
			}
		}
		require.NoError(t, m.Accept([]byte{byte(id)}))
		text = append(text, byte(id))
	}
	return nil
}

// validate checks v against the schema subset the tests use.
func validate(s, v any, defs map[string]any, at string) error {
	sm, _ := s.(map[string]any)
	if ref, ok := sm["$ref"].(string); ok {
		return validate(defs[ref[len("#/$defs/"):]], v, defs, at)
	}
	if c, ok := sm["const"]; ok {
		if fmt.Sprint(c) != fmt.Sprint(v) {
			return fmt.Errorf("%s: %v is not the const %v", at, v, c)
		}
		return nil
	}
	if e, ok := sm["enum"].([]any); ok {
		if !slices.ContainsFunc(e, func(x any) bool { return fmt.Sprint(x) == fmt.Sprint(v) }) {
			return fmt.Errorf("%s: %v is not in the enum", at, v)
		}
		return nil
	}
	if alts, ok := sm["anyOf"].([]any); ok {
		for _, a := range alts {
			if validate(a, v, defs, at) == nil {
				return nil
			}
		}
		return fmt.Errorf("%s: %v matches no anyOf", at, v)
	}
	types := []any{sm["type"]}
	if list, ok := sm["type"].([]any); ok {
		types = list
	}
	for _, ty := range types {
		if err := validateType(sm, ty, v, defs, at); err == nil {
			return nil
		}
	}
	return fmt.Errorf("%s: %v is not of type %v", at, v, sm["type"])
}

func validateType(sm map[string]any, ty, v any, defs map[string]any, at string) error {
	switch ty {
	case "null":
		if v != nil {
			return fmt.Errorf("not null")
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			return fmt.Errorf("not boolean")
		}
	case "number", "integer":
		f, ok := v.(float64)
		if !ok || ty == "integer" && f != float64(int64(f)) {
			return fmt.Errorf("not %s", ty)
		}
	case "string":
		s, ok := v.(string)
		n := utf8.RuneCountInString(s)
		if !ok || sm["maxLength"] != nil && float64(n) > sm["maxLength"].(float64) || sm["minLength"] != nil && float64(n) < sm["minLength"].(float64) {
			return fmt.Errorf("not a string of the lengths")
		}
	case "array":
		a, ok := v.([]any)
		if !ok || sm["maxItems"] != nil && float64(len(a)) > sm["maxItems"].(float64) || sm["minItems"] != nil && float64(len(a)) < sm["minItems"].(float64) {
			return fmt.Errorf("not an array of the lengths")
		}
		for i, e := range a {
			if err := validate(sm["items"], e, defs, fmt.Sprintf("%s/%d", at, i)); err != nil {
				return err
			}
		}
	case "object":
		o, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("not an object")
		}
		props, _ := sm["properties"].(map[string]any)
		for _, k := range sm["required"].([]any) {
			if _, ok := o[k.(string)]; !ok {
				return fmt.Errorf("%s: %s missing", at, k)
			}
		}
		for k, e := range o {
			ps, ok := props[k]
			if !ok {
				return fmt.Errorf("%s: extra property %s", at, k)
			}
			if err := validate(ps, e, defs, at+"/"+k); err != nil {
				return err
			}
		}
	default:
		return fmt.Errorf("type %v", ty)
	}
	return nil
}
