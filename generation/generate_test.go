package generation_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/generation"
	"github.com/llorch/llorch-check/sampling"
)

var greedy = sampling.Params{Temperature: 0}

// collect runs Generate and checks the streaming invariants every result
// must keep: one callback per token in order, whole UTF-8 in every piece,
// no piece reaching into the stop string, pieces adding up to Result.Text.
func collect(t *testing.T, ctx context.Context, d generation.Decoder, req generation.Request) (generation.Result, []generation.Token) {
	t.Helper()
	var got []generation.Token
	res, err := generation.Generate(ctx, d, gpt2Tokenizer(t), req, func(tk generation.Token) error {
		require.True(t, utf8.ValidString(tk.Text), "token %d text %q", tk.Index, tk.Text)
		got = append(got, tk)
		return nil
	})
	require.NoError(t, err)
	var text strings.Builder
	for i, tk := range got {
		require.Equal(t, i, tk.Index)
		require.Equal(t, res.Tokens[i], tk.ID)
		text.WriteString(tk.Text)
	}
	require.Len(t, got, len(res.Tokens))
	if res.StopReason != generation.StopCancelled {
		require.Equal(t, res.Text, text.String(), "streamed text adds up to the result")
	}
	return res, got
}

func TestGenerateStops(t *testing.T) {
	tok := gpt2Tokenizer(t)
	enc := tok.Encode
	story := enc("Hello world, this is the end. More text follows here")
	tests := []struct {
		name     string
		next     []int
		max      int
		stop     []string
		reason   string
		text     string
		tokens   int // generated tokens, including EOS or the stop's last token
		matched  string
		heldOnce bool // some token's text was held back and released later
	}{
		{name: "max tokens", next: story, max: 4, reason: generation.StopMaxTokens, text: "Hello world, this", tokens: 4},
		{name: "eos", next: append(enc("Hello world"), generation.EOSToken, 13), max: 10,
			reason: generation.StopEOS, text: "Hello world", tokens: 3},
		{name: "eos first", next: []int{generation.EOSToken}, max: 10, reason: generation.StopEOS, text: "", tokens: 1},
		// " this" + " is": "s i" straddles the boundary.
		{name: "stop straddles tokens", next: story, max: 20, stop: []string{"s i"},
			reason: generation.StopSequence, text: "Hello world, thi", tokens: 5, matched: "s i", heldOnce: true},
		{name: "stop spans three tokens", next: story, max: 20, stop: []string{"this is the"},
			reason: generation.StopSequence, text: "Hello world, ", tokens: 6, matched: "this is the", heldOnce: true},
		{name: "stop at the very start", next: story, max: 20, stop: []string{"Hel"},
			reason: generation.StopSequence, text: "", tokens: 1, matched: "Hel"},
		{name: "stop inside the first token", next: story, max: 20, stop: []string{"ell"},
			reason: generation.StopSequence, text: "H", tokens: 1, matched: "ell"},
		{name: "earliest stop wins", next: story, max: 20, stop: []string{"end", "is", "the"},
			reason: generation.StopSequence, text: "Hello world, th", tokens: 4, matched: "is"},
		{name: "partial match released at the end", next: story, max: 5, stop: []string{"is not"},
			reason: generation.StopMaxTokens, text: "Hello world, this is", tokens: 5, heldOnce: true},
		{name: "partial match abandoned", next: story, max: 7, stop: []string{"is a"},
			reason: generation.StopMaxTokens, text: "Hello world, this is the end", tokens: 7, heldOnce: true},
		{name: "stop after eos text is not searched", next: append(enc("Hi"), generation.EOSToken), max: 5,
			stop: []string{"<|endoftext|>"}, reason: generation.StopEOS, text: "Hi", tokens: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := &script{next: tt.next}
			req := generation.Request{Prompt: []int{464}, MaxTokens: tt.max, Params: greedy, Stop: tt.stop}
			res, toks := collect(t, context.Background(), d, req)
			require.Equal(t, tt.reason, res.StopReason)
			require.Equal(t, tt.text, res.Text)
			require.Equal(t, tt.matched, res.StopSequence)
			require.Equal(t, tt.next[:tt.tokens], res.Tokens)
			require.Equal(t, 1, res.PromptTokens)
			require.Equal(t, tt.tokens-1, d.steps, "no forward pass after the last token")
			held := false
			if res.StopReason == generation.StopSequence {
				toks = toks[:len(toks)-1] // its text is cut at the stop string
			}
			for _, tk := range toks {
				piece, err := gpt2Tokenizer(t).Decode([]int{tk.ID})
				require.NoError(t, err)
				if tk.ID != generation.EOSToken && tk.Text != piece {
					held = true
				}
			}
			require.Equal(t, tt.heldOnce, held, "text held back for a possible stop string")
		})
	}
}

// TestGenerateUTF8 streams a character split across byte-level tokens as
// one piece, and never a broken one.
func TestGenerateUTF8(t *testing.T) {
	tok := gpt2Tokenizer(t)
	text := "ok 😀 é 日本"
	ids := tok.Encode(text)
	require.Greater(t, len(ids), utf8.RuneCountInString(text)-3, "some characters take several tokens")
	res, _ := collect(t, context.Background(), &script{next: ids}, generation.Request{Prompt: []int{1}, MaxTokens: len(ids), Params: greedy})
	require.Equal(t, text, res.Text)
}

func TestGenerateCancelMidway(t *testing.T) {
	d := &script{next: gpt2Tokenizer(t).Encode("one two three four five six seven"), stepWait: time.Hour}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var cancelledAt time.Time
	res, err := generation.Generate(ctx, d, gpt2Tokenizer(t), generation.Request{Prompt: []int{1}, MaxTokens: 5, Params: greedy},
		func(tk generation.Token) error {
			if tk.Index == 0 {
				// The next Step blocks "forever"; cancelling must end it.
				time.AfterFunc(20*time.Millisecond, cancel)
				cancelledAt = time.Now().Add(20 * time.Millisecond)
			}
			return nil
		})
	elapsed := time.Since(cancelledAt)
	require.NoError(t, err, "cancellation is a stop reason, not an error")
	require.Equal(t, generation.StopCancelled, res.StopReason)
	require.Less(t, elapsed, 100*time.Millisecond)
	require.Equal(t, []int{d.next[0]}, res.Tokens)
	require.Equal(t, "one", res.Text)
}

func TestGenerateCancelledBeforeStart(t *testing.T) {
	d := &script{next: []int{1, 2, 3}}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err := generation.Generate(ctx, d, nil, generation.Request{Prompt: []int{1}, MaxTokens: 3, Params: greedy}, nil)
	require.NoError(t, err)
	require.Equal(t, generation.StopCancelled, res.StopReason)
	require.Empty(t, res.Tokens)
	require.Zero(t, d.prefills, "no model work after cancellation")
}

// TestGenerateCancelReleasesHeldText: text held for a stop string that can
// no longer complete belongs to the partial result.
func TestGenerateCancelReleasesHeldText(t *testing.T) {
	d := &script{next: gpt2Tokenizer(t).Encode("this is it"), stepWait: time.Hour}
	ctx, cancel := context.WithCancel(context.Background())
	res, err := generation.Generate(ctx, d, gpt2Tokenizer(t),
		generation.Request{Prompt: []int{1}, MaxTokens: 3, Params: greedy, Stop: []string{"this was"}},
		func(tk generation.Token) error {
			require.Empty(t, tk.Text, "all of \"this\" might start the stop string")
			cancel()
			return nil
		})
	require.NoError(t, err)
	require.Equal(t, generation.StopCancelled, res.StopReason)
	require.Equal(t, "this", res.Text)
}

func TestGenerateCallbackError(t *testing.T) {
	boom := errors.New("client went away")
	d := &script{next: []int{10, 11, 12}}
	res, err := generation.Generate(context.Background(), d, nil, generation.Request{Prompt: []int{1}, MaxTokens: 3, Params: greedy},
		func(tk generation.Token) error { return boom })
	require.ErrorIs(t, err, boom)
	require.Equal(t, []int{10}, res.Tokens)
	require.Zero(t, d.steps)
}

func TestGenerateWithoutTokenizer(t *testing.T) {
	d := &script{next: []int{10, 11, generation.EOSToken}}
	res, err := generation.Generate(context.Background(), d, nil, generation.Request{Prompt: []int{1}, MaxTokens: 5, Params: greedy}, nil)
	require.NoError(t, err)
	require.Equal(t, []int{10, 11, generation.EOSToken}, res.Tokens)
	require.Empty(t, res.Text)
	require.Equal(t, generation.StopEOS, res.StopReason)

	_, err = generation.Generate(context.Background(), d, nil,
		generation.Request{Prompt: []int{1}, MaxTokens: 5, Params: greedy, Stop: []string{"x"}}, nil)
	require.ErrorContains(t, err, "stop")
}

func TestGenerateNaNLogitsIsAnError(t *testing.T) {
	_, err := generation.Generate(context.Background(), nanDecoder{}, nil,
		generation.Request{Prompt: []int{1}, MaxTokens: 2, Params: greedy}, nil)
	require.ErrorContains(t, err, "NaN")
}

type nanDecoder struct{}

func (nanDecoder) Prefill(context.Context, []int) ([]float32, error) {
	l := make([]float32, 4)
	for i := range l {
		l[i] = float32(nan())
	}
	return l, nil
}
func (nanDecoder) Step(context.Context, int) ([]float32, error) { panic("unreachable") }
func (nanDecoder) ContextLength() int                           { return 8 }
func (nanDecoder) VocabSize() int                               { return 4 }

func nan() float64 { var z float64; return z / z }
