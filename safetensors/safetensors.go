// Package safetensors reads the safetensors format (Hugging Face's
// model.safetensors) from a complete file image, every offset, dtype and
// shape checked before a byte of tensor data is touched: a hostile header
// can neither read outside the file nor allocate more than it holds. A
// sharded checkpoint (model.safetensors.index.json and its shards) is its
// shards' images merged into one File (Merge), checked against the
// index (index.go).
package safetensors

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/llorch/llorch-check/gguf"
)

// maxHeaderLen is the safetensors reference implementation's limit; it keeps
// a corrupt length field from turning into a huge allocation.
const maxHeaderLen = 100 << 20

// Tensor locates one tensor inside a safetensors file. Begin and End are
// relative to the start of the data section, as in the file; Shard is the
// index of that file among those Merge was given (0 for Parse's).
type Tensor struct {
	Name       string
	DType      string
	Shape      []int
	Begin, End int64
	Shard      int
}

// Numel is the number of elements.
func (t Tensor) Numel() int {
	n := 1
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

// DTypeSize is the bytes of one element of dtype; false for dtypes this
// package does not read (F32, F16, BF16 only).
func DTypeSize(dtype string) (int, bool) {
	switch dtype {
	case "F32":
		return 4, true
	case "F16", "BF16":
		return 2, true
	}
	return 0, false
}

// File is a parsed, fully bounds-checked safetensors image, or several
// merged: every tensor's [Begin,End) lies inside its shard's data section
// and matches its dtype and shape.
type File struct {
	Tensors []Tensor // sorted by Shard, then Begin
	data    [][]byte // each shard's data section
}

// Parse validates the header of a complete file image b. It only
// allocates in proportion to len(b), whatever the header claims.
func Parse(b []byte) (*File, error) {
	if len(b) < 8 {
		return nil, fmt.Errorf("file is %d bytes, shorter than the 8-byte header length", len(b))
	}
	hlen := binary.LittleEndian.Uint64(b[:8])
	if hlen > uint64(len(b)-8) {
		return nil, fmt.Errorf("header length %d runs past the end of the %d-byte file", hlen, len(b))
	}
	if hlen > maxHeaderLen {
		return nil, fmt.Errorf("header length %d exceeds the %d-byte limit", hlen, maxHeaderLen)
	}
	header := b[8 : 8+hlen]
	data := b[8+hlen:]
	tensors, err := parseHeader(header, int64(len(data)))
	if err != nil {
		return nil, err
	}
	return &File{Tensors: tensors, data: [][]byte{data}}, nil
}

// Merge joins the shards of one checkpoint, named by names (for errors),
// into one File whose tensors say their shard. A tensor name in two
// shards is an error naming both.
func Merge(names []string, shards []*File) (*File, error) {
	if len(names) != len(shards) {
		return nil, fmt.Errorf("merging %d shards with %d names", len(shards), len(names))
	}
	out := &File{}
	where := map[string]int{}
	for i, f := range shards {
		if len(f.data) != 1 {
			return nil, fmt.Errorf("%s: a merged file cannot be merged again", names[i])
		}
		for _, t := range f.Tensors {
			if j, dup := where[t.Name]; dup {
				return nil, fmt.Errorf("tensor %q is in both %s and %s", t.Name, names[j], names[i])
			}
			where[t.Name] = i
			t.Shard = i
			out.Tensors = append(out.Tensors, t)
		}
		out.data = append(out.data, f.data[0])
	}
	return out, nil
}

type headerEntry struct {
	DType       *string  `json:"dtype"`
	Shape       *[]int64 `json:"shape"`
	DataOffsets *[]int64 `json:"data_offsets"`
}

func parseHeader(header []byte, dataLen int64) ([]Tensor, error) {
	dec := json.NewDecoder(bytes.NewReader(header))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, fmt.Errorf("header is not a JSON object")
	}
	seen := map[string]bool{}
	var tensors []Tensor
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("parsing header: %w", err)
		}
		name, ok := tok.(string)
		if !ok {
			return nil, fmt.Errorf("parsing header: key %v is not a string", tok)
		}
		if seen[name] {
			return nil, fmt.Errorf("header lists tensor %q twice", name)
		}
		seen[name] = true
		if name == "__metadata__" {
			var meta map[string]string
			if err := dec.Decode(&meta); err != nil {
				return nil, fmt.Errorf("parsing header __metadata__: %w", err)
			}
			continue
		}
		var e headerEntry
		if err := dec.Decode(&e); err != nil {
			return nil, fmt.Errorf("parsing header entry of tensor %q: %w", name, err)
		}
		t, err := checkEntry(name, e, dataLen)
		if err != nil {
			return nil, err
		}
		tensors = append(tensors, t)
	}
	if _, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("parsing header: %w", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("parsing header: trailing data after the JSON object")
	}
	sort.Slice(tensors, func(i, j int) bool { return tensors[i].Begin < tensors[j].Begin })
	for i := 1; i < len(tensors); i++ {
		prev, cur := tensors[i-1], tensors[i]
		if cur.Begin < prev.End {
			return nil, fmt.Errorf("tensor %q [%d,%d) overlaps tensor %q [%d,%d)",
				cur.Name, cur.Begin, cur.End, prev.Name, prev.Begin, prev.End)
		}
	}
	return tensors, nil
}

func checkEntry(name string, e headerEntry, dataLen int64) (Tensor, error) {
	if e.DType == nil || e.Shape == nil || e.DataOffsets == nil {
		return Tensor{}, fmt.Errorf("tensor %q: header entry needs dtype, shape and data_offsets", name)
	}
	size, ok := DTypeSize(*e.DType)
	if !ok {
		return Tensor{}, fmt.Errorf("tensor %q: dtype %q is not supported (F32, F16, BF16)", name, *e.DType)
	}
	// Multiply with an upper bound so that a hostile shape cannot overflow.
	shape := make([]int, len(*e.Shape))
	numel := int64(1)
	for i, d := range *e.Shape {
		if d < 0 {
			return Tensor{}, fmt.Errorf("tensor %q: negative dimension in shape %v", name, *e.Shape)
		}
		if d > 0 && numel > dataLen/d {
			numel = dataLen + 1 // larger than anything that fits; keep multiplying safely
		} else {
			numel *= d
		}
		shape[i] = int(d)
	}
	offs := *e.DataOffsets
	if len(offs) != 2 {
		return Tensor{}, fmt.Errorf("tensor %q: data_offsets %v must have two entries", name, offs)
	}
	begin, end := offs[0], offs[1]
	if begin < 0 || end < begin || end > dataLen {
		return Tensor{}, fmt.Errorf("tensor %q: data_offsets [%d,%d] outside the %d-byte data section", name, begin, end, dataLen)
	}
	if numel > dataLen || numel*int64(size) != end-begin {
		return Tensor{}, fmt.Errorf("tensor %q: data_offsets [%d,%d] hold %d bytes, but %s%v needs %d×%d",
			name, begin, end, end-begin, *e.DType, *e.Shape, numel, size)
	}
	return Tensor{Name: name, DType: *e.DType, Shape: shape, Begin: begin, End: end}, nil
}

// Raw returns the bytes of t; Parse has checked the bounds.
func (f *File) Raw(t Tensor) []byte { return f.data[t.Shard][t.Begin:t.End] }

// Float32s converts t to a fresh float32 slice.
func (f *File) Float32s(t Tensor) []float32 {
	out := make([]float32, t.Numel())
	DecodeInto(out, t.DType, f.Raw(t))
	return out
}

// safetensorsTypes maps the dtypes we accept to the GGML type of the same
// encoding, so both file formats share one set of conversions.
var safetensorsTypes = map[string]gguf.GGMLType{"F32": gguf.GGMLTypeF32, "F16": gguf.GGMLTypeF16, "BF16": gguf.GGMLTypeBF16}

// DecodeInto converts little-endian raw values of dtype into dst. The
// header parser has already checked dtype and that raw holds len(dst)
// values, so a failure here is a bug in the caller, not bad input.
func DecodeInto(dst []float32, dtype string, raw []byte) {
	if err := gguf.DecodeFloat32(safetensorsTypes[dtype], raw, dst); err != nil {
		panic(fmt.Sprintf("safetensors: decoding checked %s data: %v", dtype, err))
	}
}

// Filter is f with only the tensors keep accepts; it shares f's data.
func (f *File) Filter(keep func(Tensor) bool) *File {
	out := &File{data: f.data}
	for _, t := range f.Tensors {
		if keep(t) {
			out.Tensors = append(out.Tensors, t)
		}
	}
	return out
}
