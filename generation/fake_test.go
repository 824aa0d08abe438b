package generation_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/internal/fixture"
	"github.com/llorch/llorch-check/tokenizer"
)

const vocab = 50257

// script is a fake Decoder whose greedy continuation is a fixed sequence of
// tokens: step i's logits put 10 on next[i] and 0 elsewhere.
type script struct {
	next     []int
	ctxLen   int
	stepWait time.Duration // each Step blocks this long, or until ctx is done

	mu       sync.Mutex
	pos      int
	prefills int
	steps    int
}

func (s *script) logits() []float32 {
	l := make([]float32, vocab)
	if s.pos < len(s.next) {
		l[s.next[s.pos]] = 10
	}
	return l
}

func (s *script) Prefill(ctx context.Context, tokens []int) ([]float32, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.prefills++
	s.pos = 0
	return s.logits(), ctx.Err()
}

func (s *script) Step(ctx context.Context, token int) ([]float32, error) {
	if s.stepWait > 0 {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(s.stepWait):
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.steps++
	s.pos++
	return s.logits(), nil
}

func (s *script) ContextLength() int {
	if s.ctxLen == 0 {
		return 1024
	}
	return s.ctxLen
}

func (s *script) VocabSize() int { return vocab }

var (
	tokOnce sync.Once
	tokVal  *tokenizer.Tokenizer
	tokErr  error
)

// gpt2Tokenizer is the tiny model's tokenizer (GPT-2's full vocabulary).
func gpt2Tokenizer(t *testing.T) *tokenizer.Tokenizer {
	t.Helper()
	tokOnce.Do(func() { tokVal, tokErr = tokenizer.Load(fixture.TinyModel()) })
	require.NoError(t, tokErr)
	return tokVal
}
