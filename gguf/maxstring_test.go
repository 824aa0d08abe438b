package gguf

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMaxString: a metadata string beyond MaxString (a 100 MB chat
// template, issue 43 item 6) is refused naming its key and the cap,
// before it is copied into memory; one at the cap is read.
func TestMaxString(t *testing.T) {
	for _, tc := range []struct {
		n    int
		fail bool
	}{{MaxString, false}, {MaxString + 1, true}} {
		var buf bytes.Buffer
		kv := []KV{{Key: "tokenizer.chat_template", Value: mustValue(t, strings.Repeat("x", tc.n))}}
		require.NoError(t, Write(&buf, kv, nil))
		f, err := ReadBytes(buf.Bytes())
		if !tc.fail {
			require.NoError(t, err)
			s, err := f.String("tokenizer.chat_template")
			require.NoError(t, err)
			assert.Len(t, s, tc.n)
			continue
		}
		require.ErrorIs(t, err, ErrInvalid)
		assert.Contains(t, err.Error(), "tokenizer.chat_template")
		assert.Contains(t, err.Error(), "cap of 16777216 (16 MiB)")
	}
}
