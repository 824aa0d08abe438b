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
	// model routes read the model; job routes also take a slot, and are
	// refused before their body is read when none can be had.
	model := func(pattern string, fam family, read modelRead) {
		handle(pattern, false, s.modelRoute(fam, read, false))
	}
	job := func(pattern string, fam family, read modelRead) {
		handle(pattern, false, s.modelRoute(fam, read, true))
	}
	// Worker API.
	handle("GET /health", true, s.handleHealth)
	job("POST /execute", familyWorker, s.handleExecute)
	handle("POST /cancel", false, s.handleCancel)
	// Batch API.
	job("POST /generate", familyWorker, s.handleGenerate)
	job("POST /loglikelihood", familyWorker, s.handleLoglikelihood)
	handle("GET /healthz", true, s.handleHealthz)
	handle("GET /readyz", true, s.handleReadyz)
	// OpenAI-compatible API.
	job("POST /v1/completions", familyOpenAI, s.handleCompletions)
	job("POST /v1/chat/completions", familyOpenAI, s.handleChat)
	job("POST /v1/responses", familyOpenAI, s.handleResponses)
	job("POST /v1/embeddings", familyOpenAI, s.handleEmbeddings)
	handle("GET /v1/models", false, s.handleModels)
	handle("GET /v1/models/{id...}", false, s.handleModel)
	model("POST /tokenize", familyOpenAI, s.handleTokenize)
	model("POST /detokenize", familyOpenAI, s.handleDetokenize)
	// Operations.
	handle("GET /metrics", false, s.metrics.handler().ServeHTTP)
	// The page is static and holds no data, and a browser cannot send a
	// bearer token when navigating, so it is open; its requests carry the
	// key the user types in.
	handle("GET /{$}", true, s.handlePage)
	mux.Handle("/", jsonMisses(mux))
	return s.outer(mux)
}

// readyEngine returns the model if new work may start, else answers 503.
func (s *Server) readyEngine(w http.ResponseWriter) (*engine, bool) {
	msg := ""
	code := codeNotReady
	switch s.state() {
	case stateReady:
		return s.engine.Load(), true
	case stateDraining:
		code, msg = codeDraining, msgDraining
	case stateLoading:
		msg = "the model is loading"
	case stateValidating:
		msg = "the model is being validated against its references"
	case stateFailed:
		msg = "the model failed validation against its references; see /health"
	}
	writeError(w, http.StatusServiceUnavailable, code, msg, "")
	return nil, false
}

// modelRead reads a model route's fields from f, adding an error for each
// one at fault, and returns the route's work, which runs only when there
// are none.
type modelRead func(w http.ResponseWriter, r *http.Request, e *engine, f *fields) (work func())

// modelRoute is the skeleton every model route shares. The engine must be
// ready; the head must announce a JSON body (headError); a job route (one
// that takes a slot) is then refused before its body is read when no
// slot can be had (shed); the body must be valid JSON;
// read reads the route's fields and returns its work. Then an OpenAI
// route names the fields it did not use (X-Unused-Fields); every field
// error is one 400 in the route family's shape, and without errors the
// work runs.
func (s *Server) modelRoute(fam family, read modelRead, job bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		e, ok := s.readyEngine(w)
		if !ok {
			return
		}
		// What the head shows wrong is answered before a 429: a client
		// that retries a malformed request must learn it is malformed.
		if herr := headError(r, s.cfg.MaxBodyBytes); herr != nil {
			writeRequestError(w, fam, herr)
			return
		}
		if job && s.shed(w, r) {
			return
		}
		f, rerr := decodeBody(r)
		if rerr != nil {
			writeRequestError(w, fam, rerr)
			return
		}
		work := read(w, r, e, f)
		if fam == familyOpenAI {
			s.setUnusedHeader(w, r, f)
		} else {
			for _, name := range f.ignored { // --lenient: logged once per name
				s.ignored.note(r, name)
			}
		}
		switch {
		case len(f.errs) == 0:
			work()
		case fam == familyOpenAI:
			writeOpenAIErrors(w, f.errs)
		default:
			writeFieldErrors(w, fam, f.errs)
		}
	}
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
