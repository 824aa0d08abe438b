package tokenizer

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// FuzzLlamaFamilyEncode: the new encoders never panic on any bytes, and the
// text comes back: DecodeBytes(Encode(s)) == s and, for UTF-8,
// Decode(Encode(s)) == s, except where the model's normalisation changes
// the text (SentencePiece reads "▁" as a space; Qwen's tokenizer.json
// applies NFC; and SentencePiece's EncodeSpecial gives every fragment
// after a special token its own dummy prefix, as llama.cpp and Hugging
// Face do, which decodes as a space). Streaming decode equals whole decode.
func FuzzLlamaFamilyEncode(f *testing.F) {
	if inp, err := os.ReadFile(filepath.Join(llamaTestdata, "mistral-hf", "vectors.inp")); err == nil {
		for _, s := range strings.Split(string(inp), "\n__ggml_vocab_test__\n") {
			f.Add(s)
		}
	}
	f.Add("\xff\xfe\x00<s> </s>'S  \t\n12345")
	f.Add("\xf0 \xe2\x82 ▁x")
	f.Add(strings.Repeat("ab ", 40))
	names := []string{"llama-spm", "phi-3", "mistral-hf", "llama-bpe", "qwen2"}
	toks := make([]*Tokenizer, len(names))
	for i, n := range names {
		toks[i] = llamaTok(f, n)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for i, tok := range toks {
			exact := true
			if tok.spm != nil && strings.Contains(s, spaceMarker) || tok.normalize != nil && !norm.NFC.IsNormalString(s) {
				exact = false
			}
			for k, ids := range [][]int{tok.Encode(s), tok.EncodeSpecial(s)} {
				exact := exact && (k == 0 || tok.spm == nil)
				b, err := tok.DecodeBytes(ids)
				if err != nil {
					t.Fatalf("%s: %v", names[i], err)
				}
				if exact && !bytes.Equal(b, []byte(s)) {
					t.Fatalf("%s: DecodeBytes(Encode(%q)) = %q (ids %v)", names[i], s, b, ids)
				}
				text, err := tok.Decode(ids)
				if err != nil {
					t.Fatal(err)
				}
				if exact && utf8.ValidString(s) && text != s {
					t.Fatalf("%s: Decode(Encode(%q)) = %q", names[i], s, text)
				}
				if got := streamText(t, tok, ids); got != text {
					t.Fatalf("%s: stream %q != whole %q", names[i], got, text)
				}
			}
		}
	})
}

// FuzzLlama3Pieces: the hand-written split covers the text exactly, with
// no empty piece, for both digit groupings.
func FuzzLlama3Pieces(f *testing.F) {
	f.Add("Hello, y'all! 12345 \n\n\t x")
	f.Add("\xff\u00a0\r\n 'LL")
	f.Fuzz(func(t *testing.T, s string) {
		for _, split := range []func(string, func(string)){llama3Pieces, qwen2Pieces} {
			var sb strings.Builder
			split(s, func(p string) {
				if p == "" {
					t.Fatalf("empty piece in %q", s)
				}
				sb.WriteString(p)
			})
			if sb.String() != s {
				t.Fatalf("pieces of %q join to %q", s, sb.String())
			}
		}
	})
}
