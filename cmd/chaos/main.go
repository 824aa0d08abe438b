//go:build unix

// Command chaos runs the hostile-client probes of the hardening issues
// against a real `llorch-check serve` process on loopback, and the hostile
// inputs of the command line (special files, dump over its own set or
// killed mid-way) against the binary, and prints one line per probe: what
// was expected, what was observed, and the server's resident memory after
// it (and its peak so far). Every probe is bounded in count and time.
// Exit 1 if any probe saw the unexpected. Run it from the repository root.
//
// Usage: go run ./cmd/chaos [-short] [-bin PATH] [-run REGEXP]
// (without -bin it builds ./cmd/llorch-check into a temp dir).
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/llorch/llorch-check/internal/procstat"
	"github.com/llorch/llorch-check/references"
)

// binPath is the binary under test, for the probes that run their own
// process.
var binPath string

type server struct {
	cmd  *exec.Cmd
	base string
	logs *bytes.Buffer
	mu   sync.Mutex
}

type probe struct {
	name, expected string
	run            func(s *server, short bool) (observed string, ok bool)
}

func main() {
	short := flag.Bool("short", false, "fewer repetitions (the make test version)")
	bin := flag.String("bin", "", "llorch-check binary (default: build one)")
	only := flag.String("run", "", "run only the probes whose name matches this regular expression")
	flag.Parse()
	match, err := regexp.Compile(*only)
	if err != nil {
		fatal(fmt.Errorf("-run: %w", err))
	}
	if *bin == "" {
		dir, err := os.MkdirTemp("", "chaos-")
		if err != nil {
			fatal(err)
		}
		defer os.RemoveAll(dir)
		*bin = filepath.Join(dir, "llorch-check")
		if out, err := exec.Command("go", "build", "-o", *bin, "./cmd/llorch-check").CombinedOutput(); err != nil {
			fatal(fmt.Errorf("building llorch-check: %v\n%s", err, out))
		}
	}
	binPath = *bin
	s, err := start(*bin, "--parallel", "2", "--max-queue", "4", "--token-delay", "5ms", "--shutdown-timeout", "300ms",
		"--max-body-bytes", "65536")
	if err != nil {
		fatal(err)
	}
	defer s.cmd.Process.Kill()
	failed, ran := 0, 0
	fmt.Printf("%-28s %-44s %-52s %s\n", "probe", "expected", "observed", "server RSS / peak (MB)")
	for _, p := range probes {
		if !match.MatchString(p.name) {
			continue
		}
		ran++
		observed, ok := p.run(s, *short)
		rss, peak := s.memory()
		mark := "ok"
		if !ok {
			mark, failed = "UNEXPECTED", failed+1
		}
		mem := fmt.Sprintf("%4.0f / %4.0f", rss/1e6, peak/1e6)
		if peak == 0 {
			mem = "  (exited)"
		}
		fmt.Printf("%-28s %-44s %-52s %s  %s\n", p.name, p.expected, observed, mem, mark)
	}
	fmt.Printf("chaos: %d passed, %d failed\n", ran-failed, failed)
	if failed > 0 {
		os.Exit(1)
	}
}

var probes = []probe{
	{"burst of 40 /generate", "200 or 429 each, never 5xx", burst},
	{"malformed bodies", "400 naming the problem, never 5xx", malformed},
	{"oversized body (1 MB)", "413", oversized},
	{"job_id of 1000 bytes", "400 naming job_id", longJobID},
	{"disconnect mid-stream x5", "slot freed within 1 s", disconnects},
	{"cancel before execute", "stream ends CANCELLED, no token", earlyCancel},
	{"slow reader", "stream completes, server healthy", slowReader},
	// [T,V] logits would be 4 × 127 × 50257 × 4 B = 102 MB.
	{"scoring 127 tokens x4", "200, RSS grows < 60 MB", scoring},
	{"invalid UTF-8 on every route", "400 naming the field, constraint utf8", invalidUTF8},
	{"named pipe as a model file", "exit 2 naming it, never blocked", namedPipes},
	{"dump over its --references", "exit 2, the set untouched", dumpOverReferences},
	{"dump killed at random", "a complete set there after each kill", dumpKilled},
	{"hostile chat templates", "exit 2 naming the file and the limit", hostileTemplates},
	{"60k-char prompts at once", "400 each, RSS grows < 40 MB", longPrompts},
	{"config.json of 16 MiB + 1", "exit 2 naming the file and the cap", oversizedConfig},
	{"KV cache below the context", "200 without max_tokens", kvBelowContext},
	{"model.safetensors changed", "new tokens though size, mtime kept", weightsCacheContent},
	{"cache dir not writable", "exit 0, built-ins copied to $TMPDIR", unwritableCache},
	{"cap full of idle sockets", "health 200, the oldest idle closed", idleSockets},
	{"retry storm", "goodput >= 80% of polite clients'", retryStorm},
	{"request head of 40 KB", "431, then /healthz 200", headerCap},
	{"second SIGTERM mid-stream", "one final event, SHUTDOWN; exit != 0", secondSignal},
	{"drain past the deadline", "SHUTDOWN event, exit != 0", drainPastDeadline},
}

func start(bin string, args ...string) (*server, error) {
	cmd := exec.Command(bin, append([]string{"serve", "--port", "0"}, args...)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &server{cmd: cmd, logs: &bytes.Buffer{}}
	lines := bufio.NewScanner(stderr)
	for lines.Scan() {
		s.logs.Write(append(lines.Bytes(), '\n'))
		var rec map[string]any
		if json.Unmarshal(lines.Bytes(), &rec) == nil && rec["msg"] == "listening" {
			s.base = "http://" + rec["addr"].(string)
			break
		}
	}
	if s.base == "" {
		return nil, fmt.Errorf("serve did not start:\n%s", s.logs)
	}
	go func() {
		for lines.Scan() {
			s.mu.Lock()
			s.logs.Write(append(lines.Bytes(), '\n'))
			s.mu.Unlock()
		}
	}()
	for range 600 {
		if resp, err := http.Get(s.base + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s, nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil, fmt.Errorf("serve did not become ready")
}

// memory is the server's VmRSS and VmHWM in bytes.
func (s *server) memory() (rss, peak float64) {
	r, p := procstat.Memory(s.cmd.Process.Pid)
	return float64(r), float64(p)
}

func (s *server) post(path, body string) (int, string) {
	resp, err := http.Post(s.base+path, "application/json", strings.NewReader(body))
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, string(b)
}

func (s *server) health() map[string]any {
	resp, err := http.Get(s.base + "/health")
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	var h map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&h)
	return h
}

func burst(s *server, short bool) (string, bool) {
	n := 40
	if short {
		n = 12
	}
	codes := map[int]int{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			code, _ := s.post("/generate", `{"prompts":["Hello."],"max_tokens":8}`)
			mu.Lock()
			codes[code]++
			mu.Unlock()
		})
	}
	wg.Wait()
	return fmt.Sprintf("%d×200, %d×429, %d other", codes[200], codes[429], n-codes[200]-codes[429]),
		codes[200]+codes[429] == n && codes[200] > 0
}

func malformed(s *server, _ bool) (string, bool) {
	bodies := []string{`{`, `[]`, `{"prompts":"x"}`, `{"prompts":[1,2]}`, `{"job_id":"a","prompt":"x","max_tokens":"many"}`,
		`{"job_id":"a","prompt":"x","temperature":1e999}`, "\x00\xff", `{"prompts":["x"],"max_tokens":-1}`}
	paths := []string{"/generate", "/generate", "/generate", "/generate", "/execute", "/execute", "/v1/completions", "/generate"}
	bad := 0
	for i, b := range bodies {
		if code, _ := s.post(paths[i], b); code != http.StatusBadRequest {
			bad++
		}
	}
	return fmt.Sprintf("%d of %d answered 400", len(bodies)-bad, len(bodies)), bad == 0
}

func oversized(s *server, _ bool) (string, bool) {
	code, _ := s.post("/generate", `{"prompts":["`+strings.Repeat("a", 1<<20)+`"]}`)
	return fmt.Sprintf("%d", code), code == http.StatusRequestEntityTooLarge
}

func longJobID(s *server, _ bool) (string, bool) {
	code, body := s.post("/execute", `{"job_id":"`+strings.Repeat("j", 1000)+`","prompt":"Hi"}`)
	return fmt.Sprintf("%d, names job_id: %v", code, strings.Contains(body, `"job_id"`)),
		code == http.StatusBadRequest && strings.Contains(body, `"job_id"`)
}

func disconnects(s *server, _ bool) (string, bool) {
	for i := range 5 {
		resp, err := http.Post(s.base+"/execute", "application/json",
			strings.NewReader(fmt.Sprintf(`{"job_id":"dc%d","prompt":"Hello.","max_tokens":200}`, i)))
		if err != nil {
			return err.Error(), false
		}
		bufio.NewReader(resp.Body).ReadString('\n')
		resp.Body.Close()
	}
	deadline := time.Now().Add(time.Second)
	for time.Now().Before(deadline) {
		if h := s.health(); h != nil && h["running"] == 0.0 && h["queued"] == 0.0 {
			return "slots free", true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return fmt.Sprintf("still running after 1 s: %v", s.health()["running"]), false
}

func earlyCancel(s *server, _ bool) (string, bool) {
	s.post("/cancel", `{"job_id":"early"}`)
	code, body := s.post("/execute", `{"job_id":"early","prompt":"Hello.","max_tokens":20}`)
	tokens := strings.Count(body, "event: token")
	ok := code == http.StatusOK && strings.Contains(body, "CANCELLED") && tokens == 0
	return fmt.Sprintf("%d, %d tokens, CANCELLED: %v", code, tokens, strings.Contains(body, "CANCELLED")), ok
}

func slowReader(s *server, short bool) (string, bool) {
	resp, err := http.Post(s.base+"/execute", "application/json", strings.NewReader(`{"job_id":"slow","prompt":"Hello.","max_tokens":20}`))
	if err != nil {
		return err.Error(), false
	}
	defer resp.Body.Close()
	r := bufio.NewReader(resp.Body)
	last := ""
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			break
		}
		if name, ok := strings.CutPrefix(strings.TrimSpace(line), "event: "); ok {
			last = name
			time.Sleep(20 * time.Millisecond)
		}
	}
	h := s.health()
	return fmt.Sprintf("last event %q, health %v", last, h["status"]), last == "end" && h["status"] == "healthy"
}

func scoring(s *server, _ bool) (string, bool) {
	before, _ := s.memory()
	ids := make([]string, 127)
	for i := range ids {
		ids[i] = strconv.Itoa((i*7919 + 13) % 50257)
	}
	body := `{"prompt":[` + strings.Join(ids, ",") + `],"max_tokens":0,"echo":true,"logprobs":5,"temperature":0}`
	var wg sync.WaitGroup
	codes := make([]int, 4)
	for i := range codes {
		wg.Go(func() { codes[i], _ = s.post("/v1/completions", body) })
	}
	wg.Wait()
	after, _ := s.memory()
	grew := (after - before) / 1e6
	ok := grew < 60
	for _, c := range codes {
		ok = ok && c == http.StatusOK
	}
	return fmt.Sprintf("%v, RSS +%.0f MB", codes, grew), ok
}

func drainPastDeadline(s *server, _ bool) (string, bool) {
	r, closeStream, err := s.stream(`{"job_id":"last","prompt":"Hello.","max_tokens":120}`)
	if err != nil {
		return err.Error(), false
	}
	defer closeStream()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return err.Error(), false
	}
	body, _ := io.ReadAll(r)
	code, ok := s.exit()
	if !ok {
		return "did not exit", false
	}
	shutdown := strings.Contains(string(body), "SHUTDOWN")
	return fmt.Sprintf("SHUTDOWN event: %v, exit %d", shutdown, code), shutdown && code != 0
}

// stream starts an /execute stream and reads its first line.
func (s *server) stream(body string) (*bufio.Reader, func() error, error) {
	resp, err := http.Post(s.base+"/execute", "application/json", strings.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	r := bufio.NewReader(resp.Body)
	_, err = r.ReadString('\n')
	return r, resp.Body.Close, err
}

// exit waits up to 10 s for the server to exit and returns its exit code.
func (s *server) exit() (int, bool) {
	done := make(chan error, 1)
	go func() { done <- s.cmd.Wait() }()
	select {
	case err := <-done:
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode(), true
		}
		return 0, true
	case <-time.After(10 * time.Second):
		return 0, false
	}
}

func invalidUTF8(s *server, _ bool) (string, bool) {
	for _, c := range []struct{ path, body, field string }{
		{"/execute", `{"job_id":"u8","prompt":"Hello ` + "\xff" + `","max_tokens":2}`, "prompt"},
		{"/cancel", `{"job_id":"` + "\xfe" + `"}`, "job_id"},
		{"/generate", `{"prompts":["ok","` + "\xe2\x82" + `"],"max_tokens":2}`, "prompts[1]"},
		{"/loglikelihood", `{"prompts":["The"],"continuations":[" ` + "\xff" + `"]}`, "continuations[0]"},
		{"/v1/completions", `{"prompt":"Hi \udc80","max_tokens":2}`, "prompt"},
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":"caf` + "\xe9" + `"}],"max_tokens":2}`, "messages[0].content"},
		{"/v1/embeddings", `{"input":"` + "\x80" + `"}`, "input"},
		{"/tokenize", `{"prompt":"` + "\xf0\x9f" + `"}`, "prompt"},
	} {
		code, body := s.post(c.path, c.body)
		named := strings.Contains(body, `"field":"`+c.field+`"`) || strings.Contains(body, `"param":"`+c.field+`"`)
		if code != http.StatusBadRequest || !named || !strings.Contains(body, "valid UTF-8") {
			return fmt.Sprintf("%s: %d %.60q", c.path, code, body), false
		}
	}
	return "8 routes: 400 naming the field", true
}

// namedPipes puts a named pipe no one writes to in place of each file of a
// model and runs generate on it: each must be refused (exit 2) naming it,
// not hang in open().
func namedPipes(_ *server, _ bool) (string, bool) {
	for _, name := range []string{"config.json", "model.safetensors", "vocab.json"} {
		dir, err := copyDir("testdata/tiny-gpt2")
		if err != nil {
			return err.Error(), false
		}
		defer os.RemoveAll(filepath.Dir(dir))
		fifo := filepath.Join(dir, name)
		if err := os.Remove(fifo); err != nil {
			return err.Error(), false
		}
		if err := syscall.Mkfifo(fifo, 0o644); err != nil {
			return err.Error(), false
		}
		code, stderr := runCLI(10*time.Second, "generate", "--model", dir, "--prompt", "Hi", "--max-tokens", "1")
		if code != 2 || !strings.Contains(stderr, fifo) {
			return fmt.Sprintf("%s: exit %d, %.60s", name, code, stderr), false
		}
	}
	return "3 files refused, exit 2", true
}

func dumpOverReferences(_ *server, _ bool) (string, bool) {
	refs, err := copyDir("testdata/references/tiny-gpt2")
	if err != nil {
		return err.Error(), false
	}
	defer os.RemoveAll(filepath.Dir(refs))
	before, err := os.ReadFile(filepath.Join(refs, references.ManifestFile))
	if err != nil {
		return err.Error(), false
	}
	code, stderr := runCLI(time.Minute, "dump", "--model", "testdata/tiny-gpt2", "--references", refs, "--out", refs, "--force")
	after, err := os.ReadFile(filepath.Join(refs, references.ManifestFile))
	untouched := err == nil && bytes.Equal(before, after)
	return fmt.Sprintf("exit %d, untouched: %v", code, untouched), code == 2 && untouched && strings.Contains(stderr, "--references")
}

// dumpKilled replaces a set with dump --force and kills it (SIGKILL) at a
// random moment of the run, again and again: the set must open after each.
func dumpKilled(_ *server, short bool) (string, bool) {
	dir, err := os.MkdirTemp("", "chaos-dump-")
	if err != nil {
		return err.Error(), false
	}
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "set")
	dump := func() *exec.Cmd {
		return exec.Command(binPath, "dump", "--model", "testdata/tiny-gpt2", "--references", "testdata/references/tiny-gpt2", "--out", out, "--force")
	}
	start := time.Now()
	if b, err := dump().CombinedOutput(); err != nil {
		return fmt.Sprintf("first dump: %v %.60s", err, b), false
	}
	took := time.Since(start)
	n := 20
	if short {
		n = 6
	}
	for i := range n {
		cmd := dump()
		if err := cmd.Start(); err != nil {
			return err.Error(), false
		}
		time.Sleep(time.Duration(rand.Int64N(int64(took) * 11 / 10)))
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if _, err := references.Open(out); err != nil {
			return fmt.Sprintf("kill %d: %v", i+1, err), false
		}
	}
	return fmt.Sprintf("%d kills, set complete after each", n), true
}

// secondSignal sends a server with a stream open SIGTERM twice: the
// stream still ends with exactly one final event, an error SHUTDOWN.
func secondSignal(_ *server, _ bool) (string, bool) {
	s, err := start(binPath, "--token-delay", "50ms", "--shutdown-timeout", "60s")
	if err != nil {
		return err.Error(), false
	}
	defer s.cmd.Process.Kill()
	r, closeStream, err := s.stream(`{"job_id":"twice","prompt":"Hello.","max_tokens":100}`)
	if err != nil {
		return err.Error(), false
	}
	defer closeStream()
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	for range 100 {
		if resp, err := http.Get(s.base + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusServiceUnavailable {
				break
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	body, _ := io.ReadAll(r)
	final := strings.Count(string(body), "event: end") + strings.Count(string(body), "event: error")
	code, ok := s.exit()
	if !ok {
		return "did not exit", false
	}
	shutdown := strings.Contains(string(body), "SHUTDOWN")
	return fmt.Sprintf("%d final events, SHUTDOWN: %v, exit %d", final, shutdown, code), final == 1 && shutdown && code != 0
}

// runCLI runs the binary, killed after limit, and returns its exit code
// (-1 if it had to be killed) and stderr.
func runCLI(limit time.Duration, args ...string) (int, string) {
	return runCmd(exec.Command(binPath, args...), limit)
}

// runCmd is runCLI for a command its caller set up (a directory, an
// environment).
func runCmd(cmd *exec.Cmd, limit time.Duration) (int, string) {
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return -1, err.Error()
	}
	timer := time.AfterFunc(limit, func() { _ = cmd.Process.Kill() })
	defer timer.Stop()
	err := cmd.Wait()
	if ee, ok := err.(*exec.ExitError); ok {
		if ee.ExitCode() < 0 {
			return -1, "killed after " + limit.String() + ": " + stderr.String()
		}
		return ee.ExitCode(), stderr.String()
	}
	return 0, stderr.String()
}

// copyDir copies a directory of regular files into a temporary directory
// of its own, which the caller removes (filepath.Dir of the copy).
func copyDir(src string) (string, error) {
	dst, err := os.MkdirTemp("", "chaos-copy-")
	if err != nil {
		return "", err
	}
	dst = filepath.Join(dst, filepath.Base(src))
	return dst, os.CopyFS(dst, os.DirFS(src))
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "chaos:", err)
	os.Exit(2)
}
