package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/llorch/llorch-check/internal/procstat"
	"github.com/llorch/llorch-check/internal/regularfile"
	"github.com/llorch/llorch-check/kvcache"
	"github.com/llorch/llorch-check/loader"
	"github.com/llorch/llorch-check/model"
	"github.com/llorch/llorch-check/server"
)

type serveFlags struct {
	model                                                  modelFlags
	references, host, workerID, callbackURL, advertise     string
	apiKey, modelName, cors                                string
	port, parallel, maxQueue, maxBatch                     int
	maxConnections                                         int // --max-connections; 0: from the open-file limit
	kvCacheTokens, prefillChunk, prefixTokens              int
	kvCacheDType                                           string
	prefixCache                                            bool
	maxBody                                                int64
	requestTimeout, shutdownTimeout, readTimeout           time.Duration
	writeTimeout, idleTimeout, callbackTimeout, tokenDelay time.Duration
	logLevel                                               string
	fault                                                  string // --inject-fault, a self-test for probe
	lenient                                                bool
	chatTemplate                                           string // --chat-template FILE
	config                                                 string // --config FILE
	printConfig, dryRun                                    bool
}

// serveOnce are the flags neither the environment nor --config set: the
// file's own name and the one-shot actions.
var serveOnce = []string{"config", "print-config", "dry-run", "help"}

func newServeCmd() *cobra.Command {
	var f serveFlags
	d := server.DefaultConfig()
	cmd := &cobra.Command{
		Use:   "serve [--model DIR] [--port N] [flags]",
		Short: "Serve the model over HTTP: worker, batch and OpenAI-compatible APIs",
		Long: `serve loads the model and answers the HTTP API of docs/api.md: the worker API
(/health, /execute as Server-Sent Events, /cancel), the batch API
(/generate, /loglikelihood, /healthz, /readyz), an OpenAI-compatible API
(/v1/completions, /v1/chat/completions, /v1/responses, /v1/embeddings,
/v1/models, /tokenize, /detokenize), /metrics for
Prometheus and a page at / to try the model by hand.

With --references DIR, every checkpoint runs at start-up and the server is
ready only if all pass. SIGTERM or SIGINT turns readiness off, lets work in
flight finish (up to --shutdown-timeout) and exits 0; what is still running
then, or at a second signal, ends with SHUTDOWN (a stream's final error
event). Logs are JSON lines on stderr, without prompt text. See
docs/serve.md.`,
		Example: `  llorch-check serve --port 8080
  llorch-check serve --model ~/gpt2 --host 0.0.0.0 --port 8080 --parallel 8 --references refs/gpt2
  LLORCH_API_KEY=secret llorch-check serve --callback-url http://orchestrator/workers/ready --worker-id w1`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			source, err := layerSettings(cmd.Flags(), f.config, os.Getenv, serveOnce...)
			if err != nil {
				return err
			}
			switch {
			case f.printConfig:
				printSettings(cmd.OutOrStdout(), cmd.Flags(), source, "api-key")
				return nil
			case f.dryRun:
				return dryRunServe(cmd, f)
			}
			return runServe(cmd, f)
		},
	}
	fl := cmd.Flags()
	f.model.register(fl)
	fl.StringVar(&f.config, "config", "", "YAML FILE of settings (keys: these flags' names); flags beat $LLORCH_* variables, which beat the file")
	fl.BoolVar(&f.printConfig, "print-config", false, "print every setting, its value and where it came from (flag, env, file, default), then exit")
	fl.BoolVar(&f.dryRun, "dry-run", false, "load the model, validate it against --references, exit 0 (passed), 1 (failed) or 2 (bad input) without listening")
	fl.StringVar(&f.references, "references", "", "validate against this reference set at start-up; unready until it passes")
	fl.StringVar(&f.fault, "inject-fault", "", "self-test for probe: serve a model with a classic bug, NAME or NAME@LAYER ("+model.FaultNames()+")")
	fl.StringVar(&f.host, "host", "127.0.0.1", "address to listen on")
	fl.IntVar(&f.port, "port", 8080, "port to listen on (0: any free port, logged)")
	fl.StringVar(&f.workerID, "worker-id", "", "this worker's id, sent in the ready callback")
	fl.StringVar(&f.callbackURL, "callback-url", "", "POST a ready notice here once the model is loaded (and validated)")
	fl.StringVar(&f.advertise, "advertise-url", "", "the URL the orchestrator reaches this worker at (default http://HOST:PORT)")
	fl.DurationVar(&f.callbackTimeout, "callback-timeout", 2*time.Minute, "give up on the ready callback after this long and exit non-zero")
	fl.StringVar(&f.apiKey, "api-key", "", "require Authorization: Bearer KEY (default $LLORCH_API_KEY)")
	fl.StringVar(&f.modelName, "model-name", "", "model id in responses and /v1/models (default the model directory's name, or the GGUF file's without .gguf)")
	fl.StringVar(&f.cors, "cors-origins", "", "comma-separated origins allowed by CORS, or *")
	fl.StringVar(&f.chatTemplate, "chat-template", "", "chat template FILE rendering /v1/chat/completions messages into the prompt: Jinja (.jinja, as Hugging Face's chat_template, with the model's bos and eos tokens) or Go text/template (default: the model's own template from tokenizer_config.json or GGUF tokenizer.chat_template; plain \"role: content\" lines, then \"assistant:\", for a model without one)")
	fl.BoolVar(&f.lenient, "lenient", false, "the model routes ignore unknown request fields (logging each name once) instead of answering 400 naming them")
	fl.IntVar(&f.parallel, "parallel", d.Parallel, "sequences decoding at once")
	fl.IntVar(&f.maxQueue, "max-queue", d.MaxQueue, "requests waiting for a slot; beyond it 429 with Retry-After")
	fl.IntVar(&f.maxConnections, "max-connections", 0, fmt.Sprintf("connections open at once; at the cap the one idle longest is closed for a new one, with none idle a few more may ask for health and metrics only, beyond that a connection is answered 503 TOO_MANY_CONNECTIONS and closed (0: the open-file limit less %d, at most %d)", server.ConnectionReserve, server.MaxDefaultConnections))
	fl.IntVar(&f.kvCacheTokens, "kv-cache-tokens", 0, "positions the KV cache holds for all sequences at once, in blocks of 16 taken as sequences grow and given back as they end; a request waits until its prompt + max_tokens fit (0: --parallel × the model's context)")
	fl.StringVar(&f.kvCacheDType, "kv-cache-dtype", "f32", "f32, or f16: keys and values stored as float16, half the memory (validate it with an f16-kv reference set: run --kv-cache-dtype f16)")
	fl.IntVar(&f.prefixTokens, "prefix-cache-tokens", 0, "positions of finished prompts kept for reuse while no request holds them, least recently used evicted first (0: the model's context)")
	fl.IntVar(&f.prefillChunk, "prefill-chunk", d.PrefillChunk, "prompt positions a batched step carries beside the running sequences' decode steps (chunked prefill: a long prompt delays each stream by a chunk a step, not its whole prefill); 0: a prompt runs alone")
	fl.BoolVar(&f.prefixCache, "prefix-cache", d.PrefixCache, "keep finished prompts' KV blocks and start prompts that share their prefix from them, bit for bit the same logits (usage.prompt_tokens_details.cached_tokens)")
	fl.IntVar(&f.maxBatch, "max-batch", d.MaxBatch, "prompts per /generate, /loglikelihood or /v1/completions request, inputs per /v1/embeddings")
	fl.Int64Var(&f.maxBody, "max-body-bytes", d.MaxBodyBytes, "request body limit (413 beyond)")
	fl.DurationVar(&f.requestTimeout, "request-timeout", d.RequestTimeout, "per-request limit, queueing included (0: none)")
	fl.DurationVar(&f.shutdownTimeout, "shutdown-timeout", 30*time.Second, "on SIGTERM, how long work in flight may drain")
	fl.DurationVar(&f.readTimeout, "read-timeout", 30*time.Second, "server limit for reading a request")
	fl.DurationVar(&f.writeTimeout, "write-timeout", d.WriteTimeout, "server limit for writing a response; streams get it per event")
	fl.DurationVar(&f.idleTimeout, "idle-timeout", 120*time.Second, "keep-alive connections close after this idle time")
	fl.StringVar(&f.logLevel, "log-level", "info", "debug, info, warn or error")
	fl.DurationVar(&f.tokenDelay, "token-delay", 0, "sleep before each token (demos and drain tests)")
	_ = fl.MarkHidden("token-delay")
	return cmd
}

func (f serveFlags) check() error {
	switch {
	case f.port < 0 || f.port > 65535:
		return fmt.Errorf("--port %d: want 0..65535", f.port)
	case f.parallel < 1:
		return fmt.Errorf("--parallel %d: want ≥ 1", f.parallel)
	case f.maxQueue < 0:
		return fmt.Errorf("--max-queue %d: want ≥ 0", f.maxQueue)
	case f.maxBatch < 1:
		return fmt.Errorf("--max-batch %d: want ≥ 1", f.maxBatch)
	case f.maxConnections < 0:
		return fmt.Errorf("--max-connections %d: want ≥ 0 (0: from the open-file limit)", f.maxConnections)
	case f.maxBody < 1:
		return fmt.Errorf("--max-body-bytes %d: want ≥ 1", f.maxBody)
	case f.parallel > maxParallel:
		return fmt.Errorf("--parallel %d: at most %d", f.parallel, maxParallel)
	case f.prefixTokens < 0:
		return fmt.Errorf("--prefix-cache-tokens %d: want ≥ 0 (0: the model's context)", f.prefixTokens)
	case f.prefillChunk < 0:
		return fmt.Errorf("--prefill-chunk %d: want ≥ 0 (0: a prompt runs alone)", f.prefillChunk)
	case f.kvCacheTokens < 0:
		return fmt.Errorf("--kv-cache-tokens %d: want ≥ 0 (0: --parallel × the model's context)", f.kvCacheTokens)
	}
	if _, err := parseKVCacheDType(f.kvCacheDType); err != nil {
		return err
	}
	if _, err := f.model.options(); err != nil {
		return err
	}
	if _, err := model.ParseFaultSpec(f.fault); err != nil {
		return fmt.Errorf("--inject-fault %w", err)
	}
	for _, d := range []struct {
		flag string
		v    time.Duration
	}{
		{"--request-timeout", f.requestTimeout}, {"--shutdown-timeout", f.shutdownTimeout}, {"--read-timeout", f.readTimeout},
		{"--write-timeout", f.writeTimeout}, {"--idle-timeout", f.idleTimeout}, {"--callback-timeout", f.callbackTimeout},
	} {
		if d.v < 0 {
			return fmt.Errorf("%s %s: want ≥ 0", d.flag, d.v)
		}
	}
	return nil
}

// loadChatTemplate parses a Go text/template --chat-template, nil without
// one. A .jinja file is parsed once the model is loaded (modelChat), as it
// renders with the model's bos and eos tokens; it is read here all the
// same, so that a missing file fails before anything loads.
func (f serveFlags) loadChatTemplate() (server.ChatFormatter, error) {
	if f.chatTemplate == "" {
		return nil, nil
	}
	b, err := regularfile.ReadFile(f.chatTemplate)
	if err != nil {
		return nil, fmt.Errorf("--chat-template: %w", err)
	}
	if f.jinjaTemplate() {
		return nil, nil
	}
	t, err := server.ParseChatTemplate(filepath.Base(f.chatTemplate), string(b))
	if err != nil {
		return nil, fmt.Errorf("--chat-template %s: %w", f.chatTemplate, err)
	}
	return t, nil
}

func (f serveFlags) jinjaTemplate() bool { return strings.HasSuffix(f.chatTemplate, ".jinja") }

// modelChat is the chat template served for m: a --chat-template FILE.jinja,
// else the model's own (nil for none; a Go --chat-template, in the
// server's config, overrides either).
func (f serveFlags) modelChat(m *model.Model) (server.ChatFormatter, error) {
	own, err := server.ModelChatTemplate(m)
	if err != nil {
		return nil, fmt.Errorf("--model %s: %w", m.Dir, err)
	}
	if !f.jinjaTemplate() {
		return own, nil
	}
	b, err := regularfile.ReadFile(f.chatTemplate)
	if err != nil {
		return nil, fmt.Errorf("--chat-template: %w", err)
	}
	t, err := server.JinjaChatTemplate(filepath.Base(f.chatTemplate), string(b), own)
	if err != nil {
		return nil, fmt.Errorf("--chat-template %s: %w", f.chatTemplate, err)
	}
	return t, nil
}

// maxHeaderBytes bounds a request's head as nginx's default does (4
// buffers of 8 KB; uvicorn's h11 stops at 16 KB): net/http's default of
// 1 MiB let a client hold that much per connection for the 10 s the head
// may take. A longer head gets 431.
const maxHeaderBytes = 32 << 10

// maxParallel bounds --parallel before any model is read; kvBudget
// bounds it by the model's KV caches and the machine's memory.
const maxParallel = 4096

// kvBudget is the KV cache's bound in positions and why it is that: the
// operator's --kv-cache-tokens, refused if it cannot fit this machine's
// memory; else --parallel full contexts, or, where those would not fit
// beside the weights (a Llama 3.x config's 131072-token context), what the
// memory left after the weights holds, so that serve starts on any model
// that fits. Blocks are only taken as sequences grow, but the bound is
// what the server promises, so it is found at start-up, not when the
// slots fill under load.
func (f serveFlags) kvBudget(path string) (int, string, error) {
	return f.kvBudgetIn(path, procstat.MemTotal())
}

// kvBudgetIn is kvBudget on a machine of total bytes (0: unknown).
func (f serveFlags) kvBudgetIn(path string, total int64) (int, string, error) {
	cfg, err := loader.ReadConfig(path)
	if err != nil {
		return 0, "", err
	}
	kvOpt, err := parseKVCacheDType(f.kvCacheDType)
	if err != nil {
		return 0, "", err
	}
	if f.kvCacheTokens > 0 {
		kv := cfg.KVShape().Bytes(int64(f.kvCacheTokens), kvOpt)
		if total > 0 && kv > total {
			return 0, "", fmt.Errorf("a KV cache of %d positions (--kv-cache-tokens) needs %.1f GB as %s, more than this machine's %.1f GB; bound it lower",
				f.kvCacheTokens, float64(kv)/1e9, f.kvCacheDType, float64(total)/1e9)
		}
		return f.kvCacheTokens, "--kv-cache-tokens", nil
	}
	full := int64(f.parallel) * int64(cfg.NPositions)
	reason := fmt.Sprintf("--parallel %d × context %d", f.parallel, cfg.NPositions)
	if total == 0 {
		return int(full), reason, nil
	}
	opt, err := f.model.options()
	if err != nil {
		return 0, "", err
	}
	held, err := loader.HeldBytes(path, opt)
	if err != nil {
		return 0, "", err
	}
	free, shape := total-held-kvHeadroom(total), cfg.KVShape()
	perBlock, fullBytes := shape.Bytes(kvcache.DefaultBlockTokens, kvOpt), shape.Bytes(full, kvOpt)
	if fullBytes <= free {
		return int(full), reason, nil
	}
	blocks := free / max(perBlock, 1)
	if blocks < 1 {
		return 0, "", fmt.Errorf("the weights, held in %.1f GB, leave no room for a KV cache in this machine's %.1f GB (%.1f GB kept for the process); a smaller --weight-dtype or model",
			float64(held)/1e9, float64(total)/1e9, float64(kvHeadroom(total))/1e9)
	}
	tokens := blocks * kvcache.DefaultBlockTokens
	return int(tokens), fmt.Sprintf("the memory left after the weights: %.1f GB of %.1f GB, less %.1f GB kept for the process (--parallel %d × context %d would need %.1f GB; --kv-cache-tokens overrides)",
		float64(free)/1e9, float64(total)/1e9, float64(kvHeadroom(total))/1e9, f.parallel, cfg.NPositions, float64(fullBytes)/1e9), nil
}

// kvHeadroom is the memory a default KV budget leaves for everything but
// weights and cache (activations, scoring logits, buffers, the page
// cache the weights load through): a tenth of the machine, at least 1 GB.
func kvHeadroom(total int64) int64 { return max(total/10, 1<<30) }

func runServe(cmd *cobra.Command, f serveFlags) error {
	if err := f.check(); err != nil {
		return err
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(f.logLevel)); err != nil {
		return fmt.Errorf("--log-level %q: want debug, info, warn or error", f.logLevel)
	}
	log := slog.New(slog.NewJSONHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: level}))
	// Everything the flags decide is checked before the port is bound.
	path, err := modelPath(f.model.path)
	if err != nil {
		return err
	}
	kvTokens, kvReason, err := f.kvBudget(path)
	if err != nil {
		return err
	}
	if ip := net.ParseIP(f.host); f.apiKey == "" && (ip == nil || !ip.IsLoopback()) && f.host != "localhost" {
		log.Warn("listening beyond loopback without an API key: anyone who can reach the port can use the model (--api-key or LLORCH_API_KEY)", "host", f.host)
	}
	chat, err := f.loadChatTemplate()
	if err != nil {
		return err
	}
	var origins []string
	for o := range strings.SplitSeq(f.cors, ",") {
		if o = strings.TrimSpace(o); o != "" {
			origins = append(origins, o)
		}
	}
	cfg := server.Config{
		ModelName: f.modelName, WorkerID: f.workerID, Parallel: f.parallel, MaxQueue: f.maxQueue,
		MaxBatch: f.maxBatch, RequestTimeout: f.requestTimeout, MaxBodyBytes: f.maxBody,
		WriteTimeout: f.writeTimeout, APIKey: f.apiKey, CORSOrigins: origins, TokenDelay: f.tokenDelay,
		Lenient: f.lenient, ChatTemplate: chat, Version: version(), Logger: log,
		KVCacheTokens: kvTokens, KVCacheBudget: kvReason, KVCacheFloat16: f.kvCacheDType == "f16", PrefixCache: f.prefixCache,
		PrefillChunk: f.prefillChunk, PrefixTokens: f.prefixTokens,
	}
	srv := server.New(cfg)

	ln, err := net.Listen("tcp", net.JoinHostPort(f.host, strconv.Itoa(f.port)))
	if err != nil {
		return fmt.Errorf("--host %s --port %d: %w", f.host, f.port, err)
	}
	maxConns, warning := server.ConnectionCap(f.maxConnections)
	if warning != "" {
		log.Warn(warning)
	}
	hs := &http.Server{
		Handler:           srv.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		MaxHeaderBytes:    maxHeaderBytes,
		ReadTimeout:       f.readTimeout,
		WriteTimeout:      f.writeTimeout,
		IdleTimeout:       f.idleTimeout,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	ln = srv.LimitConnections(hs, ln, maxConns)
	serveErr := make(chan error, 1)
	go func() { serveErr <- hs.Serve(ln) }()
	addr := ln.Addr().String()
	log.Info("listening", "addr", addr, "auth", cfg.APIKey != "", "parallel", f.parallel, "max_queue", f.maxQueue, "max_connections", maxConns)

	// Loading and validation run while the listener already answers health
	// checks (503 "loading"), so an orchestrator sees the worker come up.
	ready := make(chan error, 1)
	go func() { ready <- prepare(cmd.Context(), srv, f, log) }()

	uri := f.advertise
	if uri == "" {
		uri = "http://" + addr
	}
	var callbackErr chan error
	for {
		select {
		case err := <-serveErr:
			return fmt.Errorf("server: %w", err)
		case err := <-ready:
			ready = nil
			if err != nil {
				stopServing(srv, hs, time.Second)
				return err
			}
			if f.callbackURL != "" && srv.Ready() {
				callbackErr = make(chan error, 1)
				go func() {
					callbackErr <- srv.NotifyReady(cmd.Context(), f.callbackURL, uri, f.callbackTimeout)
				}()
			}
			continue
		case err := <-callbackErr:
			callbackErr = nil
			if err != nil && cmd.Context().Err() == nil {
				stopServing(srv, hs, time.Second)
				return err
			}
			continue
		case <-cmd.Context().Done():
		}
		break
	}
	log.Info("signal received: draining", "shutdown_timeout", f.shutdownTimeout.String())
	// A second signal does not wait for the drain.
	again := make(chan os.Signal, 1)
	signal.Notify(again, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(again)
	ctx, cancel := context.WithTimeout(context.Background(), f.shutdownTimeout)
	defer cancel()
	drained := make(chan error, 1)
	go func() { drained <- srv.Drain(ctx) }()
	select {
	case err := <-drained:
		shutdown(hs, max(time.Until(deadline(ctx)), time.Second))
		if err != nil {
			log.Error("stopped with work cut short", "error", err.Error())
			return fmt.Errorf("--shutdown-timeout %s: %w", f.shutdownTimeout, err)
		}
		log.Info("stopped")
		return nil
	case sig := <-again:
		// Work in flight still ends with its one final answer (a stream's
		// error event SHUTDOWN): Drain, its deadline gone, ends every job
		// and waits a moment for those answers to go out. A third signal
		// does not wait for that either.
		log.Error("second signal: ending work in flight with SHUTDOWN and exiting", "signal", sig.String())
		cancel()
		select {
		case <-drained:
		case <-again:
		}
		_ = hs.Close()
		return fmt.Errorf("%s received twice: stopped without draining", sig)
	}
}

func deadline(ctx context.Context) time.Time {
	d, _ := ctx.Deadline()
	return d
}

// stopServing stops the server outside a drain by signal: work in flight
// gets until timeout to finish, then ends with SHUTDOWN (a stream's final
// error event) before the connections close.
func stopServing(srv *server.Server, hs *http.Server, timeout time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	_ = srv.Drain(ctx)
	shutdown(hs, time.Second)
}

func shutdown(hs *http.Server, timeout time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if hs.Shutdown(ctx) != nil {
		_ = hs.Close()
	}
}

// prepare loads the model and tokenizer, then runs the start-up validation
// when asked. A failed validation is not an error: the server stays up,
// unready, and /health says why.
func prepare(ctx context.Context, srv *server.Server, f serveFlags, log *slog.Logger) error {
	// To the live heap after every collection, not to the weights once: a
	// weights cache maps them outside the heap, which then grows from a
	// few megabytes to tens under load. From before the load: the
	// tokenizer's parse after it left its garbage at the default GOGC.
	pct, tuned, _ := tuneGC()
	m, tok, err := loadServed(ctx, f, log)
	if err != nil {
		return err
	}
	if tuned {
		log.Info("garbage collection tuned to the live heap after each collection", "gogc_at_start", pct, "weights_bytes", m.WeightsBytes())
	}
	// A weights cache the load did not find is written while the server
	// serves (the weights are read-only): a first start is not slowed by
	// writing its size to disk.
	go func() {
		if note := loader.WriteWeightsCache(m); note != "" {
			log.Info("weights cache", "weights_cache", note)
		}
	}()
	chat, err := f.modelChat(m)
	if err != nil {
		return err
	}
	if f.references == "" {
		return srv.SetModelChat(m, tok, chat)
	}
	set, err := openReferences(f.references)
	if err != nil {
		return err
	}
	if err := srv.SetModelChat(m, tok, chat); err != nil {
		return err
	}
	srv.Validate(ctx, set)
	return nil
}
