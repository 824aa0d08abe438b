// Package model is the architectures llorch-check implements: each
// family's configuration, its parameter table (HF and GGUF names, shapes,
// transforms) and GGUF metadata keys, its weights as the model holds
// them, and the forward pass in the shape of nanoGPT's (embed, block,
// head) over a KV cache. It reads and writes no file format: package
// loader loads HF directories and GGUF files into it and writes GGUF from
// it, through what the family declares here. A Probe sees every
// checkpoint tensor as the pass computes it, and InjectFault plants the
// classic implementation bugs the checkpoints must catch. The matrix
// kernels live in package kernels.
package model
