package references

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/llorch/llorch-check/internal/regularfile"
)

// maxManifestSize guards against reading a huge file named manifest.json;
// a 124M-parameter set with many cases is well under a megabyte.
const maxManifestSize = 64 << 20

// Set is an opened, validated reference set. It is safe for concurrent use.
type Set struct {
	Dir      string
	Manifest Manifest
}

// Open reads and validates dir/manifest.json and checks that every tensor
// file it lists exists inside dir. Tensor data is read later, by Tensor.
// Every error wraps ErrInvalid.
func Open(dir string) (*Set, error) {
	mpath := filepath.Join(dir, ManifestFile)
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, &Error{Path: dir, Err: fmt.Errorf("opening the reference set: %w", unwrapPath(err))}
	}
	defer root.Close()
	data, err := readManifest(root)
	if err != nil {
		return nil, &Error{Path: mpath, Err: err}
	}
	m, _, err := parseManifest(data, mpath)
	if err != nil {
		return nil, err
	}
	if err := checkFiles(root, dir, m); err != nil {
		return nil, err
	}
	return &Set{Dir: dir, Manifest: m}, nil
}

func readManifest(root *os.Root) ([]byte, error) {
	f, err := regularfile.OpenIn(root, ManifestFile)
	if err != nil {
		return nil, unwrapPath(err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxManifestSize+1))
	if err != nil {
		return nil, unwrapPath(err)
	}
	if len(data) > maxManifestSize {
		return nil, fmt.Errorf("larger than %d bytes", maxManifestSize)
	}
	return data, nil
}

// checkFiles stats every listed file through root, so a symlink that leads
// out of the set is refused like a "../" path.
func checkFiles(root *os.Root, dir string, m Manifest) error {
	p := problems{path: dir}
	check := func(field, rel string) {
		fi, err := root.Stat(filepath.FromSlash(rel))
		full := filepath.Join(dir, filepath.FromSlash(rel))
		switch {
		case err != nil:
			p.addErr(&Error{Path: full, Err: fmt.Errorf("listed as %s in %s: %w", field, ManifestFile, unwrapPath(err))})
		case !fi.Mode().IsRegular():
			p.addErr(&Error{Path: full, Err: fmt.Errorf("listed as %s in %s: a %s, not a regular file", field, ManifestFile, regularfile.Kind(fi.Mode()))})
		}
	}
	for i, t := range m.Tensors {
		check(fmt.Sprintf("tensors[%d].file", i), t.File)
		if t.FileF64 != nil {
			check(fmt.Sprintf("tensors[%d].file_f64", i), *t.FileF64)
		}
	}
	return p.err()
}

// unwrapPath drops the *PathError around err: our Error already names the
// full path, and PathError would repeat it relative to the root.
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// Tensor reads the float32 file of t, checking dtype, shape against the
// manifest, size and that every value is finite.
func (s *Set) Tensor(t TensorInfo) ([]float32, error) {
	return readTensor[float32](s.Dir, t.File, t.Shape)
}

// TensorF64 reads the float64 twin of t, or returns (nil, nil) when the set
// has none.
func (s *Set) TensorF64(t TensorInfo) ([]float64, error) {
	if t.FileF64 == nil {
		return nil, nil
	}
	return readTensor[float64](s.Dir, *t.FileF64, t.Shape)
}

// PairKVCache reads log-likelihood pair i's KV cache (an f16-kv set's),
// each layer's K and V of shape, or nils when the pair has none.
func (s *Set) PairKVCache(i int, shape []int) (k, v [][]float32, err error) {
	if i < 0 || i >= len(s.Manifest.Loglikelihood) {
		return nil, nil, fmt.Errorf("%s: no log-likelihood pair %d", s.Dir, i)
	}
	kv := s.Manifest.Loglikelihood[i].KVCache
	if kv == nil {
		return nil, nil, nil
	}
	if len(kv.K) != len(kv.V) {
		return nil, nil, &Error{Path: filepath.Join(s.Dir, "manifest.json"),
			Err: fmt.Errorf("loglikelihood[%d].kv_cache: %d k files and %d v files", i, len(kv.K), len(kv.V))}
	}
	for l := range kv.K {
		kl, err := readTensor[float32](s.Dir, kv.K[l], shape)
		if err != nil {
			return nil, nil, err
		}
		vl, err := readTensor[float32](s.Dir, kv.V[l], shape)
		if err != nil {
			return nil, nil, err
		}
		k, v = append(k, kl), append(v, vl)
	}
	return k, v, nil
}

// ReadNPY reads dir/rel, a .npy file of T (float32, float64 or int32) of
// exactly shape, with the checks Tensor makes: for files that are not
// listed tensors, such as a corpus set's (probe).
func ReadNPY[T float32 | float64 | int32](dir, rel string, shape []int) ([]T, error) {
	return readTensor[T](dir, rel, shape)
}

// openTensorFile opens the regular file dir/rel, refusing a rel that
// leaves dir; an error names the file. full is dir/rel.
func openTensorFile(dir, rel string) (f *os.File, full string, err error) {
	full = filepath.Join(dir, filepath.FromSlash(rel))
	if err := checkRelPath(rel); err != nil {
		return nil, full, &Error{Path: full, Err: err}
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, full, &Error{Path: dir, Err: unwrapPath(err)}
	}
	defer root.Close()
	if f, err = regularfile.OpenIn(root, filepath.FromSlash(rel)); err != nil {
		return nil, full, &Error{Path: full, Err: unwrapPath(err)}
	}
	return f, full, nil
}

func readTensor[T npyFloat](dir, rel string, shape []int) ([]T, error) {
	if shape == nil {
		shape = []int{} // a nil shape would mean "any shape" to decodeNPY
	}
	f, full, err := openTensorFile(dir, rel)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, &Error{Path: full, Err: unwrapPath(err)}
	}
	data, _, err := decodeNPY[T](f, fi.Size(), shape)
	if err != nil {
		return nil, &Error{Path: full, Err: err}
	}
	if i := firstNonFinite(data); i >= 0 {
		return nil, &Error{Path: full, Err: fmt.Errorf("value %v at index %v (element %d): references must be finite", data[i], Unravel(i, shape), i)}
	}
	return data, nil
}

// CheckWeights compares the sha256 of the weights (WeightsSHA256) with the
// manifest, so a set is never compared against a model it was not made
// from. A mismatch wraps ErrWeightsMismatch and ErrInvalid.
func (s *Set) CheckWeights(weightsPath string) error {
	got, err := WeightsSHA256(weightsPath)
	if err != nil {
		return err
	}
	if want := s.Manifest.Model.WeightsSHA256; !strings.EqualFold(got, want) {
		return &Error{Path: weightsPath, Err: fmt.Errorf("%w: its sha256 is %s, the reference set %s was made from %s with sha256 %s",
			ErrWeightsMismatch, got, s.Dir, s.Manifest.Model.WeightsFile, want)}
	}
	return nil
}

// CheckTokenizer refuses a model directory's tokenizer other than the one
// the set's ids came from: name and paths are what tokenizer.Source gives
// for the directory (the files tokenizer.Load reads), hashed as
// model.tokenizer_sha256 is. A set that records no tokenizer (made before
// the field, or from a GGUF model file) passes. Errors wrap
// ErrTokenizerMismatch and ErrInvalid, and name both files and hashes.
func (s *Set) CheckTokenizer(name string, paths []string) error {
	want := s.Manifest.Model.TokenizerSHA256
	if want == "" || len(paths) == 0 {
		return nil
	}
	got, err := FilesSHA256(paths...)
	if err != nil {
		return err
	}
	if !strings.EqualFold(got, want) {
		return &Error{Path: paths[0], Err: fmt.Errorf("%w: the model's tokenizer %s has sha256 %s; the reference set %s was made with %s, sha256 %s (its token ids are another vocabulary's)",
			ErrTokenizerMismatch, strings.Join(paths, " + "), got, s.Dir, s.Manifest.Model.TokenizerFile, want)}
	}
	return nil
}

// FilesSHA256 is the lower-case hex sha256 of the files' bytes one after
// another, as model.tokenizer_sha256 hashes GPT-2's vocab.json and
// merges.txt. Errors wrap ErrInvalid.
func FilesSHA256(paths ...string) (string, error) {
	h := sha256.New()
	for _, p := range paths {
		f, err := regularfile.Open(p)
		if err != nil {
			return "", &Error{Path: p, Err: unwrapPath(err)}
		}
		_, err = io.Copy(h, f)
		f.Close()
		if err != nil {
			return "", &Error{Path: p, Err: unwrapPath(err)}
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// FileSHA256 is the lower-case hex sha256 of a file, as recorded in
// model.weights_sha256. Errors wrap ErrInvalid.
func FileSHA256(path string) (string, error) {
	f, err := regularfile.Open(path)
	if err != nil {
		return "", &Error{Path: path, Err: unwrapPath(err)}
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", &Error{Path: path, Err: unwrapPath(err)}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Case returns the case with the given id.
func (s *Set) Case(id string) (Case, bool) {
	for _, c := range s.Manifest.Cases {
		if c.ID == id {
			return c, true
		}
	}
	return Case{}, false
}

// Find returns the tensor of a case by name and layer (NoLayer for tensors
// that are not per layer).
func (s *Set) Find(caseID, name string, layer int) (TensorInfo, bool) {
	for _, t := range s.Manifest.Tensors {
		if t.Case == caseID && t.Name == name && t.LayerIndex() == layer {
			return t, true
		}
	}
	return TensorInfo{}, false
}
