package loader

import (
	"fmt"
	"github.com/llorch/llorch-check/kernels"
	"github.com/llorch/llorch-check/model"
	"path/filepath"

	"github.com/llorch/llorch-check/gguf"
	"github.com/llorch/llorch-check/safetensors"
	"github.com/llorch/llorch-check/weights"
)

// ConvertGGUF writes the HF model in dir (config.json and its weights,
// one file or shards) as a GGUF file at path, atomically, without loading
// the model: each GGUF tensor is made from its mapped source tensor and
// written before the next is read, and the source's pages are released as
// they are read, so memory holds a tensor's worth of float32 at most
// (rows at a time where llama.cpp's layout keeps HF's rows: every
// Llama-family tensor). The file is byte for byte WriteGGUF's for the
// model Load makes of dir. progress, if not nil, is called before each
// tensor with its index, the count and its name.
func ConvertGGUF(dir, path string, f GGUFFile, progress func(i, n int, name string)) (GGUFWritten, error) {
	ftype, err := weights.FileType(f.Type)
	if err != nil {
		return GGUFWritten{}, err
	}
	cfg, err := model.LoadConfig(filepath.Join(dir, "config.json"))
	if err != nil {
		return GGUFWritten{}, err
	}
	ckpt, err := weights.MapCheckpoint(dir)
	if err != nil {
		return GGUFWritten{}, err
	}
	defer ckpt.Close()
	kv, plan, dtype, err := convertPlan(cfg, ckpt.File, f.Type, ftype)
	if err != nil {
		return GGUFWritten{}, fmt.Errorf("converting %s: %w", ckpt.Path, err)
	}
	kv = fileKeys(cfg, kv, f, dtype)
	infos := make([]gguf.TensorInfo, len(plan))
	types := make([]gguf.GGMLType, len(plan))
	for i, t := range plan {
		infos[i] = gguf.TensorInfo{Name: t.Name, Dims: weights.Dims(t.Shape), Type: t.typ}
		types[i] = t.typ
	}
	err = gguf.WriteFileStream(path, kv, infos, func(sw *gguf.StreamWriter) error {
		for i, t := range plan {
			if progress != nil {
				progress(i, len(plan), t.Name)
			}
			if err := t.write(sw, ckpt.File); err != nil {
				return fmt.Errorf("tensor %s: %w", t.Name, err)
			}
		}
		return nil
	})
	if err != nil {
		return GGUFWritten{}, err
	}
	return written(path, types), nil
}

// streamTensor is one GGUF tensor to write (model.ConvertLayout's), its
// type and its source tensors.
type streamTensor struct {
	model.GGUFTensor
	typ  gguf.GGMLType
	srcs []*safetensors.Tensor
}

// streamChunk is the number of values converted at a time (16 MiB of
// float32), the source's pages released after each.
const streamChunk = 4 << 20

// write writes the tensor's data in its GGUF type.
func (t streamTensor) write(sw *gguf.StreamWriter, f *safetensors.File) error {
	put := func(vals []float32) error {
		b, err := gguf.EncodeFloat32(t.typ, vals)
		if err != nil {
			return err
		}
		_, err = sw.Write(b)
		return err
	}
	if len(t.Shape) == 3 { // a stack of experts' matrices, [E, rows, cols]
		for _, s := range t.srcs {
			one := streamTensor{typ: t.typ, srcs: []*safetensors.Tensor{s}}
			one.Shape = t.Shape[1:]
			if err := one.write(sw, f); err != nil {
				return err
			}
		}
		return nil
	}
	if t.srcs == nil {
		return put(t.Values)
	}
	src := t.srcs[0]
	if t.Transpose {
		// Whole: each output row gathers a column of the source. Only
		// GPT-2 transposes, and its largest matrix is small.
		vals := weights.Float32s(f, *src, weights.Release)
		return put(kernels.Transpose(vals, t.Shape[1], t.Shape[0]))
	}
	rows := 1
	if len(t.Shape) == 2 || t.RopeHeads > 0 {
		rows = t.Shape[0]
	}
	n := src.Numel()
	cols := n / max(rows, 1)
	raw := f.Raw(*src)
	size := len(raw) / max(n, 1)
	// from[r] is the source row of output row r.
	var from []int
	if t.RopeHeads > 0 {
		from = make([]int, rows)
		for r := range rows {
			from[weights.RopeRow(r, rows, t.RopeHeads)] = r
		}
	}
	step := max(1, streamChunk/max(cols, 1))
	buf := make([]float32, min(step, rows)*cols)
	for r0 := 0; r0 < rows; r0 += step {
		r1 := min(r0+step, rows)
		vals := buf[:(r1-r0)*cols]
		if from == nil {
			part := raw[r0*cols*size : r1*cols*size]
			safetensors.DecodeInto(vals, src.DType, part)
			weights.Release(part)
		} else {
			for r := r0; r < r1; r++ {
				s := from[r]
				safetensors.DecodeInto(vals[(r-r0)*cols:(r-r0+1)*cols], src.DType, raw[s*cols*size:(s+1)*cols*size])
			}
		}
		if t.PlusOne {
			for i := range vals {
				vals[i]++
			}
		}
		if err := put(vals); err != nil {
			return err
		}
	}
	if from != nil {
		weights.Release(raw)
	}
	return nil
}
