package grammar

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestOneOfDisjoint: a oneOf whose alternatives are provably disjoint is
// their union, each value matching exactly one (issue #42): different
// types, different const or enum values, a discriminator property both
// require with distinct consts (zod's discriminatedUnion; pydantic's
// through $ref), and a property one requires that the other's
// additionalProperties false forbids.
func TestOneOfDisjoint(t *testing.T) {
	for _, tc := range []struct {
		name, schema string
		yes, no      []string
	}{
		{"types", `{"oneOf":[{"type":"string"},{"type":"integer"},{"type":"null"}]}`, []string{`"a"`, `1`, `null`}, []string{`true`}},
		{"consts", `{"oneOf":[{"const":"a"},{"const":"b"},{"const":1}]}`, []string{`"a"`, `"b"`, `1`}, []string{`"c"`}},
		{"enums", `{"oneOf":[{"enum":["a","b"]},{"enum":["c",2]}]}`, []string{`"a"`, `2`}, []string{`"d"`}},
		{"a const and a type it is not", `{"oneOf":[{"const":"a"},{"type":"integer","minimum":0}]}`, []string{`"a"`, `3`}, []string{`-1`}},
		{
			"zod's discriminatedUnion", `{"oneOf":[` +
				`{"type":"object","properties":{"kind":{"type":"string","const":"circle"},"r":{"type":"number"}},"required":["kind","r"],"additionalProperties":false},` +
				`{"type":"object","properties":{"kind":{"type":"string","enum":["square"]},"side":{"type":"number"}},"required":["kind","side"],"additionalProperties":false}]}`,
			[]string{`{"kind":"circle","r":1}`, `{"kind":"square","side":2}`}, []string{`{"kind":"circle","side":2}`, `{"kind":"triangle","r":1}`},
		},
		{
			"pydantic's discriminator through $ref", `{"$defs":{"Cat":{"properties":{"pet_type":{"const":"cat","title":"T"},"meows":{"type":"integer"}},"required":["pet_type","meows"],"type":"object"},` +
				`"Dog":{"properties":{"pet_type":{"const":"dog"},"barks":{"type":"number"}},"required":["pet_type","barks"],"type":"object"}},` +
				`"oneOf":[{"$ref":"#/$defs/Cat"},{"$ref":"#/$defs/Dog"}],"discriminator":{"propertyName":"pet_type"}}`,
			[]string{`{"pet_type":"cat","meows":1}`, `{"pet_type":"dog","barks":2}`}, []string{`{"pet_type":"cat","barks":2}`},
		},
		{
			"a required property the other forbids", `{"oneOf":[` +
				`{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"],"additionalProperties":false},` +
				`{"type":"object","properties":{"b":{"type":"integer"}},"required":["b"],"additionalProperties":false}]}`,
			[]string{`{"a":1}`, `{"b":1}`}, []string{`{"a":1,"b":1}`, `{}`},
		},
		{"nested alternatives", `{"oneOf":[{"anyOf":[{"type":"string"},{"type":"boolean"}]},{"type":"array"}]}`, []string{`"x"`, `true`, `[]`}, []string{`1`}},
		{"the keywords beside it rule one out", `{"oneOf":[{"type":"integer"},{"type":"number"}],"type":"string"}`, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := FromJSONSchema([]byte(tc.schema))
			if tc.yes == nil {
				require.Error(t, err) // no alternative is a string: refused as before
				return
			}
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

// TestOneOfOverlapRefused: a oneOf two of whose alternatives may match one
// value is refused with a SchemaError at the oneOf naming both and why,
// never compiled as anyOf (which accepted `1` for integer-or-number).
func TestOneOfOverlapRefused(t *testing.T) {
	for _, tc := range []struct {
		name, schema, path, why string
	}{
		{"integer and number", `{"oneOf":[{"type":"integer"},{"type":"number"}]}`, "#/oneOf", "alternatives 0 and 1 may both match one value (both accept number values)"},
		{"two strings", `{"oneOf":[{"type":"string","maxLength":3},{"type":"string","pattern":"^a"}]}`, "#/oneOf", "both accept string values"},
		{"one const twice", `{"oneOf":[{"const":"a"},{"enum":["b","a"]}]}`, "#/oneOf", `both accept "a"`},
		{"equal numbers", `{"oneOf":[{"const":1},{"const":1.0}]}`, "#/oneOf", "both accept 1"},
		{"a const the other's type holds", `{"oneOf":[{"type":"string"},{"const":"a"}]}`, "#/oneOf", "both accept string values"},
		{"objects without a discriminator", `{"oneOf":[{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]},{"type":"object","properties":{"b":{"type":"string"}},"required":["b"]}]}`,
			"#/oneOf", "no property both require has disjoint schemas"},
		{"a discriminator one does not require", `{"oneOf":[{"type":"object","properties":{"k":{"const":"x"}},"required":["k"]},{"type":"object","properties":{"k":{"const":"y"}}}]}`,
			"#/oneOf", "no property both require"},
		{"properties alone accept strings", `{"oneOf":[{"properties":{"a":{"type":"integer"}}},{"type":"string"}]}`, "#/oneOf", "both accept string values"},
		{"the third against the first", `{"oneOf":[{"type":"string"},{"type":"integer"},{"type":["null","string"]}]}`, "#/oneOf", "alternatives 0 and 2"},
		{"nested", `{"type":"object","properties":{"v":{"oneOf":[{},{"type":"null"}]}}}`, "#/properties/v/oneOf", "both accept null values"},
		// Each level's two required properties refer back: 2^64 comparisons
		// without the budget (the test would not end), refused at once with it.
		{"a proof that branches without end", `{"$defs":{"A":{"type":"object","required":["a","b"],"properties":{"a":{"$ref":"#/$defs/A"},"b":{"$ref":"#/$defs/B"}}},` +
			`"B":{"type":"object","required":["a","b"],"properties":{"a":{"$ref":"#/$defs/B"},"b":{"$ref":"#/$defs/A"}}}},"oneOf":[{"$ref":"#/$defs/A"},{"$ref":"#/$defs/B"}]}`,
			"#/oneOf", "no property both require has disjoint schemas"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := FromJSONSchema([]byte(tc.schema))
			se, ok := err.(*SchemaError)
			require.True(t, ok, "%v", err)
			assert.Equal(t, tc.path, se.Path)
			assert.Contains(t, se.Message, tc.why)
			assert.True(t, strings.Contains(se.Message, "oneOf") && strings.Contains(se.Message, "anyOf"), se.Message)
		})
	}
}
