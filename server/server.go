// Package server serves the validated model over HTTP: the worker API
// (/execute as Server-Sent Events), the batch API (/generate,
// /loglikelihood) and an OpenAI-compatible API (/v1/completions,
// /v1/chat/completions, /v1/embeddings, /v1/models), all behind one
// scheduler and one set of limits. docs/api.md is the contract.
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/llorch/llorch-check/kvcache"
	"github.com/llorch/llorch-check/model"
	"github.com/llorch/llorch-check/tokenizer"
)

// Config holds the operator's settings. Zero values get the defaults of
// DefaultConfig where one exists.
type Config struct {
	ModelName      string        // reported in events and /v1/models; default: the model directory's name, or the GGUF file's without .gguf
	WorkerID       string        // the orchestrator's name for this worker
	Parallel       int           // sequences decoding at once
	KVCacheTokens  int           // positions the KV cache holds for all sequences at once; 0: Parallel × context
	KVCacheBudget  string        // why KVCacheTokens is what it is, for /health; empty: the flag or the default
	KVCacheFloat16 bool          // keys and values stored as float16 (validated against an f16-kv reference set)
	PrefixCache    bool          // keep finished prompts' KV blocks and reuse them for prompts sharing a prefix
	PrefixTokens   int           // positions kept for reuse by no running sequence; 0: one context
	PrefillChunk   int           // prompt positions a batched step carries beside the decode steps; 0: a prompt runs alone
	MaxQueue       int           // requests waiting for a slot; more get 429
	MaxBatch       int           // prompts per /generate or /loglikelihood request
	RequestTimeout time.Duration // per request, queueing included; 0: none
	MaxBodyBytes   int64         // request body limit
	WriteTimeout   time.Duration // per write of a stream (each SSE event extends it)
	APIKey         string        // bearer token; empty: no auth
	CORSOrigins    []string      // allowed origins; "*" for any
	Lenient        bool          // model routes ignore unknown fields instead of a 400 naming them
	// StoredResponses and StoredResponseBytes bound the /v1/responses
	// kept for previous_response_id (0: 1000 and 64 MiB of text).
	StoredResponses     int
	StoredResponseBytes int64
	ChatTemplate        ChatFormatter // renders chat messages into a prompt, over the model's own; nil: the model's (SetModelChat), else DefaultChatTemplate
	TokenDelay          time.Duration // sleep before each token: demos and drain tests only
	Version             string        // build version for llorch_build_info
	Logger              *slog.Logger  // nil: discard
}

// DefaultConfig is what `llorch-check serve` uses when no flag says otherwise.
func DefaultConfig() Config {
	return Config{
		Parallel:       4,
		PrefixCache:    true,
		PrefillChunk:   64,
		MaxQueue:       16,
		MaxBatch:       64,
		RequestTimeout: 5 * time.Minute,
		MaxBodyBytes:   1 << 20,
		WriteTimeout:   30 * time.Second,
		Version:        "dev",
	}
}

func (c *Config) fillDefaults() {
	d := DefaultConfig()
	if c.Parallel <= 0 {
		c.Parallel = d.Parallel
	}
	if c.MaxQueue < 0 {
		c.MaxQueue = 0
	}
	if c.MaxBatch <= 0 {
		c.MaxBatch = d.MaxBatch
	}
	if c.MaxBodyBytes <= 0 {
		c.MaxBodyBytes = d.MaxBodyBytes
	}
	if c.WriteTimeout <= 0 {
		c.WriteTimeout = d.WriteTimeout
	}
	if c.Version == "" {
		c.Version = d.Version
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.StoredResponses <= 0 {
		c.StoredResponses = defaultStoredResponses
	}
	if c.StoredResponseBytes <= 0 {
		c.StoredResponseBytes = defaultStoredResponseBytes
	}
}

// engine is the loaded model; it appears once, when loading finishes.
type engine struct {
	m     *model.Model
	tok   *tokenizer.Tokenizer
	name  string
	batch *batcher      // decode steps of every slot running on m
	pool  *kvcache.Pool // every slot's keys and values
	chat  ChatFormatter // Config.ChatTemplate, else the model's own, else DefaultChatTemplate
	obs   *modelMetrics // the metrics of its work, labelled with its name
	start startIndex    // the vocabulary's first bytes, for constrained requests (startsIn)
}

// positions is the most positions one request may use: the context, or
// less when --kv-cache-tokens bounds the KV cache lower.
func (e *engine) positions() int {
	if n := e.pool.MaxTokens(); n > 0 && n < e.m.Config.NPositions {
		return n
	}
	return e.m.Config.NPositions
}

// encode tokenizes user text as the generating routes take it: ordinary
// text ("<|endoftext|>" is characters), after the BOS token when the
// tokenizer asks for one (the Llama family's <s>), as Hugging Face's
// tokenizer and llama.cpp's server encode a prompt.
func (e *engine) encode(text string) []int {
	tokenizedBytes.Add(int64(len(text)))
	return e.tok.EncodePrompt(text)
}

// tokenizedBytes counts the bytes of user text the server has tokenized,
// for tests that a refused prompt is not.
var tokenizedBytes atomic.Int64

// Server is the HTTP service. Create it with New, install the model with
// SetModel once loaded, and serve Handler.
type Server struct {
	cfg     Config
	log     *slog.Logger
	metrics *metrics
	sched   *Scheduler
	// rejections logs 429s: the first of a burst, then a count per interval.
	rejections *burstLog
	ignored    *ignoredFields // unknown request fields --lenient has logged
	responses  *responseStore // /v1/responses kept for previous_response_id
	jobs       *jobs
	started    time.Time
	handler    http.Handler

	engine   atomic.Pointer[engine]
	draining atomic.Bool

	mu         sync.Mutex
	validation Validation
	inflight   int

	// stop ends every job's context with errShutdown when a drain runs
	// out of time, so each ends with a terminal answer, not a cut stream.
	stop     context.Context
	stopJobs context.CancelCauseFunc
}

// New returns a server that answers health checks at once and serves the
// model after SetModel.
func New(cfg Config) *Server {
	cfg.fillDefaults()
	s := &Server{
		cfg:        cfg,
		log:        cfg.Logger,
		jobs:       newJobs(),
		started:    time.Now(),
		validation: Validation{Status: ValidationSkipped},
	}
	s.stop, s.stopJobs = context.WithCancelCause(context.Background())
	s.metrics = newMetrics(cfg.Version)
	s.ignored = &ignoredFields{log: s.log, seen: map[string]bool{}}
	s.responses = newResponseStore(s.cfg.StoredResponses, s.cfg.StoredResponseBytes)
	s.rejections = newBurstLog(s.log, slog.LevelWarn, "more requests refused with 429 (queue full), not logged one by one")
	s.sched = NewScheduler(cfg.Parallel, cfg.MaxQueue, nil)
	s.metrics.reg.MustRegister(newModelGauges(s.engine.Load, s.sched))
	s.handler = s.routes()
	return s
}

// Handler is the server's whole HTTP surface, middleware included.
func (s *Server) Handler() http.Handler { return s.handler }

// SetModel makes the model and tokenizer available to the routes. A server
// without references is ready from here on.
func (s *Server) SetModel(m *model.Model, tok *tokenizer.Tokenizer) error {
	return s.SetModelChat(m, tok, nil)
}

// SetModelChat is SetModel with the model's own chat template
// (ModelChatTemplate), which Config.ChatTemplate overrides; nil for none.
func (s *Server) SetModelChat(m *model.Model, tok *tokenizer.Tokenizer, own ChatFormatter) error {
	var chat ChatFormatter = defaultChatTemplate
	switch {
	case s.cfg.ChatTemplate != nil:
		chat = s.cfg.ChatTemplate
	case own != nil:
		chat = own
	}
	name := s.cfg.ModelName
	if name == "" {
		name = modelName(m)
	}
	pool, err := m.NewKVPool(s.kvOptions(m))
	if err != nil {
		return err
	}
	obs := s.metrics.forModel(name)
	batch := newBatcher(m, s.cfg.PrefillChunk, func(n int) { obs.batchSize.Observe(float64(n)) })
	s.engine.Store(&engine{m: m, tok: tok, name: name, batch: batch, pool: pool, chat: chat, obs: obs})
	s.log.Info("model loaded", "model", name, "weights_bytes", m.WeightsBytes(),
		"vocab_size", m.Config.VocabSize, "context_length", m.Config.NPositions,
		"kv_cache_tokens", pool.MaxTokens(), "kv_block_bytes", pool.BlockBytes(), "prefix_cache", s.cfg.PrefixCache,
		"weights_cache", m.WeightsCache)
	return nil
}

// modelName is the served model's id: an HF model's directory name, a
// GGUF file's name without .gguf (not the name of the directory holding
// it, which says nothing of the model).
func modelName(m *model.Model) string {
	if m.Format == model.FormatGGUF {
		return strings.TrimSuffix(filepath.Base(m.WeightsPath), ".gguf")
	}
	return filepath.Base(filepath.Clean(m.Dir))
}

// kvOptions is the KV pool Config asks for on m: by default room for
// every slot's full context, the most the slots could ever hold, so that
// no request waits for blocks unless the operator bounds the pool lower,
// and one context's worth of finished prompts kept for reuse, so that an
// idle server holds that much and not the whole bound.
func (s *Server) kvOptions(m *model.Model) kvcache.Options {
	n := s.cfg.KVCacheTokens
	if n <= 0 {
		n = s.cfg.Parallel * m.Config.NPositions
	}
	keep := s.cfg.PrefixTokens
	if keep <= 0 {
		keep = m.Config.NPositions
	}
	// FreeBehindWindow: a sequence of a model whose every layer has a
	// sliding window holds about a window's blocks, however long it runs
	// (the bound's promises are still prompt plus max_tokens).
	return kvcache.Options{MaxTokens: n, Float16: s.cfg.KVCacheFloat16, PrefixCache: s.cfg.PrefixCache, PrefixCacheTokens: keep,
		FreeBehindWindow: true}
}

// kvBudget says why the KV cache holds what it does.
func (s *Server) kvBudget(m *model.Model) string {
	switch {
	case s.cfg.KVCacheBudget != "":
		return s.cfg.KVCacheBudget
	case s.cfg.KVCacheTokens > 0:
		return "--kv-cache-tokens"
	}
	return fmt.Sprintf("--parallel %d × context %d", s.cfg.Parallel, m.Config.NPositions)
}

// state says whether new work can be served and, if not, why.
type state int

const (
	stateLoading state = iota
	stateValidating
	stateFailed
	stateReady
	stateDraining
)

func (s *Server) state() state {
	if s.draining.Load() {
		return stateDraining
	}
	if s.engine.Load() == nil {
		return stateLoading
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch s.validation.Status {
	case ValidationRunning:
		return stateValidating
	case ValidationFailed, ValidationError:
		return stateFailed
	}
	return stateReady
}

// Ready reports whether /readyz says ready.
func (s *Server) Ready() bool { return s.state() == stateReady }

// BeginDrain turns readiness off and refuses new work; requests already
// admitted run to the end.
func (s *Server) BeginDrain() {
	if !s.draining.Swap(true) {
		s.log.Info("draining: readiness off, refusing new work")
	}
}

// ErrDrainDeadline is Drain's error when work was still in flight at its
// deadline and was ended with SHUTDOWN.
var ErrDrainDeadline = errors.New("the shutdown deadline passed with work in flight")

// Drain begins draining and waits until no work is in flight. If ctx ends
// first, every job in flight is ended with error code SHUTDOWN (streams
// get a terminal error event, requests still queued a 503), Drain waits a
// moment for those answers to go out and returns ErrDrainDeadline with
// the count.
func (s *Server) Drain(ctx context.Context) error {
	s.BeginDrain()
	if s.waitIdle(ctx) {
		return nil
	}
	n := s.inFlight()
	s.stopJobs(errShutdown)
	answered, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	s.waitIdle(answered)
	s.log.Warn("shutdown deadline passed: jobs in flight ended with SHUTDOWN", "jobs", n, "unanswered", s.inFlight())
	return fmt.Errorf("%w: %d jobs ended with SHUTDOWN", ErrDrainDeadline, n)
}

func (s *Server) inFlight() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inflight
}

// waitIdle waits until no work is in flight (true) or ctx ends (false).
func (s *Server) waitIdle(ctx context.Context) bool {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for s.inFlight() > 0 {
		select {
		case <-ctx.Done():
			return false
		case <-tick.C:
		}
	}
	return true
}

// enter admits a unit of model work unless the server is draining; the
// returned func marks it done.
func (s *Server) enter() (func(), bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.draining.Load() {
		return nil, false
	}
	s.inflight++
	return func() {
		s.mu.Lock()
		s.inflight--
		s.mu.Unlock()
	}, true
}

// ModelInfo is the served model's name and weight bytes, zero before
// SetModel.
func (s *Server) ModelInfo() (name string, memoryBytes int64) {
	if e := s.engine.Load(); e != nil {
		return e.name, e.m.WeightsBytes()
	}
	return "", 0
}
