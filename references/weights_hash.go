package references

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

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
// files' identity stays (weights.Identity; their sizes and modification
// times where there is none): a command checks a set before it loads the
// model and again after, and an 8B checkpoint's 16 GB take ten seconds
// to hash.
func WeightsSHA256(path string) (string, error) {
	sum, _, err := WeightsSHA256Identity(path)
	return sum, err
}

// WeightsSHA256Identity is WeightsSHA256 and the files' identity that
// vouches for it in another process (weights.StableIdentity): "" when
// the files changed too recently to tell, or where there is none. A
// caller may record the two, and give them back to RecallWeightsSHA256.
func WeightsSHA256Identity(path string) (sum, identity string, err error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", "", &Error{Path: path, Err: err}
	}
	id, changed, err := weights.Identity(abs)
	if err != nil {
		return "", "", &Error{Path: path, Err: unwrapPath(err)}
	}
	stamp := id
	if stamp == "" {
		size, mod, err := weights.Stamp(abs)
		if err != nil {
			return "", "", &Error{Path: path, Err: unwrapPath(err)}
		}
		stamp = fmt.Sprintf("size=%d mtime=%d", size, mod)
	}
	hashMemo.Lock()
	m, ok := hashMemo.m[abs]
	hashMemo.Unlock()
	if ok && m.stamp == stamp {
		return m.sum, m.identity, nil
	}
	start := time.Now()
	if sum, err = hashWeights(path); err != nil {
		return "", "", err
	}
	if identity, err = weights.StableIdentity(abs, id, changed, start); err != nil {
		return "", "", &Error{Path: path, Err: unwrapPath(err)}
	}
	remember(abs, hashed{stamp: stamp, sum: sum, identity: identity})
	return sum, identity, nil
}

// RecallWeightsSHA256 takes sum as the hash of the weights at path, as
// WeightsSHA256Identity gave it with identity in an earlier process, if
// the files' identity is still that (never ""), and says whether it did:
// a weights cache records both so that a cached load need not read every
// byte of the model again.
func RecallWeightsSHA256(path, identity, sum string) bool {
	abs, err := filepath.Abs(path)
	if err != nil || identity == "" {
		return false
	}
	if id, _, err := weights.Identity(abs); err != nil || id != identity {
		return false
	}
	remember(abs, hashed{stamp: identity, sum: sum, identity: identity})
	return true
}

func remember(abs string, h hashed) {
	hashMemo.Lock()
	hashMemo.m[abs] = h
	hashMemo.Unlock()
}

// HashesTaken is how many times this process has read weights whole to
// hash them: for a test or a benchmark to tell that a load did not.
func HashesTaken() int64 { return hashesTaken.Load() }

var hashesTaken atomic.Int64

// hashWeights is weightsSHA256, counted.
func hashWeights(path string) (string, error) {
	hashesTaken.Add(1)
	return weightsSHA256(path)
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
	stamp    string // the files' identity when hashed, or their size and time
	sum      string
	identity string // the identity that vouches for sum elsewhere, or ""
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
