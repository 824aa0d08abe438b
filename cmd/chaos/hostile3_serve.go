//go:build unix

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Probes of issue 43 against serve's connections and admission (rows 3,
// 7, 8 and 9).

// kvBelowContext: with a KV cache smaller than the context, a request
// without max_tokens (as the OpenAI SDKs send it) is answered, its
// default taken from what the cache holds, not refused for a value the
// client never sent.
func kvBelowContext(_ *server, _ bool) (string, bool) {
	s, err := start(binPath, "--kv-cache-tokens", "64")
	if err != nil {
		return err.Error(), false
	}
	defer s.cmd.Process.Kill()
	for _, c := range []struct{ path, body string }{
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":"Hello there."}]}`},
		{"/v1/completions", `{"prompt":"The library opened"}`},
		{"/v1/responses", `{"input":"Hello there."}`},
	} {
		if code, body := s.post(c.path, c.body); code != http.StatusOK {
			return fmt.Sprintf("%s: %d %.50s", c.path, code, body), false
		}
	}
	return "3 routes: 200 without max_tokens", true
}

// idleSockets fills serve's --max-connections with sockets that send
// nothing: health checks and a scrape are still answered 200, each
// taking the place of the socket that waited longest, which is closed.
func idleSockets(_ *server, short bool) (string, bool) {
	n := 1000
	if short {
		n = 100
	}
	s, err := start(binPath, "--max-connections", strconv.Itoa(n))
	if err != nil {
		return err.Error(), false
	}
	defer s.cmd.Process.Kill()
	addr := strings.TrimPrefix(s.base, "http://")
	idle := make([]net.Conn, 0, n)
	defer func() {
		for _, c := range idle {
			c.Close()
		}
	}()
	for range n {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return fmt.Sprintf("dial %d: %v", len(idle)+1, err), false
		}
		idle = append(idle, c)
	}
	time.Sleep(100 * time.Millisecond) // every socket accepted
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 5 * time.Second}
	paths := []string{"/healthz", "/readyz", "/health", "/metrics"}
	for _, path := range paths {
		resp, err := client.Get(s.base + path)
		if err != nil {
			return fmt.Sprintf("%s: %v", path, err), false
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Sprintf("%s: %d", path, resp.StatusCode), false
		}
	}
	// The first health check took the oldest socket's place.
	_ = idle[0].SetReadDeadline(time.Now().Add(time.Second))
	_, err = idle[0].Read(make([]byte, 1))
	closed := err != nil && !errors.Is(err, os.ErrDeadlineExceeded)
	return fmt.Sprintf("%d idle: 4 x 200, oldest closed: %v", n, closed), closed
}

// retryStorm: the same clients for the same time, first honouring the
// 429's Retry-After, then asking again at once: the storm keeps at least
// 80% of the polite clients' goodput. Goodput is counted per second of
// the server's CPU (process_cpu_seconds_total), not of the clock: on a
// shared machine the clock's rate moves with other processes' load by
// more than the storm's effect, while the CPU a completion costs moves
// only with what the server does, refusals included. A server of its
// own, without --token-delay, so that the admitted work is CPU.
func retryStorm(_ *server, short bool) (string, bool) {
	d := 5 * time.Second
	if short {
		d = 2 * time.Second
	}
	s, err := start(binPath, "--parallel", "2", "--max-queue", "4")
	if err != nil {
		return err.Error(), false
	}
	defer s.cmd.Process.Kill()
	const clients = 32 * 2 // 32 x --parallel
	phase := func(polite bool) (ok, refused int64, cpu float64) {
		ctx, cancel := context.WithTimeout(context.Background(), d)
		defer cancel()
		client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
		defer client.CloseIdleConnections()
		var done, shed atomic.Int64
		var wg sync.WaitGroup
		before := s.cpuSeconds()
		for range clients {
			wg.Go(func() {
				for ctx.Err() == nil {
					req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.base+"/generate",
						strings.NewReader(`{"prompts":["Hello."],"max_tokens":4}`))
					req.Header.Set("Content-Type", "application/json")
					resp, err := client.Do(req)
					if err != nil {
						continue
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					switch resp.StatusCode {
					case http.StatusOK:
						done.Add(1)
					case http.StatusTooManyRequests:
						shed.Add(1)
						wait, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
						if polite {
							select {
							case <-ctx.Done():
							case <-time.After(time.Duration(wait) * time.Second):
							}
						}
					}
				}
			})
		}
		wg.Wait()
		return done.Load(), shed.Load(), s.cpuSeconds() - before
	}
	politeOK, _, politeCPU := phase(true)
	stormOK, stormShed, stormCPU := phase(false)
	if politeOK == 0 || politeCPU <= 0 || stormCPU <= 0 {
		return fmt.Sprintf("polite: %d done in %.2f s CPU", politeOK, politeCPU), false
	}
	polite, storm := float64(politeOK)/politeCPU, float64(stormOK)/stormCPU
	return fmt.Sprintf("%.0f vs %.0f done/CPU s (%.2f), %d x 429", storm, polite, storm/polite, stormShed), storm >= 0.8*polite
}

// cpuSeconds is the server's process_cpu_seconds_total, 0 if unread.
func (s *server) cpuSeconds() float64 {
	resp, err := http.Get(s.base + "/metrics")
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "process_cpu_seconds_total "); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return f
		}
	}
	return 0
}

// headerCap: a request head beyond serve's 32 KB cap is answered 431,
// and the server serves on.
func headerCap(s *server, _ bool) (string, bool) {
	c, err := net.Dial("tcp", strings.TrimPrefix(s.base, "http://"))
	if err != nil {
		return err.Error(), false
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	_, err = io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: chaos\r\nX-Long: "+strings.Repeat("h", 40<<10)+"\r\n\r\n")
	if err != nil {
		return err.Error(), false
	}
	line, _ := io.ReadAll(io.LimitReader(c, 12))
	status := strings.TrimPrefix(string(line), "HTTP/1.1 ")
	resp, err := http.Get(s.base + "/healthz")
	if err != nil {
		return err.Error(), false
	}
	resp.Body.Close()
	return fmt.Sprintf("%s, then /healthz %d", status, resp.StatusCode), status == "431" && resp.StatusCode == http.StatusOK
}
