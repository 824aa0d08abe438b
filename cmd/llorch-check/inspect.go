package main

import (
	"fmt"
	"io"
	"strconv"

	"github.com/llorch/llorch-check/checkpoints"
	"github.com/llorch/llorch-check/gguf"
	"github.com/spf13/cobra"
)

func newInspectCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "inspect FILE.gguf|HF_DIR|FILE.safetensors|model.safetensors.index.json",
		Short: "Print a GGUF file's metadata and tensor table, or an HF checkpoint's shards, dtypes and tensors",
		Long: `inspect parses a GGUF file (version 2 or 3) and prints its header, every
metadata key with its type and value (long arrays elided), and one row per
tensor: name, ggml type, dims (fastest-varying first, as ggml's ne), offset
in the data section and size in bytes.

Given an HF checkpoint (its directory, a .safetensors file, or a sharded
checkpoint's model.safetensors.index.json), it prints the files (one row a
shard: tensors, bytes), the parameter count by dtype, and one row per
tensor: name, dtype, shape, elements and the shard that holds it. Every
shard is checked against the index as a load checks it.`,
		Example: `  llorch-check inspect model-f16.gguf
  llorch-check inspect testdata/tokenizer/ggml-vocab-gpt-2.gguf
  llorch-check inspect testdata/tiny-llama`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if isSafetensorsArg(args[0]) {
				return inspectSafetensors(cmd.OutOrStdout(), args[0])
			}
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
		t.Append(kv.Key, kv.Value.TypeName(), kv.Value.String())
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
