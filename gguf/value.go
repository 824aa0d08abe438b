package gguf

import "fmt"

// ValueType is the on-disk tag of a metadata value (gguf.h gguf_type).
type ValueType uint32

const (
	TypeUint8   ValueType = 0
	TypeInt8    ValueType = 1
	TypeUint16  ValueType = 2
	TypeInt16   ValueType = 3
	TypeUint32  ValueType = 4
	TypeInt32   ValueType = 5
	TypeFloat32 ValueType = 6
	TypeBool    ValueType = 7
	TypeString  ValueType = 8
	TypeArray   ValueType = 9
	TypeUint64  ValueType = 10
	TypeInt64   ValueType = 11
	TypeFloat64 ValueType = 12
)

var typeNames = [...]string{
	"uint8", "int8", "uint16", "int16", "uint32", "int32", "float32",
	"bool", "string", "array", "uint64", "int64", "float64",
}

func (t ValueType) String() string {
	if int(t) < len(typeNames) {
		return typeNames[t]
	}
	return fmt.Sprintf("ValueType(%d)", uint32(t))
}

// minSize is the fewest bytes one value of type t occupies on disk. It lets
// a count be checked against the bytes left before anything is allocated.
func (t ValueType) minSize() int64 {
	switch t {
	case TypeUint8, TypeInt8, TypeBool:
		return 1
	case TypeUint16, TypeInt16:
		return 2
	case TypeUint32, TypeInt32, TypeFloat32:
		return 4
	case TypeUint64, TypeInt64, TypeFloat64, TypeString:
		return 8 // a string is at least its uint64 length
	case TypeArray:
		return 12 // element type + count
	}
	return 0
}

// Value is one metadata value. V holds the Go value for Type:
// uint8, int8, uint16, int16, uint32, int32, float32, bool, string,
// uint64, int64, float64, or Array for TypeArray.
type Value struct {
	Type ValueType
	V    any
}

// Array is a typed metadata array. Values is a slice of the element's Go
// type: []uint8 ... []float64, []bool, []string, or []Array for nested
// arrays.
type Array struct {
	Elem   ValueType
	Values any
}

// Len is the number of elements.
func (a Array) Len() int {
	switch v := a.Values.(type) {
	case []uint8:
		return len(v)
	case []int8:
		return len(v)
	case []uint16:
		return len(v)
	case []int16:
		return len(v)
	case []uint32:
		return len(v)
	case []int32:
		return len(v)
	case []float32:
		return len(v)
	case []bool:
		return len(v)
	case []string:
		return len(v)
	case []uint64:
		return len(v)
	case []int64:
		return len(v)
	case []float64:
		return len(v)
	case []Array:
		return len(v)
	}
	return 0
}

// KV is one metadata key/value pair, kept in file order.
type KV struct {
	Key   string
	Value Value
}

// Int returns an integer value of any integer type as int64; ok is false
// for other types and for uint64 values that do not fit.
func (v Value) Int() (int64, bool) {
	switch x := v.V.(type) {
	case uint8:
		return int64(x), true
	case int8:
		return int64(x), true
	case uint16:
		return int64(x), true
	case int16:
		return int64(x), true
	case uint32:
		return int64(x), true
	case int32:
		return int64(x), true
	case uint64:
		if x > 1<<63-1 {
			return 0, false
		}
		return int64(x), true
	case int64:
		return x, true
	}
	return 0, false
}

// StringKV is a string metadata entry.
func StringKV(key, v string) KV { return KV{Key: key, Value: Value{Type: TypeString, V: v}} }

// Uint32KV is a uint32 metadata entry.
func Uint32KV(key string, v uint32) KV { return KV{Key: key, Value: Value{Type: TypeUint32, V: v}} }

// ArrayKV is an array metadata entry of elem values (a slice of the
// element's Go type, as Array holds).
func ArrayKV(key string, elem ValueType, values any) KV {
	return KV{Key: key, Value: Value{Type: TypeArray, V: Array{Elem: elem, Values: values}}}
}
