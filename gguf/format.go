package gguf

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
)

// shownElems is how many array elements String prints before eliding the
// rest: a tokenizer's 50257 tokens are not for reading.
const shownElems = 8

// TypeName is v's type as a reader wants it: an array's with its length and
// element type ([50257]string), any other the ValueType's name.
func (v Value) TypeName() string {
	if a, ok := v.V.(Array); ok {
		return fmt.Sprintf("[%d]%s", a.Len(), a.Elem)
	}
	return v.Type.String()
}

// String prints v for a reader: scalars in full, strings quoted, arrays
// as their first elements and how many more.
func (v Value) String() string {
	switch x := v.V.(type) {
	case string:
		return strconv.Quote(x)
	case Array:
		return x.elided()
	}
	return fmt.Sprint(v.V)
}

// elided is the array's first shownElems elements, then "… N more".
func (a Array) elided() string {
	n := a.Len()
	parts := make([]string, 0, min(n, shownElems)+1)
	each := func(i int, s string) bool {
		if i >= shownElems {
			parts = append(parts, fmt.Sprintf("… %d more", n-shownElems))
			return false
		}
		parts = append(parts, s)
		return true
	}
	switch s := a.Values.(type) {
	case []string:
		for i, x := range s {
			if !each(i, strconv.Quote(x)) {
				break
			}
		}
	case []Array:
		for i, x := range s {
			if !each(i, x.elided()) {
				break
			}
		}
	default:
		// Only the elements shown are formatted: printing a whole numeric
		// array first cost ~24 bytes of memory per element.
		v := reflect.ValueOf(s)
		for i := range min(n, shownElems+1) {
			if !each(i, fmt.Sprint(v.Index(i).Interface())) {
				break
			}
		}
	}
	return "[" + strings.Join(parts, ", ") + "]"
}
