package generation

import (
	"context"
	"math"
	"testing"

	"github.com/llorch/llorch-check/internal/fixture"
	"github.com/llorch/llorch-check/model"
	"github.com/llorch/llorch-check/sampling"
	"github.com/llorch/llorch-check/tokenizer"
)

func loadTinyInternal(t *testing.T) (*model.Model, *tokenizer.Tokenizer, struct{}) {
	t.Helper()
	m, err := model.Load(fixture.TinyModel())
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizer.Load(fixture.TinyModel())
	if err != nil {
		t.Fatal(err)
	}
	return m, tok, struct{}{}
}

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
	m, tok, _ := loadTinyInternal(t)
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
	m, tok, _ := loadTinyInternal(t)
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
