package model

// GGUF metadata keys every architecture's file has, and llorch's own.
const (
	keyArchitecture = "general.architecture"
	keyBOS          = "tokenizer.ggml.bos_token_id"
	keyEOS          = "tokenizer.ggml.eos_token_id"
	keyTokens       = "tokenizer.ggml.tokens"

	// KeySourceSHA256 records, in files written by llorch-check convert,
	// the lower-case hex sha256 of the HF model.safetensors the file was
	// converted from. A reference set made from those HF weights is then
	// accepted for the GGUF model (see checkpoints.Run).
	KeySourceSHA256 = "llorch.source.sha256"
	// KeySourceDType records the HF weights' stored dtype ("F16", ...).
	KeySourceDType = "llorch.source.dtype"
)

// ggufOutput is llama.cpp's optional LM head; GPT-2 ties it to token_embd.
const ggufOutput = "output.weight"
