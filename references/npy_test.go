package references

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// The golden files were written by numpy 1.24.2 (np.save, and
// np.lib.format.write_array with version=(2, 0) for the v2 file).
func TestNumpyGolden(t *testing.T) {
	tests := []struct {
		file  string
		shape []int
		f32   []float32
		f64   []float64
	}{
		{file: "numpy_f4_2x3.npy", shape: []int{2, 3}, f32: []float32{-1, -0.5, 0, 0.5, 1, 1.5}},
		{file: "numpy_f4_2x3x2.npy", shape: []int{2, 3, 2}, f32: []float32{0, 0.25, 0.5, 0.75, 1, 1.25, 1.5, 1.75, 2, 2.25, 2.5, 2.75}},
		{file: "numpy_f4_5.npy", shape: []int{5}, f32: []float32{0, 1, 2, 3, 4}},
		{file: "numpy_f4_v2.npy", shape: []int{2, 3}, f32: []float32{-1, -0.5, 0, 0.5, 1, 1.5}},
		{file: "numpy_f8_4.npy", shape: []int{4}, f64: []float64{1.5, -2, 3e-300, 7}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", tt.file))
			require.NoError(t, err)
			if tt.f64 != nil {
				got, shape, err := decodeNPY[float64](bytes.NewReader(data), int64(len(data)), tt.shape)
				require.NoError(t, err)
				require.Equal(t, tt.shape, shape)
				require.Equal(t, tt.f64, got)
				return
			}
			got, shape, err := decodeNPY[float32](bytes.NewReader(data), int64(len(data)), tt.shape)
			require.NoError(t, err)
			require.Equal(t, tt.shape, shape)
			require.Equal(t, tt.f32, got)
			if tt.file != "numpy_f4_v2.npy" {
				// What Go writes is byte for byte what np.save writes.
				var buf bytes.Buffer
				require.NoError(t, encodeNPY(&buf, tt.shape, tt.f32))
				require.Equal(t, data, buf.Bytes())
			}
		})
	}
}

// TestDecodeNPYInvalid feeds broken files straight to the decoder; each
// must fail with a message that says what is wrong.
func TestDecodeNPYInvalid(t *testing.T) {
	good := rawNPY("<f4", []int{2, 3}, f32bytes(values([]int{2, 3})))
	hdr := len(npyHeaderBytes("<f4", []int{2, 3}))
	withHeader := func(dict string, payload []byte) []byte {
		b := []byte("\x93NUMPY\x01\x00")
		b = append(b, byte(len(dict)), byte(len(dict)>>8))
		return append(append(b, dict...), payload...)
	}
	tests := []struct {
		name  string
		data  []byte
		shape []int // nil: accept any shape
		want  string
	}{
		{"empty file", nil, nil, "not a .npy file: 0 bytes"},
		{"short file", []byte("\x93NUM"), nil, "too short for the preamble"},
		{"bad magic", append([]byte("\x93NUMPX"), good[6:]...), nil, `bad magic "\x93NUMPX"`},
		{"pickle", []byte("\x80\x04\x95\x00\x00\x00\x00\x00\x00\x00"), nil, "bad magic"},
		{"version 3", append([]byte("\x93NUMPY\x03\x00"), good[8:]...), nil, "unsupported .npy format version 3.0"},
		{"truncated preamble", good[:9], nil, "truncated .npy preamble"},
		{"header longer than the file", withHeader("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }\n", nil)[:40], nil,
			"header of 58 bytes, but the file has only 40 bytes"},
		{"huge header length", append([]byte("\x93NUMPY\x02\x00\xff\xff\xff\x7f"), good[10:]...), nil, "more than the 65536 accepted"},
		{"truncated data", good[:len(good)-3], []int{2, 3}, "header promises 6 values (24 bytes) after a 128-byte header, the file has 21 data bytes"},
		{"extra data", append(append([]byte{}, good...), 0, 0, 0, 0), []int{2, 3}, "the file has 28 data bytes"},
		{"header lies about the shape", rawNPY("<f4", []int{1000, 1000}, f32bytes(values([]int{2, 3}))), nil,
			"header promises 1000000 values (4000000 bytes)"},
		{"header with absurd shape", rawNPY("<f4", []int{1 << 30, 1 << 30, 1 << 30}, nil), nil, "is too large"},
		{"dtype float64", rawNPY("<f8", []int{2, 3}, f64bytes(make([]float64, 6))), []int{2, 3}, `dtype "<f8", want "<f4" (float32 little-endian)`},
		{"dtype big-endian", rawNPY(">f4", []int{2, 3}, f32bytes(make([]float32, 6))), []int{2, 3}, `dtype ">f4", want "<f4"`},
		{"dtype int32", rawNPY("<i4", []int{2, 3}, make([]byte, 24)), []int{2, 3}, `dtype "<i4"`},
		{"fortran order", withHeader("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }\n", make([]byte, 24)), nil,
			"fortran_order is True, want C order"},
		{"shape differs from the manifest", good, []int{3, 2}, "shape [2 3], the manifest says [3 2]"},
		{"rank differs from the manifest", good, []int{6}, "shape [2 3], the manifest says [6]"},
		{"header without newline", withHeader("{'descr': '<f4', 'fortran_order': False, 'shape': (6,), }", make([]byte, 24)), nil,
			"does not end with a newline"},
		{"negative dimension", withHeader("{'descr': '<f4', 'fortran_order': False, 'shape': (-6,), }\n", make([]byte, 24)), nil,
			"bad dimension"},
		{"signed dimension", withHeader("{'descr': '<f4', 'fortran_order': False, 'shape': (+6,), }\n", make([]byte, 24)), nil,
			"bad dimension"},
		{"missing key", withHeader("{'descr': '<f4', 'shape': (6,), }\n", make([]byte, 24)), nil, `missing key "fortran_order"`},
		{"duplicate key", withHeader("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (6,), }\n", make([]byte, 24)), nil,
			`duplicate key "descr"`},
		{"unknown key", withHeader("{'descr': '<f4', 'fortran_order': False, 'shape': (6,), 'x': 1}\n", make([]byte, 24)), nil,
			`unexpected key "x"`},
		{"not a dict", withHeader("[1, 2]\n", nil), nil, `want '{'`},
		{"trailing garbage", withHeader("{'descr': '<f4', 'fortran_order': False, 'shape': (6,), } x\n", make([]byte, 24)), nil,
			"after the dictionary"},
		{"non-ASCII header", withHeader("{'descr': '<f4', 'fortran_order': False, 'shape': (6,), }\xff\n", make([]byte, 24)), nil,
			"non-ASCII byte 0xff"},
		{"unterminated string", withHeader("{'descr: <f4}\n", nil), nil, "unterminated string"},
		{"bad bool", withHeader("{'descr': '<f4', 'fortran_order': false, 'shape': (6,), }\n", make([]byte, 24)), nil, "want True or False"},
		{"too many dims", withHeader("{'descr': '<f4', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1), }\n", make([]byte, 4)), nil,
			"more than 32 dimensions"},
		// Valid for numpy, but npyio's parser needs numpy's exact key order.
		{"keys reordered", withHeader("{'shape': (6,), 'fortran_order': False, 'descr': '<f4', }\n", make([]byte, 24)), nil, "npyio"},
	}
	require.Equal(t, 128, hdr)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _, err := decodeNPY[float32](bytes.NewReader(tt.data), int64(len(tt.data)), tt.shape)
			require.Error(t, err)
			require.Nil(t, got)
			require.Contains(t, err.Error(), tt.want)
		})
	}
}

// TestDecodeNPYShortReads checks that a reader returning one byte at a time
// (as pipes and some filesystems may) still decodes correctly: npyio on its
// own would silently misalign the values.
func TestDecodeNPYShortReads(t *testing.T) {
	want := values([]int{3, 5})
	data := rawNPY("<f4", []int{3, 5}, f32bytes(want))
	got, _, err := decodeNPY[float32](oneByteReader{bytes.NewReader(data)}, int64(len(data)), []int{3, 5})
	require.NoError(t, err)
	require.Equal(t, want, got)
}

// TestDecodeNPYFileChanged covers a file that shrinks between the size
// check and the read: npyio ignores the early EOF.
func TestDecodeNPYFileChanged(t *testing.T) {
	data := rawNPY("<f4", []int{4}, f32bytes([]float32{1, 2, 3, 4}))
	short := data[:len(data)-8]
	_, _, err := decodeNPY[float32](bytes.NewReader(short), int64(len(data)), []int{4})
	require.ErrorContains(t, err, "file changed while being read")
}

func TestFirstNonFinite(t *testing.T) {
	require.Equal(t, -1, firstNonFinite([]float32{1, -2, 0}))
	require.Equal(t, 1, firstNonFinite([]float32{1, float32(math.NaN()), float32(math.Inf(1))}))
	require.Equal(t, 2, firstNonFinite([]float64{1, 0, math.Inf(-1)}))
	require.Equal(t, []int{1, 0, 1}, Unravel(7, []int{2, 3, 2}))
	require.Equal(t, []int{5}, Unravel(5, []int{16}))
}

func TestNumElems(t *testing.T) {
	n, ok := numElems([]int{2, 3, 4}, 4)
	require.True(t, ok)
	require.Equal(t, 24, n)
	n, ok = numElems(nil, 4)
	require.True(t, ok)
	require.Equal(t, 1, n)
	_, ok = numElems([]int{1 << 31, 1 << 31, 4}, 4)
	require.False(t, ok)
	_, ok = numElems([]int{-1}, 4)
	require.False(t, ok)
}

type oneByteReader struct{ r *bytes.Reader }

func (o oneByteReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	return o.r.Read(p[:1])
}

// BenchmarkDecodeNPY decodes the logits of 64 positions of GPT-2 124M,
// the largest kind of reference tensor.
func BenchmarkDecodeNPY(b *testing.B) {
	shape := []int{64, 50257}
	data := rawNPY("<f4", shape, f32bytes(values(shape)))
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, _, err := decodeNPY[float32](bytes.NewReader(data), int64(len(data)), shape); err != nil {
			b.Fatal(err)
		}
	}
}
