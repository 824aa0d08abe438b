package gguf

import (
	"bufio"
	"fmt"
	"io"

	"github.com/llorch/llorch-check/internal/atomicfile"
)

// StreamWriter writes a version-3 GGUF file whose tensor data arrives
// after its header, so that no tensor but the one being written need be
// in memory: NewStreamWriter writes the header (every key and tensor
// info, the offsets computed from the infos' dims and types), Write takes
// the tensors' data in order, as one stream of bytes, and pads each
// tensor to the alignment as soon as its last byte is in. The file is
// byte for byte what Write makes of the same tensors.
type StreamWriter struct {
	enc   *encoder
	align uint64
	infos []TensorInfo
	sizes []int64
	i     int   // the tensor being written
	left  int64 // its bytes still due
}

// NewStreamWriter validates kv and the tensor infos (Name, Dims, Type) as
// Write does and writes the header to w.
func NewStreamWriter(w io.Writer, kv []KV, tensors []TensorInfo) (*StreamWriter, error) {
	sizes, err := checkHeader(kv, tensors)
	if err != nil {
		return nil, err
	}
	align, _ := alignmentOf(kv)
	ew := &encoder{w: bufio.NewWriterSize(w, 1<<20)}
	ew.raw([]byte(Magic))
	ew.u32(3)
	ew.u64(uint64(len(tensors)))
	ew.u64(uint64(len(kv)))
	for _, e := range kv {
		ew.str(e.Key)
		ew.u32(uint32(e.Value.Type))
		ew.value(e.Value.V)
	}
	var off uint64
	for i, t := range tensors {
		ew.str(t.Name)
		ew.u32(uint32(len(t.Dims)))
		for _, d := range t.Dims {
			ew.u64(d)
		}
		ew.u32(uint32(t.Type))
		ew.u64(off)
		off = alignUp(off+uint64(sizes[i]), align)
	}
	ew.pad(align)
	s := &StreamWriter{enc: ew, align: align, infos: tensors, sizes: sizes, i: -1}
	s.next()
	return s, ew.err
}

// next moves to the next tensor that has data, padding after each one
// finished (an empty tensor is finished as soon as it starts).
func (s *StreamWriter) next() {
	for s.left == 0 && s.i < len(s.sizes) {
		if s.i >= 0 {
			s.enc.pad(s.align)
		}
		s.i++
		if s.i < len(s.sizes) {
			s.left = s.sizes[s.i]
		}
	}
}

// Tensor is the tensor the next byte written belongs to; ok is false once
// every tensor is complete.
func (s *StreamWriter) Tensor() (t TensorInfo, ok bool) {
	if s.i >= len(s.infos) {
		return TensorInfo{}, false
	}
	return s.infos[s.i], true
}

// Write appends tensor data: the rest of the current tensor, then the
// next one's, in the order the header lists them. Bytes beyond the last
// tensor are an error.
func (s *StreamWriter) Write(p []byte) (int, error) {
	n := 0
	for len(p) > 0 {
		if s.enc.err != nil {
			return n, s.enc.err
		}
		if s.i >= len(s.sizes) {
			return n, fmt.Errorf("gguf: %d bytes of tensor data past the last tensor", len(p))
		}
		k := min(int64(len(p)), s.left)
		s.enc.raw(p[:k])
		n += int(k)
		p = p[k:]
		s.left -= k
		s.next()
	}
	return n, s.enc.err
}

// Close flushes the file; an error if a tensor's data is missing. It
// does not close the underlying writer.
func (s *StreamWriter) Close() error {
	if s.enc.err != nil {
		return s.enc.err
	}
	if s.i < len(s.sizes) {
		t := s.infos[s.i]
		return fmt.Errorf("gguf: tensor %s: %d of its %d bytes of data were written", t.Name, s.sizes[s.i]-s.left, s.sizes[s.i])
	}
	return s.enc.w.Flush()
}

// WriteFileStream writes a version-3 GGUF file atomically (as WriteFile)
// whose tensor data fill writes to the StreamWriter, in the infos' order:
// the header is written first, then each tensor as fill produces it, so
// that memory holds only what fill holds. On any error, fill's included,
// path is left as it was.
func WriteFileStream(path string, kv []KV, tensors []TensorInfo, fill func(*StreamWriter) error) error {
	if _, err := checkHeader(kv, tensors); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return atomicfile.Write(path, func(w io.Writer) error {
		sw, err := NewStreamWriter(w, kv, tensors)
		if err != nil {
			return err
		}
		if err := fill(sw); err != nil {
			return err
		}
		return sw.Close()
	})
}
