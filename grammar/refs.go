package grammar

import (
	"fmt"
	"strings"
)

// visitMerged visits schema s merged with sib, the keywords beside the
// keyword kw that led to s.
func (c *converter) visitMerged(s any, sib *object, path, kw, name string, depth int) (string, error) {
	m, err := merge(s, sib)
	if err != nil {
		return "", &SchemaError{Path: path, Message: fmt.Sprintf("the keywords beside %s (%s) cannot be merged into it: %s", kw, strings.Join(sib.keys, ", "), err)}
	}
	return c.visit(m, path, name, depth+1)
}

// refKey splits a $ref into the root's table ($defs, definitions, or #
// for the root itself) and the name in it.
func refKey(v any, path string) (ref, key, def string, err error) {
	ref, _ = v.(string)
	for _, prefix := range []string{"#/$defs/", "#/definitions/"} {
		if strings.HasPrefix(ref, prefix) {
			key, def = strings.TrimSuffix(prefix[2:], "/"), ref[len(prefix):]
		}
	}
	if ref == "#" {
		key = "#"
	}
	if key == "" {
		return "", "", "", &SchemaError{Path: path, Message: fmt.Sprintf("%q: only references to #, #/$defs/NAME and #/definitions/NAME are supported", ref)}
	}
	return ref, key, def, nil
}

// target is the schema a $ref names.
func (c *converter) target(v any, path string) (any, error) {
	ref, key, def, err := refKey(v, path)
	if err != nil || key == "#" {
		return c.root, err
	}
	defs, _ := c.root.(*object)
	var table any
	if defs != nil {
		table, _ = defs.get(key)
	}
	t, _ := table.(*object)
	if t == nil {
		return nil, &SchemaError{Path: path, Message: fmt.Sprintf("%q: the schema has no %s", ref, key)}
	}
	target, ok := t.get(def)
	if !ok {
		return nil, &SchemaError{Path: path, Message: fmt.Sprintf("%q: %s has no %q", ref, key, def)}
	}
	return target, nil
}

// ref is the rule for a $ref into the root's $defs or definitions.
func (c *converter) ref(v any, path string, depth int) (string, error) {
	ref, key, def, err := refKey(v, path)
	if err != nil {
		return "", err
	}
	rule := "ref-" + nonName.ReplaceAllString(def, "-")
	if key == "#" {
		rule = "ref-root"
	}
	if c.names[ref] {
		return rule, nil
	}
	target, err := c.target(v, path)
	if err != nil {
		return "", err
	}
	c.names[ref] = true
	c.define(rule, "")
	body, err := c.visit(target, ref, rule, depth+1)
	if err != nil {
		return "", err
	}
	c.define(rule, body)
	return rule, nil
}
