// Command fleet runs several `llorch-check serve` workers on loopback behind
// HAProxy (least connections, readiness-gated, retries on connection
// failures and 503s, as deploy/compose/haproxy.cfg), sends a bounded burst
// of completions, stops one worker mid-burst (SIGTERM, then SIGKILL), and
// checks that every request was answered: the balancer routed around the
// dying worker, retrying what it could not finish. A fourth worker with a
// planted bug never passes its start-up validation, so it must never
// receive a request. Prints one line per fact; exit 1 on a lost request.
//
// Usage: go run ./cmd/fleet [-bin PATH] [-requests N] [-concurrency N]
package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

type worker struct {
	name string
	port int
	cmd  *exec.Cmd
	logs bytes.Buffer
}

func main() {
	bin := flag.String("bin", "", "llorch-check binary (default: build one)")
	requests := flag.Int("requests", 120, "completions in the burst")
	concurrency := flag.Int("concurrency", 6, "requests in flight")
	flag.Parse()
	if err := run(*bin, *requests, *concurrency); err != nil {
		fmt.Fprintln(os.Stderr, "fleet: FAILED:", err)
		os.Exit(1)
	}
}

func run(bin string, requests, concurrency int) error {
	haproxy, err := exec.LookPath("haproxy")
	if err != nil {
		return fmt.Errorf("haproxy is not installed (apt-get install haproxy)")
	}
	dir, err := os.MkdirTemp("", "fleet-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if bin == "" {
		bin = filepath.Join(dir, "llorch-check")
		if out, err := exec.Command("go", "build", "-o", bin, "./cmd/llorch-check").CombinedOutput(); err != nil {
			return fmt.Errorf("building llorch-check: %v\n%s", err, out)
		}
	}
	// Each token waits 15 ms so a burst lasts long enough to stop a worker
	// in the middle of it.
	common := []string{"serve", "--host", "127.0.0.1", "--references", "testdata/references/tiny-gpt2",
		"--token-delay", "15ms", "--shutdown-timeout", "500ms", "--parallel", "4"}
	var workers []*worker
	defer func() {
		for _, w := range workers {
			if w.cmd.Process != nil {
				w.cmd.Process.Kill()
				w.cmd.Wait()
			}
		}
	}()
	for i, extra := range [][]string{nil, nil, nil, {"--inject-fault", "erf-gelu"}} {
		w := &worker{name: fmt.Sprintf("worker-%d", i+1), port: freePort()}
		args := append(append(append([]string{}, common...), "--port", strconv.Itoa(w.port), "--worker-id", w.name), extra...)
		w.cmd = exec.Command(bin, args...)
		w.cmd.Stderr = &w.logs
		if err := w.cmd.Start(); err != nil {
			return err
		}
		workers = append(workers, w)
	}
	for _, w := range workers[:3] {
		if !waitStatus(w.url("/readyz"), 200, 30*time.Second) {
			return fmt.Errorf("%s never became ready:\n%s", w.name, w.logs.String())
		}
	}
	// The faulty worker is up but stays unready: its model fails validation.
	if !waitStatus(workers[3].url("/healthz"), 200, 30*time.Second) || status(workers[3].url("/readyz")) == 200 {
		return fmt.Errorf("worker-4 (erf-gelu planted) should be alive and unready:\n%s", workers[3].logs.String())
	}
	fmt.Println("fleet: workers 1-3 validated and ready; worker-4 (erf-gelu planted) alive, unready")

	lbPort, statsPort := freePort(), freePort()
	cfg := filepath.Join(dir, "haproxy.cfg")
	if err := os.WriteFile(cfg, []byte(haproxyConfig(lbPort, statsPort, workers)), 0o644); err != nil {
		return err
	}
	lb := exec.Command(haproxy, "-f", cfg, "-db")
	var lbLogs bytes.Buffer
	lb.Stderr = &lbLogs
	if err := lb.Start(); err != nil {
		return err
	}
	defer func() { lb.Process.Kill(); lb.Wait() }()
	front := fmt.Sprintf("http://127.0.0.1:%d", lbPort)
	// HAProxy counts a server UP until its first check says otherwise, so
	// the burst waits for its checks to have seen every worker.
	stats := fmt.Sprintf("http://127.0.0.1:%d/stats;csv", statsPort)
	want := map[string]string{"worker-1": "UP", "worker-2": "UP", "worker-3": "UP", "worker-4": "DOWN"}
	var seen map[string]string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if seen = serverStates(stats); fmt.Sprint(seen) == fmt.Sprint(want) {
			break
		}
	}
	if fmt.Sprint(seen) != fmt.Sprint(want) {
		return fmt.Errorf("haproxy's checks see %v, want %v:\n%s", seen, want, lbLogs.String())
	}
	fmt.Println("fleet: haproxy's /readyz checks: workers 1-3 UP, worker-4 DOWN")

	var done, ok, failed atomic.Int64
	var mu sync.Mutex
	var failures []string
	killed := make(chan struct{})
	go func() {
		for done.Load() < int64(requests/3) {
			time.Sleep(10 * time.Millisecond)
		}
		w := workers[1]
		w.cmd.Process.Signal(syscall.SIGTERM)
		fmt.Printf("fleet: SIGTERM to %s after %d of %d requests\n", w.name, done.Load(), requests)
		// Killed while requests are still in flight on it (each takes
		// about 120 ms), so the balancer must retry them elsewhere.
		time.Sleep(40 * time.Millisecond)
		w.cmd.Process.Signal(syscall.SIGKILL)
		w.cmd.Wait()
		fmt.Printf("fleet: SIGKILL to %s after %d of %d requests\n", w.name, done.Load(), requests)
		close(killed)
	}()
	start := time.Now()
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range concurrency {
		wg.Go(func() {
			for i := range jobs {
				code, body := complete(front, i)
				done.Add(1)
				if code == 200 {
					ok.Add(1)
					continue
				}
				failed.Add(1)
				mu.Lock()
				failures = append(failures, fmt.Sprintf("request %d: %d %s", i, code, body))
				mu.Unlock()
			}
		})
	}
	for i := range requests {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	<-killed
	elapsed := time.Since(start)
	fmt.Printf("fleet: %d requests through haproxy in %.1fs: %d answered 200, %d failed\n", requests, elapsed.Seconds(), ok.Load(), failed.Load())
	served := map[string]int{}
	for _, w := range []*worker{workers[0], workers[2], workers[3]} {
		served[w.name] = completionsServed(w)
	}
	fmt.Printf("fleet: completions served: worker-1 %d, worker-3 %d, worker-4 %d (worker-2 stopped mid-burst)\n",
		served["worker-1"], served["worker-3"], served["worker-4"])
	for _, f := range failures {
		fmt.Println("fleet:  ", f)
	}
	switch {
	case failed.Load() > 0:
		return fmt.Errorf("%d requests lost", failed.Load())
	case served["worker-4"] != 0:
		return fmt.Errorf("the unvalidated worker-4 served %d requests", served["worker-4"])
	case served["worker-1"] == 0 || served["worker-3"] == 0:
		return fmt.Errorf("a ready worker served nothing: %v", served)
	}
	fmt.Println("fleet: ok: no request lost, the unvalidated worker got none")
	return nil
}

// haproxyConfig is deploy/compose/haproxy.cfg on loopback ports, with a
// stats page to read the checks' verdicts from.
func haproxyConfig(port, statsPort int, workers []*worker) string {
	cfg := fmt.Sprintf(`global
    maxconn 4096
defaults
    mode http
    timeout connect 2s
    timeout client 60s
    timeout server 60s
    retries 3
    option redispatch
    retry-on conn-failure empty-response response-timeout 503
frontend stats
    bind 127.0.0.1:%d
    stats enable
    stats uri /stats
frontend api
    bind 127.0.0.1:%d
    default_backend workers
backend workers
    balance leastconn
    option httpchk GET /readyz
    http-check expect status 200
    default-server inter 300ms fall 1 rise 1
`, statsPort, port)
	for _, w := range workers {
		cfg += fmt.Sprintf("    server %s 127.0.0.1:%d check\n", w.name, w.port)
	}
	return cfg
}

// serverStates reads each server's status (UP, DOWN, ...) from the stats
// CSV: the second column names the server, the eighteenth its status.
func serverStates(url string) map[string]string {
	resp, err := http.Get(url)
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	rows, err := csv.NewReader(resp.Body).ReadAll()
	if err != nil {
		return nil
	}
	out := map[string]string{}
	for _, r := range rows {
		if len(r) > 17 && r[0] == "workers" && r[1] != "BACKEND" {
			out[r[1]] = strings.Fields(r[17])[0]
		}
	}
	return out
}

func (w *worker) url(path string) string { return fmt.Sprintf("http://127.0.0.1:%d%s", w.port, path) }

func complete(front string, i int) (int, string) {
	body := fmt.Sprintf(`{"prompt":"Request %d says","max_tokens":8,"temperature":0}`, i)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, front+"/v1/completions", bytes.NewBufferString(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// completionsServed reads the worker's own count of /v1/completions
// requests from its metrics.
func completionsServed(w *worker) int {
	resp, err := http.Get(w.url("/metrics"))
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	total := 0
	re := regexp.MustCompile(`(?m)^llorch_requests_total\{[^}]*method="POST",[^}]*route="/v1/completions"[^}]*\} (\d+)`)
	for _, m := range re.FindAllSubmatch(b, -1) {
		n, _ := strconv.Atoi(string(m[1]))
		total += n
	}
	return total
}

func status(url string) int {
	resp, err := http.Get(url)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

func waitStatus(url string, want int, limit time.Duration) bool {
	for deadline := time.Now().Add(limit); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if status(url) == want {
			return true
		}
	}
	return false
}

func freePort() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
