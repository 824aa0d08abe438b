package tokenizer

// Qwen2 (and Qwen2.5, Qwen3) split with Llama 3's pattern except that
// numbers go one digit a piece (\p{N} where Llama 3 has \p{N}{1,3}): "1314"
// is four pieces, so every number is spelled digit by digit. See
// pretokenize_llama3.go for the pattern written out.

// Pre-tokenizer regexes exactly as they appear in tokenizer.json's
// pre_tokenizer Split pattern; LoadTokenizerJSON recognises a model's
// pre-tokenizer by them.
const (
	llama3Pattern = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	qwen2Pattern  = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
)

var (
	llama3Pieces = llama3Splitter(3)
	qwen2Pieces  = llama3Splitter(1)
)
