package references

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// encodeNPY writes data as a version 1.0 float32 .npy file laid out byte
// for byte as numpy 1.24's np.save, so sets from Go and from PyTorch can be
// compared with cmp. npyio's writer is not used: it writes every slice as
// one-dimensional.
func encodeNPY(w io.Writer, shape []int, data []float32) error {
	if n, ok := numElems(shape, 4); !ok || n != len(data) {
		return fmt.Errorf("shape %v does not hold %d values", shape, len(data))
	}
	bw := bufio.NewWriterSize(w, 1<<16)
	if _, err := bw.Write(npyHeaderBytes("<f4", shape)); err != nil {
		return err
	}
	var buf [4]byte
	for _, x := range data {
		binary.LittleEndian.PutUint32(buf[:], math.Float32bits(x))
		if _, err := bw.Write(buf[:]); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// npyHeaderBytes reproduces numpy's _write_array_header: sorted keys, spare
// room to grow the first dimension, and padding to a 64-byte boundary.
func npyHeaderBytes(descr string, shape []int) []byte {
	dims := make([]string, len(shape))
	for i, d := range shape {
		dims[i] = strconv.Itoa(d)
	}
	repr := "(" + strings.Join(dims, ", ") + ")"
	if len(shape) == 1 {
		repr = "(" + dims[0] + ",)"
	}
	dict := "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + repr + ", }"
	if len(shape) > 0 {
		const growthAxisMaxDigits = 21
		dict += strings.Repeat(" ", growthAxisMaxDigits-len(dims[0]))
	}
	hlen := len(dict) + 1
	pad := 64 - (10+hlen)%64
	var b bytes.Buffer
	b.WriteString("\x93NUMPY\x01\x00")
	b.Write(binary.LittleEndian.AppendUint16(nil, uint16(hlen+pad)))
	b.WriteString(dict)
	b.WriteString(strings.Repeat(" ", pad))
	b.WriteByte('\n')
	return b.Bytes()
}
