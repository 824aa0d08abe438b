package server

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// pipeListener hands out the server ends of in-memory connections.
type pipeListener struct {
	conns  chan net.Conn
	closed chan struct{}
}

func (p *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-p.conns:
		return c, nil
	case <-p.closed:
		return nil, net.ErrClosed
	}
}

func (p *pipeListener) Close() error   { close(p.closed); return nil }
func (p *pipeListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)} }

// dial makes a connection to p and returns its client end.
func (p *pipeListener) dial() net.Conn {
	server, client := net.Pipe()
	p.conns <- server
	return client
}

// TestLimitConnections: within the cap connections are handed to the
// server, then healthReserve more in the reserve; the one beyond is
// answered 503 TOO_MANY_CONNECTIONS naming the cap and closed, and
// counted; a closed connection gives its place back. (No http.Server
// serves these, so none is ever idle.)
func TestLimitConnections(t *testing.T) {
	s := New(Config{})
	p := &pipeListener{conns: make(chan net.Conn), closed: make(chan struct{})}
	ln := s.LimitConnections(&http.Server{}, p, 2)
	defer ln.Close()
	accepted := make(chan net.Conn)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c
		}
	}()
	open := func() net.Conn {
		t.Helper()
		client := p.dial()
		t.Cleanup(func() { client.Close() })
		return <-accepted
	}
	a := open()
	open()
	requireMetric(t, s, "llorch_open_connections", "2")
	for range healthReserve {
		require.True(t, open().(*limitedConn).reserve)
	}
	requireMetric(t, s, "llorch_open_connections", "2")

	// The next is refused: a 503 naming the cap, then the end.
	refused := p.dial()
	resp, err := http.ReadResponse(bufio.NewReader(refused), nil)
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	require.Equal(t, "1", resp.Header.Get("Retry-After"))
	require.True(t, resp.Close, "Connection: close")
	var e struct{ Error apiError }
	require.NoError(t, json.Unmarshal(body, &e), "%s", body)
	require.Equal(t, codeTooManyConnections, e.Error.Code)
	require.Contains(t, e.Error.Message, "at most 2 at once (--max-connections)")
	refused.Close()
	requireMetric(t, s, "llorch_connections_refused_total", "1")
	requireMetric(t, s, "llorch_max_connections", "2")

	// Closing one (twice: the place is given back once) lets the next in.
	require.NoError(t, a.Close())
	a.Close()
	requireMetric(t, s, "llorch_open_connections", "1")
	require.False(t, open().(*limitedConn).reserve)
	requireMetric(t, s, "llorch_open_connections", "2")
	requireMetric(t, s, "llorch_connections_refused_total", "1")
}

// requireMetric checks a metric's line in the server's /metrics text.
func requireMetric(t *testing.T, s *Server, name, value string) {
	t.Helper()
	rec := httptest.NewRecorder()
	s.metrics.handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	require.Contains(t, strings.Split(rec.Body.String(), "\n"), name+" "+value)
}

// TestLimitConnectionsOff: a cap of 0 leaves the listener as it is.
func TestLimitConnectionsOff(t *testing.T) {
	s := New(Config{})
	p := &pipeListener{conns: make(chan net.Conn), closed: make(chan struct{})}
	require.Same(t, net.Listener(p), s.LimitConnections(&http.Server{}, p, 0))
}
