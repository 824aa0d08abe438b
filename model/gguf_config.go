package model

import "fmt"

// ConfigFromGGUF reads the hyper-parameters of a GGUF file's
// architecture (general.architecture, or llama.cpp's name for one), as
// its family reads them; the vocabulary size is token_embd's row count,
// which the tokenizer, when present, must match.
func ConfigFromGGUF(md Metadata) (Config, error) {
	arch, err := md.String(keyArchitecture)
	if err != nil {
		return Config{}, err
	}
	a, ok := archByName(arch)
	if !ok {
		a, ok = archByGGUF(arch) // llama.cpp's name for it (qwen3moe)
	}
	if !ok {
		return Config{}, fmt.Errorf("key %s: value %q is not supported (known: %s)", keyArchitecture, arch, knownArchs())
	}
	return a.fam.ggufConfig(md, a.Name)
}

// ggufVocab sets the vocabulary size, token_embd's row count, which the
// tokenizer, when present, must match; and the BOS and EOS ids, bos and
// eos when the file has none.
func ggufVocab(md Metadata, c *Config, bos, eos int) error {
	emb, ok := md.Tensor("token_embd.weight")
	if !ok {
		return fmt.Errorf("missing tensor %q", "token_embd.weight")
	}
	if len(emb.Dims) != 2 || emb.Dims[0] != uint64(c.NEmbd) || emb.Dims[1] == 0 || emb.Dims[1] > maxDim {
		return fmt.Errorf("tensor %q: dims %v contradict the hyper-parameters, which give [%d n_vocab]", emb.Name, emb.Dims, c.NEmbd)
	}
	c.VocabSize = int(emb.Dims[1])
	if n, isArr := md.ArrayLen(keyTokens); isArr && n != c.VocabSize {
		return fmt.Errorf("key %s: %d tokens, but token_embd.weight has %d rows", keyTokens, n, c.VocabSize)
	}
	var err error
	if c.BOSTokenID, err = md.TokenID(keyBOS, bos, c.VocabSize); err != nil {
		return err
	}
	c.EOSTokenID, err = md.TokenID(keyEOS, eos, c.VocabSize)
	return err
}
