package weights

import (
	"fmt"

	"github.com/llorch/llorch-check/gguf"
)

// llama.cpp's llama_ftype values for general.file_type.
var fileTypes = map[gguf.GGMLType]uint32{
	gguf.GGMLTypeF32:  0,  // LLAMA_FTYPE_ALL_F32
	gguf.GGMLTypeF16:  1,  // LLAMA_FTYPE_MOSTLY_F16
	gguf.GGMLTypeQ8_0: 7,  // LLAMA_FTYPE_MOSTLY_Q8_0
	gguf.GGMLTypeBF16: 32, // LLAMA_FTYPE_MOSTLY_BF16
}

// FileType is general.file_type for a file whose matrices are of type
// typ; an error for a type the writer does not produce.
func FileType(typ gguf.GGMLType) (uint32, error) {
	ftype, ok := fileTypes[typ]
	if !ok {
		return 0, fmt.Errorf("GGUF tensor type %s is not supported (F32, F16, BF16, Q8_0)", typ)
	}
	return ftype, nil
}

// MatrixType is the type a matrix of rows rowLen wide is written in for a
// file of type typ: typ, except that a Q8_0 matrix whose rows are not
// whole blocks of 32 falls back to F16, as llama.cpp's converter does.
func MatrixType(typ gguf.GGMLType, rowLen int) gguf.GGMLType {
	if typ == gguf.GGMLTypeQ8_0 && rowLen%32 != 0 {
		return gguf.GGMLTypeF16
	}
	return typ
}

// Tensor encodes vals, row-major of the given shape, as a GGUF tensor of
// type t.
func Tensor(name string, shape []int, t gguf.GGMLType, vals []float32) (gguf.TensorData, error) {
	data, err := gguf.EncodeFloat32(t, vals)
	if err != nil {
		return gguf.TensorData{}, fmt.Errorf("tensor %s: %w", name, err)
	}
	return gguf.TensorData{Name: name, Dims: Dims(shape), Type: t, Data: data}, nil
}
