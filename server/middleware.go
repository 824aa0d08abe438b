package server

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"
)

// Outcomes of the llorch_requests_total counter.
const (
	outcomeOK           = "ok"
	outcomeClientError  = "client_error"
	outcomeUnauthorized = "unauthorized"
	outcomeRejected     = "rejected" // 429: queue full
	outcomeUnavailable  = "unavailable"
	outcomeServerError  = "server_error"
	outcomeCancelled    = "cancelled"
	outcomeDisconnected = "disconnected"
	outcomeTimeout      = "timeout"
	outcomeShutdown     = "shutdown" // ended at the drain deadline
)

func outcomeForStatus(status int) string {
	switch {
	case status == http.StatusUnauthorized:
		return outcomeUnauthorized
	case status == http.StatusTooManyRequests:
		return outcomeRejected
	case status == http.StatusServiceUnavailable:
		return outcomeUnavailable
	case status == http.StatusGatewayTimeout:
		return outcomeTimeout
	case status >= 500:
		return outcomeServerError
	case status >= 400:
		return outcomeClientError
	}
	return outcomeOK
}

// recorder keeps the status and an outcome a handler may set (a 200 stream
// can still end cancelled). It passes Flush through and unwraps for
// http.ResponseController (per-event write deadlines).
type recorder struct {
	http.ResponseWriter
	status  int
	bytes   int64
	outcome string
}

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	n, err := r.ResponseWriter.Write(b)
	r.bytes += int64(n)
	return n, err
}

func (r *recorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// setOutcome records how a request ended for metrics and logs.
func setOutcome(w http.ResponseWriter, outcome string) {
	for {
		switch rw := w.(type) {
		case *recorder:
			rw.outcome = outcome
			return
		case interface{ Unwrap() http.ResponseWriter }:
			w = rw.Unwrap()
		default:
			return
		}
	}
}

// quiet paths are logged at debug level when they succeed.
var quiet = map[string]bool{"/health": true, "/healthz": true, "/readyz": true, "/metrics": true}

type ctxKey int

const requestIDKey ctxKey = iota

func requestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey).(string)
	return id
}

// validRequestID keeps client-chosen ids to something safe to log and echo.
func validRequestID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for _, c := range id {
		if c < 0x21 || c > 0x7e {
			return false
		}
	}
	return true
}

func newRequestID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// outer is the middleware every request passes, matched route or not:
// request id, panic recovery, access log and CORS (preflight answered here,
// before auth, as browsers send it without credentials).
func (s *Server) outer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		id := r.Header.Get("X-Request-ID")
		if !validRequestID(id) {
			id = newRequestID()
		}
		w.Header().Set("X-Request-ID", id)
		r = r.WithContext(context.WithValue(r.Context(), requestIDKey, id))
		rec := &recorder{ResponseWriter: w}
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				s.log.Error("panic in handler", "request_id", id, "panic", p)
				if rec.status == 0 {
					writeError(rec, http.StatusInternalServerError, codeInference, "internal error", "")
				}
			}
			outcome := rec.outcome
			if outcome == "" {
				outcome = outcomeForStatus(rec.status)
			}
			// An overload refuses as fast as clients retry: the first
			// refusal is logged, then a count per interval, and the line
			// of one that is only counted is not even built.
			overload := rec.status == http.StatusTooManyRequests
			if overload && !s.rejections.first() {
				return
			}
			// Probes and scrapes come every few seconds: debug, not info.
			level := slog.LevelInfo
			switch {
			case overload:
				level = s.rejections.level
			case quiet[r.URL.Path] && rec.status < 400:
				level = slog.LevelDebug
			}
			// Never the body: prompts stay out of the logs.
			s.log.Log(r.Context(), level, "request", "request_id", id, "method", r.Method, "path", r.URL.Path,
				"status", rec.status, "outcome", outcome, "bytes", rec.bytes,
				"duration_ms", float64(time.Since(start).Microseconds())/1000, "remote", r.RemoteAddr)
		}()
		if reserveOnly(rec, r) || s.cors(rec, r) {
			return
		}
		next.ServeHTTP(rec, r)
	})
}

// cors sets the CORS headers for an allowed origin and answers preflight;
// it returns true when the request was a preflight and is done.
func (s *Server) cors(w http.ResponseWriter, r *http.Request) bool {
	origin := r.Header.Get("Origin")
	allowed := origin != "" && (slices.Contains(s.cfg.CORSOrigins, "*") || slices.Contains(s.cfg.CORSOrigins, origin))
	if allowed {
		h := w.Header()
		h.Set("Access-Control-Allow-Origin", origin)
		h.Add("Vary", "Origin")
		h.Set("Access-Control-Expose-Headers", "X-Request-ID, Retry-After, X-Unused-Fields")
	}
	if r.Method != http.MethodOptions || r.Header.Get("Access-Control-Request-Method") == "" {
		return false
	}
	if allowed {
		h := w.Header()
		h.Set("Access-Control-Allow-Methods", "GET, POST, OPTIONS")
		// The browser names what it will send: the OpenAI JS SDK adds its
		// own X-Stainless-* headers, which a fixed list would refuse.
		allowHeaders := "Authorization, Content-Type, X-Request-ID"
		if req := strings.TrimSpace(r.Header.Get("Access-Control-Request-Headers")); req != "" {
			allowHeaders += ", " + req
		}
		h.Set("Access-Control-Allow-Headers", allowHeaders)
		h.Add("Vary", "Access-Control-Request-Headers")
		h.Set("Access-Control-Max-Age", "600")
	}
	w.WriteHeader(http.StatusNoContent)
	return true
}

// route wraps one route's handler: metrics under its method and path,
// auth unless open, the body limit.
func (s *Server) route(pattern string, open bool, h http.HandlerFunc) http.Handler {
	method, path := routeLabels(pattern)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := findRecorder(w)
		defer func() {
			outcome := rec.outcome
			if outcome == "" {
				outcome = outcomeForStatus(rec.status)
			}
			s.metrics.requests.WithLabelValues(method, path, outcome).Inc()
			s.metrics.duration.WithLabelValues(method, path).Observe(time.Since(start).Seconds())
		}()
		if !open && !s.authorized(r) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="llorch"`)
			writeError(w, http.StatusUnauthorized, codeUnauthorized, "missing or wrong bearer token in Authorization", "")
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes)
		if !open {
			// The server's WriteTimeout runs from the end of the request
			// headers, so a long batch would lose its answer after doing the
			// work. Model routes are bounded by --request-timeout instead
			// (streams move the deadline per event, see sseWriter).
			var deadline time.Time
			if s.cfg.RequestTimeout > 0 {
				deadline = time.Now().Add(s.cfg.RequestTimeout + s.cfg.WriteTimeout)
			}
			_ = http.NewResponseController(w).SetWriteDeadline(deadline)
		}
		h(w, r)
	})
}

// routeLabels are a mux pattern's method and path as the metrics label
// them, the path as the API's documentation writes it rather than in
// ServeMux's syntax: "GET /v1/models/{id...}" is GET and /v1/models/{id},
// "GET /{$}" GET and /.
func routeLabels(pattern string) (method, path string) {
	method, path, ok := strings.Cut(pattern, " ")
	if !ok {
		return "", pattern
	}
	path = strings.ReplaceAll(path, "{$}", "")
	path = strings.ReplaceAll(path, "...}", "}")
	if path == "" {
		path = "/"
	}
	return method, path
}

func findRecorder(w http.ResponseWriter) *recorder {
	if rec, ok := w.(*recorder); ok {
		return rec
	}
	return &recorder{ResponseWriter: w}
}

func (s *Server) authorized(r *http.Request) bool {
	if s.cfg.APIKey == "" {
		return true
	}
	// RFC 7235: the scheme is case-insensitive ("bearer KEY" is fine).
	scheme, token, ok := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
	return ok && strings.EqualFold(scheme, "Bearer") &&
		subtle.ConstantTimeCompare([]byte(strings.TrimSpace(token)), []byte(s.cfg.APIKey)) == 1
}
