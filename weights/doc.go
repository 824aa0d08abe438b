// Package weights reads and writes the weights files' formats, and
// nothing of any model family's math: it maps a file and gives its pages
// back as tensors are converted (so that a load's peak resident set is
// the converted weights, not those plus the file), converts safetensors
// tensors to float32 or float16 bits, builds the kernels' matrices from
// GGUF tensors (quantised rows, in llama.cpp's row order or HF's), reads
// GGUF metadata as the loaders need it and picks GGUF tensor types for
// the writer. Which tensors a family has, under which names and shapes,
// is package model's parameter tables.
package weights
