package probe

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"syscall"
	"time"
)

// ErrServer wraps every failure to get a usable answer from the server.
var ErrServer = errors.New("server")

// statusError is an answer other than 200 OK.
type statusError struct {
	code int
	msg  string
}

func (e *statusError) Error() string { return ErrServer.Error() + ": " + e.msg }
func (e *statusError) Unwrap() error { return ErrServer }

// refused reports whether err is the server refusing the request (4xx),
// as opposed to failing or being unreachable.
func refused(err error) bool {
	var se *statusError
	return errors.As(err, &se) && se.code >= 400 && se.code < 500
}

// A busy server (429) is asked again up to maxBusyRetries times, waiting
// busyPause longer each time (about 10 s in all).
const maxBusyRetries = 12

var busyPause = 150 * time.Millisecond // a variable for the tests

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// maxAnswer bounds what is read of one answer.
const maxAnswer = 64 << 20

// client speaks JSON over HTTP to one server.
type client struct {
	base   string
	apiKey string
	hc     *http.Client
	seen   map[string]string // during detection: what each discovery route answered
}

func (c *client) request(ctx context.Context, method, path string, body any) (*http.Response, error) {
	var b []byte
	if body != nil {
		var err error
		if b, err = json.Marshal(body); err != nil {
			return nil, fmt.Errorf("encoding the request to %s: %w", path, err)
		}
	}
	// A server may close a kept-alive connection just as a request goes
	// out on it (cpp-httplib, llama.cpp's, does after a few requests); Go
	// retries only idempotent methods then, and every request here is one
	// in effect (greedy, or a read), so it is sent once more. A server
	// that is busy (429, the concurrent checks fill small queues) is
	// asked again after a pause.
	reset, busy := false, 0
	for {
		var rd io.Reader
		if body != nil {
			rd = bytes.NewReader(b)
		}
		req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
		if err != nil {
			return nil, fmt.Errorf("%w: --endpoint %s: %v", ErrServer, c.base, err)
		}
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		if c.apiKey != "" {
			req.Header.Set("Authorization", "Bearer "+c.apiKey)
		}
		resp, err := c.hc.Do(req)
		switch {
		case err == nil && resp.StatusCode == http.StatusTooManyRequests && busy < maxBusyRetries:
			resp.Body.Close()
			busy++
			if err := sleep(ctx, time.Duration(busy)*busyPause); err != nil {
				return nil, err
			}
			continue
		case err == nil:
			return resp, nil
		case !reset && ctx.Err() == nil && (errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET)):
			reset = true
			continue
		}
		return nil, fmt.Errorf("%w: %v", ErrServer, err)
	}
}

// call sends body (nil: a GET) to path and decodes a 200 answer into out.
func (c *client) call(ctx context.Context, path string, body, out any) error {
	method := http.MethodPost
	if body == nil {
		method = http.MethodGet
	}
	resp, err := c.request(ctx, method, path, body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return fmt.Errorf("%w: reading the answer of %s: %v", ErrServer, path, err)
	}
	if resp.StatusCode != http.StatusOK {
		return &statusError{code: resp.StatusCode, msg: fmt.Sprintf("%s %s%s answered %d: %.300s%s", method, c.base, path, resp.StatusCode, bytes.TrimSpace(data), c.keyHint(resp.StatusCode))}
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("%w: %s%s answered something that is not its JSON: %v", ErrServer, c.base, path, err)
	}
	return nil
}

// keyHint says what an answer of status code means for the key: a 401 or
// 403 is a server that wants an API key, or refused the one given; "" for
// any other code.
func (c *client) keyHint(code int) string {
	switch {
	case code != http.StatusUnauthorized && code != http.StatusForbidden:
		return ""
	case c.apiKey == "":
		return " (the server wants an API key: pass --api-key KEY or set $LLORCH_API_KEY)"
	}
	return " (the server refused the API key given)"
}

// post sends body to path for a streamed answer: the response when it is
// 200 OK, else the status as an error.
func (c *client) post(ctx context.Context, path string, body any) (*http.Response, error) {
	resp, err := c.request(ctx, http.MethodPost, path, body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return nil, &statusError{code: resp.StatusCode, msg: fmt.Sprintf("POST %s%s answered %d: %.300s%s", c.base, path, resp.StatusCode, bytes.TrimSpace(data), c.keyHint(resp.StatusCode))}
	}
	return resp, nil
}

// sse posts body to path and hands each Server-Sent Event to fn until the
// stream ends or fn returns done.
func (c *client) sse(ctx context.Context, path string, body any, fn func(event string, data []byte) (done bool, err error)) error {
	resp, err := c.post(ctx, path, body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		return fmt.Errorf("%w: POST %s%s answered Content-Type %q, not an event stream", ErrServer, c.base, path, ct)
	}
	sc := bufio.NewScanner(io.LimitReader(resp.Body, maxAnswer))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	var event string
	var data []byte
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if event == "" && data == nil {
				continue
			}
			done, err := fn(event, data)
			if err != nil || done {
				return err
			}
			event, data = "", nil
		case strings.HasPrefix(line, ":"): // a comment, e.g. a keep-alive
		case strings.HasPrefix(line, "event:"):
			event = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
		case strings.HasPrefix(line, "data:"):
			if data != nil {
				data = append(data, '\n')
			}
			data = append(data, strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " ")...)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%w: reading the event stream of %s: %v", ErrServer, path, err)
	}
	return fmt.Errorf("%w: the event stream of %s%s ended without a terminal end or error event (truncated)", ErrServer, c.base, path)
}

// ndjson posts body to path and hands each line of a newline-delimited
// JSON stream (Ollama's) to fn until fn returns done; a stream that ends
// first was truncated.
func (c *client) ndjson(ctx context.Context, path string, body any, fn func(line []byte) (done bool, err error)) error {
	resp, err := c.post(ctx, path, body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(io.LimitReader(resp.Body, maxAnswer))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		done, err := fn(sc.Bytes())
		if err != nil || done {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%w: reading the stream of %s: %v", ErrServer, path, err)
	}
	return fmt.Errorf("%w: the stream of %s%s ended before its done line (truncated)", ErrServer, c.base, path)
}
