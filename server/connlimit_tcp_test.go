package server

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// limitedTCP serves s over loopback TCP through LimitConnections with a
// cap of max, as serve does.
func limitedTCP(t *testing.T, s *Server, max int, headerTimeout time.Duration) (string, *limitListener) {
	t.Helper()
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	hs := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second}
	ln := s.LimitConnections(hs, tcp, max).(*limitListener)
	ln.headerTimeout = headerTimeout
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })
	return tcp.Addr().String(), ln
}

// rawConn is a client connection written to by hand.
type rawConn struct {
	net.Conn
	r *bufio.Reader
}

func dialRaw(t *testing.T, addr string) *rawConn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return &rawConn{Conn: c, r: bufio.NewReader(c)}
}

// send writes a request and reads its answer, body included.
func (c *rawConn) send(t *testing.T, method, path string) (*http.Response, string) {
	t.Helper()
	_, err := io.WriteString(c, method+" "+path+" HTTP/1.1\r\nHost: test\r\nContent-Length: 2\r\n\r\n{}")
	require.NoError(t, err)
	resp, err := http.ReadResponse(c.r, nil)
	require.NoError(t, err)
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(b)
}

// begin sends the first line of a request and no more: the connection
// is busy, not idle.
func (c *rawConn) begin(t *testing.T) {
	t.Helper()
	_, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\n")
	require.NoError(t, err)
}

// requireClosed: the server closes c (EOF or a reset) within a few seconds.
func (c *rawConn) requireClosed(t *testing.T) {
	t.Helper()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(5*time.Second)))
	_, err := c.r.ReadByte()
	require.Error(t, err)
	require.False(t, errors.Is(err, os.ErrDeadlineExceeded), "still open")
}

// requireOpen: c is neither closed nor answered.
func (c *rawConn) requireOpen(t *testing.T) {
	t.Helper()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(50*time.Millisecond)))
	_, err := c.r.ReadByte()
	require.ErrorIs(t, err, os.ErrDeadlineExceeded)
	require.NoError(t, c.SetReadDeadline(time.Time{}))
}

// waitPlaces waits until l holds open connections under the cap, idle of
// them idle, and reserve in the reserve: the server has seen what the
// test's clients did.
func waitPlaces(t *testing.T, l *limitListener, open, idle, reserve int) {
	t.Helper()
	require.Eventually(t, func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.open == open && l.idle.Len() == idle && l.reserve == reserve
	}, 5*time.Second, time.Millisecond, "want %d open, %d idle, %d in the reserve", open, idle, reserve)
}

// TestConnectionCapIdleFirst (issue #43 row 7): a cap full of idle
// connections does not refuse a health check: the connection that has
// waited longest for a request is closed to admit it, whether it never
// sent one or is a keep-alive connection between requests; one whose
// request has begun is never closed.
func TestConnectionCapIdleFirst(t *testing.T) {
	s := New(Config{})
	addr, l := limitedTCP(t, s, 4, reserveHeaderTimeout)
	idle := make([]*rawConn, 4)
	for i := range idle {
		idle[i] = dialRaw(t, addr)
		waitPlaces(t, l, i+1, i+1, 0)
	}
	h := dialRaw(t, addr)
	resp, _ := h.send(t, "GET", "/healthz")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	idle[0].requireClosed(t)
	for _, c := range idle[1:] {
		c.requireOpen(t)
	}
	// idle[1]'s request begins: idle[2], idle[3] and h (keep-alive) wait.
	idle[1].begin(t)
	waitPlaces(t, l, 4, 3, 0)
	for _, evicted := range []*rawConn{idle[2], idle[3], h} {
		c := dialRaw(t, addr)
		resp, _ := c.send(t, "GET", "/healthz")
		require.Equal(t, http.StatusOK, resp.StatusCode)
		evicted.requireClosed(t)
	}
	_, err := io.WriteString(idle[1], "Host: test\r\n\r\n")
	require.NoError(t, err)
	resp, err = http.ReadResponse(idle[1].r, nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "the busy connection is served")
	requireMetric(t, s, "llorch_idle_connections_closed_total", "4")
	requireMetric(t, s, "llorch_connections_refused_total", "0")
	requireMetric(t, s, "llorch_open_connections", "4")
}

// TestConnectionCapHealthReserve (issue #43 row 7): with every place
// under the cap busy, health and metrics are still answered on the
// reserve's connections, each closed after its answer; another request
// there is answered 503 TOO_MANY_CONNECTIONS; beyond the reserve the
// listener refuses; a reserve connection that does not finish its
// request head is closed at its deadline.
func TestConnectionCapHealthReserve(t *testing.T) {
	s := New(Config{})
	addr, l := limitedTCP(t, s, 1, time.Minute)
	dialRaw(t, addr).begin(t)
	waitPlaces(t, l, 1, 0, 0)

	// No model: /readyz and /health answer 503 "loading", themselves.
	for _, path := range []string{"/healthz", "/health", "/readyz", "/metrics"} {
		c := dialRaw(t, addr)
		resp, body := c.send(t, "GET", path)
		require.NotContains(t, body, codeTooManyConnections, path)
		if path == "/healthz" || path == "/metrics" {
			require.Equal(t, http.StatusOK, resp.StatusCode, path)
		}
		require.True(t, resp.Close, "%s: Connection: close", path)
		c.requireClosed(t)
	}
	c := dialRaw(t, addr)
	resp, body := c.send(t, "POST", "/v1/completions")
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	require.Equal(t, "1", resp.Header.Get("Retry-After"))
	require.Contains(t, body, codeTooManyConnections)
	c.requireClosed(t)
	requireMetric(t, s, "llorch_connections_refused_total", "1")

	held := make([]*rawConn, healthReserve)
	for i := range held {
		held[i] = dialRaw(t, addr)
		held[i].begin(t)
	}
	waitPlaces(t, l, 1, 0, healthReserve)
	resp, body = dialRaw(t, addr).send(t, "GET", "/healthz")
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "the reserve is full")
	require.Contains(t, body, codeTooManyConnections)
	held[0].Close()
	waitPlaces(t, l, 1, 0, healthReserve-1)
	resp, _ = dialRaw(t, addr).send(t, "GET", "/healthz")
	require.Equal(t, http.StatusOK, resp.StatusCode, "a place in the reserve came back")

	addr, l = limitedTCP(t, s, 1, 100*time.Millisecond)
	dialRaw(t, addr).begin(t)
	waitPlaces(t, l, 1, 0, 0)
	c = dialRaw(t, addr)
	c.begin(t)
	c.requireClosed(t)
}

// TestConnectionRefusalsAnswered (issue #43 row 7): far more connections
// beyond the cap and the reserve than lingering refusals (maxRefusing),
// all at once and none closing until all are answered, each read a 503,
// not a reset.
func TestConnectionRefusalsAnswered(t *testing.T) {
	s := New(Config{})
	addr, l := limitedTCP(t, s, 1, time.Minute)
	dialRaw(t, addr).begin(t)
	waitPlaces(t, l, 1, 0, 0)
	for range healthReserve {
		dialRaw(t, addr).begin(t)
	}
	waitPlaces(t, l, 1, 0, healthReserve)

	const n = 3 * maxRefusing
	statuses := make([]int, n)
	var answered sync.WaitGroup
	done := make(chan struct{})
	answered.Add(n)
	for i := range n {
		go func() {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				answered.Done()
				return
			}
			defer c.Close()
			_, err = io.WriteString(c, "POST /v1/completions HTTP/1.1\r\nHost: test\r\nContent-Length: 2\r\n\r\n{}")
			if err == nil {
				var resp *http.Response
				if resp, err = http.ReadResponse(bufio.NewReader(c), nil); err == nil {
					var e struct{ Error apiError }
					if json.NewDecoder(resp.Body).Decode(&e) == nil && e.Error.Code == codeTooManyConnections {
						statuses[i] = resp.StatusCode
					}
				}
				if err != nil {
					t.Log(i, err)
				}
			}
			answered.Done()
			<-done // hold the connection: the refusals linger
		}()
	}
	answered.Wait()
	close(done)
	for i, st := range statuses {
		require.Equal(t, http.StatusServiceUnavailable, st, "client %d of %d", i, n)
	}
	requireMetric(t, s, "llorch_connections_refused_total", strconv.Itoa(n))
}
