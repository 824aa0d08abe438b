// Command loadtest drives `llorch-check serve` with N concurrent streaming
// clients on loopback for a bounded time and reports requests/s, tokens/s,
// time to first token (p50/p99), errors by kind and the server's peak RSS.
// With --storm it measures the goodput that clients ignoring Retry-After
// leave against clients honouring it (storm.go).
//
// Without --url it serves the default tiny model in-process on a loopback
// port (the same server package `serve` uses), so `make loadtest` needs no
// running server. With --url it targets a running server; peak RSS then
// comes from that server's /metrics (process_resident_memory_bytes).
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/llorch/llorch-check/internal/fixture"
	"github.com/llorch/llorch-check/loader"
	"github.com/llorch/llorch-check/server"
	"github.com/llorch/llorch-check/tokenizer"
)

type options struct {
	url, apiKey, prompt, model string
	clients, maxTokens         int
	parallel, maxQueue         int
	duration                   time.Duration
	temperature                float64
	asJSON                     bool
	storm                      bool
}

// report is the outcome of one run.
type report struct {
	Clients        int            `json:"clients"`
	Parallel       int            `json:"parallel,omitempty"`
	DurationSec    float64        `json:"duration_seconds"`
	Requests       int64          `json:"requests_completed"`
	Tokens         int64          `json:"tokens"`
	RequestsPerSec float64        `json:"requests_per_second"`
	TokensPerSec   float64        `json:"tokens_per_second"`
	TTFTp50ms      float64        `json:"ttft_p50_ms"`
	TTFTp99ms      float64        `json:"ttft_p99_ms"`
	Errors         map[string]int `json:"errors"`
	PeakRSSBytes   int64          `json:"peak_rss_bytes"`
}

func main() {
	var o options
	flag.StringVar(&o.url, "url", "", "server to load (default: serve the tiny model in-process on loopback)")
	flag.StringVar(&o.apiKey, "api-key", os.Getenv("LLORCH_API_KEY"), "bearer token for --url")
	flag.StringVar(&o.model, "model", "", "model directory for the in-process server (default the tiny model)")
	flag.StringVar(&o.prompt, "prompt", "The library opened in 1887 with 4,000 books, a reading room and two clerks.", "prompt of every request")
	flag.IntVar(&o.clients, "clients", 8, "concurrent clients")
	flag.DurationVar(&o.duration, "duration", 10*time.Second, "how long to send requests")
	flag.IntVar(&o.maxTokens, "max-tokens", 64, "max_tokens of every request")
	flag.Float64Var(&o.temperature, "temperature", 0.8, "temperature of every request")
	flag.IntVar(&o.parallel, "parallel", 4, "in-process server: --parallel")
	flag.IntVar(&o.maxQueue, "max-queue", 16, "in-process server: --max-queue")
	flag.BoolVar(&o.asJSON, "json", false, "print the report as JSON")
	flag.BoolVar(&o.storm, "storm", false, "retry storm: goodput of clients ignoring Retry-After against the same clients honouring it, --duration each (--clients default: 32 × --parallel)")
	flag.Parse()
	clientsSet := false
	flag.Visit(func(f *flag.Flag) { clientsSet = clientsSet || f.Name == "clients" })
	if o.storm && !clientsSet {
		o.clients = stormClientsPerSlot * o.parallel
	}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "loadtest:", err)
		os.Exit(1)
	}
}

func run(o options) error {
	if o.clients < 1 || o.duration <= 0 || o.maxTokens < 1 {
		return errors.New("--clients, --duration and --max-tokens must be positive")
	}
	base := o.url
	inProcess := base == ""
	if inProcess {
		url, stop, err := startServer(o)
		if err != nil {
			return err
		}
		defer stop()
		base = url
	}
	if o.storm {
		return runStorm(o, base, inProcess)
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: o.clients * 2}}

	ctx, cancel := context.WithTimeout(context.Background(), o.duration)
	defer cancel()
	var peak atomic.Int64
	rssDone := make(chan struct{})
	go func() { sampleRSS(ctx, client, base, o.apiKey, &peak); close(rssDone) }()

	var (
		mu       sync.Mutex
		ttfts    []time.Duration
		errs     = map[string]int{}
		requests atomic.Int64
		tokens   atomic.Int64
		wg       sync.WaitGroup
	)
	start := time.Now()
	for c := range o.clients {
		wg.Go(func() {
			for i := 0; ctx.Err() == nil; i++ {
				ttft, n, kind := stream(ctx, client, base, o, fmt.Sprintf("load-%d-%d", c, i))
				tokens.Add(int64(n))
				mu.Lock()
				switch {
				case kind == "" && ttft > 0:
					ttfts = append(ttfts, ttft)
					requests.Add(1)
				case kind == "shutdown":
					// The run ended mid-request: not an error of the server.
				default:
					errs[kind]++
				}
				mu.Unlock()
				if kind == "http_429" {
					// Honour Retry-After loosely: back off, but keep pressure on.
					select {
					case <-ctx.Done():
					case <-time.After(50 * time.Millisecond):
					}
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	<-rssDone
	if inProcess {
		peak.Store(max(peak.Load(), vmHWM()))
	}
	slices.Sort(ttfts)
	r := report{
		Clients: o.clients, DurationSec: elapsed.Seconds(), Requests: requests.Load(), Tokens: tokens.Load(),
		RequestsPerSec: float64(requests.Load()) / elapsed.Seconds(), TokensPerSec: float64(tokens.Load()) / elapsed.Seconds(),
		TTFTp50ms: ms(percentile(ttfts, 0.50)), TTFTp99ms: ms(percentile(ttfts, 0.99)), Errors: errs, PeakRSSBytes: peak.Load(),
	}
	if inProcess {
		r.Parallel = o.parallel
	}
	if o.asJSON {
		return printJSON(r)
	}
	printReport(r)
	return nil
}

// stream runs one /execute request and returns its time to first token,
// tokens received, and the error kind ("" for a clean end).
func stream(ctx context.Context, client *http.Client, base string, o options, job string) (time.Duration, int, string) {
	ttft, n, kind, _ := streamWait(ctx, client, base, o, job)
	return ttft, n, kind
}

// streamWait is stream, and for a 429 or 503 also the wait its
// Retry-After asks for.
func streamWait(ctx context.Context, client *http.Client, base string, o options, job string) (time.Duration, int, string, time.Duration) {
	body, _ := json.Marshal(map[string]any{"job_id": job, "prompt": o.prompt, "max_tokens": o.maxTokens, "temperature": o.temperature})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/execute", bytes.NewReader(body))
	if err != nil {
		return 0, 0, "request", 0
	}
	req.Header.Set("Content-Type", "application/json")
	if o.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+o.apiKey)
	}
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return 0, 0, "shutdown", 0
		}
		return 0, 0, "transport", 0
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, resp.Body)
		wait, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
		return 0, 0, "http_" + strconv.Itoa(resp.StatusCode), time.Duration(wait) * time.Second
	}
	var ttft time.Duration
	n := 0
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	event := ""
	for sc.Scan() {
		line := sc.Text()
		if name, ok := strings.CutPrefix(line, "event: "); ok {
			event = name
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		switch event {
		case "token":
			if n == 0 {
				ttft = time.Since(start)
			}
			n++
		case "end":
			return ttft, n, "", 0
		case "error":
			var e struct {
				Code string `json:"code"`
			}
			_ = json.Unmarshal([]byte(data), &e)
			return ttft, n, "event_" + e.Code, 0
		}
	}
	if ctx.Err() != nil {
		return ttft, n, "shutdown", 0
	}
	return ttft, n, "stream_cut", 0
}

// sampleRSS polls the server's /metrics for its resident memory.
func sampleRSS(ctx context.Context, client *http.Client, base, key string, peak *atomic.Int64) {
	for {
		req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, base+"/metrics", nil)
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		if resp, err := client.Do(req); err == nil {
			sc := bufio.NewScanner(resp.Body)
			for sc.Scan() {
				if v, ok := strings.CutPrefix(sc.Text(), "process_resident_memory_bytes "); ok {
					if f, err := strconv.ParseFloat(v, 64); err == nil && int64(f) > peak.Load() {
						peak.Store(int64(f))
					}
				}
			}
			resp.Body.Close()
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// vmHWM is this process's peak RSS from /proc (Linux), 0 elsewhere.
func vmHWM() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb * 1024
		}
	}
	return 0
}

func startServer(o options) (string, func(), error) {
	dir := o.model
	if dir == "" {
		dir = fixture.TinyModel()
	}
	m, err := loader.Load(dir)
	if err != nil {
		return "", nil, err
	}
	tok, err := tokenizer.Load(dir)
	if err != nil {
		return "", nil, err
	}
	srv := server.New(server.Config{Parallel: o.parallel, MaxQueue: o.maxQueue, Logger: slog.New(slog.DiscardHandler)})
	if err := srv.SetModel(m, tok); err != nil {
		return "", nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	// As serve does: the connection cap from the open-file limit.
	hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second}
	limit, _ := server.ConnectionCap(0)
	ln = srv.LimitConnections(hs, ln, limit)
	go func() { _ = hs.Serve(ln) }()
	return "http://" + ln.Addr().String(), func() { _ = hs.Close() }, nil
}

// printJSON prints a report as indented JSON (--json).
func printJSON(r any) error {
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(p*float64(len(sorted))))]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func printReport(r report) {
	fmt.Printf("clients            %d", r.Clients)
	if r.Parallel > 0 {
		fmt.Printf(" (server --parallel %d, in-process)", r.Parallel)
	}
	fmt.Printf("\nduration           %.1f s\n", r.DurationSec)
	fmt.Printf("requests completed %d (%.1f requests/s)\n", r.Requests, r.RequestsPerSec)
	fmt.Printf("tokens streamed    %d (%.0f tokens/s)\n", r.Tokens, r.TokensPerSec)
	fmt.Printf("time to 1st token  p50 %.2f ms, p99 %.2f ms\n", r.TTFTp50ms, r.TTFTp99ms)
	if len(r.Errors) == 0 {
		fmt.Println("errors             none")
	} else {
		kinds := make([]string, 0, len(r.Errors))
		for k := range r.Errors {
			kinds = append(kinds, k)
		}
		slices.Sort(kinds)
		for _, k := range kinds {
			fmt.Printf("errors             %s: %d\n", k, r.Errors[k])
		}
	}
	fmt.Printf("peak RSS           %.1f MiB\n", float64(r.PeakRSSBytes)/(1<<20))
}
