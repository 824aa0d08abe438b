package weights

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/llorch/llorch-check/internal/regularfile"
	"github.com/llorch/llorch-check/safetensors"
)

// ErrNoWeights is wrapped when an HF directory has neither weights file.
var ErrNoWeights = errors.New("no weights")

// WeightsFile is the file that names an HF directory's weights: its
// model.safetensors, or else a sharded checkpoint's index, as Hugging
// Face's from_pretrained looks for them (the single file first).
func WeightsFile(dir string) (string, error) {
	for _, name := range []string{safetensors.SingleFile, safetensors.IndexFile} {
		p := filepath.Join(dir, name)
		if _, err := os.Stat(p); err == nil || !errors.Is(err, fs.ErrNotExist) {
			return p, nil // anything but absence is the opener's to report
		}
	}
	return "", fmt.Errorf("%s: %w: neither %s nor %s (a sharded checkpoint's index) is there",
		dir, ErrNoWeights, safetensors.SingleFile, safetensors.IndexFile)
}

// IsIndex says whether a weights file (WeightsFile's) is a sharded
// checkpoint's index.
func IsIndex(path string) bool { return filepath.Base(path) == safetensors.IndexFile }

// ReadIndex reads and parses a sharded checkpoint's index; errors name it.
func ReadIndex(path string) (*safetensors.Index, error) {
	f, err := regularfile.Open(path)
	if err != nil {
		return nil, fmt.Errorf("opening weights: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 64<<20+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	ix, err := safetensors.ParseIndex(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return ix, nil
}

// Files are the files a weights file stands for: itself, or an index's
// shards (beside it, sorted by name).
func Files(path string) ([]string, error) {
	if !IsIndex(path) {
		return []string{path}, nil
	}
	ix, err := ReadIndex(path)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(ix.Shards))
	for i, s := range ix.Shards {
		out[i] = filepath.Join(filepath.Dir(path), s)
	}
	return out, nil
}

// Checkpoint is an HF directory's weights, mapped: model.safetensors, or
// every shard an index lists, merged into one File after each shard is
// checked against the index.
type Checkpoint struct {
	File   *safetensors.File
	Path   string   // the weights file: model.safetensors or the index
	Files  []string // the files mapped
	Data   [][]byte // their mappings, Files' order
	unmaps []func() error
}

// MapCheckpoint maps the weights of the HF directory dir. Close unmaps
// them; nothing of the File may be used after.
func MapCheckpoint(dir string) (*Checkpoint, error) {
	path, err := WeightsFile(dir)
	if err != nil {
		return nil, err
	}
	return MapWeights(path)
}

// MapWeights maps a weights file: a safetensors file, or a sharded
// checkpoint's index and every shard it lists.
func MapWeights(path string) (*Checkpoint, error) {
	dir := filepath.Dir(path)
	files, err := Files(path)
	if err != nil {
		return nil, err
	}
	c := &Checkpoint{Path: path, Files: files}
	var ix *safetensors.Index
	if IsIndex(path) {
		if ix, err = ReadIndex(path); err != nil {
			return nil, err
		}
	}
	parsed := make([]*safetensors.File, len(files))
	names := make([]string, len(files))
	for i, file := range files {
		data, unmap, err := Map(file)
		if err != nil {
			c.Close()
			if ix != nil && errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("%s lists shard %s, which is missing: %w", path, filepath.Base(file), err)
			}
			return nil, err
		}
		c.unmaps = append(c.unmaps, unmap)
		c.Data = append(c.Data, data)
		names[i] = filepath.Base(file)
		if parsed[i], err = safetensors.Parse(data); err != nil {
			c.Close()
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		if ix != nil {
			if err := ix.CheckShard(names[i], parsed[i]); err != nil {
				c.Close()
				return nil, fmt.Errorf("%s: %w", dir, err)
			}
		}
	}
	if c.File, err = safetensors.Merge(names, parsed); err != nil {
		c.Close()
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	return c, nil
}

// Close unmaps every file; the first error is returned.
func (c *Checkpoint) Close() error {
	var first error
	for _, u := range c.unmaps {
		if err := u(); err != nil && first == nil {
			first = err
		}
	}
	c.unmaps = nil
	return first
}

// Stamp is the total size and latest modification time of the files a
// weights file stands for (the index too): what the weights cache's key
// records.
func Stamp(path string) (size, modTime int64, err error) {
	files, err := Files(path)
	if err != nil {
		return 0, 0, err
	}
	if IsIndex(path) {
		files = append(files, path)
	}
	for _, f := range files {
		st, err := os.Stat(f)
		if err != nil {
			return 0, 0, err
		}
		size += st.Size()
		modTime = max(modTime, st.ModTime().UnixNano())
	}
	return size, modTime, nil
}
