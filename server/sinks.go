package server

import (
	"net/http"
	"time"
)

// jsonAnswer is the sink of every route that answers with one JSON
// document (batch, embeddings, OpenAI without stream): an error status in
// the one error shape. 499 is nginx's "client closed the request": nobody
// reads it, but logs and metrics do.
type jsonAnswer struct{}

func (jsonAnswer) ended(w http.ResponseWriter, end jobEnd) {
	status := map[string]int{codeTimeout: http.StatusGatewayTimeout, codeShutdown: http.StatusServiceUnavailable,
		codeInference: http.StatusInternalServerError}[end.code]
	code := end.code
	if status == 0 {
		status, code = 499, codeCancelled
	}
	writeError(w, status, code, end.message, "")
}

// stream is an SSE response opened on first use, so a job that ends
// before it runs can still answer with a status.
type stream struct {
	sse     *sseWriter
	timeout time.Duration
}

func (k *stream) open(w http.ResponseWriter) *sseWriter {
	if k.sse == nil {
		k.sse = startSSE(w, k.timeout)
	}
	return k.sse
}

// workerStream is /execute's sink: an error event, the stream's one
// terminal event, saying how far the job got.
type workerStream struct{ stream }

func (k *workerStream) ended(w http.ResponseWriter, end jobEnd) {
	if end.stage == stageQueued && end.code == codeShutdown {
		jsonAnswer{}.ended(w, end) // never started: a plain 503 to retry elsewhere
		return
	}
	msg := map[stage]string{stageArrival: "ended before it started: ", stageQueued: "ended while queued: "}[end.stage] + end.message
	_ = k.open(w).event("error", errorEvent{Type: "error", Code: end.code, Message: msg})
}

// openAIStream is the OpenAI routes' sink with stream: a final error chunk
// and [DONE]; before the stream opened (ended while queued), a status.
type openAIStream struct{ stream }

func (k *openAIStream) ended(w http.ResponseWriter, end jobEnd) {
	if k.sse == nil {
		jsonAnswer{}.ended(w, end)
		return
	}
	typ := "timeout_error"
	if end.code == codeShutdown || end.code == codeInference {
		typ = "server_error"
	}
	_ = k.sse.data(map[string]any{"error": apiError{Message: end.message, Type: typ, Code: end.code}})
	_ = k.sse.write("data: [DONE]\n\n")
}
