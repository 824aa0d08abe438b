// Package model is GPT-2: its configuration, its weights as the model
// holds them (loaded from a Hugging Face directory or a llama.cpp GGUF
// file), and the forward pass in the shape of nanoGPT's (embed, block,
// head) over a KV cache. A Probe sees every checkpoint tensor as the pass
// computes it, and InjectFault plants the classic implementation bugs the
// checkpoints must catch. The matrix kernels live in package kernels.
package model
