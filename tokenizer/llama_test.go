package tokenizer

import (
	"bytes"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llorch/llorch-check/gguf"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLlama3Pieces(t *testing.T) {
	cases := []struct {
		in          string
		llama, qwen []string // qwen nil: same as llama
	}{
		{"", nil, nil},
		{"Hello world", []string{"Hello", " world"}, nil},
		{"12345 678", []string{"123", "45", " ", "678"}, []string{"1", "2", "3", "4", "5", " ", "6", "7", "8"}},
		{"I'M y'all 'Re", []string{"I", "'M", " y", "'all", " '", "Re"}, nil},
		{"(hello) !!hi", []string{"(hello", ")", " !!", "hi"}, nil},
		{"\thello\nworld", []string{"\thello", "\n", "world"}, nil},
		{"a  \n\n b", []string{"a", "  \n\n", " b"}, nil},
		{"x \n \ty", []string{"x", " \n", " ", "\ty"}, nil},
		{"hi!\n\nyo", []string{"hi", "!\n\n", "yo"}, nil},
		{"a   ", []string{"a", "   "}, nil},
		{"a   b", []string{"a", "  ", " b"}, nil},
		{"\u00a0word", []string{"\u00a0word"}, nil},
		{"\xffab\xfe", []string{"\xffab", "\xfe"}, nil},
		{"ក្ខ", []string{"ក", "្ខ"}, nil}, // a combining sign is "other", so joins the letter after it
	}
	for _, c := range cases {
		for _, sp := range []struct {
			name  string
			split func(string, func(string))
			want  []string
		}{{"llama3", llama3Pieces, c.llama}, {"qwen2", qwen2Pieces, c.qwen}} {
			want := sp.want
			if want == nil {
				want = c.llama
			}
			var got []string
			sp.split(c.in, func(p string) { got = append(got, p) })
			assert.Equal(t, want, got, "%s %q", sp.name, c.in)
		}
	}
}

// EncodeSpecial matches each model's added tokens; Encode never does, and
// SentencePiece gives each fragment after a special token its dummy prefix.
func TestLlamaFamilySpecialTokens(t *testing.T) {
	cases := []struct {
		tok, in string
		special []int
	}{
		{"llama-spm", "<s>Hello</s>", []int{1, 15043, 2}},
		{"llama-spm", "Hi<s>", []int{6324, 1}},
		{"phi-3", "<|user|>\nHi<|end|>", []int{32010, 29871, 13, 18567, 32007}},
		{"mistral-hf", "<s>Hello", []int{1, 22557}},
		{"llama-bpe", "<|begin_of_text|>Hello<|eot_id|>", []int{128000, 9906, 128009}},
		{"qwen2", "<|im_start|>user\nHi<|im_end|>", []int{151644, 872, 198, 13048, 151645}},
	}
	for _, c := range cases {
		tok := llamaTok(t, c.tok)
		got := tok.EncodeSpecial(c.in)
		assert.Equal(t, c.special, got, "%s EncodeSpecial %q", c.tok, c.in)
		plain := tok.Encode(c.in)
		for _, sp := range tok.special {
			assert.NotContains(t, plain, int(sp.id), "%s Encode %q matched %q", c.tok, c.in, sp.text)
		}
		text, err := tok.Decode(plain)
		require.NoError(t, err)
		assert.Equal(t, c.in, text, "%s Decode(Encode(%q))", c.tok, c.in)
	}
}

func TestLlamaFamilyBOS(t *testing.T) {
	cases := []struct {
		tok string
		bos int
		add bool
	}{
		{"llama-spm", 1, true},
		{"phi-3", 1, true},
		{"mistral-hf", 1, true},
		// This tokenizer.json is Llama 3's first release, whose
		// post-processor is ByteLevel alone: BOS is in
		// tokenizer_config.json, which LoadTokenizerJSON does not read.
		{"llama-bpe", -1, false},
		{"qwen2", -1, false},
	}
	for _, c := range cases {
		bos, add := llamaTok(t, c.tok).BOS()
		assert.Equal(t, c.bos, bos, c.tok)
		assert.Equal(t, c.add, add, c.tok)
	}
	bos, add := loadGGUF(t).BOS()
	assert.False(t, add, "GPT-2 adds no BOS")
	assert.Equal(t, 50256, bos)
}

// Byte fallback spells any bytes, including ones that are not UTF-8, and
// DecodeBytes gives them back exactly.
func TestSPMByteFallback(t *testing.T) {
	for _, name := range []string{"llama-spm", "mistral-hf"} {
		tok := llamaTok(t, name)
		for _, s := range []string{"\x00\xff\xfe a\x80", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 x", " lead", "  two", "\n", "\xe2\x82"} {
			ids := tok.Encode(s)
			b, err := tok.DecodeBytes(ids)
			require.NoError(t, err)
			assert.Equal(t, s, string(b), "%s %q: %v", name, s, ids)
			assert.Equal(t, streamText(t, tok, ids), mustDecode(t, tok, ids), "%s stream %q", name, s)
		}
		// A space token at the start is the dummy prefix only once.
		text, err := tok.Decode(tok.Encode("  x"))
		require.NoError(t, err)
		assert.Equal(t, "  x", text)
	}
	// "▁" in the text is a space to SentencePiece, in llama.cpp and Hugging
	// Face alike, so it comes back as one.
	for _, name := range []string{"llama-spm", "mistral-hf"} {
		tok := llamaTok(t, name)
		assert.Equal(t, "a b", mustDecode(t, tok, tok.Encode("a\u2581b")), name)
	}
	// llama.cpp's <0x0A> for a newline.
	assert.Equal(t, []int{29871, 13}, llamaTok(t, "llama-spm").Encode("\n"))
}

func mustDecode(t *testing.T, tok *Tokenizer, ids []int) string {
	s, err := tok.Decode(ids)
	require.NoError(t, err)
	return s
}

// Load finds the new kinds the same way as GPT-2's: tokenizer.json, then
// GGUF.
func TestLoadLlamaFamily(t *testing.T) {
	tok, err := Load(filepath.Join(llamaTestdata, "mistral-hf"))
	require.NoError(t, err)
	assert.Equal(t, []int{22557}, tok.Encode("Hello"))
	tok, err = Load(filepath.Join(llamaTestdata, "llama-spm"))
	require.NoError(t, err)
	assert.Equal(t, []int{15043}, tok.Encode("Hello"))
	assert.Equal(t, 2, tok.EOT())
}

// Loader errors name the file and the field.
func TestLlamaFamilyLoadErrors(t *testing.T) {
	f, err := gguf.Open(filepath.Join(llamaTestdata, "llama-spm", "ggml-vocab-llama-spm.gguf"))
	require.NoError(t, err)
	defer f.Close()
	for _, c := range []struct {
		name, key string
		value     any
		msg       string
	}{
		{"no scores", "tokenizer.ggml.scores", nil, "key not found: tokenizer.ggml.scores"},
		{"short scores", "tokenizer.ggml.scores", gguf.Array{Elem: gguf.TypeFloat32, Values: []float32{0}}, "tokenizer.ggml.scores: want 32000 float32, have 1"},
		{"bad types", "tokenizer.ggml.token_type", gguf.Array{Elem: gguf.TypeInt32, Values: []int32{1}}, "tokenizer.ggml.token_type: 1 types for 32000 tokens"},
		{"bos out of range", "tokenizer.ggml.bos_token_id", uint32(99999), "bos_token_id 99999 outside"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := FromGGUF(withKVFloat(t, f, c.key, c.value))
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrFormat)
			assert.Contains(t, err.Error(), c.msg)
		})
	}
	base := `{"model":{"type":"BPE","vocab":{"a":0},"merges":[]},`
	for _, c := range []struct{ name, json, msg string }{
		{"other regex", base + `"pre_tokenizer":{"type":"Sequence","pretokenizers":[{"type":"Split","pattern":{"Regex":"\\s+"},"behavior":"Isolated"},{"type":"ByteLevel","use_regex":false}]}}`,
			`pre_tokenizer.pretokenizers[0].pattern.Regex: "\\s+" is not supported`},
		{"other normalizer", base + `"normalizer":{"type":"NFKC"},"pre_tokenizer":{"type":"Sequence","pretokenizers":[]}}`,
			`normalizer: {"type":"NFKC"} is not supported: want null or NFC`},
		{"metaspace split", `{"model":{"type":"BPE","byte_fallback":true,"vocab":{"a":0},"merges":[]},"pre_tokenizer":{"type":"Metaspace","replacement":"▁","prepend_scheme":"always","split":true}}`,
			"pre_tokenizer: want the normalizer Replace"},
		{"lowercase", `{"model":{"type":"BPE","byte_fallback":true,"vocab":{"a":0},"merges":[]},"normalizer":{"type":"Lowercase"}}`,
			`normalizer: {"type":"Lowercase"} is not supported`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := parseTokenizerJSON([]byte(c.json), "x/tokenizer.json")
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrFormat)
			assert.Contains(t, err.Error(), "x/tokenizer.json: "+strings.SplitN(c.msg, ":", 2)[0])
			assert.Contains(t, err.Error(), c.msg)
		})
	}
}

// withKVFloat is withKV (load_test.go) for files that also hold bools and
// float32 arrays, as SentencePiece GGUF files do.
func withKVFloat(t *testing.T, f *gguf.File, key string, value any) *gguf.File {
	var kvs []gguf.KV
	for _, kv := range f.KV {
		if kv.Key != key {
			kvs = append(kvs, kv)
		}
	}
	if value != nil {
		kvs = append(kvs, gguf.KV{Key: key, Value: gguf.Value{V: value}})
	}
	var b bytes.Buffer
	b.WriteString("GGUF")
	putU32(&b, 3)
	putU64(&b, 0)
	putU64(&b, uint64(len(kvs)))
	for _, kv := range kvs {
		putStr(&b, kv.Key)
		switch x := kv.Value.V.(type) {
		case bool:
			putU32(&b, uint32(gguf.TypeBool))
			if x {
				b.WriteByte(1)
			} else {
				b.WriteByte(0)
			}
		case gguf.Array:
			if fs, ok := x.Values.([]float32); ok {
				putU32(&b, uint32(gguf.TypeArray))
				putU32(&b, uint32(gguf.TypeFloat32))
				putU64(&b, uint64(len(fs)))
				for _, v := range fs {
					putU32(&b, math.Float32bits(v))
				}
				continue
			}
			putValue(t, &b, x, true)
		default:
			putValue(t, &b, x, true)
		}
	}
	g, err := gguf.Read(bytes.NewReader(b.Bytes()), int64(b.Len()))
	require.NoError(t, err)
	return g
}

// EncodePrompt puts BOS in front only where the model's files ask for it.
func TestEncodePrompt(t *testing.T) {
	for _, tc := range []struct {
		dir  string
		want []int
	}{
		{"../testdata/tiny-gpt2", []int{15496, 13}},
		{"../testdata/tiny-llama", []int{1, 15043, 29889}},
		{"../testdata/tiny-llama-phi3", []int{1, 15043, 29889}},
	} {
		tok, err := Load(tc.dir)
		require.NoError(t, err, tc.dir)
		require.Equal(t, tc.want, tok.EncodePrompt("Hello."), tc.dir)
		require.Equal(t, tc.want[len(tc.want)-2:], tok.Encode("Hello."), tc.dir)
	}
}

// A generation continues its prompt: SentencePiece's leading space is the
// space after the prompt there, kept, where a whole text drops it.
func TestDecodeContinuation(t *testing.T) {
	tok, err := Load("../testdata/tiny-llama")
	require.NoError(t, err)
	ids := []int{15043, 29889} // "▁Hello" "."
	whole, err := tok.Decode(ids)
	require.NoError(t, err)
	require.Equal(t, "Hello.", whole)
	cont, err := tok.DecodeContinuation(ids)
	require.NoError(t, err)
	require.Equal(t, " Hello.", cont)
	d := tok.NewContinuationDecoder()
	for range 2 { // and again after Flush
		var got string
		for _, id := range ids {
			s, err := d.Add(id)
			require.NoError(t, err)
			got += s
		}
		require.Equal(t, cont, got+d.Flush())
	}
	gpt2, err := Load("../testdata/tiny-gpt2")
	require.NoError(t, err)
	a, _ := gpt2.Decode([]int{15496, 13})
	b, _ := gpt2.DecodeContinuation([]int{15496, 13})
	require.Equal(t, a, b, "byte-level BPE has no dummy prefix")
}
