package references

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/llorch/llorch-check/internal/atomicfile"
)

// Writer writes a reference set atomically: everything goes into a
// temporary directory beside the destination, which replaces the
// destination only when Commit has validated the complete set. A failed or
// abandoned dump therefore never leaves a half-written set where a later
// run would pick it up.
//
// Typical use:
//
//	w, err := references.NewWriter(out, force)
//	defer w.Abort() // no-op after a successful Commit
//	... w.AddTensor(t, data) for every tensor ...
//	err = w.Commit(manifest)
type Writer struct {
	dir   string          // destination
	tmp   string          // temporary directory; "" once committed or aborted
	force bool            // replace an existing reference set at dir
	files map[string]bool // cleaned relative paths written so far
}

// NewWriter prepares to write a reference set at dir. An existing empty
// directory is fine; an existing reference set is replaced only with force;
// anything else (a file, a non-empty directory without manifest.json) is
// refused even with force, so a mistyped --out cannot delete unrelated data.
func NewWriter(dir string, force bool) (*Writer, error) {
	dir = filepath.Clean(dir)
	if err := checkTarget(dir, force); err != nil {
		return nil, err
	}
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, err
	}
	// Beside dir, so the final rename stays within one filesystem; twins
	// that interrupted runs left there go first.
	atomicfile.CleanStale(dir)
	tmp, err := os.MkdirTemp(parent, atomicfile.TempPattern(dir))
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		os.RemoveAll(tmp)
		return nil, err
	}
	return &Writer{dir: dir, tmp: tmp, force: force, files: map[string]bool{}}, nil
}

// checkTarget decides whether dir may be (re)placed.
func checkTarget(dir string, force bool) error {
	fi, err := os.Lstat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return &Error{Path: dir, Err: unwrapPath(err)}
	case !fi.IsDir():
		return &Error{Path: dir, Err: errors.New("exists and is not a directory; refusing to replace it")}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return &Error{Path: dir, Err: unwrapPath(err)}
	}
	if len(entries) == 0 {
		return nil
	}
	if _, err := os.Stat(filepath.Join(dir, ManifestFile)); err != nil {
		return &Error{Path: dir, Err: errors.New("exists, is not empty and holds no manifest.json; refusing to replace it, even with force")}
	}
	if !force {
		return &Error{Path: dir, Err: errors.New("a reference set already exists there (--force replaces it)")}
	}
	return nil
}

// AddTensor writes data as the float32 .npy file t.File, creating its
// subdirectories. t must describe data exactly: dtype "float32", a shape
// holding len(data) values, finite values, and no float64 twin (sets written
// from Go have none).
func (w *Writer) AddTensor(t TensorInfo, data []float32) error {
	if w.tmp == "" {
		return errors.New("references: Writer used after Commit or Abort")
	}
	final := filepath.Join(w.dir, filepath.FromSlash(t.File))
	if err := checkRelPath(t.File); err != nil {
		return &Error{Path: w.dir, Field: t.Key() + ".file", Err: err}
	}
	clean := filepath.ToSlash(filepath.Clean(filepath.FromSlash(t.File)))
	if w.files[clean] {
		return &Error{Path: final, Err: fmt.Errorf("%s: file written twice", t.Key())}
	}
	if t.FileF64 != nil {
		return &Error{Path: final, Err: fmt.Errorf("%s: file_f64 must be nil, Writer writes no float64 twins", t.Key())}
	}
	if t.DType != "float32" {
		return &Error{Path: final, Err: fmt.Errorf("%s: dtype %q, want \"float32\"", t.Key(), t.DType)}
	}
	if n, ok := numElems(t.Shape, 4); !ok || n != len(data) || t.Shape == nil {
		return &Error{Path: final, Err: fmt.Errorf("%s: shape %v does not hold the %d values given", t.Key(), t.Shape, len(data))}
	}
	if i := firstNonFinite(data); i >= 0 {
		return &Error{Path: final, Err: fmt.Errorf("%s: value %v at index %v (element %d) is not finite", t.Key(), data[i], Unravel(i, t.Shape), i)}
	}
	path := filepath.Join(w.tmp, filepath.FromSlash(clean))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	if err := writeFileSync(path, func(f *os.File) error { return encodeNPY(f, t.Shape, data) }); err != nil {
		return err
	}
	w.files[clean] = true
	return nil
}

// Commit writes manifest.json (two-space indent, trailing newline),
// validates the complete set exactly as Open would, and moves it into
// place. On error nothing is left behind and the destination is untouched.
func (w *Writer) Commit(m Manifest) (err error) {
	if w.tmp == "" {
		return errors.New("references: Writer used after Commit or Abort")
	}
	defer func() {
		if err != nil {
			w.Abort()
		}
	}()
	normalize(&m)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // prompts such as "<|endoftext|>" stay readable
	enc.SetIndent("", "  ")
	if err := enc.Encode(m); err != nil {
		return &Error{Path: filepath.Join(w.dir, ManifestFile), Err: err}
	}
	if _, _, err := parseManifest(buf.Bytes(), filepath.Join(w.dir, ManifestFile)); err != nil {
		return err
	}
	if err := w.checkListed(m); err != nil {
		return err
	}
	if err := writeFileSync(filepath.Join(w.tmp, ManifestFile), func(f *os.File) error {
		_, err := f.Write(buf.Bytes())
		return err
	}); err != nil {
		return err
	}
	root, err := os.OpenRoot(w.tmp)
	if err != nil {
		return err
	}
	err = checkFiles(root, w.dir, m)
	root.Close()
	if err != nil {
		return err
	}
	if err := syncDir(w.tmp); err != nil {
		return err
	}
	if err := w.moveIntoPlace(); err != nil {
		return err
	}
	w.tmp = ""
	return nil
}

// checkListed refuses files that were written but are not in the manifest:
// they would be dead weight in a committed set and usually mean a bug in
// the dump.
func (w *Writer) checkListed(m Manifest) error {
	listed := map[string]bool{}
	for _, t := range m.Tensors {
		listed[filepath.ToSlash(filepath.Clean(filepath.FromSlash(t.File)))] = true
	}
	var stray []string
	for f := range w.files {
		if !listed[f] {
			stray = append(stray, f)
		}
	}
	if len(stray) > 0 {
		slices.Sort(stray)
		return &Error{Path: filepath.Join(w.dir, ManifestFile), Field: "tensors", Err: fmt.Errorf("files written but not listed: %v", stray)}
	}
	return nil
}

// The filesystem operations that put a set in place; tests stand in for
// them to kill the process between them.
var (
	rename   = os.Rename
	exchange = exchangeDirs
)

// moveIntoPlace renames the temporary directory to the destination. An
// existing set (checked again: it may have appeared since NewWriter) is
// swapped with the new one in one step where the system can (Linux's
// renameat2 RENAME_EXCHANGE), so a process killed at any point leaves one
// complete set there; the old one, now under the temporary name, is
// deleted after, or by CleanStale if the process dies first. Elsewhere it
// is renamed aside and only deleted once the new one is in place.
func (w *Writer) moveIntoPlace() error {
	if err := checkTarget(w.dir, w.force); err != nil {
		return err
	}
	if _, err := os.Lstat(w.dir); err != nil {
		if err := rename(w.tmp, w.dir); err != nil {
			return err
		}
		return syncDir(filepath.Dir(w.dir))
	}
	switch err := exchange(w.tmp, w.dir); {
	case err == nil:
		if err := syncDir(filepath.Dir(w.dir)); err != nil {
			return err
		}
		return os.RemoveAll(w.tmp)
	case !errors.Is(err, errors.ErrUnsupported):
		return err
	}
	old := w.tmp + ".old"
	if err := rename(w.dir, old); err != nil {
		return err
	}
	if err := rename(w.tmp, w.dir); err != nil {
		if rerr := rename(old, w.dir); rerr != nil {
			return fmt.Errorf("%w; restoring the previous set also failed, it is at %s: %v", err, old, rerr)
		}
		return err
	}
	if err := syncDir(filepath.Dir(w.dir)); err != nil {
		return err
	}
	return os.RemoveAll(old)
}

// Abort removes everything written so far. It is safe to call more than
// once and after Commit.
func (w *Writer) Abort() {
	if w == nil || w.tmp == "" {
		return
	}
	os.RemoveAll(w.tmp)
	w.tmp = ""
}

// normalize writes empty lists rather than null for the optional sections,
// as the Python generator does.
func normalize(m *Manifest) {
	if m.Sampling == nil {
		m.Sampling = []Sampling{}
	}
	if m.Greedy == nil {
		m.Greedy = []Greedy{}
	}
	if m.Loglikelihood == nil {
		m.Loglikelihood = []Loglikelihood{}
	}
}

// writeFileSync creates path, fills it with write and syncs it, so that a
// crash after the rename cannot expose a set with empty files.
func writeFileSync(path string, write func(*os.File) error) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, errors.ErrUnsupported) {
		return err
	}
	return nil
}
