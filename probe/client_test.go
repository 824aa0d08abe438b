package probe

import (
	"context"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestClientRetries: a busy server (429) is asked again until it answers,
// within bounds; a connection the server closes as the request goes out
// is retried once; a refusal is not retried.
func TestClientRetries(t *testing.T) {
	defer func(d time.Duration) { busyPause = d }(busyPause)
	busyPause = time.Millisecond
	for _, tc := range []struct {
		name         string
		busy         int32 // 429s before a 200
		status       int   // what follows the 429s
		wantErr      string
		wantRequests int32
	}{
		{"busy twice", 2, 200, "", 3},
		{"always busy", 1000, 200, "answered 429", maxBusyRetries + 1},
		{"refused", 0, 400, "answered 400", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var n atomic.Int32
			url := startServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if n.Add(1) <= tc.busy {
					http.Error(w, `{"error":"busy"}`, http.StatusTooManyRequests)
					return
				}
				w.WriteHeader(tc.status)
				w.Write([]byte(`{"ok":true}`))
			}))
			c := &client{base: url, hc: http.DefaultClient}
			var out struct{ OK bool }
			err := c.call(context.Background(), "/x", map[string]any{"a": 1}, &out)
			if tc.wantErr == "" {
				require.NoError(t, err)
				require.True(t, out.OK)
			} else {
				require.ErrorContains(t, err, tc.wantErr)
				require.ErrorIs(t, err, ErrServer)
			}
			require.Equal(t, tc.wantRequests, n.Load())
		})
	}

	// A server that closes the first connection without answering.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	var conns atomic.Int32
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			if conns.Add(1) == 1 {
				buf := make([]byte, 4096)
				conn.Read(buf)
				conn.Close()
				continue
			}
			go http.Serve(&oneConn{conn: conn}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Write([]byte(`{"ok":true}`))
			}))
		}
	}()
	c := &client{base: "http://" + ln.Addr().String(), hc: &http.Client{}}
	var out struct{ OK bool }
	require.NoError(t, c.call(context.Background(), "/x", map[string]any{"a": 1}, &out))
	require.True(t, out.OK)
	require.Equal(t, int32(2), conns.Load())
}

// oneConn is a listener that yields one connection.
type oneConn struct {
	conn net.Conn
	done bool
}

func (l *oneConn) Accept() (net.Conn, error) {
	if l.done {
		return nil, net.ErrClosed // Serve returns; the connection is served on
	}
	l.done = true
	return l.conn, nil
}
func (l *oneConn) Close() error   { return nil }
func (l *oneConn) Addr() net.Addr { return l.conn.LocalAddr() }
