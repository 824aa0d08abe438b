package gguf

import (
	"errors"
	"fmt"
)

// ErrNoKey is wrapped when a metadata key is absent.
var ErrNoKey = errors.New("gguf: key not found")

// String returns a string value.
func (f *File) String(key string) (string, error) {
	v, ok := f.Get(key)
	if !ok {
		return "", fmt.Errorf("%w: %s", ErrNoKey, key)
	}
	s, ok := v.V.(string)
	if !ok {
		return "", fmt.Errorf("gguf: key %s: want string, have %s", key, v.Type)
	}
	return s, nil
}

// Int returns a value of any integer type as int64.
func (f *File) Int(key string) (int64, error) {
	v, ok := f.Get(key)
	if !ok {
		return 0, fmt.Errorf("%w: %s", ErrNoKey, key)
	}
	n, ok := v.Int()
	if !ok {
		return 0, fmt.Errorf("gguf: key %s: want integer, have %s %v", key, v.Type, v.V)
	}
	return n, nil
}

// Array returns an array value.
func (f *File) Array(key string) (Array, error) {
	v, ok := f.Get(key)
	if !ok {
		return Array{}, fmt.Errorf("%w: %s", ErrNoKey, key)
	}
	a, ok := v.V.(Array)
	if !ok {
		return Array{}, fmt.Errorf("gguf: key %s: want array, have %s", key, v.Type)
	}
	return a, nil
}

// Strings returns an array of strings.
func (f *File) Strings(key string) ([]string, error) {
	a, err := f.Array(key)
	if err != nil {
		return nil, err
	}
	s, ok := a.Values.([]string)
	if !ok {
		return nil, fmt.Errorf("gguf: key %s: want array of string, have array of %s", key, a.Elem)
	}
	return s, nil
}

// Ints returns an array of any integer element type as []int64.
func (f *File) Ints(key string) ([]int64, error) {
	a, err := f.Array(key)
	if err != nil {
		return nil, err
	}
	out := make([]int64, a.Len())
	ok := true
	switch s := a.Values.(type) {
	case []int32:
		for i, x := range s {
			out[i] = int64(x)
		}
	case []uint32:
		for i, x := range s {
			out[i] = int64(x)
		}
	case []int64:
		copy(out, s)
	case []int8:
		for i, x := range s {
			out[i] = int64(x)
		}
	case []uint8:
		for i, x := range s {
			out[i] = int64(x)
		}
	case []int16:
		for i, x := range s {
			out[i] = int64(x)
		}
	case []uint16:
		for i, x := range s {
			out[i] = int64(x)
		}
	default:
		ok = false
	}
	if !ok {
		return nil, fmt.Errorf("gguf: key %s: want array of integers, have array of %s", key, a.Elem)
	}
	return out, nil
}
