package gguf

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
)

// reader reads little-endian fields from an io.ReaderAt through a window
// buffer, checking every length against the bytes left in the file first:
// nothing read from the file is trusted to size an allocation.
type reader struct {
	r    io.ReaderAt
	size int64
	pos  int64

	buf    []byte // window of the file starting at bufOff
	bufOff int64
}

const windowSize = 64 << 10

func (r *reader) left() int64 { return r.size - r.pos }

// need fails unless n more bytes are in the file.
func (r *reader) need(n int64, what string) error {
	if n < 0 || n > r.left() {
		return fmt.Errorf("%w: %s: needs %d bytes at offset %d, only %d left", ErrInvalid, what, n, r.pos, r.left())
	}
	return nil
}

// next returns the next n bytes. The slice is only valid until the next call.
func (r *reader) next(n int64, what string) ([]byte, error) {
	if err := r.need(n, what); err != nil {
		return nil, err
	}
	start := r.pos - r.bufOff
	if r.pos < r.bufOff || start+n > int64(len(r.buf)) {
		// Refill the window at pos; big reads get their own buffer.
		w := max(n, windowSize)
		w = min(w, r.left())
		if int64(cap(r.buf)) < w {
			r.buf = make([]byte, w)
		}
		r.buf = r.buf[:w]
		got, err := r.r.ReadAt(r.buf, r.pos)
		if int64(got) < n {
			if err == nil || err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return nil, fmt.Errorf("gguf: %s: reading at offset %d: %w", what, r.pos, err)
		}
		r.buf = r.buf[:got]
		r.bufOff = r.pos
		start = 0
	}
	r.pos += n
	return r.buf[start : start+n], nil
}

func (r *reader) u8(what string) (uint8, error) {
	b, err := r.next(1, what)
	if err != nil {
		return 0, err
	}
	return b[0], nil
}

func (r *reader) u16(what string) (uint16, error) {
	b, err := r.next(2, what)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint16(b), nil
}

func (r *reader) u32(what string) (uint32, error) {
	b, err := r.next(4, what)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint32(b), nil
}

func (r *reader) u64(what string) (uint64, error) {
	b, err := r.next(8, what)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(b), nil
}

// count reads a uint64 count of items each at least minSize bytes long and
// rejects it unless that many items could fit in the rest of the file.
func (r *reader) count(minSize int64, what string) (int, error) {
	n, err := r.u64(what)
	if err != nil {
		return 0, err
	}
	if minSize > 0 && n > uint64(r.left()/minSize) {
		return 0, fmt.Errorf("%w: %s: count %d past end of file (offset %d, %d bytes left)", ErrInvalid, what, n, r.pos, r.left())
	}
	if n > math.MaxInt32 {
		return 0, fmt.Errorf("%w: %s: count %d too large", ErrInvalid, what, n)
	}
	return int(n), nil
}

// MaxString caps one metadata string (a key, a value, an array element):
// the longest real ones, chat templates, are tens of KB, so a larger one
// is refused before it is read into memory.
const MaxString = 16 << 20

func (r *reader) str(what string) (string, error) {
	n, err := r.u64(what)
	if err != nil {
		return "", err
	}
	if n > uint64(r.left()) {
		return "", fmt.Errorf("%w: %s: string length %d past end of file (offset %d, %d bytes left)", ErrInvalid, what, n, r.pos, r.left())
	}
	if n > MaxString {
		return "", fmt.Errorf("%w: %s: a string of %d bytes, more than the cap of %d (%d MiB) for one metadata string", ErrInvalid, what, n, MaxString, MaxString>>20)
	}
	b, err := r.next(int64(n), what)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// maxDepth bounds nested arrays so a crafted file cannot recurse deeply.
const maxDepth = 16

// value reads one value of type t; what names the key for errors.
func (r *reader) value(t ValueType, what string, depth int) (any, error) {
	switch t {
	case TypeUint8:
		return r.u8(what)
	case TypeInt8:
		v, err := r.u8(what)
		return int8(v), err
	case TypeUint16:
		return r.u16(what)
	case TypeInt16:
		v, err := r.u16(what)
		return int16(v), err
	case TypeUint32:
		return r.u32(what)
	case TypeInt32:
		v, err := r.u32(what)
		return int32(v), err
	case TypeFloat32:
		v, err := r.u32(what)
		return math.Float32frombits(v), err
	case TypeBool:
		v, err := r.u8(what)
		if err == nil && v > 1 {
			err = fmt.Errorf("%w: %s: bool value %d is neither 0 nor 1", ErrInvalid, what, v)
		}
		return v == 1, err
	case TypeString:
		return r.str(what)
	case TypeArray:
		return r.array(what, depth)
	case TypeUint64:
		return r.u64(what)
	case TypeInt64:
		v, err := r.u64(what)
		return int64(v), err
	case TypeFloat64:
		v, err := r.u64(what)
		return math.Float64frombits(v), err
	}
	return nil, fmt.Errorf("%w: %s: unknown value type %d", ErrInvalid, what, uint32(t))
}

func (r *reader) array(what string, depth int) (Array, error) {
	if depth >= maxDepth {
		return Array{}, fmt.Errorf("%w: %s: arrays nested deeper than %d", ErrInvalid, what, maxDepth)
	}
	et, err := r.u32(what + ": array element type")
	if err != nil {
		return Array{}, err
	}
	elem := ValueType(et)
	if elem.minSize() == 0 {
		return Array{}, fmt.Errorf("%w: %s: unknown array element type %d", ErrInvalid, what, et)
	}
	n, err := r.count(elem.minSize(), what+": array count")
	if err != nil {
		return Array{}, err
	}
	a := Array{Elem: elem}
	switch elem {
	case TypeUint8:
		a.Values, err = fixed(r, n, 1, what, func(b []byte) uint8 { return b[0] })
	case TypeInt8:
		a.Values, err = fixed(r, n, 1, what, func(b []byte) int8 { return int8(b[0]) })
	case TypeUint16:
		a.Values, err = fixed(r, n, 2, what, binary.LittleEndian.Uint16)
	case TypeInt16:
		a.Values, err = fixed(r, n, 2, what, func(b []byte) int16 { return int16(binary.LittleEndian.Uint16(b)) })
	case TypeUint32:
		a.Values, err = fixed(r, n, 4, what, binary.LittleEndian.Uint32)
	case TypeInt32:
		a.Values, err = fixed(r, n, 4, what, func(b []byte) int32 { return int32(binary.LittleEndian.Uint32(b)) })
	case TypeFloat32:
		a.Values, err = fixed(r, n, 4, what, func(b []byte) float32 { return math.Float32frombits(binary.LittleEndian.Uint32(b)) })
	case TypeBool:
		a.Values, err = fixed(r, n, 1, what, func(b []byte) bool { return b[0] != 0 })
	case TypeUint64:
		a.Values, err = fixed(r, n, 8, what, binary.LittleEndian.Uint64)
	case TypeInt64:
		a.Values, err = fixed(r, n, 8, what, func(b []byte) int64 { return int64(binary.LittleEndian.Uint64(b)) })
	case TypeFloat64:
		a.Values, err = fixed(r, n, 8, what, func(b []byte) float64 { return math.Float64frombits(binary.LittleEndian.Uint64(b)) })
	case TypeString:
		s := make([]string, n)
		for i := range s {
			if s[i], err = r.str(what); err != nil {
				return Array{}, fmt.Errorf("%w (array element %d)", err, i)
			}
		}
		a.Values = s
	case TypeArray:
		s := make([]Array, n)
		for i := range s {
			if s[i], err = r.array(what, depth+1); err != nil {
				return Array{}, fmt.Errorf("%w (array element %d)", err, i)
			}
		}
		a.Values = s
	}
	if err != nil {
		return Array{}, err
	}
	return a, nil
}

// fixed reads n fixed-size elements; count already checked they fit.
func fixed[T any](r *reader, n, size int, what string, conv func([]byte) T) ([]T, error) {
	b, err := r.next(int64(n)*int64(size), what)
	if err != nil {
		return nil, err
	}
	out := make([]T, n)
	for i := range out {
		out[i] = conv(b[i*size : (i+1)*size])
	}
	return out, nil
}
