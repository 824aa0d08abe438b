package server

import "net/http"

// routes is the whole API of API.md, each route under its own pattern
// (the pattern is the metrics' route label).
func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	handle := func(pattern string, open bool, h http.HandlerFunc) {
		mux.Handle(pattern, s.route(pattern, open, h))
	}
	// Worker API.
	handle("GET /health", true, s.handleHealth)
	handle("POST /execute", false, s.handleExecute)
	handle("POST /cancel", false, s.handleCancel)
	// Batch API.
	handle("POST /generate", false, s.handleGenerate)
	handle("POST /loglikelihood", false, s.handleLoglikelihood)
	handle("GET /healthz", true, s.handleHealthz)
	handle("GET /readyz", true, s.handleReadyz)
	// OpenAI-compatible API.
	handle("POST /v1/completions", false, s.handleCompletions)
	handle("GET /v1/models", false, s.handleModels)
	handle("POST /tokenize", false, s.handleTokenize)
	handle("POST /detokenize", false, s.handleDetokenize)
	// Operations.
	handle("GET /metrics", false, s.metrics.handler().ServeHTTP)
	// The page is static and holds no data, and a browser cannot send a
	// bearer token when navigating, so it is open; its requests carry the
	// key the user types in.
	handle("GET /{$}", true, s.handlePage)
	return s.outer(mux)
}
