package tokenizer

import (
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/llorch/llorch-check/gguf"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const llamaTestdata = "../testdata/tokenizer"

// readVectors reads test vectors in llama.cpp's format (see peerCases)
// from testdata/tokenizer/<name>.inp and .out.
func readVectors(t testing.TB, name string) (inputs []string, want [][]int) {
	base := filepath.Join(llamaTestdata, name)
	inp, err := os.ReadFile(base + ".inp")
	require.NoError(t, err)
	out, err := os.ReadFile(base + ".out")
	require.NoError(t, err)
	inputs = strings.Split(string(inp), "\n__ggml_vocab_test__\n")
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

// The Llama family's tokenizers, each loaded once per test binary (the
// tokenizer.json files take a second or so).
var (
	llamaToksMu sync.Mutex
	llamaToks   = map[string]*Tokenizer{}
)

// llamaTok loads one of: "llama-spm", "phi-3" (GGUF), "mistral-hf"
// (tokenizer.json), "llama-bpe", "qwen2" (gzipped tokenizer.json).
func llamaTok(t testing.TB, name string) *Tokenizer {
	llamaToksMu.Lock()
	defer llamaToksMu.Unlock()
	if tok := llamaToks[name]; tok != nil {
		return tok
	}
	var tok *Tokenizer
	var err error
	switch name {
	case "llama-spm", "phi-3":
		var f *gguf.File
		f, err = gguf.Open(filepath.Join(llamaTestdata, name, "ggml-vocab-"+name+".gguf"))
		require.NoError(t, err)
		defer f.Close()
		tok, err = FromGGUF(f)
	case "mistral-hf":
		tok, err = LoadTokenizerJSON(filepath.Join(llamaTestdata, name, "tokenizer.json"))
	default:
		path := filepath.Join(llamaTestdata, name, "tokenizer.json.gz")
		tok, err = parseTokenizerJSON(gunzip(t, path), path)
	}
	require.NoError(t, err)
	llamaToks[name] = tok
	return tok
}

func gunzip(t testing.TB, path string) []byte {
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	zr, err := gzip.NewReader(f)
	require.NoError(t, err)
	data, err := io.ReadAll(zr)
	require.NoError(t, err)
	return data
}

// Every vector of llama.cpp's test files, for every source of each
// vocabulary, and the text back from the ids.
func TestLlamaFamilyPeerVectors(t *testing.T) {
	cases := []struct {
		tok, vectors string
		vocab        int
		// roundTrip: Decode(Encode(s)) == s for every vector. SentencePiece
		// drops the dummy prefix's space again, so its vectors round-trip.
		roundTrip bool
	}{
		{"llama-spm", "llama-spm/ggml-vocab-llama-spm.gguf", 32000, true},
		{"phi-3", "phi-3/ggml-vocab-phi-3.gguf", 32064, true},
		{"mistral-hf", "mistral-hf/vectors", 32000, true},
		{"llama-bpe", "llama-bpe/ggml-vocab-llama-bpe.gguf", 128256, true},
		{"qwen2", "qwen2/ggml-vocab-qwen2.gguf", 151669, true},
	}
	for _, c := range cases {
		t.Run(c.tok, func(t *testing.T) {
			tok := llamaTok(t, c.tok)
			assert.Equal(t, c.vocab, tok.VocabSize())
			inputs, want := readVectors(t, c.vectors)
			require.Len(t, inputs, 46)
			pass := 0
			for i, in := range inputs {
				got := nonNil(tok.Encode(in))
				if !assert.Equal(t, want[i], got, "case %d %q", i, in) {
					continue
				}
				pass++
				text, err := tok.Decode(got)
				require.NoError(t, err)
				if c.roundTrip {
					assert.Equal(t, in, text, "round trip of case %d", i)
				}
			}
			t.Logf("%s: %d/%d vectors match", c.tok, pass, len(inputs))
		})
	}
}
