package references

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
)

// TensorChunks reads t and its float64 twin (nil chunks when the set has
// none) chunk values at a time, in order, and calls fn with each chunk's
// flat offset. A past-window case's attention scores are [32, 4104, 4104]:
// 2.2 GB as float32 and 4.3 GB as float64, which run held whole beside
// Go's own copy (12.7 GB at Phi-3.5-mini's two layers, notes 39); read
// this way a comparison holds one chunk of each. The files are checked as
// Tensor checks them (header, dtype, shape, size, finite values) before
// and while they are read; an error names the file.
func (s *Set) TensorChunks(t TensorInfo, chunk int, fn func(off int, want []float32, truth []float64) error) error {
	return s.TensorRange(t, 0, -1, chunk, fn)
}

// TensorRange is TensorChunks of values from..to-1 only (to -1: to the
// end): a tensor Go emits in parts is compared part by part as it comes.
func (s *Set) TensorRange(t TensorInfo, from, to, chunk int, fn func(off int, want []float32, truth []float64) error) error {
	if chunk <= 0 {
		return fmt.Errorf("chunk %d: want at least 1 value", chunk)
	}
	want, err := openNPY[float32](s.Dir, t.File, t.Shape)
	if err != nil {
		return err
	}
	defer want.f.Close()
	var truth *npyFile
	if t.FileF64 != nil {
		if truth, err = openNPY[float64](s.Dir, *t.FileF64, t.Shape); err != nil {
			return err
		}
		defer truth.f.Close()
	}
	if to < 0 {
		to = want.n
	}
	if from < 0 || from > to || to > want.n {
		return fmt.Errorf("%s: values %d..%d of %d", t.File, from, to, want.n)
	}
	w := make([]float32, min(chunk, to-from))
	var tr []float64
	if truth != nil {
		tr = make([]float64, len(w))
	}
	for off := from; off < to; off += chunk {
		k := min(chunk, to-off)
		if err := readChunk(want, off, w[:k]); err != nil {
			return err
		}
		var trk []float64
		if truth != nil {
			if err := readChunk(truth, off, tr[:k]); err != nil {
				return err
			}
			trk = tr[:k]
		}
		if err := fn(off, w[:k], trk); err != nil {
			return err
		}
	}
	return nil
}

// npyFile is an open .npy file whose header has been checked: n values
// of T from byte offset data.
type npyFile struct {
	f     *os.File
	path  string
	shape []int
	data  int64
	n     int
	buf   []byte // readChunk's, reused
}

// openNPY opens dir/rel and checks its header against T and shape, and its
// size against the header, as readTensor does before it reads the data.
func openNPY[T npyFloat](dir, rel string, shape []int) (*npyFile, error) {
	if shape == nil {
		shape = []int{}
	}
	f, full, err := openTensorFile(dir, rel)
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*npyFile, error) {
		f.Close()
		return nil, &Error{Path: full, Err: err}
	}
	fi, err := f.Stat()
	if err != nil {
		return fail(unwrapPath(err))
	}
	h, _, err := readNPYHeader(io.NewSectionReader(f, 0, fi.Size()), fi.Size())
	if err != nil {
		return fail(err)
	}
	n, err := checkNPYHeader[T](h, fi.Size(), shape)
	if err != nil {
		return fail(err)
	}
	return &npyFile{f: f, path: full, shape: h.shape, data: h.offset, n: n}, nil
}

// readChunk reads values off..off+len(dst) of nf into dst and checks that
// they are finite.
func readChunk[T float32 | float64](nf *npyFile, off int, dst []T) error {
	size := int64(binary.Size(dst[:1]))
	need := int(int64(len(dst)) * size)
	if cap(nf.buf) < need {
		nf.buf = make([]byte, need)
	}
	buf := nf.buf[:need]
	if _, err := nf.f.ReadAt(buf, nf.data+int64(off)*size); err != nil {
		return &Error{Path: nf.path, Err: fmt.Errorf("file changed while being read: %w", err)}
	}
	for i := range dst {
		var v float64
		if size == 4 {
			v = float64(math.Float32frombits(binary.LittleEndian.Uint32(buf[4*i:])))
		} else {
			v = math.Float64frombits(binary.LittleEndian.Uint64(buf[8*i:]))
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return &Error{Path: nf.path, Err: fmt.Errorf("value %v at index %v (element %d): references must be finite", v, Unravel(off+i, nf.shape), off+i)}
		}
		dst[i] = T(v)
	}
	return nil
}
