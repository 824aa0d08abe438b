package tokenizer

import (
	"os"
	"strconv"
	"strings"
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
	inp, err := os.ReadFile(peerInputs)
	require.NoError(t, err)
	out, err := os.ReadFile(peerOutput)
	require.NoError(t, err)
	const sep = "\n__ggml_vocab_test__\n"
	inputs = strings.Split(string(inp), sep)
	require.Equal(t, "", inputs[len(inputs)-1], "file ends with a separator")
	inputs = inputs[:len(inputs)-1]
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	require.Len(t, lines, len(inputs))
	for _, line := range lines {
		ids := []int{}
		for _, f := range strings.Fields(line) {
			id, err := strconv.Atoi(f)
			require.NoError(t, err)
			ids = append(ids, id)
		}
		want = append(want, ids)
	}
	return inputs, want
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
