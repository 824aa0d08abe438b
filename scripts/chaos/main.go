// Command chaos runs the hostile-client probes of the hardening issue
// against a real `llorch-check serve` process on loopback and prints one
// line per probe: what was expected, what was observed, and the server's
// resident memory after it (and its peak so far). Every probe is bounded
// in count and time. Exit 1 if any probe saw the unexpected.
//
// Usage: go run ./scripts/chaos [-short] [-bin PATH]
// (without -bin it builds ./cmd/llorch-check into a temp dir).
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/llorch/llorch-check/internal/procstat"
)

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
	flag.Parse()
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
	s, err := start(*bin, "--parallel", "2", "--max-queue", "4", "--token-delay", "5ms", "--shutdown-timeout", "300ms",
		"--max-body-bytes", "65536")
	if err != nil {
		fatal(err)
	}
	defer s.cmd.Process.Kill()
	failed := 0
	fmt.Printf("%-28s %-44s %-52s %s\n", "probe", "expected", "observed", "server RSS / peak (MB)")
	for _, p := range probes {
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
	fmt.Printf("chaos: %d passed, %d failed\n", len(probes)-failed, failed)
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
	resp, err := http.Post(s.base+"/execute", "application/json", strings.NewReader(`{"job_id":"last","prompt":"Hello.","max_tokens":120}`))
	if err != nil {
		return err.Error(), false
	}
	defer resp.Body.Close()
	r := bufio.NewReader(resp.Body)
	r.ReadString('\n')
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return err.Error(), false
	}
	body, _ := io.ReadAll(r)
	done := make(chan error, 1)
	go func() { done <- s.cmd.Wait() }()
	code := 0
	select {
	case err := <-done:
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
	case <-time.After(10 * time.Second):
		return "did not exit", false
	}
	shutdown := strings.Contains(string(body), "SHUTDOWN")
	return fmt.Sprintf("SHUTDOWN event: %v, exit %d", shutdown, code), shutdown && code != 0
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "chaos:", err)
	os.Exit(2)
}
