package main

import (
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"

	"github.com/llorch/llorch-check/checkpoints"
	"github.com/llorch/llorch-check/gguf"
	"github.com/spf13/cobra"
)

// maxShownElems is how many array elements inspect prints before eliding
// the rest: a tokenizer's 50257 tokens are not for reading.
const maxShownElems = 8

func newInspectCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "inspect FILE.gguf",
		Short: "Print a GGUF file's metadata and tensor table",
		Long: `inspect parses a GGUF file (version 2 or 3) and prints its header, every
metadata key with its type and value (long arrays elided), and one row per
tensor: name, ggml type, dims (fastest-varying first, as ggml's ne), offset
in the data section and size in bytes.`,
		Example: `  llorch-check inspect model-f16.gguf
  llorch-check inspect testdata/tokenizer/ggml-vocab-gpt-2.gguf`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := gguf.Open(args[0])
			if err != nil {
				return err
			}
			defer f.Close()
			return writeInspect(cmd.OutOrStdout(), args[0], f)
		},
	}
}

func writeInspect(w io.Writer, path string, f *gguf.File) error {
	fmt.Fprintf(w, "file:       %s\nversion:    %d\nalignment:  %d\ndata at:    %d\n", path, f.Version, f.Alignment, f.DataOffset)
	fmt.Fprintf(w, "\n%d metadata keys:\n", len(f.KV))
	t := checkpoints.NewTable(w)
	t.Header("key", "type", "value")
	for _, kv := range f.KV {
		t.Append(kv.Key, typeString(kv.Value), valueString(kv.Value.V))
	}
	if err := t.Render(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\n%d tensors:\n", len(f.Tensors))
	if len(f.Tensors) == 0 {
		return nil
	}
	t = checkpoints.NewTable(w)
	t.Header("name", "type", "dims", "elements", "offset", "bytes")
	var total int64
	for _, ti := range f.Tensors {
		size := "?"
		if ti.Size >= 0 {
			size = strconv.FormatInt(ti.Size, 10)
			total += ti.Size
		}
		t.Append(ti.Name, ti.Type.String(), fmt.Sprint(ti.Dims), ti.Elements(), ti.Offset, size)
	}
	if err := t.Render(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "tensor data: %d bytes\n", total)
	return err
}

func typeString(v gguf.Value) string {
	if a, ok := v.V.(gguf.Array); ok {
		return fmt.Sprintf("[%d]%s", a.Len(), a.Elem)
	}
	return v.Type.String()
}

// valueString prints scalars in full, strings quoted, arrays with their
// first maxShownElems elements.
func valueString(v any) string {
	switch x := v.(type) {
	case string:
		return strconv.Quote(x)
	case gguf.Array:
		return arrayString(x)
	}
	return fmt.Sprint(v)
}

func arrayString(a gguf.Array) string {
	n := a.Len()
	parts := make([]string, 0, min(n, maxShownElems)+1)
	each := func(i int, s string) bool {
		if i >= maxShownElems {
			parts = append(parts, fmt.Sprintf("… %d more", n-maxShownElems))
			return false
		}
		parts = append(parts, s)
		return true
	}
	switch s := a.Values.(type) {
	case []string:
		for i, x := range s {
			if !each(i, strconv.Quote(x)) {
				break
			}
		}
	case []gguf.Array:
		for i, x := range s {
			if !each(i, arrayString(x)) {
				break
			}
		}
	default:
		// Only the elements shown are formatted: printing a whole numeric
		// array first cost ~24 bytes of memory per element.
		v := reflect.ValueOf(s)
		for i := range min(n, maxShownElems+1) {
			if !each(i, fmt.Sprint(v.Index(i).Interface())) {
				break
			}
		}
	}
	return "[" + strings.Join(parts, ", ") + "]"
}
