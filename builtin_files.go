//go:build !nobuiltin

package llorchcheck

import "embed"

// The tiny model's vocab.json and merges.txt are GPT-2's, byte for byte
// (pytorch/make_tiny_model.py copies them), so the binary holds them once,
// from testdata/gpt2-vocab.
//
//go:embed testdata/tiny-gpt2/config.json testdata/tiny-gpt2/model.safetensors testdata/tiny-gpt2/README.md
//go:embed testdata/references/tiny-gpt2
//go:embed testdata/gpt2-vocab/vocab.json testdata/gpt2-vocab/merges.txt testdata/gpt2-vocab/LICENSE testdata/gpt2-vocab/SOURCE.md
var builtin embed.FS

// carried says whether builtin holds the files.
const carried = true
