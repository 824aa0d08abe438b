package tokenizer

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/llorch/llorch-check/gguf"
	"github.com/llorch/llorch-check/internal/fixture"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func writeFile(t *testing.T, path, text string) {
	require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
}

func TestLoadSearchOrder(t *testing.T) {
	hello := []int{15496, 995}
	cases := []struct {
		name  string
		setup func(t *testing.T, dir string)
	}{
		{"vocab and merges", func(t *testing.T, dir string) {
			fixture.CopyFile(t, vocabJSON, filepath.Join(dir, "vocab.json"))
			fixture.CopyFile(t, mergesTxt, filepath.Join(dir, "merges.txt"))
			// Checked first: a broken tokenizer.json is never read.
			writeFile(t, filepath.Join(dir, "tokenizer.json"), "{")
		}},
		{"tokenizer.json", func(t *testing.T, dir string) {
			tokenizerJSONFromFiles(t, dir)
			fixture.CopyFile(t, vocabJSON, filepath.Join(dir, "vocab.json")) // no merges.txt
		}},
		{"gguf", func(t *testing.T, dir string) {
			// A GGUF without tokenizer metadata is passed over.
			writeFile(t, filepath.Join(dir, "a.gguf"), "GGUF\x03\x00\x00\x00"+string(make([]byte, 16)))
			fixture.CopyFile(t, peerGGUF, filepath.Join(dir, "b.gguf"))
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			c.setup(t, dir)
			tok, err := Load(dir)
			require.NoError(t, err)
			assert.Equal(t, hello, tok.Encode("Hello world"))
			assert.Equal(t, []int{50256}, tok.EncodeSpecial(EndOfText))
			assert.Equal(t, 50256, tok.EOT())
		})
	}
}

func TestLoadErrors(t *testing.T) {
	cases := []struct {
		name  string
		setup func(t *testing.T, dir string)
		is    error
		msg   string
	}{
		{"empty dir", func(*testing.T, string) {}, ErrNoTokenizer, "looked for vocab.json + merges.txt"},
		{"vocab without merges", func(t *testing.T, dir string) {
			fixture.CopyFile(t, vocabJSON, filepath.Join(dir, "vocab.json"))
		}, ErrNoTokenizer, "must both be present"},
		{"bad vocab json", func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, "vocab.json"), `{"a": 0`)
			writeFile(t, filepath.Join(dir, "merges.txt"), "")
		}, ErrFormat, "vocab.json"},
		{"negative id", func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, "vocab.json"), `{"a": -3}`)
			writeFile(t, filepath.Join(dir, "merges.txt"), "")
		}, ErrFormat, `token "a" has id -3`},
		{"missing byte token", func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, "vocab.json"), `{"a": 0}`)
			writeFile(t, filepath.Join(dir, "merges.txt"), "")
		}, ErrFormat, "lacks the token for byte 0x00"},
		{"merge of unknown token", func(t *testing.T, dir string) {
			fixture.CopyFile(t, vocabJSON, filepath.Join(dir, "vocab.json"))
			writeFile(t, filepath.Join(dir, "merges.txt"), "#version: 0.2\nĠ t\nzzzz q\n")
		}, ErrFormat, `merge 1 "zzzz q"`},
		{"malformed merge line", func(t *testing.T, dir string) {
			fixture.CopyFile(t, vocabJSON, filepath.Join(dir, "vocab.json"))
			writeFile(t, filepath.Join(dir, "merges.txt"), "#version: 0.2\nĠ t\nabc\n")
		}, ErrFormat, "merges.txt:3"},
		{"tokenizer.json add_prefix_space", func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, "tokenizer.json"),
				`{"pre_tokenizer":{"type":"ByteLevel","add_prefix_space":true},"model":{"type":"BPE","vocab":{},"merges":[]}}`)
		}, ErrFormat, "add_prefix_space"},
		{"tokenizer.json wordpiece", func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, "tokenizer.json"), `{"model":{"type":"WordPiece"}}`)
		}, ErrFormat, "model type WordPiece"},
		{"corrupt gguf", func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, "m.gguf"), "GGUF\x09\x00\x00\x00")
		}, gguf.ErrInvalid, "unsupported version 9"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			c.setup(t, dir)
			_, err := Load(dir)
			require.Error(t, err)
			assert.ErrorIs(t, err, c.is)
			assert.Contains(t, err.Error(), c.msg)
			assert.True(t, IsInputError(err))
		})
	}
	_, err := Load(filepath.Join(t.TempDir(), "missing"))
	assert.ErrorIs(t, err, os.ErrNotExist)
}

// FromGGUF's own checks, on the peer file's metadata with one key changed.
func TestFromGGUFErrors(t *testing.T) {
	f, err := gguf.Open(peerGGUF)
	require.NoError(t, err)
	defer f.Close()
	cases := []struct {
		name, key string
		value     any
		msg       string
	}{
		{"other model", "tokenizer.ggml.model", "xyz", `tokenizer.ggml.model "xyz" is not supported: want gpt2, llama`},
		{"llama model without scores", "tokenizer.ggml.model", "llama", "key not found: tokenizer.ggml.scores"},
		{"other pre", "tokenizer.ggml.pre", "xyz", `tokenizer.ggml.pre "xyz" is not supported: want gpt-2, llama-bpe, qwen2`},
		{"tokens not strings", "tokenizer.ggml.tokens", gguf.Array{Elem: gguf.TypeInt32, Values: []int32{1}}, "want array of string"},
		{"merges missing", "tokenizer.ggml.merges", nil, "key not found: tokenizer.ggml.merges"},
		{"bad merge", "tokenizer.ggml.merges", gguf.Array{Elem: gguf.TypeString, Values: []string{"abc"}}, "tokenizer.ggml.merges[0]"},
		{"eos out of range", "tokenizer.ggml.eos_token_id", uint32(99999), "eos_token_id 99999 outside"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := withKV(t, f, c.key, c.value)
			_, err := FromGGUF(g)
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrFormat)
			assert.Contains(t, err.Error(), c.msg)
		})
	}
}

// withKV re-encodes f's metadata with key set to value (removed if nil)
// and parses it back. Only the value types the peer file uses are needed.
func withKV(t *testing.T, f *gguf.File, key string, value any) *gguf.File {
	var kvs []gguf.KV
	for _, kv := range f.KV {
		if kv.Key == key {
			continue
		}
		kvs = append(kvs, kv)
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
		putValue(t, &b, kv.Value.V, true)
	}
	g, err := gguf.Read(bytes.NewReader(b.Bytes()), int64(b.Len()))
	require.NoError(t, err)
	return g
}

func putU32(b *bytes.Buffer, v uint32) {
	b.Write([]byte{byte(v), byte(v >> 8), byte(v >> 16), byte(v >> 24)})
}
func putU64(b *bytes.Buffer, v uint64) { putU32(b, uint32(v)); putU32(b, uint32(v>>32)) }
func putStr(b *bytes.Buffer, s string) { putU64(b, uint64(len(s))); b.WriteString(s) }

func putValue(t *testing.T, b *bytes.Buffer, v any, tagged bool) {
	tag := func(typ gguf.ValueType) {
		if tagged {
			putU32(b, uint32(typ))
		}
	}
	switch x := v.(type) {
	case string:
		tag(gguf.TypeString)
		putStr(b, x)
	case uint32:
		tag(gguf.TypeUint32)
		putU32(b, x)
	case int32:
		tag(gguf.TypeInt32)
		putU32(b, uint32(x))
	case float32:
		tag(gguf.TypeFloat32)
		putU32(b, 0)
	case gguf.Array:
		tag(gguf.TypeArray)
		putU32(b, uint32(x.Elem))
		putU64(b, uint64(x.Len()))
		switch s := x.Values.(type) {
		case []string:
			for _, e := range s {
				putStr(b, e)
			}
		case []int32:
			for _, e := range s {
				putU32(b, uint32(e))
			}
		default:
			t.Fatalf("array of %T", s)
		}
	default:
		t.Fatalf("value %T", v)
	}
}
