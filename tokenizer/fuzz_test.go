package tokenizer

import (
	"bytes"
	"encoding/binary"
	"os"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzEncode: any bytes encode without panic and decode back to exactly
// the same bytes; valid UTF-8 also round-trips through Decode, and
// streaming decode equals whole decode.
func FuzzEncode(f *testing.F) {
	if inp, err := os.ReadFile(peerInputs); err == nil {
		for _, s := range strings.Split(string(inp), "\n__ggml_vocab_test__\n") {
			f.Add(s)
		}
	}
	f.Add("\xff\xfe\x00<|endoftext|>'s  \t\n")
	f.Add(strings.Repeat("ab", 40))
	tok := gpt2(f)
	f.Fuzz(func(t *testing.T, s string) {
		for _, ids := range [][]int{tok.Encode(s), tok.EncodeSpecial(s)} {
			b, err := tok.DecodeBytes(ids)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(b, []byte(s)) {
				t.Fatalf("DecodeBytes(Encode(%q)) = %q", s, b)
			}
			text, err := tok.Decode(ids)
			if err != nil {
				t.Fatal(err)
			}
			if utf8.ValidString(s) && text != s {
				t.Fatalf("Decode(Encode(%q)) = %q", s, text)
			}
			if got := streamText(t, tok, ids); got != text {
				t.Fatalf("stream %q != whole %q", got, text)
			}
		}
	})
}

// FuzzDecode: arbitrary ids (4 bytes each) never panic, and streaming
// decode equals whole decode even for byte soup that is not UTF-8.
func FuzzDecode(f *testing.F) {
	f.Add([]byte{0xa6, 0x00, 0x00, 0x00, 0x9d, 0, 0, 0})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	tok := gpt2(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		var ids []int
		for len(data) >= 4 {
			ids = append(ids, int(int32(binary.LittleEndian.Uint32(data))))
			data = data[4:]
		}
		valid := true
		for i := range ids {
			if ids[i] < 0 || ids[i] >= tok.VocabSize() {
				valid = false
			}
		}
		text, err := tok.Decode(ids)
		if (err == nil) != valid {
			t.Fatalf("ids %v: err %v, all valid %v", ids, err, valid)
		}
		if err != nil {
			return
		}
		if !utf8.ValidString(text) {
			t.Fatalf("Decode gave invalid UTF-8 %q", text)
		}
		if got := streamText(t, tok, ids); got != text {
			t.Fatalf("stream %q != whole %q", got, text)
		}
	})
}
