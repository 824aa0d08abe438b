package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// errWrite marks a failed write to the client: the client is gone, so the
// request ends without a terminal event anyone could read.
var errWrite = errors.New("writing to the client")

// sseWriter sends Server-Sent Events, flushing each one so that a token
// reaches the client as soon as it is sampled.
type sseWriter struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
}

// startSSE writes the stream's headers. X-Accel-Buffering stops nginx-like
// proxies from buffering the stream to the end.
func startSSE(w http.ResponseWriter, writeTimeout time.Duration) *sseWriter {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	h.Set("X-Accel-Buffering", "no")
	s := &sseWriter{w: w, rc: http.NewResponseController(w), timeout: writeTimeout}
	s.extend()
	w.WriteHeader(http.StatusOK)
	_ = s.rc.Flush()
	return s
}

// extend moves the write deadline past the next event: the server-wide
// WriteTimeout would otherwise cut every stream longer than it, while a
// per-event deadline still drops clients that stop reading.
func (s *sseWriter) extend() {
	_ = s.rc.SetWriteDeadline(time.Now().Add(s.timeout))
}

// event writes a named event whose data is v as JSON.
func (s *sseWriter) event(name string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return s.write(fmt.Sprintf("event: %s\ndata: %s\n\n", name, b))
}

// data writes an unnamed event (the OpenAI stream's form).
func (s *sseWriter) data(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return s.write("data: " + string(b) + "\n\n")
}

func (s *sseWriter) write(msg string) error {
	s.extend()
	if _, err := s.w.Write([]byte(msg)); err != nil {
		return fmt.Errorf("%w: %v", errWrite, err)
	}
	if err := s.rc.Flush(); err != nil {
		return fmt.Errorf("%w: %v", errWrite, err)
	}
	return nil
}
