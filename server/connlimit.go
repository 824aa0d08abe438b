package server

import (
	"container/list"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// codeTooManyConnections is the error code of a connection refused over
// the connection cap.
const codeTooManyConnections = "TOO_MANY_CONNECTIONS"

// maxRefusing bounds the refusals lingering at once (refusalLinger), so
// that refusing cannot itself use up the file descriptors the cap
// protects; beyond it the listener waits before it accepts again.
const maxRefusing = 64

// refusalLinger is how long a refused connection is kept open after its
// 503 for the client to read it: closing a socket with the request still
// unread can reset it under the answer.
const refusalLinger = time.Second

// healthReserve is how many connections beyond the cap may be open at
// once to answer health checks and scrapes (/health, /healthz, /readyz,
// /metrics) while every connection under the cap is busy: a kubelet must
// not restart a healthy worker because its clients hold every place.
const healthReserve = 8

// reserveHeaderTimeout bounds how long a connection in the reserve may
// take to send its request head, so that slow clients cannot hold it.
const reserveHeaderTimeout = 2 * time.Second

// LimitConnections wraps ln, which hs is to serve, so that at most max
// connections are open at once (max ≤ 0: no cap). It sets hs.ConnState
// and hs.ConnContext (calling hooks already set) to tell idle connections
// and the reserve's apart.
//
// At the cap, a new connection takes the place of the one that has
// waited longest for a request (a keep-alive connection between
// requests, or one that has sent nothing yet), which is closed. When no
// connection is idle, up to healthReserve more are accepted that may
// only ask for health or metrics; any other request on one is answered
// 503 TOO_MANY_CONNECTIONS. Beyond those, a connection is accepted only
// to be answered that 503, naming the cap, and closed. Refusals are
// counted in llorch_connections_refused_total and logged at a bounded
// rate. Without a cap, a flood of idle connections would use up the
// process's file descriptors and every accept would fail with "too many
// open files".
func (s *Server) LimitConnections(hs *http.Server, ln net.Listener, max int) net.Listener {
	if max <= 0 {
		return ln
	}
	s.metrics.maxConns.Set(float64(max))
	body, _ := json.Marshal(map[string]apiError{"error": {
		Message: fmt.Sprintf("too many open connections: this server holds at most %d at once (--max-connections); retry later", max),
		Type:    errorType(http.StatusServiceUnavailable), Code: codeTooManyConnections,
	}})
	l := &limitListener{Listener: ln, max: max, s: s, body: body,
		refusal: fmt.Appendf(nil, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nContent-Length: %d\r\nRetry-After: %d\r\nConnection: close\r\n\r\n%s",
			len(body), retryAfterSeconds, body),
		refusing: make(chan struct{}, maxRefusing), headerTimeout: reserveHeaderTimeout,
		log: newBurstLog(s.log, slog.LevelWarn, "more connections refused over --max-connections, not logged one by one")}
	state, base := hs.ConnState, hs.ConnContext
	hs.ConnState = func(c net.Conn, st http.ConnState) {
		if state != nil {
			state(c, st)
		}
		l.connState(c, st)
	}
	hs.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
		if base != nil {
			ctx = base(ctx, c)
		}
		if lc, ok := c.(*limitedConn); ok {
			ctx = context.WithValue(ctx, connKey{}, lc)
		}
		return ctx
	}
	return l
}

type limitListener struct {
	net.Listener
	s        *Server
	max      int
	body     []byte        // the 503's JSON body
	refusal  []byte        // the whole 503 response
	refusing chan struct{} // refusals lingering
	log      *burstLog
	// headerTimeout is reserveHeaderTimeout (tests lengthen it).
	headerTimeout time.Duration

	mu      sync.Mutex
	open    int       // connections under the cap
	reserve int       // connections in the health reserve
	idle    list.List // of *limitedConn under the cap waiting for a request, longest waiting first
}

// Accept returns the next connection admitted, refusing those beyond the
// cap and the reserve on the way.
func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if admitted := l.admitOrEvict(c); admitted != nil {
			return admitted, nil
		}
		// At most maxRefusing refusals linger: beyond them the listener
		// waits for one to end (at most refusalLinger) before it accepts
		// again, so that later connections wait in the kernel's backlog
		// to be answered in turn rather than being closed unanswered,
		// which a client sees as a reset.
		l.refusing <- struct{}{}
		if admitted := l.admitOrEvict(c); admitted != nil { // a place came free meanwhile
			<-l.refusing
			return admitted, nil
		}
		l.refuse(c)
	}
}

// admitOrEvict admits c (admit), closing the connection it evicts.
func (l *limitListener) admitOrEvict(c net.Conn) *limitedConn {
	admitted, evicted := l.admit(c)
	if evicted != nil {
		// Its http.Server goroutine sees the close and ends; the place
		// is c's already.
		_ = evicted.Conn.Close()
	}
	return admitted
}

// admit places c under the cap, evicting the connection that has waited
// longest for a request when the cap is full, else in the health reserve;
// admitted is nil when there is room in neither.
func (l *limitListener) admit(c net.Conn) (admitted, evicted *limitedConn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if e := l.idle.Front(); e != nil && l.open >= l.max {
		evicted = e.Value.(*limitedConn)
		l.releaseLocked(evicted)
		l.s.metrics.idleClosed.Inc()
	}
	switch {
	case l.open < l.max:
		l.open++
		l.s.metrics.openConns.Inc()
		return &limitedConn{Conn: c, l: l}, evicted
	case l.reserve < healthReserve:
		l.reserve++
		lc := &limitedConn{Conn: c, l: l, reserve: true, headerBy: time.Now().Add(l.headerTimeout)}
		_ = c.SetReadDeadline(lc.headerBy)
		return lc, evicted
	}
	return nil, evicted
}

// connState keeps the list of idle connections: a connection is idle
// from when it is new or has answered a request until the first byte of
// its next request arrives (limitedConn.Read), or http.Server makes it
// active.
func (l *limitListener) connState(c net.Conn, st http.ConnState) {
	lc, ok := c.(*limitedConn)
	if !ok || lc.reserve {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if (st == http.StateNew || st == http.StateIdle) && !lc.released && lc.elem == nil {
		lc.elem = l.idle.PushBack(lc)
		lc.waiting.Store(true)
		return
	}
	l.busyLocked(lc)
}

// busyLocked takes c off the idle list.
func (l *limitListener) busyLocked(c *limitedConn) {
	if c.elem != nil {
		l.idle.Remove(c.elem)
		c.elem = nil
		c.waiting.Store(false)
	}
}

// releaseLocked gives c's place back, once.
func (l *limitListener) releaseLocked(c *limitedConn) {
	if c.released {
		return
	}
	c.released = true
	l.busyLocked(c)
	if c.reserve {
		l.reserve--
		return
	}
	l.open--
	l.s.metrics.openConns.Dec()
}

// refuse answers c with the 503 and closes it, in the background, in a
// place of l.refusing the caller took: the client's request is read and
// dropped until it closes or refusalLinger passes, so that the close does
// not reset the connection under the answer.
func (l *limitListener) refuse(c net.Conn) {
	l.refused(c.RemoteAddr())
	go func() {
		defer func() { <-l.refusing }()
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(refusalLinger))
		if _, err := c.Write(l.refusal); err != nil {
			return
		}
		if cw, ok := c.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(c, 1<<20))
	}()
}

// refused counts a refusal and logs it, the first of a burst.
func (l *limitListener) refused(remote net.Addr) {
	l.s.metrics.connsRefused.Inc()
	if l.log.first() {
		l.log.emit(context.Background(), "connection refused over --max-connections", "remote", remote.String(), "max_connections", l.max)
	}
}

// connKey is the context key of a request's *limitedConn.
type connKey struct{}

// connOf is the connection r came on, nil without a connection cap.
func connOf(r *http.Request) *limitedConn {
	lc, _ := r.Context().Value(connKey{}).(*limitedConn)
	return lc
}

// reserveOnly answers a request on a connection of the health reserve
// that is not for health or metrics with the 503 and reports true; the
// connection closes after any answer, to free the reserve.
func reserveOnly(w http.ResponseWriter, r *http.Request) bool {
	lc := connOf(r)
	if lc == nil || !lc.reserve {
		return false
	}
	w.Header().Set("Connection", "close")
	if quiet[r.URL.Path] {
		return false
	}
	lc.l.refused(lc.RemoteAddr())
	writeRendered(w, http.StatusServiceUnavailable, lc.l.body)
	return true
}

// limitedConn gives its place back when it is closed and tells its
// listener when a request begins arriving.
type limitedConn struct {
	net.Conn
	l        *limitListener
	reserve  bool          // in the health reserve, not under the cap
	headerBy time.Time     // a reserve connection's deadline for its request head
	waiting  atomic.Bool   // on the idle list (read without the lock)
	retryAt  atomic.Int64  // Unix ns before which a client refused 429 was told not to ask again (shed)
	elem     *list.Element // on the idle list; guarded by l.mu
	released bool          // its place given back; guarded by l.mu
}

// Read takes the connection off the idle list as its next request
// begins, so that it is not closed under a request.
func (c *limitedConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 && c.waiting.Load() {
		c.l.mu.Lock()
		c.l.busyLocked(c)
		c.l.mu.Unlock()
	}
	return n, err
}

// SetReadDeadline keeps a reserve connection's deadline for its request
// head: http.Server sets its own ReadHeaderTimeout over it.
func (c *limitedConn) SetReadDeadline(t time.Time) error {
	if c.reserve && (t.IsZero() || t.After(c.headerBy)) {
		t = c.headerBy
	}
	return c.Conn.SetReadDeadline(t)
}

func (c *limitedConn) SetDeadline(t time.Time) error {
	if err := c.Conn.SetWriteDeadline(t); err != nil {
		return err
	}
	return c.SetReadDeadline(t)
}

// CloseWrite lets http.Server half-close a connection before closing it,
// as it does to a *net.TCPConn.
func (c *limitedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.l.mu.Lock()
	c.l.releaseLocked(c)
	c.l.mu.Unlock()
	return err
}
