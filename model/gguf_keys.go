package model

// GGUF metadata keys of llama.cpp's "gpt2" architecture, and llorch's own.
const (
	ggufArch          = "gpt2"
	keyArchitecture   = "general.architecture"
	keyContextLength  = "gpt2.context_length"
	keyEmbeddingLen   = "gpt2.embedding_length"
	keyFeedForwardLen = "gpt2.feed_forward_length"
	keyBlockCount     = "gpt2.block_count"
	keyHeadCount      = "gpt2.attention.head_count"
	keyLayerNormEps   = "gpt2.attention.layer_norm_epsilon"
	keyBOS            = "tokenizer.ggml.bos_token_id"
	keyEOS            = "tokenizer.ggml.eos_token_id"
	keyTokens         = "tokenizer.ggml.tokens"

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
