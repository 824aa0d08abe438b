package grammar

import "testing"

// FuzzParse: any text either compiles or is an error, never a panic or a
// hang, and a compiled grammar's matcher takes any bytes.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`root ::= "a" | [b-d]+ x`, "root ::= (\"x\" | y)*\ny ::= [^\\n]{2,3}", `root ::= "\u00e9"? [\x00-\x7f]`,
		`root ::= root`, `root ::= ("a"`, `root ::= [`, `root ::= "a"{1,}`,
	} {
		f.Add(s, []byte("abc"))
	}
	f.Fuzz(func(t *testing.T, src string, text []byte) {
		g, err := Parse(src)
		if err != nil {
			return
		}
		m := g.NewMatcher()
		for i := range text {
			if m.Accept(text[i:i+1]) != nil {
				break
			}
		}
		m.Complete()
	})
}

// FuzzFromJSONSchema: any bytes either compile to a grammar or are a
// SchemaError, and the grammar's mask over a byte vocabulary works.
func FuzzFromJSONSchema(f *testing.F) {
	for _, s := range []string{
		`{"type":"object","properties":{"a":{"type":"integer","minimum":0}},"required":["a"]}`,
		`{"$defs":{"n":{"anyOf":[{"type":"null"},{"$ref":"#/$defs/n"}]}},"$ref":"#/$defs/n"}`,
		`{"enum":[1,"x",null,{"a":[]}]}`, `{"type":["string","array"],"maxItems":2,"maxLength":3}`, `true`, `{`,
		`{"type":"integer","exclusiveMinimum":-17.5,"maximum":1e3}`, `{"type":"number","minimum":0,"exclusiveMaximum":10}`,
		`{"type":"string","pattern":"^(a|[^b-d]\\d{2,3})+?x*$"}`, `{"type":"string","format":"date-time"}`,
		`{"allOf":[{"type":"integer"},{"maximum":3}],"$defs":{"a":{"$ref":"#/$defs/a","type":"string"}}}`,
		`{"enum":["a",2],"type":"string","$ref":"#"}`,
	} {
		f.Add([]byte(s))
	}
	tokens := make([][]byte, 256)
	for b := range tokens {
		tokens[b] = []byte{byte(b)}
	}
	v := NewVocab(tokens, nil, nil)
	f.Fuzz(func(t *testing.T, schema []byte) {
		g, err := FromJSONSchema(schema)
		if err != nil {
			if _, ok := err.(*SchemaError); !ok {
				t.Fatalf("%T is not a *SchemaError: %v", err, err)
			}
			return
		}
		g.NewMatcher().Mask(v)
	})
}
