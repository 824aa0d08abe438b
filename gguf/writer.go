package gguf

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"

	"github.com/llorch/llorch-check/internal/atomicfile"
)

// TensorData is one tensor to write: its name, ggml dims (fastest-varying
// first), type and raw data in that type's layout.
type TensorData struct {
	Name string
	Dims []uint64
	Type GGMLType
	Data []byte
}

// WriteFile writes a version-3 GGUF file atomically: readers of path see
// the old file or the complete new one, never a partial write.
func WriteFile(path string, kv []KV, tensors []TensorData) error {
	if err := checkWrite(kv, tensors); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return atomicfile.Write(path, func(w io.Writer) error { return write(w, kv, tensors) })
}

// Write writes a version-3 GGUF file: header, kv in the given order, tensor
// infos, then each tensor's data at the next multiple of the alignment
// (general.alignment when kv sets it, else DefaultAlignment). Everything is
// validated before the first byte is written.
func Write(w io.Writer, kv []KV, tensors []TensorData) error {
	if err := checkWrite(kv, tensors); err != nil {
		return err
	}
	return write(w, kv, tensors)
}

// checkWrite rejects what Read would reject, so a written file always reads
// back: duplicate keys or names, values whose Go type contradicts their
// tag, bad alignment, and data whose size does not match dims and type.
func checkWrite(kv []KV, tensors []TensorData) error {
	sizes, err := checkHeader(kv, infosOf(tensors))
	if err != nil {
		return err
	}
	for i, t := range tensors {
		if int64(len(t.Data)) != sizes[i] {
			return fmt.Errorf("gguf: tensor %s: %d bytes of data, %s%v needs %d", t.Name, len(t.Data), t.Type, t.Dims, sizes[i])
		}
	}
	return nil
}

func infosOf(tensors []TensorData) []TensorInfo {
	infos := make([]TensorInfo, len(tensors))
	for i, t := range tensors {
		infos[i] = TensorInfo{Name: t.Name, Dims: t.Dims, Type: t.Type}
	}
	return infos
}

// checkHeader is checkWrite without the data: the keys, alignment and
// tensor infos (Name, Dims, Type; Offset and Size are the writer's), and
// each tensor's data size.
func checkHeader(kv []KV, tensors []TensorInfo) ([]int64, error) {
	keys := map[string]bool{}
	for _, e := range kv {
		if keys[e.Key] {
			return nil, fmt.Errorf("gguf: duplicate metadata key %q", e.Key)
		}
		keys[e.Key] = true
		if err := checkValue(e.Value.Type, e.Value.V, 0); err != nil {
			return nil, fmt.Errorf("gguf: key %s: %w", e.Key, err)
		}
	}
	if _, err := alignmentOf(kv); err != nil {
		return nil, err
	}
	names := map[string]bool{}
	sizes := make([]int64, len(tensors))
	for i, t := range tensors {
		if names[t.Name] {
			return nil, fmt.Errorf("gguf: duplicate tensor name %q", t.Name)
		}
		names[t.Name] = true
		if len(t.Dims) > maxDims {
			return nil, fmt.Errorf("gguf: tensor %s: %d dims, at most %d supported", t.Name, len(t.Dims), maxDims)
		}
		size, err := tensorSize(TensorInfo{Name: t.Name, Dims: t.Dims, Type: t.Type})
		if err != nil {
			return nil, fmt.Errorf("gguf: tensor %s: %w", t.Name, err)
		}
		if size < 0 {
			return nil, fmt.Errorf("gguf: tensor %s: unknown ggml type %d", t.Name, uint32(t.Type))
		}
		sizes[i] = size
	}
	return sizes, nil
}

func alignmentOf(kv []KV) (uint64, error) {
	for _, e := range kv {
		if e.Key != "general.alignment" {
			continue
		}
		a, ok := e.Value.V.(uint32)
		if !ok || e.Value.Type != TypeUint32 || a == 0 || a&(a-1) != 0 {
			return 0, fmt.Errorf("gguf: general.alignment must be a power-of-two uint32, got %s %v", e.Value.Type, e.Value.V)
		}
		return uint64(a), nil
	}
	return DefaultAlignment, nil
}

// checkValue verifies that v is the Go type Read returns for tag t.
func checkValue(t ValueType, v any, depth int) error {
	if depth >= maxDepth {
		return fmt.Errorf("arrays nested deeper than %d", maxDepth)
	}
	ok := false
	switch t {
	case TypeUint8:
		_, ok = v.(uint8)
	case TypeInt8:
		_, ok = v.(int8)
	case TypeUint16:
		_, ok = v.(uint16)
	case TypeInt16:
		_, ok = v.(int16)
	case TypeUint32:
		_, ok = v.(uint32)
	case TypeInt32:
		_, ok = v.(int32)
	case TypeFloat32:
		_, ok = v.(float32)
	case TypeBool:
		_, ok = v.(bool)
	case TypeString:
		_, ok = v.(string)
	case TypeUint64:
		_, ok = v.(uint64)
	case TypeInt64:
		_, ok = v.(int64)
	case TypeFloat64:
		_, ok = v.(float64)
	case TypeArray:
		a, isArr := v.(Array)
		if !isArr {
			break
		}
		return checkArray(a, depth)
	default:
		return fmt.Errorf("unknown value type %d", uint32(t))
	}
	if !ok {
		return fmt.Errorf("value of Go type %T is not a %s", v, t)
	}
	return nil
}

func checkArray(a Array, depth int) error {
	var ok bool
	switch a.Elem {
	case TypeUint8:
		_, ok = a.Values.([]uint8)
	case TypeInt8:
		_, ok = a.Values.([]int8)
	case TypeUint16:
		_, ok = a.Values.([]uint16)
	case TypeInt16:
		_, ok = a.Values.([]int16)
	case TypeUint32:
		_, ok = a.Values.([]uint32)
	case TypeInt32:
		_, ok = a.Values.([]int32)
	case TypeFloat32:
		_, ok = a.Values.([]float32)
	case TypeBool:
		_, ok = a.Values.([]bool)
	case TypeString:
		_, ok = a.Values.([]string)
	case TypeUint64:
		_, ok = a.Values.([]uint64)
	case TypeInt64:
		_, ok = a.Values.([]int64)
	case TypeFloat64:
		_, ok = a.Values.([]float64)
	case TypeArray:
		inner, isArr := a.Values.([]Array)
		if !isArr {
			break
		}
		for i, x := range inner {
			if err := checkArray(x, depth+1); err != nil {
				return fmt.Errorf("array element %d: %w", i, err)
			}
		}
		return nil
	default:
		return fmt.Errorf("unknown array element type %d", uint32(a.Elem))
	}
	if !ok {
		return fmt.Errorf("array values of Go type %T are not []%s", a.Values, a.Elem)
	}
	return nil
}

// write emits a file that checkWrite accepted.
func write(w io.Writer, kv []KV, tensors []TensorData) error {
	sw, err := NewStreamWriter(w, kv, infosOf(tensors))
	if err != nil {
		return err
	}
	for _, t := range tensors {
		if _, err := sw.Write(t.Data); err != nil {
			return err
		}
	}
	return sw.Close()
}

func alignUp(n, align uint64) uint64 { return (n + align - 1) / align * align }

// encoder writes little-endian fields, remembering the first error and
// the position, which padding needs.
type encoder struct {
	w   *bufio.Writer
	n   uint64
	err error
	b   [8]byte
}

func (e *encoder) raw(p []byte) {
	if e.err != nil {
		return
	}
	var k int
	k, e.err = e.w.Write(p)
	e.n += uint64(k)
}

func (e *encoder) pad(align uint64) {
	var zeros [64]byte
	for n := alignUp(e.n, align) - e.n; n > 0 && e.err == nil; {
		k := min(n, uint64(len(zeros)))
		e.raw(zeros[:k])
		n -= k
	}
}

func (e *encoder) u8(v uint8)   { e.raw([]byte{v}) }
func (e *encoder) u16(v uint16) { binary.LittleEndian.PutUint16(e.b[:], v); e.raw(e.b[:2]) }
func (e *encoder) u32(v uint32) { binary.LittleEndian.PutUint32(e.b[:], v); e.raw(e.b[:4]) }
func (e *encoder) u64(v uint64) { binary.LittleEndian.PutUint64(e.b[:], v); e.raw(e.b[:8]) }
func (e *encoder) str(s string) { e.u64(uint64(len(s))); e.raw([]byte(s)) }

func (e *encoder) boolean(v bool) {
	if v {
		e.u8(1)
	} else {
		e.u8(0)
	}
}

// value writes one value; checkValue has matched its Go type to its tag.
func (e *encoder) value(v any) {
	switch x := v.(type) {
	case uint8:
		e.u8(x)
	case int8:
		e.u8(uint8(x))
	case uint16:
		e.u16(x)
	case int16:
		e.u16(uint16(x))
	case uint32:
		e.u32(x)
	case int32:
		e.u32(uint32(x))
	case float32:
		e.u32(math.Float32bits(x))
	case bool:
		e.boolean(x)
	case string:
		e.str(x)
	case uint64:
		e.u64(x)
	case int64:
		e.u64(uint64(x))
	case float64:
		e.u64(math.Float64bits(x))
	case Array:
		e.array(x)
	}
}

func (e *encoder) array(a Array) {
	e.u32(uint32(a.Elem))
	e.u64(uint64(a.Len()))
	switch s := a.Values.(type) {
	case []uint8:
		e.raw(s)
	case []string:
		for _, x := range s {
			e.str(x)
		}
	case []Array:
		for _, x := range s {
			e.array(x)
		}
	default:
		eachValue(s, e.value)
	}
}

// eachValue calls f on every element of a fixed-size typed slice.
func eachValue(s any, f func(any)) {
	switch s := s.(type) {
	case []int8:
		for _, x := range s {
			f(x)
		}
	case []uint16:
		for _, x := range s {
			f(x)
		}
	case []int16:
		for _, x := range s {
			f(x)
		}
	case []uint32:
		for _, x := range s {
			f(x)
		}
	case []int32:
		for _, x := range s {
			f(x)
		}
	case []float32:
		for _, x := range s {
			f(x)
		}
	case []bool:
		for _, x := range s {
			f(x)
		}
	case []uint64:
		for _, x := range s {
			f(x)
		}
	case []int64:
		for _, x := range s {
			f(x)
		}
	case []float64:
		for _, x := range s {
			f(x)
		}
	}
}

// ValueOf wraps a Go value with its GGUF tag: the scalar types of Value,
// string, typed slices of them (written as arrays) and Array.
func ValueOf(v any) (Value, error) {
	switch x := v.(type) {
	case uint8:
		return Value{TypeUint8, x}, nil
	case int8:
		return Value{TypeInt8, x}, nil
	case uint16:
		return Value{TypeUint16, x}, nil
	case int16:
		return Value{TypeInt16, x}, nil
	case uint32:
		return Value{TypeUint32, x}, nil
	case int32:
		return Value{TypeInt32, x}, nil
	case float32:
		return Value{TypeFloat32, x}, nil
	case bool:
		return Value{TypeBool, x}, nil
	case string:
		return Value{TypeString, x}, nil
	case uint64:
		return Value{TypeUint64, x}, nil
	case int64:
		return Value{TypeInt64, x}, nil
	case float64:
		return Value{TypeFloat64, x}, nil
	case Array:
		return Value{TypeArray, x}, nil
	}
	elem, ok := sliceElem(v)
	if !ok {
		return Value{}, fmt.Errorf("gguf: no GGUF type for Go type %T", v)
	}
	return Value{TypeArray, Array{Elem: elem, Values: v}}, nil
}

func sliceElem(v any) (ValueType, bool) {
	switch v.(type) {
	case []uint8:
		return TypeUint8, true
	case []int8:
		return TypeInt8, true
	case []uint16:
		return TypeUint16, true
	case []int16:
		return TypeInt16, true
	case []uint32:
		return TypeUint32, true
	case []int32:
		return TypeInt32, true
	case []float32:
		return TypeFloat32, true
	case []bool:
		return TypeBool, true
	case []string:
		return TypeString, true
	case []uint64:
		return TypeUint64, true
	case []int64:
		return TypeInt64, true
	case []float64:
		return TypeFloat64, true
	case []Array:
		return TypeArray, true
	}
	return 0, false
}
