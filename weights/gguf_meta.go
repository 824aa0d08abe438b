package weights

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/llorch/llorch-check/gguf"
)

// MaxDim bounds every size a file declares, as package model bounds a
// config.json's: products of two or three of them cannot overflow int,
// and absurd files fail before any allocation.
const MaxDim = 1 << 24

// Dim reads a size: an integer in [1, MaxDim].
func Dim(f *gguf.File, key string) (int, error) {
	n, err := f.Int(key)
	if err != nil {
		return 0, err
	}
	if n <= 0 || n > MaxDim {
		return 0, fmt.Errorf("key %s: value %d is out of range [1, %d]", key, n, MaxDim)
	}
	return int(n), nil
}

// OptDim is Dim of a key the file may omit: def then.
func OptDim(f *gguf.File, key string, def int) (int, error) {
	if _, ok := f.Get(key); !ok {
		return def, nil
	}
	return Dim(f, key)
}

// OptNonNegative reads an optional non-negative integer; -1 when absent.
func OptNonNegative(f *gguf.File, key string) (int64, error) {
	if _, ok := f.Get(key); !ok {
		return -1, nil
	}
	n, err := f.Int(key)
	if err == nil && n < 0 {
		err = fmt.Errorf("key %s: value %d is negative", key, n)
	}
	return n, err
}

// PositiveFloat reads a positive float32 (an epsilon, a rope base) and
// recovers the decimal it was rounded from (1e-5, not 9.99999974738e-06),
// so a GGUF model computes exactly as the config.json it came from. An
// absent key is def, or an error if def is 0.
func PositiveFloat(f *gguf.File, key string, def float64) (float64, error) {
	v, ok := f.Get(key)
	if !ok {
		if def != 0 {
			return def, nil
		}
		return 0, fmt.Errorf("%w: %s", gguf.ErrNoKey, key)
	}
	var x float64
	switch y := v.V.(type) {
	case float32:
		x, _ = strconv.ParseFloat(strconv.FormatFloat(float64(y), 'g', -1, 32), 64)
	case float64:
		x = y
	default:
		return 0, fmt.Errorf("key %s: want float32, have %s %v", key, v.Type, v.V)
	}
	if !(x > 0) || math.IsInf(x, 0) {
		return 0, fmt.Errorf("key %s: value %g must be a positive finite number", key, x)
	}
	return x, nil
}

// TokenID reads an optional token id in [0, vocab), def when absent.
func TokenID(f *gguf.File, key string, def, vocab int) (int, error) {
	if _, ok := f.Get(key); !ok {
		return def, nil
	}
	id, err := f.Int(key)
	if err != nil {
		return 0, err
	}
	if id < 0 || id >= int64(vocab) {
		return 0, fmt.Errorf("key %s: value %d outside the vocabulary of %d", key, id, vocab)
	}
	return int(id), nil
}

// SHA256 reads an optional hex sha256, lower-cased; "" when absent.
func SHA256(f *gguf.File, key string) (string, error) {
	v, ok := f.Get(key)
	if !ok {
		return "", nil
	}
	s, isStr := v.V.(string)
	if !isStr || !isHexSHA256(s) {
		return "", fmt.Errorf("key %s: want 64 hex digits, have %s %.80v", key, v.Type, v.V)
	}
	return strings.ToLower(s), nil
}

func isHexSHA256(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, r := range s {
		if !strings.ContainsRune("0123456789abcdefABCDEF", r) {
			return false
		}
	}
	return true
}

// CheckTensor checks that t is of a type the loaders decode and has the
// dims (GGUF's ne, fastest-varying first) the hyper-parameters give.
func CheckTensor(t gguf.TensorInfo, dims []uint64) error {
	if !gguf.Decodable(t.Type) {
		return fmt.Errorf("tensor %q: type %s is not supported (%s)", t.Name, t.Type, gguf.DecodableTypes)
	}
	if !slices.Equal(t.Dims, dims) {
		return fmt.Errorf("tensor %q: dims %v contradict the hyper-parameters, which give %v (fastest-varying first)", t.Name, t.Dims, dims)
	}
	return nil
}

// SameTensor says whether t is a copy of the named tensor: the same type,
// dims and bytes. Comparing the file's bytes, not values in memory, keeps
// the answer independent of the precision the model is held in.
func SameTensor(f *gguf.File, t gguf.TensorInfo, name string) (bool, error) {
	u, ok := f.Tensor(name)
	if !ok || t.Type != u.Type || !slices.Equal(t.Dims, u.Dims) {
		return false, nil
	}
	a, err := f.TensorData(t.Name)
	if err != nil {
		return false, err
	}
	b, err := f.TensorData(u.Name)
	if err != nil {
		return false, err
	}
	return bytes.Equal(a, b), nil
}

// Dims is the GGUF ne of a row-major shape: reversed, fastest first.
func Dims(shape []int) []uint64 {
	out := make([]uint64, len(shape))
	for i, d := range shape {
		out[len(shape)-1-i] = uint64(d)
	}
	return out
}
