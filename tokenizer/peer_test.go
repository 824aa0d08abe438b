package tokenizer

import (
	"testing"

	"github.com/llorch/llorch-check/gguf"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	peerGGUF   = "../testdata/tokenizer/ggml-vocab-gpt-2.gguf"
	peerInputs = "../testdata/tokenizer/ggml-vocab-gpt-2.gguf.inp"
	peerOutput = "../testdata/tokenizer/ggml-vocab-gpt-2.gguf.out"
	vocabJSON  = "../testdata/gpt2-vocab/vocab.json"
	mergesTxt  = "../testdata/gpt2-vocab/merges.txt"
)

// peerCases reads llama.cpp's test vectors: inputs separated by exactly
// "\n__ggml_vocab_test__\n" (the file also ends with one), and one line of
// space-separated ids per input.
func peerCases(t testing.TB) (inputs []string, want [][]int) {
	return readVectors(t, "ggml-vocab-gpt-2.gguf")
}

func loadGGUF(t testing.TB) *Tokenizer {
	f, err := gguf.Open(peerGGUF)
	require.NoError(t, err)
	defer f.Close()
	tok, err := FromGGUF(f)
	require.NoError(t, err)
	return tok
}

func loadFiles(t testing.TB) *Tokenizer {
	tok, err := LoadFiles(vocabJSON, mergesTxt)
	require.NoError(t, err)
	return tok
}

func TestPeerVectors(t *testing.T) {
	inputs, want := peerCases(t)
	require.Len(t, inputs, 46)
	sources := map[string]*Tokenizer{"gguf": loadGGUF(t), "vocab+merges": loadFiles(t)}
	for name, tok := range sources {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, 50257, tok.VocabSize())
			assert.Equal(t, 50256, tok.EOT())
			for i, in := range inputs {
				got := tok.Encode(in)
				if !assert.Equal(t, want[i], nonNil(got), "case %d %q", i, in) {
					continue
				}
				text, err := tok.Decode(got)
				require.NoError(t, err)
				assert.Equal(t, in, text, "round trip of case %d", i)
			}
		})
	}
}

func nonNil(ids []int) []int {
	if ids == nil {
		return []int{}
	}
	return ids
}
