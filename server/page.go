package server

import (
	_ "embed"
	"net/http"
)

//go:embed static/index.html
var indexHTML []byte

// handlePage serves the try-it-by-hand page: plain HTML and JavaScript,
// embedded so the binary is the whole deployment.
func (s *Server) handlePage(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	h.Set("Content-Security-Policy", "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'")
	_, _ = w.Write(indexHTML)
}
