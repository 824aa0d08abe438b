package tokenizer

// The Llama family's tokenizers share the Tokenizer type and its methods
// with GPT-2's. What differs is set by the loaders:
//
//   - SentencePiece-style BPE with byte fallback (Llama 2, Mistral,
//     TinyLlama, Phi-3): GGUF tokenizer.ggml.model "llama", or a
//     tokenizer.json whose BPE model has byte_fallback (spm.go).
//   - Byte-level BPE with a model's own pre-tokenizer: Llama 3
//     (tokenizer.ggml.pre "llama-bpe", pretokenize_llama3.go) and Qwen2
//     ("qwen2", pretokenize_qwen2.go); GPT-2's bpe and byte mapping, other
//     pieces.
//
// Encode never matches special tokens and never adds BOS: llama.cpp and
// Hugging Face match user-defined (GGUF) and non-special added
// (tokenizer.json) tokens even in ordinary text, but Encode is for user
// input, where a token must not be writable as text. The exception is a
// SentencePiece vocabulary without a dummy prefix (Gemma): its user-defined
// tokens ("\n", "\t\t", "<b>", "<unused0>" in tokenizer.json) are text the
// model was trained to see cut out whole, so Encode matches them as both
// peers do (spm.go says why vocabularies with a prefix do not).
// EncodeSpecial matches them all.

// BOS returns the beginning-of-sequence token (-1 if the files name none)
// and whether the model's files ask for it in front of every prompt: GGUF's
// tokenizer.ggml.add_bos_token (llama.cpp's default when absent: true for
// "llama" and Llama 3's pre-tokenizer, false otherwise), tokenizer.json's
// TemplateProcessing post-processor (a special token before $A). Encode
// never adds it; EncodePrompt does.
func (t *Tokenizer) BOS() (id int, add bool) { return t.bos, t.addBOS && t.bos >= 0 }

// EncodePrompt is Encode with the BOS token in front when the model's files
// ask for one (BOS): a prompt as Hugging Face's tokenizer(text) and
// llama.cpp's server encode it.
func (t *Tokenizer) EncodePrompt(text string) []int {
	ids := t.Encode(text)
	if bos, add := t.BOS(); add {
		ids = append([]int{bos}, ids...)
	}
	return ids
}
