package grammar

import (
	"fmt"
	"math/big"
	"slices"
	"strings"

	"encoding/json"
)

// oneOf means exactly one alternative matches, which a grammar (a union
// of languages) cannot say in general: excluding the values two
// alternatives share would take the intersection and complement of
// context-free languages. So a oneOf is compiled as the union of its
// alternatives only when no value can match two of them, as proved here
// by the schemas' semantics (JSON Schema's, not the narrower grammars':
// {"properties": ...} alone accepts any string): their values' JSON types
// differ, their const or enum values differ, or they are objects that
// both require a property whose schemas are disjoint in turn (a
// discriminator, as zod's discriminatedUnion and pydantic write it) or
// that one requires and the other's additionalProperties false forbids.
// Anything else is refused, naming the two alternatives and why.

// maxProofSteps bounds the comparisons one oneOf's proof may make.
const maxProofSteps = 10000

// jsonKinds are JSON Schema's types, an integer counted as a number.
var jsonKinds = []string{"null", "boolean", "number", "string", "array", "object"}

// checkOneOf refuses a oneOf (at path) two of whose alternatives (alts,
// merged with the keywords beside it; at[i] is alts[i]'s index in the
// schema) are not provably disjoint.
func (c *converter) checkOneOf(alts []any, at []int, path string, depth int) error {
	c.proofSteps = 0
	for i := range alts {
		for j := i + 1; j < len(alts); j++ {
			if ok, why := c.disjoint(alts[i], alts[j], depth); !ok {
				return &SchemaError{Path: path + "/oneOf", Message: fmt.Sprintf(
					"alternatives %d and %d may both match one value (%s), and oneOf needs exactly one: it is enforced when its alternatives are provably disjoint "+
						"(different types, different const or enum values, or a property both require with disjoint schemas, a discriminator); "+
						"use anyOf if a value may match several", at[i], at[j], why)}
			}
		}
	}
	return nil
}

// disjoint reports whether no value matches both a and b, and when that
// is not proved, why not.
func (c *converter) disjoint(a, b any, depth int) (bool, string) {
	if depth > maxDepth {
		return false, "nested too deep to compare"
	}
	// Alternatives within alternatives and required properties that
	// refer back branch at every level: a budget keeps a hostile schema
	// from making the proof exponential.
	if c.proofSteps++; c.proofSteps > maxProofSteps {
		return false, fmt.Sprintf("more than %d comparisons to prove them disjoint", maxProofSteps)
	}
	a, okA := c.resolved(a, depth)
	b, okB := c.resolved(b, depth)
	if !okA || !okB {
		return false, "a $ref or allOf that cannot be resolved and merged"
	}
	if a == false || b == false {
		return true, ""
	}
	for _, pair := range [][2]any{{a, b}, {b, a}} {
		if alts, ok := c.alternatives(pair[0]); ok {
			for _, alt := range alts {
				if ok, why := c.disjoint(alt, pair[1], depth+1); !ok {
					return false, why
				}
			}
			return true, ""
		}
	}
	shared := intersect(c.kinds(a, depth), c.kinds(b, depth))
	if len(shared) == 0 {
		return true, ""
	}
	ao, _ := a.(*object)
	bo, _ := b.(*object)
	va, fa := finiteValues(ao)
	vb, fb := finiteValues(bo)
	if fa && fb {
		for _, x := range va {
			for _, y := range vb {
				if jsonEqual(x, y) {
					return false, fmt.Sprintf("both accept %s", marshal(plain(x)))
				}
			}
		}
		return true, ""
	}
	if slices.Equal(shared, []string{"object"}) && ao != nil && bo != nil {
		if c.objectsDisjoint(ao, bo, depth) || c.objectsDisjoint(bo, ao, depth) {
			return true, ""
		}
		return false, "both accept objects, and no property both require has disjoint schemas"
	}
	return false, "both accept " + strings.Join(shared, " and ") + " values"
}

// objectsDisjoint: a property a requires rules out every object b
// accepts, its schemas disjoint or b forbidding it.
func (c *converter) objectsDisjoint(a, b *object, depth int) bool {
	for _, p := range requiredOf(a) {
		bs, _ := propertySchema(b, p)
		if bs == false { // b forbids it: undeclared beside additionalProperties false
			return true
		}
		if slices.Contains(requiredOf(b), p) {
			as, _ := propertySchema(a, p)
			if ok, _ := c.disjoint(as, bs, depth+1); ok {
				return true
			}
		}
	}
	return false
}

// resolved is s with $ref followed and allOf merged, the keywords beside
// them merged in as the grammar merges them; false when that fails (the
// grammar's own compile says why).
func (c *converter) resolved(s any, depth int) (any, bool) {
	for ; depth <= maxDepth; depth++ {
		o, ok := s.(*object)
		if !ok {
			return s, true
		}
		var err error
		if ref, ok := o.get("$ref"); ok {
			if s, err = c.target(ref, "#"); err != nil {
				return nil, false
			}
			if sib := siblings(o, "$ref"); sib != nil {
				if s, err = merge(s, sib); err != nil {
					return nil, false
				}
			}
			continue
		}
		v, ok := o.get("allOf")
		if !ok {
			return s, true
		}
		list, _ := v.([]any)
		var all any = true
		if sib := siblings(o, "allOf"); sib != nil {
			all = sib
		}
		for _, e := range list {
			if all, err = merge(all, e); err != nil {
				return nil, false
			}
		}
		s = all
	}
	return nil, false
}

// alternatives are an anyOf's or oneOf's schemas, each with the keywords
// beside it merged in where they merge (else alone: a superset, which
// keeps a proof of disjointness sound).
func (c *converter) alternatives(s any) ([]any, bool) {
	o, ok := s.(*object)
	if !ok {
		return nil, false
	}
	for _, k := range []string{"anyOf", "oneOf"} {
		v, ok := o.get(k)
		if !ok {
			continue
		}
		list, _ := v.([]any)
		sib := siblings(o, k)
		out := make([]any, 0, len(list))
		for _, e := range list {
			if sib != nil {
				if m, err := merge(e, sib); err == nil {
					e = m
				}
			}
			out = append(out, e)
		}
		return out, true
	}
	return nil, false
}

// kinds are the JSON types of the values s accepts, or a superset: only
// type, const and enum narrow them (properties or items alone accept any
// other type).
func (c *converter) kinds(s any, depth int) []string {
	o, ok := s.(*object)
	if !ok {
		if s == false {
			return nil
		}
		return jsonKinds
	}
	if alts, ok := c.alternatives(o); ok && depth <= maxDepth {
		var out []string
		for _, alt := range alts {
			r, ok := c.resolved(alt, depth+1)
			if !ok {
				return jsonKinds
			}
			for _, k := range c.kinds(r, depth+1) {
				if !slices.Contains(out, k) {
					out = append(out, k)
				}
			}
		}
		return out
	}
	out := jsonKinds
	if vals, ok := finiteValues(o); ok {
		out = nil
		for _, v := range vals {
			if k := kindOf(v); !slices.Contains(out, k) {
				out = append(out, k)
			}
		}
	}
	if t, ok := o.get("type"); ok {
		if list, err := typeList(t); err == nil {
			var typed []string
			for _, name := range list {
				if name == "integer" {
					name = "number"
				}
				typed = append(typed, name)
			}
			out = intersect(out, typed)
		}
	}
	return out
}

// finiteValues are the values a const or enum allows (a superset when
// keywords beside it filter them).
func finiteValues(o *object) ([]any, bool) {
	if o == nil {
		return nil, false
	}
	if v, ok := o.get("const"); ok {
		return []any{v}, true
	}
	if v, ok := o.get("enum"); ok {
		list, ok := v.([]any)
		return list, ok
	}
	return nil, false
}

func requiredOf(o *object) []string {
	v, _ := o.get("required")
	list, _ := v.([]any)
	var out []string
	for _, e := range list {
		if s, ok := e.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// propertySchema is the schema o gives property p: its own under
// properties, else additionalProperties (true when absent); declared
// says it is under properties.
func propertySchema(o *object, p string) (schema any, declared bool) {
	if props, ok := o.get("properties"); ok {
		if po, ok := props.(*object); ok {
			if s, ok := po.get(p); ok {
				return s, true
			}
		}
	}
	if ap, ok := o.get("additionalProperties"); ok {
		return ap, false
	}
	return true, false
}

// kindOf is the JSON type of a decoded value.
func kindOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case json.Number:
		return "number"
	case []any:
		return "array"
	}
	return "object"
}

// jsonEqual is JSON Schema's equality: numbers by value (1 is 1.0),
// objects whatever their keys' order.
func jsonEqual(a, b any) bool {
	switch a := a.(type) {
	case json.Number:
		b, ok := b.(json.Number)
		if !ok {
			return false
		}
		x, okX := new(big.Rat).SetString(string(a))
		y, okY := new(big.Rat).SetString(string(b))
		return okX && okY && x.Cmp(y) == 0
	case []any:
		b, ok := b.([]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for i := range a {
			if !jsonEqual(a[i], b[i]) {
				return false
			}
		}
		return true
	case *object:
		b, ok := b.(*object)
		if !ok || len(a.vals) != len(b.vals) {
			return false
		}
		for k, v := range a.vals {
			w, ok := b.vals[k]
			if !ok || !jsonEqual(v, w) {
				return false
			}
		}
		return true
	}
	return a == b
}

func intersect(a, b []string) []string {
	var out []string
	for _, k := range jsonKinds { // in a fixed order, for messages
		if slices.Contains(a, k) && slices.Contains(b, k) {
			out = append(out, k)
		}
	}
	return out
}
