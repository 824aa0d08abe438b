package generation

import (
	"context"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/internal/fixture/tiny"
	"github.com/llorch/llorch-check/sampling"
)

func TestTopLogProbsOrderAndTies(t *testing.T) {
	lp := []float64{-2, -1, -1, -3, -0.5}
	got := topLogProbs(lp, 3)
	want := []TokenLogProb{{4, -0.5}, {1, -1}, {2, -1}}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
	if topLogProbs(lp, 0) != nil {
		t.Fatal("top 0 should be nil")
	}
}

func TestPromptLogProbsMatchLoglikelihood(t *testing.T) {
	m, tok, _ := tiny.Load(t)
	d := NewModelDecoder(m)
	prompt := tok.Encode("The capital of France is Paris")
	got, err := PromptLogProbs(context.Background(), d, prompt, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(prompt)-1 {
		t.Fatalf("%d scores for %d tokens", len(got), len(prompt))
	}
	ll, err := LoglikelihoodTokens(context.Background(), d, prompt[:1], prompt[1:])
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, p := range got {
		sum += p.LogProb
	}
	if math.Abs(sum-ll.LL) > 1e-6 {
		t.Fatalf("sum %v, loglikelihood %v", sum, ll.LL)
	}
}

func TestGenerateLogProbs(t *testing.T) {
	m, tok, _ := tiny.Load(t)
	req := Request{Prompt: tok.Encode("Hello."), MaxTokens: 3, Params: sampling.Params{}, LogProbs: true, TopLogProbs: 2}
	_, err := Generate(context.Background(), NewModelDecoder(m), tok, req, func(tk Token) error {
		if len(tk.TopLogProbs) != 2 || tk.TopLogProbs[0].ID != tk.ID || tk.TopLogProbs[0].LogProb != tk.LogProb {
			t.Errorf("greedy token %d: top %v, logprob %v", tk.ID, tk.TopLogProbs, tk.LogProb)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestScoringChunksChangeNoBits: scoring a long input in chunks of a few
// positions (bounded memory) gives exactly the numbers of one pass.
func TestScoringChunksChangeNoBits(t *testing.T) {
	m, _, _ := tiny.Load(t)
	tokens := make([]int, 110)
	for i := range tokens {
		tokens[i] = (i*7919 + 13) % m.Config.VocabSize
	}
	score := func(chunk int) ([]PromptLogProb, Loglikelihood) {
		old := scoreChunk
		scoreChunk = chunk
		defer func() { scoreChunk = old }()
		d := NewModelDecoder(m)
		p, err := PromptLogProbs(context.Background(), d, tokens, 3)
		require.NoError(t, err)
		ll, err := LoglikelihoodTokens(context.Background(), d, tokens[:40], tokens[40:])
		require.NoError(t, err)
		return p, ll
	}
	p1, ll1 := score(1000)
	for _, chunk := range []int{1, 3, 32} {
		p, ll := score(chunk)
		require.Equal(t, p1, p, "chunk %d", chunk)
		require.Equal(t, ll1, ll, "chunk %d", chunk)
	}
}
