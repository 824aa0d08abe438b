// Package httprecord records what an HTTP server answered, byte for byte,
// and plays it back. probe --record writes a recording so that a user can
// show exactly what their server said; the tests replay recordings of
// real engines (llama.cpp's llama-server, Ollama) that CI cannot run.
//
// A recording is JSON Lines, one Exchange a line, gzipped when the file
// name ends in .gz.
package httprecord

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/llorch/llorch-check/internal/atomicfile"
	"github.com/llorch/llorch-check/internal/regularfile"
)

// Exchange is one request and the answer it got.
type Exchange struct {
	Method      string `json:"method"`
	Path        string `json:"path"` // with the query, if any
	Body        string `json:"body,omitempty"`
	Status      int    `json:"status"`
	ContentType string `json:"content_type,omitempty"`
	Answer      string `json:"answer"`
}

// key identifies a request: method, path and body with JSON objects'
// keys in a canonical order, so that a map's encoding order never matters.
func (e Exchange) key() string {
	return e.Method + " " + e.Path + " " + canonical(e.Body)
}

func canonical(body string) string {
	var v any
	if json.Unmarshal([]byte(body), &v) != nil {
		return body
	}
	b, err := json.Marshal(v) // maps marshal with sorted keys
	if err != nil {
		return body
	}
	return string(b)
}

// Recorder is an http.RoundTripper that keeps every exchange it carries.
type Recorder struct {
	Next http.RoundTripper // nil: http.DefaultTransport

	mu        sync.Mutex
	exchanges []Exchange
}

// RoundTrip implements http.RoundTripper. The answer is read whole before
// it is handed on, so a stream arrives at once.
func (r *Recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		var err error
		if body, err = io.ReadAll(req.Body); err != nil {
			return nil, err
		}
		req.Body.Close()
		req.Body = io.NopCloser(bytes.NewReader(body))
	}
	next := r.Next
	if next == nil {
		next = http.DefaultTransport
	}
	resp, err := next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	answer, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(answer))
	r.mu.Lock()
	r.exchanges = append(r.exchanges, Exchange{Method: req.Method, Path: req.URL.RequestURI(), Body: string(body),
		Status: resp.StatusCode, ContentType: resp.Header.Get("Content-Type"), Answer: string(answer)})
	r.mu.Unlock()
	return resp, nil
}

// Exchanges returns what was recorded so far, in the order answers came.
func (r *Recorder) Exchanges() []Exchange {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Exchange(nil), r.exchanges...)
}

// WriteFile writes the recording to path atomically.
func (r *Recorder) WriteFile(path string) error {
	return atomicfile.Write(path, func(w io.Writer) error {
		var gz *gzip.Writer
		if strings.HasSuffix(path, ".gz") {
			gz = gzip.NewWriter(w)
			w = gz
		}
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		for _, e := range r.Exchanges() {
			if err := enc.Encode(e); err != nil {
				return err
			}
		}
		if gz != nil {
			return gz.Close()
		}
		return nil
	})
}

// Read reads a recording.
func Read(path string) ([]Exchange, error) {
	f, err := regularfile.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var rd io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		gz, err := gzip.NewReader(f)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		defer gz.Close()
		rd = gz
	}
	var out []Exchange
	sc := bufio.NewScanner(rd)
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	for line := 1; sc.Scan(); line++ {
		var e Exchange
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, line, err)
		}
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return out, nil
}

// Player answers each request with a recorded answer to the same request.
// A request recorded several times gets its answers in the order recorded,
// the last one repeating, so a server that answered one request two ways
// (say, under concurrency) is played back as it was.
type Player struct {
	mu      sync.Mutex
	answers map[string][]Exchange
	served  map[string]int
	misses  []string
}

// NewPlayer plays back exchanges.
func NewPlayer(exchanges []Exchange) *Player {
	p := &Player{answers: map[string][]Exchange{}, served: map[string]int{}}
	for _, e := range exchanges {
		p.answers[e.key()] = append(p.answers[e.key()], e)
	}
	return p
}

// ServeHTTP implements http.Handler. A request that was never recorded
// gets 599 and is kept for Misses.
func (p *Player) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	k := Exchange{Method: r.Method, Path: r.URL.RequestURI(), Body: string(body)}.key()
	p.mu.Lock()
	list := p.answers[k]
	var e Exchange
	if len(list) > 0 {
		e = list[min(p.served[k], len(list)-1)]
		p.served[k]++
	} else {
		p.misses = append(p.misses, k)
	}
	p.mu.Unlock()
	if len(list) == 0 {
		http.Error(w, "httprecord: no recorded answer for "+k, 599)
		return
	}
	if e.ContentType != "" {
		w.Header().Set("Content-Type", e.ContentType)
	}
	w.WriteHeader(e.Status)
	io.WriteString(w, e.Answer)
}

// Misses lists the requests that had no recorded answer.
func (p *Player) Misses() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.misses...)
}
