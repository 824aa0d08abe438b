package server

import (
	"context"
	"net/http"
	"time"

	"github.com/llorch/llorch-check/generation"
	"github.com/llorch/llorch-check/kvcache"
)

// workerDefaults are docs/api.md's /execute defaults.
var workerDefaults = settingDefaults{maxTokens: 100, minMaxTokens: 1, temperature: 1.0}

type healthResponse struct {
	Status      string `json:"status"`
	ModelLoaded bool   `json:"model_loaded"`
	Model       string `json:"model,omitempty"`
	WorkerID    string `json:"worker_id,omitempty"`
	MemoryBytes int64  `json:"memory_bytes"`
	// SlotMemoryBytes is the most one slot can add to MemoryBytes (KV
	// cache, scoring logits, activations): budget memory_bytes + parallel ×
	// slot_memory_bytes.
	SlotMemoryBytes int64      `json:"slot_memory_bytes"`
	Parallel        int        `json:"parallel"`
	VRAMBytes       int64      `json:"vram_bytes"`
	MemoryType      string     `json:"memory_type"`
	VocabSize       int        `json:"vocab_size,omitempty"`
	ContextLength   int        `json:"context_length,omitempty"`
	UptimeSeconds   float64    `json:"uptime_seconds"`
	Draining        bool       `json:"draining"`
	Running         int        `json:"running"`
	Queued          int        `json:"queued"`
	KVCache         *kvHealth  `json:"kv_cache,omitempty"`
	Validation      Validation `json:"validation"`
}

// kvHealth is the KV cache's state: its bound, what running sequences
// hold, what is kept for prefix reuse, and what reuse has saved.
type kvHealth struct {
	MaxTokens    int    `json:"max_tokens"`
	Budget       string `json:"budget,omitempty"` // why max_tokens is what it is
	BlockTokens  int    `json:"block_tokens"`
	DType        string `json:"dtype"`
	PrefixCache  bool   `json:"prefix_cache"`
	UsedBlocks   int    `json:"used_blocks"`
	IdleBlocks   int    `json:"idle_blocks"`
	SpareBlocks  int    `json:"spare_blocks"` // ended blocks' memory still mapped for the next ones
	Bytes        int64  `json:"bytes"`        // of the blocks mapped: used, kept and spare
	PeakBytes    int64  `json:"peak_bytes"`   // of the most blocks allocated at once since start
	CachedTokens int64  `json:"cached_tokens"`
}

func newKVHealth(p *kvcache.Pool) *kvHealth {
	st := p.Stats()
	h := &kvHealth{MaxTokens: p.MaxTokens(), BlockTokens: st.BlockTokens, DType: "f32", PrefixCache: p.PrefixCache(),
		UsedBlocks: st.HeldBlocks - st.IdleBlocks, IdleBlocks: st.IdleBlocks, SpareBlocks: st.SpareBlocks,
		Bytes: st.MappedBytes(), PeakBytes: int64(st.PeakBlocks) * st.BlockBytes,
		CachedTokens: st.CachedTokens}
	if p.Float16() {
		h.DType = "f16"
	}
	return h
}

// handleHealth is the orchestrator's view: 200 once the model can serve,
// 503 "loading" before, 503 "unhealthy" when validation failed. While
// draining it stays 200 (the process is healthy, only not ready).
func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) {
	running, queued := s.sched.Stats()
	h := healthResponse{
		Status:        "healthy",
		WorkerID:      s.cfg.WorkerID,
		MemoryType:    "cpu",
		UptimeSeconds: time.Since(s.started).Seconds(),
		Draining:      s.draining.Load(),
		Running:       running,
		Queued:        queued,
		Validation:    s.validationSummary(),
	}
	// /health is open to anyone: server-side paths and internal error text
	// go to the log, and here only to a caller holding the API key.
	if s.cfg.APIKey == "" || !s.authorized(r) {
		h.Validation = h.Validation.public()
	}
	if e := s.engine.Load(); e != nil {
		h.ModelLoaded = true
		h.Model = e.name
		// Weights, not RSS: the figure an orchestrator budgets per worker and
		// that does not move with traffic (RSS is in /metrics).
		h.MemoryBytes = e.m.WeightsBytes()
		h.SlotMemoryBytes, h.Parallel = generation.SlotBytes(e.m), s.cfg.Parallel
		h.VocabSize = e.m.Config.VocabSize
		h.ContextLength = e.m.Config.NPositions
		h.KVCache = newKVHealth(e.pool)
		h.KVCache.Budget = s.kvBudget(e.m)
	}
	status := http.StatusOK
	switch s.state() {
	case stateLoading, stateValidating:
		h.Status, status = "loading", http.StatusServiceUnavailable
	case stateFailed:
		h.Status, status = "unhealthy", http.StatusServiceUnavailable
	case stateDraining:
		// An orchestrator routing on /health must stop sending work.
		h.Status, status = "draining", http.StatusServiceUnavailable
	}
	writeJSON(w, status, h)
}

type startedEvent struct {
	Type         string `json:"type"`
	JobID        string `json:"job_id"`
	Model        string `json:"model"`
	StartedAt    string `json:"started_at"`
	Seed         uint64 `json:"seed"`
	PromptTokens int    `json:"prompt_tokens"`
}

type tokenEvent struct {
	Type  string `json:"type"`
	Text  string `json:"t"`
	Index int    `json:"i"`
	ID    int    `json:"id"`
}

type endEvent struct {
	Type                string  `json:"type"`
	TokensOut           int     `json:"tokens_out"`
	DecodeTimeMS        float64 `json:"decode_time_ms"`
	StopReason          string  `json:"stop_reason"`
	StopSequenceMatched *string `json:"stop_sequence_matched"`
}

type errorEvent struct {
	Type    string `json:"type"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

// handleExecute streams one generation as Server-Sent Events: started,
// one token event per sampled token, then exactly one end or error.
func (s *Server) handleExecute(w http.ResponseWriter, r *http.Request, e *engine, f *fields) func() {
	jobID, ok := f.str("job_id", true)
	if ok {
		checkJobID(f, jobID)
	}
	prompt, hasPrompt := f.str("prompt", true)
	if hasPrompt {
		f.checkPrompt("prompt", prompt)
	}
	req := f.settings(workerDefaults, e.m.Config.VocabSize)
	req.Grammar = f.constraint(e)
	s.extraFields(f, executeFields, nil)
	if hasPrompt && f.ok("prompt") {
		// User text: "<|endoftext|>" in a prompt is characters, not the
		// control token (docs/serve.md, tokenization).
		req.Prompt = e.encode(prompt)
	}
	f.check(req.Validate(e.m.Config.NPositions, e.m.Config.VocabSize), nil)
	return func() {
		req = req.Seeded() // the started event announces it

		sk := &workerStream{stream{timeout: s.cfg.WriteTimeout}}
		s.runJob(w, r, jobID, sk, func(ctx context.Context, slot *Slot) error {
			sse := sk.open(w)
			_ = sse.event("started", startedEvent{Type: "started", JobID: jobID, Model: e.name,
				StartedAt: time.Now().UTC().Format(time.RFC3339Nano), Seed: *req.Seed, PromptTokens: len(req.Prompt)})
			start := time.Now()
			res, err := s.generate(ctx, e, slot, req, func(t generation.Token) error {
				return sse.event("token", tokenEvent{Type: "token", Text: t.Text, Index: t.Index, ID: t.ID})
			})
			if err != nil {
				return err
			}
			var matched *string
			if res.StopSequence != "" {
				matched = &res.StopSequence
			}
			_ = sse.event("end", endEvent{Type: "end", TokensOut: len(res.Tokens),
				DecodeTimeMS: float64(time.Since(start).Microseconds()) / 1000,
				StopReason:   res.StopReason, StopSequenceMatched: matched})
			return nil
		})
	}
}

// checkJobID holds job ids to what X-Request-ID allows (1..128 printable
// ASCII): they are echoed in events and logged.
func checkJobID(f *fields, id string) {
	switch {
	case id == "":
		f.bad("job_id", "length", "must not be empty", id)
	case !validRequestID(id):
		f.bad("job_id", "format", "must be 1..128 printable ASCII characters without spaces", nil)
	}
}

// handleCancel ends a running job; unknown and finished jobs are accepted
// too, so a retried cancel is harmless.
func (s *Server) handleCancel(w http.ResponseWriter, r *http.Request) {
	f, rerr := decodeBody(r)
	if rerr != nil {
		writeRequestError(w, familyWorker, rerr)
		return
	}
	id, ok := f.str("job_id", true)
	if ok {
		checkJobID(f, id)
	}
	if len(f.errs) > 0 {
		writeFieldErrors(w, familyWorker, f.errs)
		return
	}
	running, queued := s.jobs.cancel(id)
	writeJSON(w, http.StatusAccepted, map[string]any{"job_id": id, "running": running, "queued": queued})
}
