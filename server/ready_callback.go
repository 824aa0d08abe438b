package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// readyNotice is what NotifyReady posts to the orchestrator.
type readyNotice struct {
	WorkerID    string `json:"worker_id"`
	ModelRef    string `json:"model_ref"`
	VRAMBytes   int64  `json:"vram_bytes"`
	MemoryBytes int64  `json:"memory_bytes"`
	URI         string `json:"uri"`
}

// NotifyReady tells the orchestrator at url (--callback-url) that this
// worker is ready: a POST of its id, the model's name and weight bytes,
// and uri, where it is reached. It retries with exponential backoff (from
// 250 ms, capped at 5 s) until a 2xx answer or limit, logging each
// failure; the error names url and the last failure.
func (s *Server) NotifyReady(ctx context.Context, url, uri string, limit time.Duration) error {
	name, mem := s.ModelInfo()
	body, _ := json.Marshal(readyNotice{WorkerID: s.cfg.WorkerID, ModelRef: name, MemoryBytes: mem, URI: uri})
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	client := &http.Client{Timeout: 10 * time.Second}
	wait := 250 * time.Millisecond
	for attempt := 1; ; attempt++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
		if err != nil {
			return fmt.Errorf("--callback-url %q: %w", url, err)
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode/100 == 2 {
				s.log.Info("ready callback sent", "url", url, "attempt", attempt)
				return nil
			}
			err = fmt.Errorf("status %s", resp.Status)
		}
		s.log.Warn("ready callback failed; retrying", "url", url, "attempt", attempt, "error", err.Error(), "retry_in", wait.String())
		select {
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return fmt.Errorf("--callback-url %s: no success in %s (%d attempts, last: %v); the orchestrator does not know this worker, exiting", url, limit, attempt, err)
			}
			return fmt.Errorf("--callback-url %s: interrupted after %d attempts", url, attempt)
		case <-time.After(wait):
		}
		wait = min(wait*2, 5*time.Second)
	}
}
