package server

import (
	"net/http"
	"strings"
)

// routes is the whole API of docs/api.md, each route under its own pattern
// (its method and path are the metrics' labels, see routeLabels).
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
	handle("POST /v1/chat/completions", false, s.handleChat)
	handle("POST /v1/responses", false, s.handleResponses)
	handle("POST /v1/embeddings", false, s.handleEmbeddings)
	handle("GET /v1/models", false, s.handleModels)
	handle("GET /v1/models/{id...}", false, s.handleModel)
	handle("POST /tokenize", false, s.handleTokenize)
	handle("POST /detokenize", false, s.handleDetokenize)
	// Operations.
	handle("GET /metrics", false, s.metrics.handler().ServeHTTP)
	// The page is static and holds no data, and a browser cannot send a
	// bearer token when navigating, so it is open; its requests carry the
	// key the user types in.
	handle("GET /{$}", true, s.handlePage)
	mux.Handle("/", jsonMisses(mux))
	return s.outer(mux)
}

// jsonMisses is the catch-all route: what no other route matches gets the
// API's JSON error shape (ServeMux writes plain text, which OpenAI's SDKs
// show as "404 404 page not found"): 404 for an unknown path, 405 with
// Allow for a known path and another method.
func jsonMisses(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var allow []string
		for _, m := range []string{http.MethodGet, http.MethodPost} {
			probe := r.Clone(r.Context())
			probe.Method = m
			if _, pattern := mux.Handler(probe); pattern != "/" {
				allow = append(allow, m)
			}
		}
		if len(allow) == 0 {
			writeError(w, http.StatusNotFound, codeNotFound, "no route "+r.URL.Path+"; see docs/api.md", "")
			return
		}
		w.Header().Set("Allow", strings.Join(allow, ", "))
		writeError(w, http.StatusMethodNotAllowed, codeMethodNotAllowed,
			r.Method+" is not allowed on "+r.URL.Path+"; use "+strings.Join(allow, " or "), "")
	})
}
