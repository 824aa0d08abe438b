package server

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/internal/fixture/tiny"
)

// discardWriter is a ResponseWriter that keeps only the status, reused
// across a benchmark's iterations so that what is measured is the
// server's own cost of an answer, not a recorder's.
type discardWriter struct {
	h      http.Header
	status int
}

func (d *discardWriter) Header() http.Header         { return d.h }
func (d *discardWriter) WriteHeader(code int)        { d.status = code }
func (d *discardWriter) Write(b []byte) (int, error) { return len(b), nil }

// BenchmarkRefusal is the cost of one 429 QUEUE_FULL: a chat request of
// about 1 KB arriving while every slot is busy and the queue is full, as
// a client ignoring Retry-After sends it again and again (issue #43 row
// 8). It runs the whole handler, middleware included.
func BenchmarkRefusal(b *testing.B) {
	m, tok, _ := tiny.Load(b)
	s := New(Config{Parallel: 1, MaxQueue: 0})
	require.NoError(b, s.SetModel(m, tok))
	slot, err := s.sched.Acquire(context.Background())
	require.NoError(b, err)
	defer slot.Release()
	body := []byte(`{"messages":[{"role":"system","content":"You are a helpful assistant."},{"role":"user","content":"` +
		strings.Repeat("Tell me about the library that opened in 1887. ", 6) + `"}],"temperature":0.7}`)
	h := s.Handler()
	w := &discardWriter{h: http.Header{}}
	r := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", nil)
	r.Header.Set("Content-Type", "application/json")
	read := bytes.NewReader(body)
	r.Body, r.ContentLength = io.NopCloser(read), int64(len(body)) // as a client sends it
	b.ReportAllocs()
	for b.Loop() {
		read.Reset(body) // a refusal that reads the body reads it all again
		clear(w.h)
		h.ServeHTTP(w, r)
		if w.status != http.StatusTooManyRequests {
			b.Fatalf("status %d, want 429", w.status)
		}
	}
}
