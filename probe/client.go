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
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, fmt.Errorf("encoding the request to %s: %w", path, err)
		}
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
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrServer, err)
	}
	return resp, nil
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
		return &statusError{code: resp.StatusCode, msg: fmt.Sprintf("%s %s%s answered %d: %.300s", method, c.base, path, resp.StatusCode, data)}
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("%w: %s%s answered something that is not its JSON: %v", ErrServer, c.base, path, err)
	}
	return nil
}

// sse posts body to path and hands each Server-Sent Event to fn until the
// stream ends or fn returns done.
func (c *client) sse(ctx context.Context, path string, body any, fn func(event string, data []byte) (done bool, err error)) error {
	resp, err := c.request(ctx, http.MethodPost, path, body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("%w: POST %s%s answered %d: %.300s", ErrServer, c.base, path, resp.StatusCode, data)
	}
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
	resp, err := c.request(ctx, http.MethodPost, path, body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return &statusError{code: resp.StatusCode, msg: fmt.Sprintf("POST %s%s answered %d: %.300s", c.base, path, resp.StatusCode, data)}
	}
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
