package server

import (
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

// maxRefusing bounds the refusals being written at once; beyond it a
// connection over the cap is closed without an answer, so refusing
// cannot itself use up the file descriptors the cap protects.
const maxRefusing = 64

// refusalLinger is how long a refused connection is kept open after its
// 503 for the client to read it: closing a socket with the request still
// unread would reset it, and the client would see a reset, not the 503.
const refusalLinger = time.Second

// LimitConnections wraps ln so that at most max connections are open at
// once (max ≤ 0: no cap). A connection beyond the cap is accepted only to
// be answered 503 TOO_MANY_CONNECTIONS, naming the cap, and closed; it is
// counted in llorch_connections_refused_total and logged at a bounded
// rate. Without a cap, a flood of idle connections would use up the
// process's file descriptors and every accept would fail with "too many
// open files".
func (s *Server) LimitConnections(ln net.Listener, max int) net.Listener {
	if max <= 0 {
		return ln
	}
	s.metrics.maxConns.Set(float64(max))
	body, _ := json.Marshal(map[string]apiError{"error": {
		Message: fmt.Sprintf("too many open connections: this server holds at most %d at once (--max-connections); retry later", max),
		Type:    errorType(http.StatusServiceUnavailable), Code: codeTooManyConnections,
	}})
	resp := fmt.Appendf(nil, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nContent-Length: %d\r\nRetry-After: %d\r\nConnection: close\r\n\r\n%s",
		len(body), retryAfterSeconds, body)
	return &limitListener{Listener: ln, max: int64(max), refusal: resp, s: s,
		refusing: make(chan struct{}, maxRefusing),
		log:      newBurstLog(s.log, slog.LevelWarn, "more connections refused over --max-connections, not logged one by one")}
}

type limitListener struct {
	net.Listener
	s        *Server
	max      int64
	open     atomic.Int64
	refusal  []byte        // the whole 503 response
	refusing chan struct{} // refusals being written
	log      *burstLog
}

// Accept returns the next connection within the cap, refusing those
// beyond it on the way.
func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.open.Add(1) <= l.max {
			l.s.metrics.openConns.Inc()
			return &limitedConn{Conn: c, l: l}, nil
		}
		l.open.Add(-1)
		l.refuse(c)
	}
}

// refuse answers c with the 503 and closes it, in the background: the
// client's request is read and dropped until it closes or refusalLinger
// passes, so that the close does not reset the connection under the
// answer.
func (l *limitListener) refuse(c net.Conn) {
	l.s.metrics.connsRefused.Inc()
	l.log.event(context.Background(), "connection refused over --max-connections",
		"remote", c.RemoteAddr().String(), "max_connections", l.max)
	select {
	case l.refusing <- struct{}{}:
	default:
		c.Close()
		return
	}
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

// limitedConn gives its place under the cap back when it is closed.
type limitedConn struct {
	net.Conn
	l    *limitListener
	once sync.Once
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
	c.once.Do(func() {
		c.l.open.Add(-1)
		c.l.s.metrics.openConns.Dec()
	})
	return err
}
