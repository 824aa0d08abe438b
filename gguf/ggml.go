package gguf

import (
	"fmt"
	"math/bits"
)

// GGMLType is a tensor element type (ggml.h enum ggml_type).
type GGMLType uint32

const (
	GGMLTypeF32  GGMLType = 0
	GGMLTypeF16  GGMLType = 1
	GGMLTypeQ4_0 GGMLType = 2
	GGMLTypeQ4_1 GGMLType = 3
	GGMLTypeQ5_0 GGMLType = 6
	GGMLTypeQ5_1 GGMLType = 7
	GGMLTypeQ8_0 GGMLType = 8
	GGMLTypeQ8_1 GGMLType = 9
	GGMLTypeQ2_K GGMLType = 10
	GGMLTypeQ3_K GGMLType = 11
	GGMLTypeQ4_K GGMLType = 12
	GGMLTypeQ5_K GGMLType = 13
	GGMLTypeQ6_K GGMLType = 14
	GGMLTypeQ8_K GGMLType = 15
	GGMLTypeI8   GGMLType = 24
	GGMLTypeI16  GGMLType = 25
	GGMLTypeI32  GGMLType = 26
	GGMLTypeI64  GGMLType = 27
	GGMLTypeF64  GGMLType = 28
	GGMLTypeBF16 GGMLType = 30
)

// layout is how many elements one block holds and how many bytes it takes.
type layout struct {
	name      string
	blockSize uint64
	typeSize  uint64
}

// Only types whose layout is certain are listed; others parse with Size -1.
var layouts = map[GGMLType]layout{
	GGMLTypeF32:  {"F32", 1, 4},
	GGMLTypeF16:  {"F16", 1, 2},
	GGMLTypeQ4_0: {"Q4_0", 32, 18},
	GGMLTypeQ4_1: {"Q4_1", 32, 20},
	GGMLTypeQ5_0: {"Q5_0", 32, 22},
	GGMLTypeQ5_1: {"Q5_1", 32, 24},
	GGMLTypeQ8_0: {"Q8_0", 32, 34},
	GGMLTypeQ8_1: {"Q8_1", 32, 36},
	GGMLTypeQ2_K: {"Q2_K", 256, 84},
	GGMLTypeQ3_K: {"Q3_K", 256, 110},
	GGMLTypeQ4_K: {"Q4_K", 256, 144},
	GGMLTypeQ5_K: {"Q5_K", 256, 176},
	GGMLTypeQ6_K: {"Q6_K", 256, 210},
	GGMLTypeQ8_K: {"Q8_K", 256, 292},
	GGMLTypeI8:   {"I8", 1, 1},
	GGMLTypeI16:  {"I16", 1, 2},
	GGMLTypeI32:  {"I32", 1, 4},
	GGMLTypeI64:  {"I64", 1, 8},
	GGMLTypeF64:  {"F64", 1, 8},
	GGMLTypeBF16: {"BF16", 1, 2},
}

func (t GGMLType) String() string {
	if l, ok := layouts[t]; ok {
		return l.name
	}
	return fmt.Sprintf("GGMLType(%d)", uint32(t))
}

// tensorSize is the byte size of t's data, or -1 for an unknown type.
// Dimensions whose product overflows are an error, as is a first
// dimension that is not a whole number of blocks.
func tensorSize(t TensorInfo) (int64, error) {
	n := uint64(1)
	for _, d := range t.Dims {
		hi, lo := bits.Mul64(n, d)
		if hi != 0 || lo > 1<<62 {
			return 0, fmt.Errorf("dims %v: element count overflows", t.Dims)
		}
		n = lo
	}
	l, ok := layouts[t.Type]
	if !ok {
		return -1, nil
	}
	if len(t.Dims) > 0 && t.Dims[0]%l.blockSize != 0 {
		return 0, fmt.Errorf("first dim %d not a multiple of %s block size %d", t.Dims[0], l.name, l.blockSize)
	}
	hi, size := bits.Mul64(n/l.blockSize, l.typeSize)
	if hi != 0 || size > 1<<62 {
		return 0, fmt.Errorf("dims %v: byte size overflows", t.Dims)
	}
	return int64(size), nil
}
