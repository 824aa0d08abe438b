package grammar

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// The JSON rules every schema grammar builds on, after llama.cpp's
// json-schema-to-grammar: whitespace is at most one space or a newline
// and 20 indents, numbers have at most 16 digits a part and 2 of
// exponent, so that what a model writes parses as float64 everywhere.
var jsonRules = []struct {
	name, body string
	uses       []string // the rules body names, defined with it
}{
	{"space", `| " " | "\n" [ \t]{0,20}`, nil},
	{"boolean", `("true" | "false") space`, []string{"space"}},
	{"null", `"null" space`, []string{"space"}},
	{"integral-part", `[0] | [1-9] [0-9]{0,15}`, nil},
	{"decimal-part", `[0-9]{1,16}`, nil},
	{"integer", `("-"? integral-part) space`, []string{"integral-part", "space"}},
	{"number", `("-"? integral-part) ("." decimal-part)? ([eE] [-+]? [0-9]{1,2})? space`, []string{"integral-part", "decimal-part", "space"}},
	{"char", `[^"\\\x7F\x00-\x1F] | [\\] (["\\/bfnrt] | "u" [0-9a-fA-F]{4})`, nil},
	// bmpchar is a char of a string with a maxLength: no character beyond
	// U+FFFF written as itself, so that its count of characters (JSON
	// Schema's) is also its UTF-16 length (JavaScript's, zod's .max()); such
	// a character can still be written as two \u escapes, counted two.
	{"bmpchar", `[^"\\\x7F\x00-\x1F\U00010000-\U0010FFFF] | [\\] (["\\/bfnrt] | "u" [0-9a-fA-F]{4})`, nil},
	{"string", `"\"" char* "\"" space`, []string{"char", "space"}},
	{"value", `object | array | string | number | boolean | null`, []string{"object", "array", "string", "number", "boolean", "null"}},
	{"object", `"{" space ( string ":" space value ("," space string ":" space value)* )? "}" space`, []string{"space", "string", "value"}},
	{"array", `"[" space ( value ("," space value)* )? "]" space`, []string{"space", "value"}},
}

var (
	jsonObjectOnce sync.Once
	jsonObject     *Grammar
)

// JSONObject is the grammar of any JSON object (OpenAI's response_format
// {"type": "json_object"}), optionally followed by whitespace.
func JSONObject() *Grammar {
	jsonObjectOnce.Do(func() {
		var b strings.Builder
		b.WriteString("root ::= object\n")
		for _, r := range jsonRules {
			fmt.Fprintf(&b, "%s ::= %s\n", r.name, r.body)
		}
		g, err := Parse(b.String())
		if err != nil {
			panic("grammar: the built-in JSON grammar does not parse: " + err.Error())
		}
		jsonObject = g
	})
	return jsonObject
}

// SchemaError is a JSON schema FromJSONSchema cannot turn into a grammar:
// Path is the JSON pointer of the schema at fault.
type SchemaError struct {
	Path, Message string
}

func (e *SchemaError) Error() string {
	return fmt.Sprintf("JSON schema at %s: %s", e.Path, e.Message)
}

// unsupportedKeywords constrain values in ways a grammar here does not
// express; a schema using one is refused rather than half obeyed.
var unsupportedKeywords = []string{
	"multipleOf", "patternProperties", "minProperties", "maxProperties", "uniqueItems",
	"contains", "not", "if", "then", "else", "dependentRequired", "dependentSchemas",
	"prefixItems", "propertyNames", "unevaluatedProperties", "unevaluatedItems", "contentEncoding",
}

// maxRepeat is the largest minItems, maxItems, minLength or maxLength
// taken (each is that many copies of a rule).
const maxRepeat = 1000

// FromJSONSchema compiles a JSON schema into the grammar of the JSON
// texts it accepts: type (and lists of types), properties in schema order
// with required ones first, additionalProperties, items, minItems,
// maxItems, minLength, maxLength, format (date, time, date-time, uuid,
// email), pattern (a regular-expression subset: patternRule), integer
// bounds of any value and whole-number bounds on a number, enum, const,
// anyOf, oneOf (when its alternatives are provably disjoint: oneof.go),
// allOf, and $ref into $defs or definitions.
// Keywords beside $ref, allOf, anyOf and oneOf are merged into each
// schema, and those beside enum and const filter the values; what cannot
// be merged is a SchemaError naming it, never dropped. Annotations
// (title, description, default, ...) are ignored; keywords that would
// constrain values in other ways (multipleOf, uniqueItems, ...) are a
// SchemaError.
func FromJSONSchema(schema []byte) (*Grammar, error) {
	v, err := decodeOrdered(schema)
	if err != nil {
		return nil, &SchemaError{Path: "#", Message: "not JSON: " + err.Error()}
	}
	c := &converter{root: v, rules: map[string]string{}, names: map[string]bool{}}
	c.use("space") // every literal is followed by it
	body, err := c.visit(v, "#", "root", 0)
	if err != nil {
		return nil, err
	}
	c.define("root", body)
	g, err := Parse(c.source())
	if err != nil {
		return nil, &SchemaError{Path: "#", Message: err.Error()}
	}
	return g, nil
}

type converter struct {
	root       any
	rules      map[string]string
	order      []string
	names      map[string]bool
	proofSteps int // comparisons of the oneOf being proved (oneof.go)
}

// source is the GBNF text of the rules defined.
func (c *converter) source() string {
	var b strings.Builder
	for _, name := range c.order {
		fmt.Fprintf(&b, "%s ::= %s\n", name, c.rules[name])
	}
	return b.String()
}

func (c *converter) define(name, body string) {
	if _, ok := c.rules[name]; !ok {
		c.order = append(c.order, name)
	}
	c.rules[name] = body
}

// use makes sure a JSON rule (and those it uses) is defined.
func (c *converter) use(name string) string {
	if _, ok := c.rules[name]; ok {
		return name
	}
	for _, r := range jsonRules {
		if r.name == name {
			c.define(name, r.body)
			for _, dep := range r.uses {
				c.use(dep)
			}
		}
	}
	return name
}

// nonName is what a rule name cannot hold.
var nonName = regexp.MustCompile(`[^a-zA-Z0-9-]+`)

// fresh returns an unused rule name from base.
func (c *converter) fresh(base string) string {
	base = nonName.ReplaceAllString(base, "-")
	name := base
	for i := 2; ; i++ {
		if _, ok := c.rules[name]; !ok && !c.reserved(name) {
			c.define(name, "")
			return name
		}
		name = fmt.Sprintf("%s-%d", base, i)
	}
}

func (c *converter) reserved(name string) bool {
	for _, r := range jsonRules {
		if r.name == name {
			return true
		}
	}
	return name == "root"
}

// literal is GBNF for the JSON text of v, then space.
func literal(v any) string {
	return gbnfString(string(marshal(plain(v)))) + " space"
}

// gbnfString quotes s as a GBNF literal.
func gbnfString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7F:
			fmt.Fprintf(&b, `\x%02X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

const maxDepth = 64

// visit returns a GBNF expression for schema s at path.
func (c *converter) visit(s any, path, name string, depth int) (string, error) {
	if depth > maxDepth {
		return "", &SchemaError{Path: path, Message: fmt.Sprintf("nested deeper than %d", maxDepth)}
	}
	switch s := s.(type) {
	case bool:
		if !s {
			return "", &SchemaError{Path: path, Message: "false accepts nothing"}
		}
		return c.use("value"), nil
	case *object:
		return c.visitObject(s, path, name, depth)
	}
	return "", &SchemaError{Path: path, Message: "a schema must be an object or a boolean"}
}

func (c *converter) visitObject(s *object, path, name string, depth int) (string, error) {
	for _, k := range unsupportedKeywords {
		if _, ok := s.get(k); ok {
			return "", &SchemaError{Path: path + "/" + k, Message: fmt.Sprintf("the keyword %q is not supported by constrained decoding here", k)}
		}
	}
	// A keyword beside $ref, allOf, anyOf, oneOf, const or enum holds
	// too: merged into each schema, or filtering the values.
	if ref, ok := s.get("$ref"); ok {
		sib := siblings(s, "$ref")
		if sib == nil {
			return c.ref(ref, path+"/$ref", depth)
		}
		target, err := c.target(ref, path+"/$ref")
		if err != nil {
			return "", err
		}
		return c.visitMerged(target, sib, path, "$ref", name, depth)
	}
	if v, ok := s.get("allOf"); ok {
		list, ok := v.([]any)
		if !ok || len(list) == 0 {
			return "", &SchemaError{Path: path + "/allOf", Message: "must be a non-empty array"}
		}
		var all any = true
		if sib := siblings(s, "allOf"); sib != nil {
			all = sib
		}
		for i, e := range list {
			m, err := merge(all, e)
			if err != nil {
				return "", &SchemaError{Path: fmt.Sprintf("%s/allOf/%d", path, i), Message: "cannot merge with the schemas beside it: " + err.Error()}
			}
			all = m
		}
		return c.visit(all, path+"/allOf", name, depth+1)
	}
	for _, k := range []string{"const", "enum"} {
		v, ok := s.get(k)
		if !ok {
			continue
		}
		values := []any{v}
		if k == "enum" {
			list, ok := v.([]any)
			if !ok || len(list) == 0 {
				return "", &SchemaError{Path: path + "/enum", Message: "must be a non-empty array"}
			}
			values = list
		}
		if sib := siblings(s, k); sib != nil {
			var err error
			if values, err = c.filterValues(values, sib, k, path, depth); err != nil {
				return "", err
			}
		}
		alts := make([]string, len(values))
		for i, e := range values {
			alts[i] = literal(e)
		}
		return "(" + strings.Join(alts, " | ") + ")", nil
	}
	for _, k := range []string{"anyOf", "oneOf"} {
		v, ok := s.get(k)
		if !ok {
			continue
		}
		list, ok := v.([]any)
		if !ok || len(list) == 0 {
			return "", &SchemaError{Path: path + "/" + k, Message: "must be a non-empty array"}
		}
		sib := siblings(s, k)
		var es []any
		var at []int // es[i]'s index in list
		for i, e := range list {
			if sib != nil {
				m, err := merge(e, sib)
				if errors.Is(err, errNoValue) {
					continue // an alternative the keywords beside it rule out
				}
				if err != nil {
					return "", &SchemaError{Path: fmt.Sprintf("%s/%s/%d", path, k, i),
						Message: fmt.Sprintf("the keywords beside %s (%s) cannot be merged into it: %s", k, strings.Join(sib.keys, ", "), err)}
				}
				e = m
			}
			es, at = append(es, e), append(at, i)
		}
		if len(es) == 0 {
			return "", &SchemaError{Path: path + "/" + k, Message: fmt.Sprintf("no alternative satisfies the keywords beside %s (%s)", k, strings.Join(sib.keys, ", "))}
		}
		if k == "oneOf" {
			if err := c.checkOneOf(es, at, path, depth); err != nil {
				return "", err
			}
		}
		alts := make([]string, len(es))
		for i, e := range es {
			var err error
			if alts[i], err = c.visit(e, fmt.Sprintf("%s/%s/%d", path, k, at[i]), fmt.Sprintf("%s-%d", name, at[i]), depth+1); err != nil {
				return "", err
			}
		}
		return "(" + strings.Join(alts, " | ") + ")", nil
	}
	var types []string
	switch t, _ := s.get("type"); t := t.(type) {
	case nil:
		if _, ok := s.get("properties"); ok {
			types = []string{"object"}
		} else if _, ok := s.get("items"); ok {
			types = []string{"array"}
		}
	case string:
		types = []string{t}
	case []any:
		for _, e := range t {
			name, ok := e.(string)
			if !ok {
				return "", &SchemaError{Path: path + "/type", Message: "must be a type name or a list of them"}
			}
			types = append(types, name)
		}
	default:
		return "", &SchemaError{Path: path + "/type", Message: "must be a type name or a list of them"}
	}
	if len(types) == 0 {
		for _, k := range boundKeywords {
			if _, ok := s.get(k); ok {
				return "", &SchemaError{Path: path + "/" + k, Message: "numeric bounds need \"type\": \"integer\" or \"number\""}
			}
		}
		for _, k := range stringKeywords {
			if _, ok := s.get(k); ok {
				return "", &SchemaError{Path: path + "/" + k, Message: fmt.Sprintf("%s needs \"type\": \"string\"", k)}
			}
		}
		return c.use("value"), nil
	}
	alts := make([]string, len(types))
	for i, t := range types {
		var err error
		if alts[i], err = c.visitType(s, t, path, name, depth); err != nil {
			return "", err
		}
	}
	if len(alts) == 1 {
		return alts[0], nil
	}
	return "(" + strings.Join(alts, " | ") + ")", nil
}

func (c *converter) visitType(s *object, t, path, name string, depth int) (string, error) {
	switch t {
	case "integer", "number":
		return c.number(s, t, path)
	case "boolean", "null":
		return c.use(t), nil
	case "string":
		return c.str(s, path)
	case "array":
		return c.array(s, path, name, depth)
	case "object":
		return c.object(s, path, name, depth)
	}
	return "", &SchemaError{Path: path + "/type", Message: fmt.Sprintf("unknown type %q (string, number, integer, boolean, null, array, object)", t)}
}

// boundKeywords bound an integer or a number.
var boundKeywords = []string{"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}

// number is the rule of an integer or number within its bounds, if any
// (rangeRule): a bounded number is written without an exponent.
func (c *converter) number(s *object, t, path string) (string, error) {
	if f, ok := s.get("format"); ok && !slices.Contains(numberFormats, fmt.Sprint(f)) {
		return "", &SchemaError{Path: path + "/format", Message: fmt.Sprintf("the format %s of a number is not supported (int64, float, double)", marshal(plain(f)))}
	}
	var lo, hi *bound
	given := false
	for _, k := range boundKeywords {
		v, ok := s.get(k)
		if !ok {
			continue
		}
		b, err := readBound(v, k, t == "integer")
		if err != nil {
			return "", &SchemaError{Path: path + "/" + k, Message: err.Error()}
		}
		given = true
		if k == "minimum" || k == "exclusiveMinimum" {
			lo = maxBound(lo, b)
		} else {
			hi = minBound(hi, b)
		}
	}
	if !given {
		return c.use(t), nil
	}
	body, err := rangeRule(lo, hi, t == "integer")
	if err != nil {
		return "", &SchemaError{Path: path, Message: fmt.Sprintf("%s (%s)", err, describeBounds(s))}
	}
	return body + " " + c.use("space"), nil
}

// describeBounds names a schema's bound keywords and their values.
func describeBounds(s *object) string {
	var parts []string
	for _, k := range boundKeywords {
		if v, ok := s.get(k); ok {
			parts = append(parts, fmt.Sprintf("%s %v", k, v))
		}
	}
	return strings.Join(parts, ", ")
}

// bounds reads a pair of count keywords (absent: 0 and -1, no bound).
func bounds(s *object, path, loKey, hiKey string) (lo, hi int, err error) {
	read := func(key string, def int) (int, error) {
		v, ok := s.get(key)
		if !ok {
			return def, nil
		}
		n, ok := v.(json.Number)
		i, err := strconv.Atoi(string(n))
		if !ok || err != nil || i < 0 || i > maxRepeat {
			return 0, &SchemaError{Path: path + "/" + key, Message: fmt.Sprintf("must be an integer 0..%d", maxRepeat)}
		}
		return i, nil
	}
	if lo, err = read(loKey, 0); err != nil {
		return 0, 0, err
	}
	if hi, err = read(hiKey, -1); err != nil {
		return 0, 0, err
	}
	if hi >= 0 && hi < lo {
		return 0, 0, &SchemaError{Path: path + "/" + hiKey, Message: fmt.Sprintf("%d is below %s %d", hi, loKey, lo)}
	}
	return lo, hi, nil
}

// repeat is GBNF for item lo to hi times (hi < 0: no bound).
func repeat(item string, lo, hi int) string {
	switch {
	case hi < 0 && lo == 0:
		return item + "*"
	case hi < 0:
		return fmt.Sprintf("%s{%d,}", item, lo)
	case lo == hi:
		return fmt.Sprintf("%s{%d}", item, lo)
	}
	return fmt.Sprintf("%s{%d,%d}", item, lo, hi)
}

func (c *converter) array(s *object, path, name string, depth int) (string, error) {
	item := c.use("value")
	if v, ok := s.get("items"); ok {
		var err error
		if item, err = c.visit(v, path+"/items", name+"-item", depth+1); err != nil {
			return "", err
		}
		rule := c.fresh(name + "-item")
		c.define(rule, item)
		item = rule
	}
	lo, hi, err := bounds(s, path, "minItems", "maxItems")
	if err != nil {
		return "", err
	}
	open, sp := `"[" `+c.use("space"), `"]" space`
	if hi == 0 {
		return open + " " + sp, nil
	}
	// item ("," space item){lo-1, hi-1}, optional as a whole when lo is 0.
	more := repeat(`("," space `+item+`)`, max(lo-1, 0), max(hi-1, -1))
	list := item + " " + more
	if lo == 0 {
		list = "(" + list + ")?"
	}
	return open + " " + list + " " + sp, nil
}

func (c *converter) object(s *object, path, name string, depth int) (string, error) {
	props, _ := s.get("properties")
	po, _ := props.(*object)
	if props != nil && po == nil {
		return "", &SchemaError{Path: path + "/properties", Message: "must be an object"}
	}
	required := map[string]bool{}
	if v, ok := s.get("required"); ok {
		list, ok := v.([]any)
		if !ok {
			return "", &SchemaError{Path: path + "/required", Message: "must be an array of property names"}
		}
		for _, e := range list {
			k, ok := e.(string)
			if !ok {
				return "", &SchemaError{Path: path + "/required", Message: "must be an array of property names"}
			}
			if po == nil || !slices.Contains(po.keys, k) {
				return "", &SchemaError{Path: path + "/required", Message: fmt.Sprintf("%q is not among the properties", k)}
			}
			required[k] = true
		}
	}
	// Extra properties: absent or true any value, a schema that schema's,
	// false none.
	extra := ""
	switch ap, ok := s.get("additionalProperties"); {
	case !ok || ap == true:
		extra = c.use("value")
	case ap == false:
	default:
		var err error
		if extra, err = c.visit(ap, path+"/additionalProperties", name+"-additional", depth+1); err != nil {
			return "", err
		}
	}
	if po == nil && extra == "value" {
		return c.use("object"), nil
	}
	var req, opt []string // key-value rules
	if po != nil {
		for _, k := range po.keys {
			body, err := c.visit(po.vals[k], path+"/properties/"+k, name+"-"+k, depth+1)
			if err != nil {
				return "", err
			}
			kv := c.fresh(name + "-" + k + "-kv")
			c.define(kv, literal(k)+` ":" space `+body)
			if required[k] {
				req = append(req, kv)
			} else {
				opt = append(opt, kv)
			}
		}
	}
	if extra != "" {
		kv := c.fresh(name + "-additional-kv")
		c.define(kv, c.use("string")+` ":" space `+extra)
		star := c.fresh(name + "-additional")
		c.define(star, kv+` ("," space `+kv+`)*`)
		opt = append(opt, star)
	}
	// The optional ones in order, any of them left out: opt(i) is a
	// non-empty list of those from i on.
	optList := ""
	for i := len(opt) - 1; i >= 0; i-- {
		rule := c.fresh(fmt.Sprintf("%s-rest-%d", name, i))
		body := opt[i]
		if optList != "" {
			body = fmt.Sprintf(`%s ("," space %s)? | %s`, opt[i], optList, optList)
		}
		c.define(rule, body)
		optList = rule
	}
	var b strings.Builder
	b.WriteString(`"{" ` + c.use("space"))
	for i, kv := range req {
		if i > 0 {
			b.WriteString(` "," space`)
		}
		b.WriteString(" " + kv)
	}
	switch {
	case optList != "" && len(req) > 0:
		b.WriteString(` ("," space ` + optList + `)?`)
	case optList != "":
		b.WriteString(" " + optList + "?")
	}
	b.WriteString(` "}" space`)
	return b.String(), nil
}
