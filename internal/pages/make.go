package pages

import "unsafe"

// Make returns a zeroed []T of n elements whose pages are mapped
// (Populate) when it is Big.
func Make[T any](n int) []T {
	s := make([]T, n)
	if n > 0 {
		var z T
		Populate(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), n*int(unsafe.Sizeof(z))))
	}
	return s
}

// Clone is slices.Clone into Make's memory (nil for nil).
func Clone[T any](src []T) []T {
	if src == nil {
		return nil
	}
	s := Make[T](len(src))
	copy(s, src)
	return s
}
