package loader

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"

	"github.com/llorch/llorch-check/internal/atomicfile"
	"github.com/llorch/llorch-check/internal/regularfile"
	"github.com/llorch/llorch-check/references"
)

// A weights cache is keyed by the weights' sha256 (weightscache_digest.go),
// and hashing a model is a pass over all its bytes: 59% of a 3.7 GB
// file's cached load (notes 37), where llama.cpp reads nothing before the
// first step. So the sha256 is recorded beside the cache with the files'
// identity (device, inode, size, modification and change times;
// references.WeightsSHA256Identity), and a later load takes it as it is
// while that identity stays. A file written in place, touched or
// replaced changes its change time, which no user can set back, so the
// hash is taken again then (the case of issue 43 item 4, where the size
// and modification time stayed). The record is its own small file,
// replaced whole whenever a hash gives a new identity, so that the cache
// itself is never rewritten for it.

// sha256Record is the file beside a cache that records its weights' hash.
type sha256Record struct {
	Source   string `json:"source"`
	Identity string `json:"identity"`
	SHA256   string `json:"sha256"`
}

func sha256RecordPath(cachePath string) string { return cachePath + ".sha256" }

// maxSHA256Record bounds the record read: an identity is a line a file,
// and a checkpoint of thousands of shards is a few hundred KB.
const maxSHA256Record = 4 << 20

// recalledSHA256 is the sha256 of the weights at source (absolute), from
// the record beside cachePath if the files' identity is the one recorded,
// else hashed, and recorded when the hash has an identity to vouch for it
// (a record that cannot be written only costs the next load a hash).
func recalledSHA256(cachePath, source string) (string, error) {
	rec := sha256RecordPath(cachePath)
	var r sha256Record
	if b, err := regularfile.ReadFileMax(rec, maxSHA256Record); err == nil && json.Unmarshal(b, &r) == nil && r.Source == source &&
		references.RecallWeightsSHA256(source, r.Identity, r.SHA256) {
		return r.SHA256, nil
	}
	sum, identity, err := references.WeightsSHA256Identity(source)
	if err != nil {
		return "", err
	}
	if now := (sha256Record{Source: source, Identity: identity, SHA256: sum}); identity != "" && now != r {
		js, err := json.Marshal(now)
		if err == nil && os.MkdirAll(filepath.Dir(rec), 0o755) == nil {
			_ = atomicfile.Write(rec, func(w io.Writer) error { _, err := w.Write(js); return err })
		}
	}
	return sum, nil
}
