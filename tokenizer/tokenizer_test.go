package tokenizer

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/llorch/llorch-check/tokenizer/benchcorpus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var (
	sharedOnce sync.Once
	sharedTok  *Tokenizer
)

// gpt2 is the vocab.json + merges.txt tokenizer, loaded once per test binary.
func gpt2(t testing.TB) *Tokenizer {
	sharedOnce.Do(func() {
		tok, err := LoadFiles(vocabJSON, mergesTxt)
		if err != nil {
			t.Fatal(err)
		}
		sharedTok = tok
	})
	require.NotNil(t, sharedTok)
	return sharedTok
}

func TestPieces(t *testing.T) {
	cases := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"Hello world", []string{"Hello", " world"}},
		{"  Hello", []string{" ", " Hello"}},
		{"a   b", []string{"a", "  ", " b"}},
		{"a \t b", []string{"a", " \t", " b"}},
		{"a\t\tb", []string{"a", "\t", "\t", "b"}},
		{"a  ", []string{"a", "  "}},
		{"\n =", []string{"\n", " ="}},
		{"x\n\n", []string{"x", "\n\n"}},
		{"I'm y'all 'RE", []string{"I", "'m", " y", "'", "all", " '", "RE"}},
		{"'s's'll've'd", []string{"'s", "'s", "'ll", "'ve", "'d"}},
		{"''''x", []string{"''''", "x"}},
		{"ab12 34!!?", []string{"ab", "12", " 34", "!!?"}},
		{"\u00a0word", []string{"\u00a0", "word"}},
		{" \u00a0word", []string{" ", "\u00a0", "word"}},
		{"\xff\xfeab\x00 c", []string{"\xff\xfe", "ab", "\x00", " c"}},
		{"é€5", []string{"é", "€", "5"}},
		{"ក្ខ", []string{"ក", "្", "ខ"}}, // a combining sign is not a letter
	}
	for _, c := range cases {
		var got []string
		pieces(c.in, func(p string) { got = append(got, p) })
		assert.Equal(t, c.want, got, "%q", c.in)
	}
}

func TestSpecialTokens(t *testing.T) {
	tok := gpt2(t)
	cases := []struct {
		in             string
		plain, special []int
	}{
		{EndOfText, []int{27, 91, 437, 1659, 5239, 91, 29}, []int{50256}},
		{"a" + EndOfText + "b", []int{64, 27, 91, 437, 1659, 5239, 91, 29, 65}, []int{64, 50256, 65}},
		{EndOfText + EndOfText, nil, []int{50256, 50256}},
		{"<|endoftext", []int{27, 91, 437, 1659, 5239}, []int{27, 91, 437, 1659, 5239}},
	}
	for _, c := range cases {
		if c.plain != nil {
			assert.Equal(t, c.plain, tok.Encode(c.in), "Encode %q", c.in)
		}
		got := tok.EncodeSpecial(c.in)
		assert.Equal(t, c.special, got, "EncodeSpecial %q", c.in)
		text, err := tok.Decode(got)
		require.NoError(t, err)
		assert.Equal(t, c.in, text)
	}
}

func TestDecodeInvalidIDs(t *testing.T) {
	tok := gpt2(t)
	for _, ids := range [][]int{{-1}, {50257}, {15496, 1 << 40}} {
		_, err := tok.Decode(ids)
		assert.ErrorIs(t, err, ErrInvalidID, "%v", ids)
		_, err = tok.NewStreamDecoder().Add(ids[len(ids)-1])
		assert.ErrorIs(t, err, ErrInvalidID)
	}
	_, err := tok.Decode([]int{15496, -5})
	assert.ErrorContains(t, err, "position 1: invalid token id: -5")
}

// Expected strings are Python's bytes.decode("utf-8", errors="replace").
func TestDecodeLossy(t *testing.T) {
	cases := []struct{ in, want string }{
		{"abc", "abc"},
		{"\xe2\x82\xac", "€"},
		{"\xe2\x82", "\ufffd"},
		{"\xe2\x82A", "\ufffdA"},
		{"\xe2A\x82", "\ufffdA\ufffd"},
		{"\xc0\xaf", "\ufffd\ufffd"},
		{"\xed\xa0\x80", "\ufffd\ufffd\ufffd"},
		{"\xf0\x9f\x98", "\ufffd"},
		{"\xf0\x9f\x98\x81\xf0", "😁\ufffd"},
		{"\xf4\x90\x80\x80", "\ufffd\ufffd\ufffd\ufffd"},
		{"\xff\xfe", "\ufffd\ufffd"},
		{"\x00", "\x00"},
	}
	for _, c := range cases {
		got, n := appendLossy(nil, []byte(c.in), true)
		assert.Equal(t, c.want, string(got), "%q", c.in)
		assert.Equal(t, len(c.in), n)
	}
}

// streamText decodes ids one at a time, as a server streaming tokens does.
func streamText(t testing.TB, tok *Tokenizer, ids []int) string {
	d := tok.NewStreamDecoder()
	var sb strings.Builder
	for _, id := range ids {
		s, err := d.Add(id)
		require.NoError(t, err)
		require.True(t, utf8.ValidString(s))
		sb.WriteString(s)
	}
	sb.WriteString(d.Flush())
	return sb.String()
}

func TestStreamDecode(t *testing.T) {
	tok := gpt2(t)
	texts := []string{
		"🚀 (normal) 😶‍🌫️ (multiple emojis concatenated) ✅ 🦙 Ünïcödé",
		"ក្ខែត 我想在apple工作1314151天～ Привет",
	}
	for _, text := range texts {
		ids := tok.Encode(text)
		whole, err := tok.Decode(ids)
		require.NoError(t, err)
		require.Equal(t, text, whole)
		// Every prefix: the emitted text plus the flush equals whole decode
		// of that prefix, so a multi-byte character cut by the prefix comes
		// out as U+FFFD exactly where Decode puts it.
		for n := 0; n <= len(ids); n++ {
			want, err := tok.Decode(ids[:n])
			require.NoError(t, err)
			assert.Equal(t, want, streamText(t, tok, ids[:n]), "prefix %d", n)
		}
	}
	// A character split across tokens is released once, whole.
	ids := tok.Encode("🚀")
	require.Greater(t, len(ids), 1)
	d := tok.NewStreamDecoder()
	for i, id := range ids {
		s, err := d.Add(id)
		require.NoError(t, err)
		if i < len(ids)-1 {
			assert.Empty(t, s)
		} else {
			assert.Equal(t, "🚀", s)
		}
	}
	assert.Empty(t, d.Flush())
}

// The heap merger handles long pieces; it must agree with the scan.
func TestBPEHeapMatchesScan(t *testing.T) {
	tok := gpt2(t)
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []string{"a", "b", "e", "t", "h", " ", "é", "\xe2", "\x82", "ing", "the"}
	for range 3000 {
		var sb strings.Builder
		for range 1 + rng.IntN(20) {
			sb.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		p := sb.String()
		if len(p) > heapThreshold {
			continue
		}
		assert.Equal(t, tok.bpe(nil, p), tok.bpeHeap(nil, p), "%q", p)
	}
	long := strings.Repeat("a", 100_000)
	ids := tok.Encode(long)
	text, err := tok.Decode(ids)
	require.NoError(t, err)
	assert.Equal(t, long, text)
}

func TestSourcesAgree(t *testing.T) {
	files := gpt2(t)
	gg := loadGGUF(t)
	tj := tokenizerJSONFromFiles(t, t.TempDir())
	tjTok, err := LoadTokenizerJSON(tj)
	require.NoError(t, err)
	corpus := benchCorpus(t, 300_000)
	want := files.EncodeSpecial(corpus + EndOfText)
	assert.Equal(t, want, gg.EncodeSpecial(corpus+EndOfText), "gguf")
	assert.Equal(t, want, tjTok.EncodeSpecial(corpus+EndOfText), "tokenizer.json")
}

// tokenizerJSONFromFiles writes, in dir, a tokenizer.json as Hugging Face
// saves GPT-2's (merges in the newer pair layout) and returns its path.
func tokenizerJSONFromFiles(t testing.TB, dir string) string {
	data, err := os.ReadFile(vocabJSON)
	require.NoError(t, err)
	var vocab map[string]int
	require.NoError(t, json.Unmarshal(data, &vocab))
	mdata, err := os.ReadFile(mergesTxt)
	require.NoError(t, err)
	merges, err := parseMergesTxt(mdata, mergesTxt)
	require.NoError(t, err)
	tj := map[string]any{
		"version":        "1.0",
		"added_tokens":   []any{map[string]any{"id": 50256, "content": EndOfText, "special": true}},
		"normalizer":     nil,
		"pre_tokenizer":  map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true},
		"post_processor": map[string]any{"type": "ByteLevel"},
		"decoder":        map[string]any{"type": "ByteLevel"},
		"model":          map[string]any{"type": "BPE", "vocab": vocab, "merges": merges},
	}
	out, err := json.Marshal(tj)
	require.NoError(t, err)
	path := filepath.Join(dir, "tokenizer.json")
	require.NoError(t, os.WriteFile(path, out, 0o644))
	return path
}

func TestConcurrentEncode(t *testing.T) {
	tok := gpt2(t)
	corpus := benchCorpus(t, 50_000)
	want := tok.Encode(corpus)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Different goroutines start at different places so the cache
			// sees concurrent misses, puts and evictions.
			lines := strings.SplitAfter(corpus, "\n")
			for i := range lines {
				l := lines[(i+g*97)%len(lines)]
				assert.Equal(t, tok.Encode(l), tok.Encode(l))
			}
			assert.Equal(t, want, tok.Encode(corpus))
		}()
	}
	wg.Wait()
}

// benchCorpus is n bytes of the benchmark corpus; tests skip without it.
func benchCorpus(t testing.TB, n int) string {
	s, err := benchcorpus.Build(n)
	if err != nil {
		t.Skip(err)
	}
	return s
}
