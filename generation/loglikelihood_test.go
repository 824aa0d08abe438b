package generation_test

import (
	"bytes"
	"context"
	"io"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/generation"
	"github.com/llorch/llorch-check/internal/fixture/tiny"
)

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }

func TestEncodePair(t *testing.T) {
	tok := gpt2Tokenizer(t)
	tests := []struct {
		name, context, continuation string
		ctx, cont                   string // expected, as text to encode; "" ctx means [50256]
	}{
		{"plain", "The cat", " sat", "The cat", " sat"},
		{"trailing space moves", "The cat ", "sat", "The cat", " sat"},
		{"trailing newline and space move", "Answer:\n ", "42", "Answer:", "\n 42"},
		{"information separator is Python whitespace", "a\x1f", "b", "a", "\x1fb"},
		{"empty context", "", "Hello", "", "Hello"},
		{"whitespace-only context", "  ", "Hello", "", "  Hello"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cont, err := generation.EncodePair(tok, tt.context, tt.continuation)
			require.NoError(t, err)
			wantCtx := []int{50256} // <|endoftext|>, GPT-2's BOS and lm-eval's prefix_token_id
			if tt.ctx != "" {
				wantCtx = tok.Encode(tt.ctx)
			}
			require.Equal(t, wantCtx, ctx)
			whole := tok.Encode(tt.ctx + tt.cont)
			if tt.ctx == "" {
				whole = append(wantCtx, whole...)
			}
			require.Equal(t, whole[len(wantCtx):], cont)
			require.Equal(t, tt.cont, mustDecode(t, cont))
		})
	}
	// A merge across the boundary lands in the continuation.
	ctx, cont, err := generation.EncodePair(tok, "hel", "lo")
	require.NoError(t, err)
	require.Equal(t, tok.Encode("hel"), ctx)
	whole := tok.Encode("hello")
	require.Equal(t, whole[min(len(ctx), len(whole)):], cont)
}

func mustDecode(t *testing.T, ids []int) string {
	s, err := gpt2Tokenizer(t).Decode(ids)
	require.NoError(t, err)
	return s
}

// TestLoglikelihoodTruncation: a pair longer than the context is scored on
// its last n_positions+1 tokens, as lm-eval truncates.
func TestLoglikelihoodTruncation(t *testing.T) {
	m, tok, _ := tiny.Load(t)
	d := generation.NewModelDecoder(m)
	n := d.ContextLength()
	var long []int
	for len(long) < n+60 {
		long = append(long, tok.Encode(" the library opened in 1887 with four thousand books")...)
	}
	cont := tok.Encode(" and a reading room")
	got, err := generation.LoglikelihoodTokens(context.Background(), d, long, cont)
	require.NoError(t, err)
	kept := long[len(long)-(n+1-len(cont)):]
	want, err := generation.LoglikelihoodTokens(context.Background(), d, kept, cont)
	require.NoError(t, err)
	require.Equal(t, want.LL, got.LL)
	require.Equal(t, want.IsGreedy, got.IsGreedy)
	require.Equal(t, long, got.ContextTokens, "the result names the tokens it was given")
}

func TestLoglikelihoodGreedy(t *testing.T) {
	// The script decoder's greedy continuation is its sequence; scoring that
	// sequence is greedy, anything else is not. Prefill+Step fallback path.
	next := []int{7, 8, 9}
	ll, err := generation.LoglikelihoodTokens(context.Background(), &script{next: next}, []int{1}, next)
	require.NoError(t, err)
	require.True(t, ll.IsGreedy)
	require.Less(t, ll.LL, 0.0)
	ll2, err := generation.LoglikelihoodTokens(context.Background(), &script{next: next}, []int{1}, []int{7, 9, 9})
	require.NoError(t, err)
	require.False(t, ll2.IsGreedy)
	require.Less(t, ll2.LL, ll.LL-9, "a non-argmax token costs its 10-logit margin")
}

func TestLoglikelihoodErrors(t *testing.T) {
	d := &script{ctxLen: 4}
	tests := []struct {
		name      string
		ctx, cont []int
		want      string
	}{
		{"empty context", nil, []int{1}, "context: empty"},
		{"empty continuation", []int{1}, nil, "continuation: no tokens"},
		{"continuation beyond the context", []int{1}, []int{1, 2, 3, 4, 5}, "5 tokens exceed the context length 4"},
		{"token outside the vocabulary", []int{1}, []int{vocab}, "outside the vocabulary"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := generation.LoglikelihoodTokens(context.Background(), d, tt.ctx, tt.cont)
			require.ErrorContains(t, err, tt.want)
		})
	}
}
