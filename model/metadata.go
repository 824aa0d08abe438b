package model

// Metadata is a GGUF file's metadata as a family reads its configuration
// from it (ConfigFromGGUF): the keys, and the tensor table, whose dims
// give what no key states (the vocabulary size) and whose presence says
// what the file has (an untied head, biases). Package loader gives a
// *gguf.File's; package model reads no file format itself, so a family's
// keys live in its own file without the code that parses them.
//
// Every error names the key or tensor it is about.
type Metadata interface {
	// Value is a key's value, as a Go value of its type (string,
	// float32, uint32, ...), and the type's name; ok is false when the
	// file lacks the key.
	Value(key string) (v any, typ string, ok bool)
	// ArrayLen is the length of an array key; ok is false when the key
	// is absent or not an array.
	ArrayLen(key string) (n int, ok bool)
	// NoKey is the error of a missing key, the format's own (so that
	// errors.Is recognises it), naming key.
	NoKey(key string) error

	String(key string) (string, error)
	Ints(key string) ([]int64, error)
	// Dim is a size in [1, 1<<24]; OptDim the same of a key the file may
	// omit, def then.
	Dim(key string) (int, error)
	OptDim(key string, def int) (int, error)
	// OptNonNegative is an optional non-negative integer, -1 when absent.
	OptNonNegative(key string) (int64, error)
	// PositiveFloat is a positive float, recovered as the decimal it was
	// rounded from to float32; def when absent, an error if def is 0.
	PositiveFloat(key string, def float64) (float64, error)
	// TokenID is an optional token id in [0, vocab), def when absent.
	TokenID(key string, def, vocab int) (int, error)

	// TensorCount is the number of tensors the file holds.
	TensorCount() int
	// Tensor is a tensor's entry in the table; ok is false when absent.
	Tensor(name string) (t TensorInfo, ok bool)
	// Float32s are an F32 tensor's values.
	Float32s(name string) ([]float32, error)
}

// TensorInfo is a GGUF tensor's entry: its type as GGUF names it ("F32",
// "Q8_0", ...) and its dims, fastest-varying first.
type TensorInfo struct {
	Name string
	Type string
	Dims []uint64
}
