package server

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestNotifyReady: the notice is posted until the orchestrator accepts
// it; one that never does, or a cancelled context, ends the retries with
// an error naming --callback-url.
func TestNotifyReady(t *testing.T) {
	var attempts atomic.Int32
	var got map[string]any
	orch := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if attempts.Add(1) < 3 {
			http.Error(w, "not yet", http.StatusServiceUnavailable)
			return
		}
		require.Equal(t, "application/json", r.Header.Get("Content-Type"))
		require.NoError(t, json.NewDecoder(r.Body).Decode(&got))
	}))
	defer orch.Close()
	s := New(Config{WorkerID: "w7"})
	require.NoError(t, s.NotifyReady(context.Background(), orch.URL, "http://w7:8080", time.Minute))
	require.EqualValues(t, 3, attempts.Load())
	require.Equal(t, map[string]any{"worker_id": "w7", "model_ref": "", "vram_bytes": 0.0, "memory_bytes": 0.0, "uri": "http://w7:8080"}, got)

	never := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no", http.StatusInternalServerError)
	}))
	defer never.Close()
	err := s.NotifyReady(context.Background(), never.URL, "", 300*time.Millisecond)
	require.ErrorContains(t, err, "--callback-url "+never.URL+": no success in 300ms")
	require.ErrorContains(t, err, "500")

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.ErrorContains(t, s.NotifyReady(ctx, never.URL, "", time.Minute), "interrupted after 1 attempts")
	require.ErrorContains(t, s.NotifyReady(ctx, "::", "", time.Minute), `--callback-url "::"`)
}
