//go:build browser

package browser

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"
)

// cdp is a minimal Chrome DevTools Protocol client over
// --remote-debugging-pipe: the browser reads NUL-terminated JSON commands
// on fd 3 and writes responses and events on fd 4. No websocket, no
// dependency.
type cdp struct {
	cmd     *exec.Cmd
	w       *os.File
	mu      sync.Mutex
	nextID  int
	pending map[int]chan cdpReply
	done    chan struct{}
}

type cdpReply struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// launch starts headless Chromium with the flags a shared CI machine needs.
func launch(t *testing.T, bin string) *cdp {
	t.Helper()
	cmdR, cmdW, err := os.Pipe() // we write commands, the browser reads fd 3
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe() // the browser writes fd 4, we read
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin,
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-dev-shm-usage", "--user-data-dir="+t.TempDir(), "--remote-debugging-pipe", "about:blank")
	cmd.ExtraFiles = []*os.File{cmdR, outW}
	stderr := &lockedBuf{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	cmdR.Close()
	outW.Close()
	c := &cdp{cmd: cmd, w: cmdW, pending: map[int]chan cdpReply{}, done: make(chan struct{})}
	go c.read(outR)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, _ = c.call(ctx, "", "Browser.close", nil)
		waited := make(chan error, 1)
		go func() { waited <- cmd.Wait() }()
		select {
		case <-waited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-waited
		}
		cmdW.Close()
		if t.Failed() {
			t.Logf("chromium stderr:\n%s", stderr.String())
		}
	})
	return c
}

type lockedBuf struct {
	mu sync.Mutex
	b  []byte
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b = append(l.b, p...)
	return len(p), nil
}

func (l *lockedBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(l.b)
}

func (c *cdp) read(r *os.File) {
	defer close(c.done)
	br := bufio.NewReader(r)
	for {
		msg, err := br.ReadBytes(0)
		if err != nil {
			return
		}
		var m struct {
			ID int `json:"id"`
			cdpReply
		}
		if json.Unmarshal(msg[:len(msg)-1], &m) != nil || m.ID == 0 {
			continue // an event: not needed here
		}
		c.mu.Lock()
		ch := c.pending[m.ID]
		delete(c.pending, m.ID)
		c.mu.Unlock()
		if ch != nil {
			ch <- m.cdpReply
		}
	}
}

// call sends one command (to a page session when session is set) and
// waits for its reply.
func (c *cdp) call(ctx context.Context, session, method string, params any) (json.RawMessage, error) {
	c.mu.Lock()
	c.nextID++
	id := c.nextID
	ch := make(chan cdpReply, 1)
	c.pending[id] = ch
	c.mu.Unlock()
	msg := map[string]any{"id": id, "method": method}
	if params != nil {
		msg["params"] = params
	}
	if session != "" {
		msg["sessionId"] = session
	}
	b, _ := json.Marshal(msg)
	if _, err := c.w.Write(append(b, 0)); err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	select {
	case r := <-ch:
		if r.Error != nil {
			return nil, fmt.Errorf("%s: %s", method, r.Error.Message)
		}
		return r.Result, nil
	case <-c.done:
		return nil, fmt.Errorf("%s: the browser closed the pipe", method)
	case <-ctx.Done():
		return nil, fmt.Errorf("%s: %w", method, ctx.Err())
	}
}

// open creates a tab at url and returns its session.
func (c *cdp) open(ctx context.Context, url string) (string, error) {
	res, err := c.call(ctx, "", "Target.createTarget", map[string]any{"url": url})
	if err != nil {
		return "", err
	}
	var target struct {
		TargetID string `json:"targetId"`
	}
	_ = json.Unmarshal(res, &target)
	res, err = c.call(ctx, "", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true})
	if err != nil {
		return "", err
	}
	var session struct {
		SessionID string `json:"sessionId"`
	}
	_ = json.Unmarshal(res, &session)
	return session.SessionID, nil
}

// eval evaluates expr in the page and decodes its JSON-able value into v.
func (c *cdp) eval(ctx context.Context, session, expr string, v any) error {
	res, err := c.call(ctx, session, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true})
	if err != nil {
		return err
	}
	var out struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		ExceptionDetails any `json:"exceptionDetails"`
	}
	if err := json.Unmarshal(res, &out); err != nil {
		return err
	}
	if out.ExceptionDetails != nil {
		return fmt.Errorf("evaluating %q: %v", expr, out.ExceptionDetails)
	}
	if len(out.Result.Value) == 0 {
		return nil
	}
	return json.Unmarshal(out.Result.Value, v)
}

// hover moves the mouse to (x, y) of the page's viewport, as a user
// pointing at what is there: the page sees mouseover and :hover.
func (c *cdp) hover(ctx context.Context, session string, x, y float64) error {
	_, err := c.call(ctx, session, "Input.dispatchMouseEvent", map[string]any{"type": "mouseMoved", "x": x, "y": y})
	return err
}

// press types one key as a user would (down, then up): the page sees
// keydown and the browser's default action, such as Tab moving the focus.
func (c *cdp) press(ctx context.Context, session, key string) error {
	vk := map[string]int{"Tab": 9, "Enter": 13, "Escape": 27, "End": 35, "Home": 36,
		"ArrowLeft": 37, "ArrowUp": 38, "ArrowRight": 39, "ArrowDown": 40}[key]
	for _, typ := range []string{"keyDown", "keyUp"} {
		if _, err := c.call(ctx, session, "Input.dispatchKeyEvent", map[string]any{"type": typ, "key": key, "code": key,
			"windowsVirtualKeyCode": vk, "nativeVirtualKeyCode": vk}); err != nil {
			return err
		}
	}
	return nil
}
