// Package gguf reads GGUF files (versions 2 and 3), the container llama.cpp
// uses for models and tokenizers: typed metadata key/values, tensor infos
// and the aligned tensor data section. It also writes version-3 files
// (Write, WriteFile) and converts tensor data between float32 and the F32,
// F16, BF16 and Q8_0 layouts (DecodeFloat32, EncodeFloat32).
//
// Every count, length and offset read from the file is checked against the
// file size before it is used, so a corrupt or hostile file yields an error
// wrapping ErrInvalid, never a panic or an allocation larger than the file.
// A File is immutable after Read and safe for concurrent use.
package gguf

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/llorch/llorch-check/internal/regularfile"
)

// Magic is the first four bytes of every GGUF file.
const Magic = "GGUF"

// DefaultAlignment applies when general.alignment is absent.
const DefaultAlignment = 32

// maxDims is GGML_MAX_DIMS: llama.cpp rejects tensors with more.
const maxDims = 4

// ErrInvalid is wrapped by every error about the file's content (as opposed
// to an I/O error reading it).
var ErrInvalid = errors.New("gguf: invalid file")

// File is a parsed GGUF header: metadata, tensor infos and where the data
// section starts. Tensor data is read on demand through the io.ReaderAt.
type File struct {
	Version    uint32
	KV         []KV // in file order
	Tensors    []TensorInfo
	Alignment  uint64
	DataOffset int64 // absolute offset of the tensor data section

	r       io.ReaderAt
	data    []byte // the whole file, when parsed by ReadBytes
	size    int64
	kvIndex map[string]int
	tIndex  map[string]int
	closer  io.Closer
}

// TensorInfo describes one tensor; Offset is relative to File.DataOffset.
type TensorInfo struct {
	Name   string
	Dims   []uint64 // fastest-varying first, as ggml's ne
	Type   GGMLType
	Offset uint64
	Size   int64 // bytes, or -1 when Type's layout is unknown
}

// Elements is the product of Dims.
func (t TensorInfo) Elements() uint64 {
	n := uint64(1)
	for _, d := range t.Dims {
		n *= d
	}
	return n
}

// Open reads the GGUF file at path. The file stays open for tensor data
// access until Close.
func Open(path string) (*File, error) {
	fd, err := regularfile.Open(path)
	if err != nil {
		return nil, err
	}
	st, err := fd.Stat()
	if err != nil {
		fd.Close()
		return nil, err
	}
	f, err := Read(fd, st.Size())
	if err != nil {
		fd.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	f.closer = fd
	return f, nil
}

// Close closes the file opened by Open; it is a no-op after Read.
func (f *File) Close() error {
	if f.closer == nil {
		return nil
	}
	return f.closer.Close()
}

// Read parses the GGUF header from r, which holds size bytes (an *os.File,
// a memory map wrapped in bytes.Reader, ...). r must stay valid while
// tensor data is read.
func Read(r io.ReaderAt, size int64) (*File, error) {
	rd := &reader{r: r, size: size}
	magic, err := rd.next(4, "magic")
	if err != nil {
		return nil, err
	}
	if string(magic) != Magic {
		return nil, fmt.Errorf("%w: bad magic %q, want %q", ErrInvalid, magic, Magic)
	}
	f := &File{r: r, size: size, Alignment: DefaultAlignment}
	if f.Version, err = rd.u32("version"); err != nil {
		return nil, err
	}
	switch {
	case f.Version == 2 || f.Version == 3:
	case f.Version&0xffff == 0 && f.Version != 0:
		return nil, fmt.Errorf("%w: version %#x looks big-endian; only little-endian files are supported", ErrInvalid, f.Version)
	default:
		return nil, fmt.Errorf("%w: unsupported version %d (want 2 or 3)", ErrInvalid, f.Version)
	}
	// Counts are checked against the smallest possible entry: a tensor info
	// is at least name length, n_dims, type and offset; a KV at least key
	// length, type and a one-byte value.
	nTensors, err := rd.count(8+4+4+8, "tensor count")
	if err != nil {
		return nil, err
	}
	nKV, err := rd.count(8+4+1, "metadata kv count")
	if err != nil {
		return nil, err
	}
	if err := f.readKVs(rd, nKV); err != nil {
		return nil, err
	}
	if err := f.readTensorInfos(rd, nTensors); err != nil {
		return nil, err
	}
	// The data section starts at the next multiple of the alignment.
	pad := (f.Alignment - uint64(rd.pos)%f.Alignment) % f.Alignment
	f.DataOffset = rd.pos + int64(pad)
	if err := f.checkTensorRanges(); err != nil {
		return nil, err
	}
	return f, nil
}

// ReadBytes parses a file held in memory, typically a memory map. Tensor
// data returned by TensorData then aliases data instead of being copied.
func ReadBytes(data []byte) (*File, error) {
	f, err := Read(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, err
	}
	f.data = data
	return f, nil
}

func (f *File) readKVs(rd *reader, n int) error {
	f.KV = make([]KV, 0, n)
	f.kvIndex = make(map[string]int, n)
	for i := range n {
		key, err := rd.str(fmt.Sprintf("metadata key #%d", i))
		if err != nil {
			return err
		}
		if _, dup := f.kvIndex[key]; dup {
			return fmt.Errorf("%w: duplicate metadata key %q", ErrInvalid, key)
		}
		t, err := rd.u32("key " + key + ": value type")
		if err != nil {
			return err
		}
		v, err := rd.value(ValueType(t), "key "+key, 0)
		if err != nil {
			return err
		}
		f.kvIndex[key] = len(f.KV)
		f.KV = append(f.KV, KV{Key: key, Value: Value{Type: ValueType(t), V: v}})
	}
	if v, ok := f.Get("general.alignment"); ok {
		a, isU32 := v.V.(uint32)
		if !isU32 || a == 0 || a&(a-1) != 0 {
			return fmt.Errorf("%w: general.alignment must be a power-of-two uint32, got %s %v", ErrInvalid, v.Type, v.V)
		}
		f.Alignment = uint64(a)
	}
	return nil
}

func (f *File) readTensorInfos(rd *reader, n int) error {
	f.Tensors = make([]TensorInfo, 0, n)
	f.tIndex = make(map[string]int, n)
	for i := range n {
		name, err := rd.str(fmt.Sprintf("tensor #%d name", i))
		if err != nil {
			return err
		}
		what := "tensor " + name
		if _, dup := f.tIndex[name]; dup {
			return fmt.Errorf("%w: duplicate tensor name %q", ErrInvalid, name)
		}
		nd, err := rd.u32(what + ": n_dims")
		if err != nil {
			return err
		}
		if nd > maxDims {
			return fmt.Errorf("%w: %s: %d dims, at most %d supported", ErrInvalid, what, nd, maxDims)
		}
		t := TensorInfo{Name: name, Dims: make([]uint64, nd)}
		for d := range t.Dims {
			if t.Dims[d], err = rd.u64(what + ": dims"); err != nil {
				return err
			}
		}
		typ, err := rd.u32(what + ": type")
		if err != nil {
			return err
		}
		t.Type = GGMLType(typ)
		if t.Offset, err = rd.u64(what + ": offset"); err != nil {
			return err
		}
		if t.Offset%f.Alignment != 0 {
			return fmt.Errorf("%w: %s: offset %d not a multiple of alignment %d", ErrInvalid, what, t.Offset, f.Alignment)
		}
		if t.Size, err = tensorSize(t); err != nil {
			return fmt.Errorf("%w: %s: %v", ErrInvalid, what, err)
		}
		f.tIndex[name] = len(f.Tensors)
		f.Tensors = append(f.Tensors, t)
	}
	return nil
}

// checkTensorRanges makes every tensor lie inside the file (for a type of
// unknown layout, at least its start) and no two tensors share bytes: a
// writer that overlaps them has lost track of its offsets, and a loader
// would silently read one tensor's data as another's.
func (f *File) checkTensorRanges() error {
	for _, t := range f.Tensors {
		size := uint64(max(t.Size, 0))
		avail := f.size - f.DataOffset
		if avail < 0 || t.Offset > uint64(avail) || size > uint64(avail)-t.Offset {
			return fmt.Errorf("%w: tensor %s: %d bytes at data offset %d past end of file (data section at %d, file size %d)",
				ErrInvalid, t.Name, size, t.Offset, f.DataOffset, f.size)
		}
	}
	byOffset := make([]TensorInfo, 0, len(f.Tensors))
	for _, t := range f.Tensors {
		if t.Size > 0 {
			byOffset = append(byOffset, t)
		}
	}
	slices.SortFunc(byOffset, func(a, b TensorInfo) int { return cmp.Compare(a.Offset, b.Offset) })
	for i := 1; i < len(byOffset); i++ {
		prev, cur := byOffset[i-1], byOffset[i]
		if cur.Offset < prev.Offset+uint64(prev.Size) {
			return fmt.Errorf("%w: tensor %s [%d,%d) overlaps tensor %s [%d,%d) in the data section",
				ErrInvalid, cur.Name, cur.Offset, cur.Offset+uint64(cur.Size), prev.Name, prev.Offset, prev.Offset+uint64(prev.Size))
		}
	}
	return nil
}

// Get returns the metadata value for key.
func (f *File) Get(key string) (Value, bool) {
	i, ok := f.kvIndex[key]
	if !ok {
		return Value{}, false
	}
	return f.KV[i].Value, true
}

// Tensor returns the info of the named tensor.
func (f *File) Tensor(name string) (TensorInfo, bool) {
	i, ok := f.tIndex[name]
	if !ok {
		return TensorInfo{}, false
	}
	return f.Tensors[i], true
}

// TensorSection returns a reader over the named tensor's raw bytes, without
// reading them; over a memory map this is zero-copy.
func (f *File) TensorSection(name string) (*io.SectionReader, error) {
	t, ok := f.Tensor(name)
	if !ok {
		return nil, fmt.Errorf("gguf: no tensor %q", name)
	}
	if t.Size < 0 {
		return nil, fmt.Errorf("gguf: tensor %q: unknown ggml type %d, size unknown", name, uint32(t.Type))
	}
	return io.NewSectionReader(f.r, f.DataOffset+int64(t.Offset), t.Size), nil
}

// TensorData returns the named tensor's raw bytes: a sub-slice of the
// file's memory after ReadBytes (do not modify it), a fresh copy otherwise.
func (f *File) TensorData(name string) ([]byte, error) {
	s, err := f.TensorSection(name)
	if err != nil {
		return nil, err
	}
	if f.data != nil {
		_, off, size := s.Outer()
		return f.data[off : off+size : off+size], nil
	}
	b := make([]byte, s.Size())
	if _, err := io.ReadFull(s, b); err != nil {
		return nil, fmt.Errorf("gguf: tensor %q: %w", name, err)
	}
	return b, nil
}
