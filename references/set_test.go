package references

import (
	"encoding/json"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// withTwins adds a float64 twin to every tensor of the set in dir, as the
// PyTorch generator does, and returns the opened set.
func withTwins(t *testing.T, dir string) *Set {
	t.Helper()
	m := validManifest()
	for i, ti := range m.Tensors {
		twin := ti.File[:len(ti.File)-len(".npy")] + ".f64.npy"
		m.Tensors[i].FileF64 = &twin
		var vals []float64
		for _, v := range values(ti.Shape) {
			vals = append(vals, float64(v)+1e-9)
		}
		require.NoError(t, os.WriteFile(filepath.Join(dir, twin), rawNPY("<f8", ti.Shape, f64bytes(vals)), 0o644))
	}
	data, err := json.Marshal(m)
	require.NoError(t, err)
	writeManifestJSON(t, dir, data)
	s, err := Open(dir)
	require.NoError(t, err)
	return s
}

func TestTensorRoundTrip(t *testing.T) {
	m := validManifest()
	s, err := Open(writeSet(t, m))
	require.NoError(t, err)
	for _, ti := range s.Manifest.Tensors {
		got, err := s.Tensor(ti)
		require.NoError(t, err, ti.Key())
		require.Equal(t, values(ti.Shape), got, ti.Key())
		twin, err := s.TensorF64(ti)
		require.NoError(t, err)
		require.Nil(t, twin, "a set written from Go has no twins")
	}
}

func TestTensorF64(t *testing.T) {
	s := withTwins(t, writeSet(t, validManifest()))
	for _, ti := range s.Manifest.Tensors {
		got, err := s.TensorF64(ti)
		require.NoError(t, err, ti.Key())
		require.Len(t, got, len(values(ti.Shape)))
		require.InDelta(t, float64(values(ti.Shape)[1])+1e-9, got[1], 1e-15)
	}

	// A twin stored as float32 is a generator bug the budget would hide.
	ti := s.Manifest.Tensors[0]
	require.NoError(t, os.WriteFile(filepath.Join(s.Dir, *ti.FileF64), rawNPY("<f4", ti.Shape, f32bytes(values(ti.Shape))), 0o644))
	_, err := s.TensorF64(ti)
	require.ErrorIs(t, err, ErrInvalid)
	require.ErrorContains(t, err, filepath.Join(s.Dir, "hello", "embeddings.f64.npy")+`: dtype "<f4", want "<f8" (float64 little-endian)`)

	// NaN in a twin is as fatal as in the float32 file.
	ti = s.Manifest.Tensors[7]
	vals := make([]float64, 16)
	vals[9] = math.NaN()
	require.NoError(t, os.WriteFile(filepath.Join(s.Dir, *ti.FileF64), rawNPY("<f8", ti.Shape, f64bytes(vals)), 0o644))
	_, err = s.TensorF64(ti)
	require.ErrorContains(t, err, "value NaN at index [9] (element 9)")
}

// TestTensorInvalid breaks the file of the embeddings tensor ([3,4]) after
// Open, which does not read tensor data.
func TestTensorInvalid(t *testing.T) {
	shape := []int{3, 4}
	payload := f32bytes(values(shape))
	withValue := func(i int, v float32) []byte {
		vals := values(shape)
		vals[i] = v
		return rawNPY("<f4", shape, f32bytes(vals))
	}
	tests := []struct {
		name string
		data []byte // nil: delete the file
		want string
		is   error
	}{
		{"missing", nil, "no such file", fs.ErrNotExist},
		{"empty", []byte{}, "not a .npy file: 0 bytes", nil},
		{"truncated", rawNPY("<f4", shape, payload)[:128+40], "header promises 12 values (48 bytes) after a 128-byte header, the file has 40 data bytes (truncated or corrupt)", nil},
		{"header lies about its size", rawNPY("<f4", shape, append(payload, payload...)), "the file has 96 data bytes", nil},
		{"corrupt magic", append([]byte("PK\x03\x04"), rawNPY("<f4", shape, payload)[4:]...), "not a .npy file: bad magic", nil},
		{"dtype disagrees", rawNPY("<f8", shape, f64bytes(make([]float64, 12))), `dtype "<f8", want "<f4" (float32 little-endian)`, nil},
		{"big-endian", rawNPY(">f4", shape, payload), `dtype ">f4", want "<f4"`, nil},
		{"shape disagrees", rawNPY("<f4", []int{4, 3}, payload), "shape [4 3], the manifest says [3 4]", nil},
		{"NaN", withValue(6, float32(math.NaN())), "value NaN at index [1 2] (element 6): references must be finite", nil},
		{"+Inf", withValue(11, float32(math.Inf(1))), "value +Inf at index [2 3] (element 11)", nil},
		{"-Inf", withValue(0, float32(math.Inf(-1))), "value -Inf at index [0 0] (element 0)", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, err := Open(writeSet(t, validManifest()))
			require.NoError(t, err)
			ti := s.Manifest.Tensors[0]
			path := filepath.Join(s.Dir, "hello", "embeddings.npy")
			if tt.data == nil {
				require.NoError(t, os.Remove(path))
			} else {
				require.NoError(t, os.WriteFile(path, tt.data, 0o644))
			}
			got, err := s.Tensor(ti)
			require.Nil(t, got)
			require.ErrorIs(t, err, ErrInvalid)
			if tt.is != nil {
				require.ErrorIs(t, err, tt.is)
			}
			require.ErrorContains(t, err, path+": ")
			require.ErrorContains(t, err, tt.want)
		})
	}
}

// TestTensorRefusesEscapes: Tensor may be given a TensorInfo that did not
// come from Open, so it re-checks the path, and follows no symlink out.
func TestTensorRefusesEscapes(t *testing.T) {
	s, err := Open(writeSet(t, validManifest()))
	require.NoError(t, err)
	ti := s.Manifest.Tensors[0]

	ti.File = "../../etc/passwd"
	_, err = s.Tensor(ti)
	require.ErrorIs(t, err, ErrInvalid)
	require.ErrorContains(t, err, "leaves the set directory")

	outside := filepath.Join(t.TempDir(), "x.npy")
	require.NoError(t, os.WriteFile(outside, rawNPY("<f4", []int{3, 4}, f32bytes(values([]int{3, 4}))), 0o644))
	require.NoError(t, os.Symlink(outside, filepath.Join(s.Dir, "link.npy")))
	ti.File = "link.npy"
	_, err = s.Tensor(ti)
	require.ErrorIs(t, err, ErrInvalid)
	require.ErrorContains(t, err, "escapes")
}

func TestCheckWeights(t *testing.T) {
	s, err := Open(writeSet(t, validManifest()))
	require.NoError(t, err)
	dir := t.TempDir()

	right := filepath.Join(dir, "model.safetensors")
	require.NoError(t, os.WriteFile(right, []byte(testWeights), 0o644))
	require.NoError(t, s.CheckWeights(right))

	wrong := filepath.Join(dir, "other.safetensors")
	require.NoError(t, os.WriteFile(wrong, []byte(testWeights+"!"), 0o644))
	err = s.CheckWeights(wrong)
	require.ErrorIs(t, err, ErrInvalid)
	require.ErrorIs(t, err, ErrWeightsMismatch)
	require.ErrorContains(t, err, wrong+": weights do not match the reference set: its sha256 is ")
	require.ErrorContains(t, err, "with sha256 "+testSHA)

	sum, err := FileSHA256(right)
	require.NoError(t, err)
	require.Equal(t, testSHA, sum)

	// The manifest may spell the digest in upper case.
	s.Manifest.Model.WeightsSHA256 = "84C58B88943FCF6FAD2514E8CD2E058AB370C1AFFC8F99B544B27D2646DA6E97"
	require.NoError(t, s.CheckWeights(right))

	err = s.CheckWeights(filepath.Join(dir, "missing.safetensors"))
	require.ErrorIs(t, err, ErrInvalid)
	require.ErrorIs(t, err, fs.ErrNotExist)
	require.ErrorContains(t, err, "missing.safetensors")
}
