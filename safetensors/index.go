package safetensors

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// IndexFile is the name of a sharded checkpoint's index in an HF
// directory; SingleFile that of an unsharded checkpoint's weights.
const (
	IndexFile  = "model.safetensors.index.json"
	SingleFile = "model.safetensors"
)

// maxIndexLen bounds an index file: an 8B model's lists ~300 tensors in
// 25 KB, a 400B model's a few thousand in well under 1 MB.
const maxIndexLen = 64 << 20

// Index is a sharded checkpoint's model.safetensors.index.json: which
// shard file holds each tensor.
type Index struct {
	WeightMap map[string]string // tensor name -> shard file name
	Shards    []string          // the shard file names, sorted, each once
}

// ParseIndex reads an index file's bytes. Every shard name must be a
// plain file name beside the index: an index is data from whoever
// published the checkpoint, and a name with a path in it would have us
// read any file.
func ParseIndex(b []byte) (*Index, error) {
	if len(b) > maxIndexLen {
		return nil, fmt.Errorf("index is %d bytes, more than the %d-byte limit", len(b), maxIndexLen)
	}
	var raw struct {
		WeightMap map[string]string `json:"weight_map"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("index is not valid JSON: %w", err)
	}
	if len(raw.WeightMap) == 0 {
		return nil, fmt.Errorf("index has no weight_map (or an empty one)")
	}
	shards := map[string]bool{}
	for name, shard := range raw.WeightMap {
		if shard == "" || shard == "." || shard == ".." || strings.ContainsAny(shard, `/\`) {
			return nil, fmt.Errorf("index puts tensor %q in %q, which is not a file name beside the index", name, shard)
		}
		shards[shard] = true
	}
	return &Index{WeightMap: raw.WeightMap, Shards: slices.Sorted(maps.Keys(shards))}, nil
}

// CheckShard says whether the parsed shard holds exactly the tensors the
// index puts in it: a tensor the index places there that it lacks, or one
// it holds that the index places elsewhere or nowhere, is an error naming
// the tensor and both files.
func (ix *Index) CheckShard(shard string, f *File) error {
	held := map[string]bool{}
	for _, t := range f.Tensors {
		held[t.Name] = true
		switch want, ok := ix.WeightMap[t.Name]; {
		case !ok:
			return fmt.Errorf("%s holds tensor %q, which %s does not list", shard, t.Name, IndexFile)
		case want != shard:
			return fmt.Errorf("%s holds tensor %q, which %s puts in %s", shard, t.Name, IndexFile, want)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(ix.WeightMap)) {
		if ix.WeightMap[name] == shard && !held[name] {
			return fmt.Errorf("%s puts tensor %q in %s, which does not hold it", IndexFile, name, shard)
		}
	}
	return nil
}
