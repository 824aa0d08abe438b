package gguf

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func arrayValue(elem ValueType, values any) Value {
	return Value{Type: TypeArray, V: Array{Elem: elem, Values: values}}
}

// TestValueFormat: how inspect shows a metadata value and its type:
// scalars in full, strings quoted, arrays as their first eight elements
// and how many more, an array's type with its length.
func TestValueFormat(t *testing.T) {
	for _, tc := range []struct {
		name     string
		v        Value
		str, typ string
	}{
		{"uint32", Value{Type: TypeUint32, V: uint32(50257)}, "50257", "uint32"},
		{"int8", Value{Type: TypeInt8, V: int8(-3)}, "-3", "int8"},
		{"float32", Value{Type: TypeFloat32, V: float32(1e-05)}, "1e-05", "float32"},
		{"float64", Value{Type: TypeFloat64, V: 0.5}, "0.5", "float64"},
		{"bool", Value{Type: TypeBool, V: true}, "true", "bool"},
		{"string", Value{Type: TypeString, V: "gpt2"}, `"gpt2"`, "string"},
		{"string with quotes", Value{Type: TypeString, V: "say \"hi\"\n"}, `"say \"hi\"\n"`, "string"},
		{"empty array", arrayValue(TypeInt32, []int32{}), "[]", "[0]int32"},
		{"short array", arrayValue(TypeFloat32, []float32{1.5, -2}), "[1.5, -2]", "[2]float32"},
		{"eight elements", arrayValue(TypeUint8, []uint8{1, 2, 3, 4, 5, 6, 7, 8}), "[1, 2, 3, 4, 5, 6, 7, 8]", "[8]uint8"},
		{"nine elements", arrayValue(TypeUint8, []uint8{1, 2, 3, 4, 5, 6, 7, 8, 9}), "[1, 2, 3, 4, 5, 6, 7, 8, … 1 more]", "[9]uint8"},
		{"strings", arrayValue(TypeString, []string{"!", "\"", "#", "$", "%", "&", "'", "(", ")", "*"}),
			`["!", "\"", "#", "$", "%", "&", "'", "(", … 2 more]`, "[10]string"},
		{"bools", arrayValue(TypeBool, []bool{true, false}), "[true, false]", "[2]bool"},
		{"nested", arrayValue(TypeArray, []Array{{Elem: TypeInt64, Values: []int64{1, 2}}, {Elem: TypeString, Values: []string{"a"}}}),
			`[[1, 2], ["a"]]`, "[2]array"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.str, tc.v.String())
			assert.Equal(t, tc.typ, tc.v.TypeName())
		})
	}
}

// TestValueFormatLongArray: formatting a long array costs memory for the
// elements shown only (printing a whole uint8 array once took ~24 bytes
// per element).
func TestValueFormatLongArray(t *testing.T) {
	const n = 4 << 20
	vals := make([]uint8, n)
	for i := range vals {
		vals[i] = uint8(i)
	}
	v := arrayValue(TypeUint8, vals)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	s := v.String()
	runtime.ReadMemStats(&after)
	require.Equal(t, "[0, 1, 2, 3, 4, 5, 6, 7, … 4194296 more]", s)
	require.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(64<<10))
}
