// Command serveload measures an OpenAI-compatible server (our `serve`,
// llama-server, vLLM...) under levels of concurrent streaming clients on
// loopback (issue #27 item 6; `make bench-serve` runs it). For each level
// it prints clients, requests, generated tokens, tokens/s, time to first
// token and inter-token latency (p50/p99), errors by HTTP status and,
// with --pid, the server's VmRSS and VmHWM after the level, the KV
// cache's peak where the server reports it, and with --model-bytes the
// bound the peak should stay within (the model plus that KV plus 10%).
//
// Scenarios: plain (distinct prompts), shared-prefix (one long shared
// prefix, distinct suffixes: prompt-cache reuse) and long-prompt (one
// client sends a long prompt while the others decode short ones: how much
// its prefill stalls their tokens).
//
//	serveload --url http://127.0.0.1:8080 --clients 1,8,32 --scenario plain
//	serveload compare OURS.json PEER.json
//	serveload freeport   (a free loopback port, for scripts/bench/serve.sh)
//
// Only the standard library, so it runs against any server without the
// repository's packages behind it.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
)

type options struct {
	settings
	url, apiKey, model, label string
	clients                   []int
	ignoreEOS                 string
	pid                       int
	modelBytes                int64
	jsonPath                  string
	timeout                   time.Duration
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "compare" {
		if len(os.Args) != 4 {
			fmt.Fprintln(os.Stderr, "usage: serveload compare FIRST.json SECOND.json")
			os.Exit(2)
		}
		if err := compare(os.Stdout, os.Args[2], os.Args[3]); err != nil {
			fmt.Fprintln(os.Stderr, "serveload:", err)
			os.Exit(1)
		}
		return
	}
	if len(os.Args) == 2 && os.Args[1] == "freeport" {
		port, err := freePort()
		if err != nil {
			fmt.Fprintln(os.Stderr, "serveload:", err)
			os.Exit(1)
		}
		fmt.Println(port)
		return
	}
	o, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "serveload:", err)
		os.Exit(2)
	}
	if err := run(context.Background(), o, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "serveload:", err)
		os.Exit(1)
	}
}

func parseFlags(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("serveload", flag.ContinueOnError)
	fs.StringVar(&o.url, "url", "", "base URL of a running OpenAI-compatible server (required)")
	fs.StringVar(&o.apiKey, "api-key", os.Getenv("LLORCH_API_KEY"), "bearer token, if the server wants one")
	fs.StringVar(&o.model, "model", "", "model name to send (default: the first id of /v1/models)")
	fs.StringVar(&o.label, "label", "", "the server's name in the table and the JSON (default the URL)")
	clients := fs.String("clients", "1,8,32", "comma-separated concurrency levels, run in order")
	fs.IntVar(&o.requests, "requests", 0, "requests per level (default max(8, 3 x clients))")
	fs.IntVar(&o.promptTokens, "prompt-tokens", 32, "words (about one token each) of every distinct prompt or suffix")
	fs.IntVar(&o.maxTokens, "max-tokens", 64, "max_tokens of every request")
	fs.StringVar(&o.scenario, "scenario", plain, "plain, shared-prefix or long-prompt")
	fs.IntVar(&o.prefixTokens, "prefix-tokens", 200, "shared-prefix: words of the shared prefix")
	fs.IntVar(&o.longTokens, "long-tokens", 1000, "long-prompt: words of the long prompt (cut to fit the context)")
	fs.StringVar(&o.ignoreEOS, "ignore-eos", "auto", "send ignore_eos: true, false, or auto (ask the server with one probe request)")
	fs.IntVar(&o.pid, "pid", 0, "server process id: report its VmRSS and VmHWM after each level")
	fs.Int64Var(&o.modelBytes, "model-bytes", 0, "the model file's size: with --pid, each level's memory bound, the model plus the KV cache's peak (where /health reports kv_cache.peak_bytes) plus 10%")
	fs.StringVar(&o.jsonPath, "json", "", "also write a JSON summary to FILE")
	fs.Uint64Var(&o.seed, "seed", 1, "prompt seed (with the scenario): the same seed sends the same prompts")
	fs.DurationVar(&o.timeout, "timeout", 10*time.Minute, "limit for one request")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if o.url == "" {
		return o, errors.New("--url is required")
	}
	o.url = strings.TrimRight(o.url, "/")
	if o.label == "" {
		o.label = o.url
	}
	for _, c := range strings.Split(*clients, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(c))
		if err != nil || n < 1 {
			return o, fmt.Errorf("--clients: %q is not a positive integer", c)
		}
		o.clients = append(o.clients, n)
	}
	switch o.scenario {
	case plain, sharedPrefix, longPrompt:
	default:
		return o, fmt.Errorf("--scenario: %q is not plain, shared-prefix or long-prompt", o.scenario)
	}
	switch o.ignoreEOS {
	case "auto", "true", "false":
	default:
		return o, fmt.Errorf("--ignore-eos: %q is not true, false or auto", o.ignoreEOS)
	}
	if o.promptTokens < 1 || o.maxTokens < 1 || o.prefixTokens < 1 || o.longTokens < 1 {
		return o, errors.New("--prompt-tokens, --max-tokens, --prefix-tokens and --long-tokens must be positive")
	}
	return o, nil
}

// run measures every level and prints the table (and the JSON).
func run(ctx context.Context, o options, out, log io.Writer) error {
	c := &client{
		// A new connection a request: llama-server (cpp-httplib) closes a
		// kept-alive connection after a few requests without saying so,
		// and a POST sent on it fails with EOF; on loopback a connection
		// costs well under a millisecond. No overall timeout: streams
		// last as long as their tokens take; --timeout bounds each one.
		http:   &http.Client{Timeout: o.timeout, Transport: &http.Transport{DisableKeepAlives: true, DisableCompression: true}},
		url:    o.url,
		apiKey: o.apiKey,
		model:  o.model,
	}
	model, ctxLen := c.serverInfo(ctx)
	if c.model == "" {
		c.model = model
	}
	switch o.ignoreEOS {
	case "auto":
		ok, err := c.probeIgnoreEOS(ctx)
		if err != nil {
			return err
		}
		c.ignoreEOS = ok
	default:
		c.ignoreEOS = o.ignoreEOS == "true"
	}
	if err := fitContext(&o.settings, ctxLen, log); err != nil {
		return err
	}
	// One request first, not counted: the first request of a process
	// pays for lazy set-up (page faults of the weights, buffers).
	warm := c.stream(ctx, time.Now(), request{prompt: prompt(newRNG(o.scenarioSeed(), kindWarmUp, 0, 0), o.promptTokens), maxTokens: 4}, nil)
	if !warm.ok() {
		return fmt.Errorf("warm-up request failed: %s", warm.errKind)
	}
	sm := summary{Label: o.label, URL: o.url, Model: c.model, Scenario: o.scenario,
		PromptTokens: o.promptTokens, MaxTokens: o.maxTokens, IgnoreEOS: c.ignoreEOS,
		Started: time.Now().UTC().Format(time.RFC3339)}
	switch o.scenario {
	case sharedPrefix:
		sm.PrefixTokens = o.prefixTokens
	case longPrompt:
		sm.LongTokens = o.longTokens
	}
	for _, n := range o.clients {
		fmt.Fprintf(log, "serveload: %s %s: %d clients, %d requests\n", o.label, o.scenario, n, o.requestsFor(n))
		wall, rs := runLevel(ctx, c, o.settings, n)
		l := summarize(n, wall, rs, o.settings)
		logErrors(log, rs)
		if o.pid > 0 {
			rss, hwm, err := procMemory(o.pid)
			if err != nil {
				return err
			}
			l.RSSBytes, l.HWMBytes = &rss, &hwm
			if kv, ok := c.kvPeak(ctx); ok {
				l.KVPeakBytes = &kv
				if o.modelBytes > 0 {
					b := memoryBound(o.modelBytes, kv)
					l.BoundBytes = &b
				}
			}
		}
		sm.Levels = append(sm.Levels, l)
	}
	printTable(out, sm)
	if o.jsonPath != "" {
		b, err := json.MarshalIndent(sm, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(o.jsonPath, append(b, '\n'), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// fitContext cuts the long prompt to the server's context (a prompt plus
// max_tokens beyond it is a 400 from our serve; llama-server would shift or
// truncate) and refuses settings whose ordinary prompts cannot fit. 16
// tokens of slack cover words that split and the first word's lack of a
// leading space.
func fitContext(s *settings, ctxLen int, log io.Writer) error {
	if ctxLen <= 0 {
		return nil
	}
	room := ctxLen - s.maxTokens - 16
	short := s.promptTokens
	if s.scenario == sharedPrefix {
		short += s.prefixTokens
	}
	if short > room {
		return fmt.Errorf("prompts of %d words and max_tokens %d do not fit a context of %d", short, s.maxTokens, ctxLen)
	}
	if s.scenario == longPrompt && s.longTokens > room {
		fmt.Fprintf(log, "serveload: long prompt cut from %d to %d words to fit the context of %d with max_tokens %d\n", s.longTokens, room, ctxLen, s.maxTokens)
		s.longTokens = room
	}
	return nil
}

// freePort asks the kernel for a free loopback port: llama-server takes
// no --port 0, so serve.sh picks one for both servers this way (another
// process could take it before the server binds; on loopback it does not).
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// logErrors writes the first few failures of a level, one kind at a time
// (a burst of 429s is one line, not ninety).
func logErrors(log io.Writer, rs []result) {
	seen := map[string]int{}
	for _, r := range rs {
		if r.ok() {
			continue
		}
		if seen[r.errKind]++; seen[r.errKind] == 1 {
			fmt.Fprintf(log, "serveload: error %s: %s\n", r.errKind, r.errText)
		}
	}
}
