package references

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"strings"
	"sync"

	"github.com/llorch/llorch-check/weights"
)

// WeightsSHA256 is what model.weights_sha256 records for a weights file:
// the file's own sha256, or for a sharded checkpoint's index the sha256 of
// sha256sum's listing of its shards (one "<hex sha256>  <shard name>\n"
// line a shard, sorted by name), so that the hash covers every weight and
// nothing else: an index rewritten without changing a shard keeps it.
// Errors wrap ErrInvalid.
//
// The hash is kept for the life of the process, for as long as the
// files' sizes and modification times stay: a command checks a set
// before it loads the model and again after, and an 8B checkpoint's
// 16 GB take ten seconds to hash.
func WeightsSHA256(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", &Error{Path: path, Err: err}
	}
	size, mod, err := weights.Stamp(abs)
	if err != nil {
		return "", &Error{Path: path, Err: unwrapPath(err)}
	}
	hashMemo.Lock()
	m, ok := hashMemo.m[abs]
	hashMemo.Unlock()
	if ok && m.size == size && m.mod == mod {
		return m.sum, nil
	}
	sum, err := weightsSHA256(path)
	if err != nil {
		return "", err
	}
	hashMemo.Lock()
	hashMemo.m[abs] = hashed{size: size, mod: mod, sum: sum}
	hashMemo.Unlock()
	return sum, nil
}

// ForgetWeightsSHA256 empties WeightsSHA256's record, so that the next
// call hashes again: for a file changed in place at the same size and
// modification time, which the record cannot tell (a test of it).
func ForgetWeightsSHA256() {
	hashMemo.Lock()
	clear(hashMemo.m)
	hashMemo.Unlock()
}

// hashMemo is WeightsSHA256's record of what it hashed.
var hashMemo = struct {
	sync.Mutex
	m map[string]hashed
}{m: map[string]hashed{}}

type hashed struct {
	size, mod int64
	sum       string
}

func weightsSHA256(path string) (string, error) {
	if !weights.IsIndex(path) {
		return FileSHA256(path)
	}
	files, err := weights.Files(path)
	if err != nil {
		return "", &Error{Path: path, Err: err}
	}
	sums := make([]string, len(files))
	errs := make([]error, len(files))
	// Two shards at a time: hashing is CPU-bound at 1-2 GB/s a core, and
	// an 8B checkpoint is 16 GB.
	var wg sync.WaitGroup
	sem := make(chan struct{}, 2)
	for i, f := range files {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			sums[i], errs[i] = FileSHA256(f)
		}()
	}
	wg.Wait()
	var b strings.Builder
	for i, f := range files {
		if errs[i] != nil {
			return "", fmt.Errorf("shard %s of %s: %w", filepath.Base(f), path, errs[i])
		}
		fmt.Fprintf(&b, "%s  %s\n", sums[i], filepath.Base(f))
	}
	return StringSHA256(b.String()), nil
}

// StringSHA256 is the lower-case hex sha256 of s's bytes.
func StringSHA256(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}
