// Package regularfile opens the files a user names (model weights,
// configs, tokenizer files, reference sets, recordings) only when they are
// regular files. Opening a named pipe blocks until a writer comes, deaf to
// signals, and reading a device such as /dev/zero never ends: both are
// refused by a Stat before the open, and the descriptor opened is checked
// again, so a file swapped in between is refused too instead of blocking.
package regularfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// ErrNotRegular is wrapped by every refusal of a file that is not a
// regular file.
var ErrNotRegular = errors.New("not a regular file")

// notRegular is the error inside the *fs.PathError of a refusal; it says
// what the file is instead.
type notRegular struct{ mode fs.FileMode }

func (e notRegular) Error() string {
	return fmt.Sprintf("a %s, not a regular file", Kind(e.mode))
}

func (e notRegular) Is(target error) bool { return target == ErrNotRegular }

// Kind names a file type for errors: "regular file", "directory", "named
// pipe (FIFO)", "socket", "character device" or "block device".
func Kind(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "regular file"
	case m.IsDir():
		return "directory"
	case m&fs.ModeNamedPipe != 0:
		return "named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeCharDevice != 0:
		return "character device"
	case m&fs.ModeDevice != 0:
		return "block device"
	}
	return "special file (" + m.Type().String() + ")"
}

// Check returns nil if path (symbolic links followed) is a regular file,
// and otherwise an *fs.PathError naming it, wrapping ErrNotRegular or the
// Stat error.
func Check(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	return checkMode(path, fi.Mode())
}

// Open opens path for reading if it is a regular file (symbolic links
// followed); anything else is refused before it is opened with an
// *fs.PathError naming path and wrapping ErrNotRegular.
func Open(path string) (*os.File, error) {
	return open(path, os.Stat, func() (*os.File, error) { return os.OpenFile(path, readFlags, 0) })
}

// OpenIn is Open for name inside root.
func OpenIn(root *os.Root, name string) (*os.File, error) {
	return open(name, root.Stat, func() (*os.File, error) { return root.OpenFile(name, readFlags, 0) })
}

// ReadFile is os.ReadFile of a regular file only.
func ReadFile(path string) ([]byte, error) {
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

func open(name string, stat func(string) (fs.FileInfo, error), openFile func() (*os.File, error)) (*os.File, error) {
	fi, err := stat(name)
	if err != nil {
		return nil, err
	}
	if err := checkMode(name, fi.Mode()); err != nil {
		return nil, err
	}
	f, err := openFile()
	if err != nil {
		return nil, err
	}
	// The name may have been given another file since the Stat; readFlags
	// made that open return at once, and this refuses it.
	if fi, err = f.Stat(); err == nil {
		err = checkMode(name, fi.Mode())
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

func checkMode(name string, m fs.FileMode) error {
	if m.IsRegular() {
		return nil
	}
	return &fs.PathError{Op: "open", Path: name, Err: notRegular{m}}
}
