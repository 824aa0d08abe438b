package main

import (
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/llorch/llorch-check/checkpoints"
	"github.com/llorch/llorch-check/safetensors"
	"github.com/llorch/llorch-check/weights"
)

// isSafetensorsArg says whether inspect's argument names an HF checkpoint
// rather than a GGUF file: a directory, a .safetensors file or an index.
func isSafetensorsArg(path string) bool {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return true
	}
	return strings.HasSuffix(path, ".safetensors") || weights.IsIndex(path)
}

// inspectSafetensors prints an HF checkpoint's files, dtypes, parameter
// count and tensor table, as inspect does a GGUF file's.
func inspectSafetensors(w io.Writer, path string) error {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		p, err := weights.WeightsFile(path)
		if err != nil {
			return err
		}
		path = p
	}
	c, err := weights.MapWeights(path)
	if err != nil {
		return err
	}
	defer c.Close()
	f := c.File
	perShard := make([]struct{ tensors, bytes int64 }, len(c.Files))
	dtypes := map[string]int64{}
	var params int64
	for _, t := range f.Tensors {
		perShard[t.Shard].tensors++
		perShard[t.Shard].bytes += t.End - t.Begin
		dtypes[t.DType] += int64(t.Numel())
		params += int64(t.Numel())
	}
	fmt.Fprintf(w, "weights:    %s\nshards:     %d\n", path, len(c.Files))
	t := checkpoints.NewTable(w)
	t.Header("shard", "tensors", "bytes")
	for i, file := range c.Files {
		t.Append(filepath.Base(file), perShard[i].tensors, perShard[i].bytes)
	}
	if err := t.Render(); err != nil {
		return err
	}
	var kinds []string
	for _, d := range slices.Sorted(maps.Keys(dtypes)) {
		kinds = append(kinds, d)
		if len(dtypes) > 1 {
			kinds[len(kinds)-1] += " " + thousands(dtypes[d])
		}
	}
	fmt.Fprintf(w, "parameters: %s (%s)\n\n%d tensors:\n", thousands(params), strings.Join(kinds, ", "), len(f.Tensors))
	t = checkpoints.NewTable(w)
	t.Header("name", "dtype", "shape", "elements", "shard")
	byName := slices.Clone(f.Tensors)
	slices.SortFunc(byName, func(a, b safetensors.Tensor) int { return strings.Compare(a.Name, b.Name) })
	for _, x := range byName {
		t.Append(x.Name, x.DType, fmt.Sprint(x.Shape), x.Numel(), filepath.Base(c.Files[x.Shard]))
	}
	return t.Render()
}

// thousands writes n with commas between groups of three digits.
func thousands(n int64) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
