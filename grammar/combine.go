package grammar

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// errNoValue is a merge whose schemas no value satisfies together (an
// anyOf's alternative so merged is left out).
var errNoValue = errors.New("no value satisfies both")

// valueKeywords are the keywords that constrain a value here (and those
// refused, so that a refused one is reported, not merged away); any other
// key is an annotation.
var valueKeywords = append([]string{
	"type", "enum", "const", "$ref", "anyOf", "oneOf", "allOf", "properties", "required",
	"additionalProperties", "items", "minItems", "maxItems", "minLength", "maxLength", "format", "pattern",
	"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
}, unsupportedKeywords...)

// siblings is s's value keywords other than those in skip, as a schema of
// their own (nil if none): what a schema says beside its $ref, enum or
// anyOf, which must hold too.
func siblings(s *object, skip ...string) *object {
	var out *object
	for _, k := range s.keys {
		if !slices.Contains(valueKeywords, k) || slices.Contains(skip, k) {
			continue
		}
		if out == nil {
			out = &object{vals: map[string]any{}}
		}
		out.keys = append(out.keys, k)
		out.vals[k] = s.vals[k]
	}
	return out
}

// merge is one schema for what both a and b accept, when their keywords
// can be put side by side: type lists intersect, required lists join,
// properties merge by name, and any other keyword given by both must be
// the same. What does not merge so is an error naming the keyword.
func merge(a, b any) (any, error) {
	if a == true {
		return b, nil
	}
	if b == true {
		return a, nil
	}
	ao, aok := a.(*object)
	bo, bok := b.(*object)
	if !aok || !bok {
		return nil, fmt.Errorf("false (or a non-schema) accepts nothing")
	}
	for _, pair := range [][2]*object{{ao, bo}, {bo, ao}} {
		if err := closedAgainst(pair[0], pair[1]); err != nil {
			return nil, err
		}
	}
	out := &object{keys: slices.Clone(ao.keys), vals: map[string]any{}}
	for k, v := range ao.vals {
		out.vals[k] = v
	}
	for _, k := range bo.keys {
		bv := bo.vals[k]
		av, shared := out.vals[k]
		if !shared {
			out.keys = append(out.keys, k)
			out.vals[k] = bv
			continue
		}
		var err error
		switch k {
		case "type":
			av, err = intersectTypes(av, bv)
		case "required":
			av, err = joinRequired(av, bv)
		case "properties":
			av, err = mergeProperties(av, bv)
		default:
			if !bytes.Equal(marshal(plain(av)), marshal(plain(bv))) {
				err = fmt.Errorf("%q is given twice with different values (%s and %s): only type, required and properties are merged", k, marshal(plain(av)), marshal(plain(bv)))
			}
		}
		if err != nil {
			return nil, err
		}
		out.vals[k] = av
	}
	return out, nil
}

// closedAgainst refuses a merge where a limits extra properties and b
// names one a does not: a's additionalProperties judges that property,
// which the merged properties would hide.
func closedAgainst(a, b *object) error {
	ap, ok := a.get("additionalProperties")
	if !ok || ap == true {
		return nil
	}
	aprops, _ := a.get("properties")
	bprops, _ := b.get("properties")
	ao, _ := aprops.(*object)
	bo, _ := bprops.(*object)
	if bo == nil {
		return nil
	}
	for _, k := range bo.keys {
		if ao == nil || !slices.Contains(ao.keys, k) {
			return fmt.Errorf("property %q is merged into a schema whose additionalProperties limits it: not supported", k)
		}
	}
	return nil
}

func typeList(v any) ([]string, error) {
	switch v := v.(type) {
	case string:
		return []string{v}, nil
	case []any:
		var out []string
		for _, e := range v {
			s, ok := e.(string)
			if !ok {
				return nil, fmt.Errorf("type must be a type name or a list of them")
			}
			out = append(out, s)
		}
		return out, nil
	}
	return nil, fmt.Errorf("type must be a type name or a list of them")
}

// intersectTypes is the types both lists allow (an integer is a number).
func intersectTypes(a, b any) (any, error) {
	la, err := typeList(a)
	if err != nil {
		return nil, err
	}
	lb, err := typeList(b)
	if err != nil {
		return nil, err
	}
	var out []any
	for _, t := range la {
		switch {
		case slices.Contains(lb, t):
			out = append(out, t)
		case t == "integer" && slices.Contains(lb, "number"), t == "number" && slices.Contains(lb, "integer"):
			out = append(out, "integer")
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: no value is of type %s and of type %s", errNoValue, marshal(plain(a)), marshal(plain(b)))
	}
	return out, nil
}

func joinRequired(a, b any) (any, error) {
	la, aok := a.([]any)
	lb, bok := b.([]any)
	if !aok || !bok {
		return nil, fmt.Errorf("required must be an array of property names")
	}
	out := slices.Clone(la)
	for _, k := range lb {
		if !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out, nil
}

func mergeProperties(a, b any) (any, error) {
	ao, aok := a.(*object)
	bo, bok := b.(*object)
	if !aok || !bok {
		return nil, fmt.Errorf("properties must be an object")
	}
	out := &object{keys: slices.Clone(ao.keys), vals: map[string]any{}}
	for k, v := range ao.vals {
		out.vals[k] = v
	}
	for _, k := range bo.keys {
		av, shared := out.vals[k]
		if !shared {
			out.keys = append(out.keys, k)
			out.vals[k] = bo.vals[k]
			continue
		}
		m, err := merge(av, bo.vals[k])
		if err != nil {
			return nil, fmt.Errorf("property %q: %w", k, err)
		}
		out.vals[k] = m
	}
	return out, nil
}

// filterValues keeps the const or enum values that the keywords beside
// them (sib) accept, judged by sib's own grammar; none left is an error
// naming those keywords.
func (c *converter) filterValues(values []any, sib *object, kw, path string, depth int) ([]any, error) {
	sub := &converter{root: c.root, rules: map[string]string{}, names: map[string]bool{}}
	sub.use("space")
	body, err := sub.visit(sib, path, "root", depth+1)
	if err != nil {
		return nil, err
	}
	sub.define("root", body)
	g, err := Parse(sub.source())
	if err != nil {
		return nil, &SchemaError{Path: path, Message: err.Error()}
	}
	var kept []any
	for _, v := range values {
		if g.Matches(marshal(plain(v))) {
			kept = append(kept, v)
		}
	}
	if len(kept) == 0 {
		return nil, &SchemaError{Path: path + "/" + kw, Message: fmt.Sprintf("no value of %s satisfies the keywords beside it (%s)", kw, strings.Join(sib.keys, ", "))}
	}
	return kept, nil
}
