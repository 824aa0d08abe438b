package references

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"

	"github.com/sbinet/npyio/npy"
)

// npyio trusts the header it reads: a missing newline or a negative or huge
// dimension makes it panic or allocate whatever the file claims, short reads
// silently leave stale values in the output, and it ignores truncation. So
// the header is parsed and checked here first, against the manifest and the
// file size, and npyio only decodes a stream already known to be exactly
// right.

// maxHeaderLen bounds the header we are willing to read; numpy's own reader
// refuses headers over 10000 bytes unless told otherwise.
const maxHeaderLen = 1 << 16

// maxDims matches numpy's NPY_MAXDIMS (32 before numpy 2).
const maxDims = 32

// npyFloat is what a .npy file may hold here: float32 and float64 values,
// and int32 token ids (corpus sets).
type npyFloat interface{ float32 | float64 | int32 }

// npyHeader is a parsed .npy header.
type npyHeader struct {
	descr   string
	fortran bool
	shape   []int
	offset  int64 // bytes before the data: preamble plus header
}

// descrOf is the only dtype accepted for T: little-endian, as FORMAT.md says.
func descrOf[T npyFloat]() (descr, what string, size int64) {
	var zero T
	switch any(zero).(type) {
	case float32:
		return "<f4", "float32 little-endian", 4
	case int32:
		return "<i4", "int32 little-endian", 4
	}
	return "<f8", "float64 little-endian", 8
}

// decodeNPY reads a whole .npy stream of exactly size bytes holding T values
// of shape wantShape (any shape when nil). It allocates nothing the size of
// the data before the header has been matched against size.
func decodeNPY[T npyFloat](r io.Reader, size int64, wantShape []int) ([]T, []int, error) {
	br := &countingReader{r: bufio.NewReaderSize(r, int(min(size, 1<<16)))}
	h, raw, err := readNPYHeader(br, size)
	if err != nil {
		return nil, nil, err
	}
	n, err := checkNPYHeader[T](h, size, wantShape)
	if err != nil {
		return nil, nil, err
	}
	out, err := npyioDecode[T](raw, br, h)
	if err != nil {
		return nil, nil, err
	}
	// npyio ignores EOF, so a file that changed since it was measured would
	// otherwise go unnoticed.
	if extra, _ := br.r.Read(make([]byte, 1)); br.n != size || extra != 0 || len(out) != n {
		return nil, nil, fmt.Errorf("file changed while being read (size %d, read %d)", size, br.n)
	}
	return out, h.shape, nil
}

// checkNPYHeader matches h against T, C order, wantShape (any when nil)
// and the file's size, and returns the number of values.
func checkNPYHeader[T npyFloat](h npyHeader, size int64, wantShape []int) (int, error) {
	descr, what, itemSize := descrOf[T]()
	if h.descr != descr {
		return 0, fmt.Errorf("dtype %q, want %q (%s)", h.descr, descr, what)
	}
	if h.fortran {
		return 0, errors.New("fortran_order is True, want C order")
	}
	if wantShape != nil && !slices.Equal(h.shape, wantShape) {
		return 0, fmt.Errorf("shape %v, the manifest says %v", h.shape, wantShape)
	}
	n, ok := numElems(h.shape, itemSize)
	if !ok {
		return 0, fmt.Errorf("shape %v is too large", h.shape)
	}
	if dataSize := size - h.offset; int64(n)*itemSize != dataSize {
		return 0, fmt.Errorf("header promises %d values (%d bytes) after a %d-byte header, the file has %d data bytes (truncated or corrupt)",
			n, int64(n)*itemSize, h.offset, dataSize)
	}
	return n, nil
}

// npyioDecode hands the already-validated stream to npyio, re-feeding the
// header bytes it needs to see, and converts its panics into errors.
func npyioDecode[T npyFloat](header []byte, rest io.Reader, h npyHeader) (out []T, err error) {
	defer func() {
		if p := recover(); p != nil {
			out, err = nil, fmt.Errorf("npyio panicked: %v", p)
		}
	}()
	// fullReader: npyio reads each value with a single Read call and keeps
	// going after a short one, which bufio and MultiReader may return.
	rr, err := npy.NewReader(fullReader{io.MultiReader(bytes.NewReader(header), rest)})
	if err != nil {
		return nil, fmt.Errorf("npyio: %w", err)
	}
	d := rr.Header.Descr
	if d.Type != h.descr || d.Fortran != h.fortran || !slices.Equal(d.Shape, h.shape) {
		return nil, fmt.Errorf("npyio reads the header as dtype %q fortran %v shape %v, not %q %v %v (unusual header layout)",
			d.Type, d.Fortran, d.Shape, h.descr, h.fortran, h.shape)
	}
	if err := rr.Read(&out); err != nil {
		return nil, fmt.Errorf("npyio: %w", err)
	}
	return out, nil
}

// readNPYHeader reads the preamble and header dictionary, returning them
// raw as well so they can be replayed to npyio.
func readNPYHeader(r io.Reader, size int64) (npyHeader, []byte, error) {
	var pre [12]byte
	if _, err := io.ReadFull(r, pre[:8]); err != nil {
		return npyHeader{}, nil, fmt.Errorf("not a .npy file: %d bytes, too short for the preamble", size)
	}
	if string(pre[:6]) != "\x93NUMPY" {
		return npyHeader{}, nil, fmt.Errorf("not a .npy file: bad magic %q", pre[:6])
	}
	var hlen int64
	var preLen int
	switch major, minor := pre[6], pre[7]; major {
	case 1:
		preLen = 10
		if _, err := io.ReadFull(r, pre[8:10]); err != nil {
			return npyHeader{}, nil, errors.New("truncated .npy preamble")
		}
		hlen = int64(binary.LittleEndian.Uint16(pre[8:10]))
	case 2:
		preLen = 12
		if _, err := io.ReadFull(r, pre[8:12]); err != nil {
			return npyHeader{}, nil, errors.New("truncated .npy preamble")
		}
		hlen = int64(binary.LittleEndian.Uint32(pre[8:12]))
	default:
		return npyHeader{}, nil, fmt.Errorf("unsupported .npy format version %d.%d, want 1.0 or 2.0", major, minor)
	}
	if hlen > maxHeaderLen {
		return npyHeader{}, nil, fmt.Errorf(".npy header of %d bytes, more than the %d accepted", hlen, maxHeaderLen)
	}
	if int64(preLen)+hlen > size {
		return npyHeader{}, nil, fmt.Errorf(".npy header of %d bytes, but the file has only %d bytes (truncated)", hlen, size)
	}
	raw := make([]byte, preLen+int(hlen))
	copy(raw, pre[:preLen])
	if _, err := io.ReadFull(r, raw[preLen:]); err != nil {
		return npyHeader{}, nil, fmt.Errorf("reading .npy header: %w", err)
	}
	h, err := parseHeaderDict(raw[preLen:])
	if err != nil {
		return npyHeader{}, nil, fmt.Errorf("bad .npy header %q: %w", raw[preLen:], err)
	}
	h.offset = int64(len(raw))
	return h, raw, nil
}

// numElems is the product of shape, and false if the data size it implies
// overflows int64.
func numElems(shape []int, itemSize int64) (int, bool) {
	n := int64(1)
	for _, d := range shape {
		if d < 0 {
			return 0, false
		}
		if d != 0 && n > math.MaxInt64/itemSize/int64(d) {
			return 0, false
		}
		n *= int64(d)
	}
	return int(n), int64(int(n)) == n
}

// firstNonFinite returns the index of the first NaN or ±Inf, or -1.
func firstNonFinite[T npyFloat](data []T) int {
	for i, x := range data {
		if f := float64(x); math.IsNaN(f) || math.IsInf(f, 0) {
			return i
		}
	}
	return -1
}

// Unravel turns a flat C-order index into per-dimension indices.
func Unravel(i int, shape []int) []int {
	idx := make([]int, len(shape))
	for d := len(shape) - 1; d >= 0; d-- {
		if shape[d] > 0 {
			idx[d] = i % shape[d]
			i /= shape[d]
		}
	}
	return idx
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// fullReader makes every Read fill p or fail.
type fullReader struct{ r io.Reader }

func (f fullReader) Read(p []byte) (int, error) { return io.ReadFull(f.r, p) }
