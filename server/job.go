// The job lifecycle: every model route's work runs as one job (runJob):
// its context and the causes that end it, admission (draining, the queue,
// a slot), the worker API's registry of job ids (/cancel), and an early
// end classified once (endJob) and told in each wire format (the sinks).

package server

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/llorch/llorch-check/generation"
)

var (
	// errEnded is work cut short by its job's context (a generation that
	// came back cancelled): endJob reads the cause from the context.
	errEnded = errors.New("job ended")
	// errTimeout is the cause of a job context that hit --request-timeout.
	errTimeout = errors.New("request timeout")
)

// Causes of a job's context ending, so a stream can tell /cancel from a
// timeout from a client that went away.
var (
	errCancelled    = errors.New("cancelled by /cancel")
	errDisconnected = errors.New("client disconnected")
	errShutdown     = errors.New("the server shut down")
)

const msgDraining = "the server is shutting down and takes no new work"

// stage is how far a job got before it ended.
type stage int

const (
	stageArrival stage = iota // cancelled before it arrived (worker job ids)
	stageQueued               // waiting for a slot
	stageRunning
)

// jobEnd is how a job that did not finish ended, decided once for every
// wire format: its API error code, message and metrics outcome.
type jobEnd struct {
	stage   stage
	code    string // CANCELLED, TIMEOUT, SHUTDOWN, INFERENCE_FAILED or GRAMMAR_DEAD_END
	message string
	outcome string
}

// sink is a wire format's way of telling its client that a job ended
// early: worker events, an OpenAI stream, or a JSON error status.
type sink interface {
	ended(w http.ResponseWriter, end jobEnd)
}

// runJob runs work in a slot as one job: its context (client, timeout,
// /cancel by id when id is set, shutdown), admission (refused while
// draining, 429 beyond the queue) and its end. Work writes its own answer;
// a job that ends early (before it started, while queued or midway, by
// cancel, timeout, shutdown or failure) is classified by endJob and told
// by sk, and a client that is gone is told nothing.
func (s *Server) runJob(w http.ResponseWriter, r *http.Request, id string, sk sink, work func(context.Context, *Slot) error) {
	ctx, cancel := s.jobContext(r)
	defer cancel(nil)
	if id != "" {
		if !s.jobs.add(id, cancel) {
			writeError(w, http.StatusConflict, codeConflict, "job "+id+" is already running", "job_id")
			return
		}
		defer s.jobs.remove(id)
		if ctx.Err() != nil { // cancelled before it arrived: nothing runs
			s.jobs.remove(id) // before the client hears, so it may reuse the id
			s.endJob(w, r, ctx, id, sk, stageArrival, ctx.Err())
			return
		}
	}
	done, ok := s.enter()
	if !ok {
		writeError(w, http.StatusServiceUnavailable, codeDraining, msgDraining, "")
		return
	}
	defer done()
	queued := time.Now()
	ctx = context.WithValue(ctx, arrivalKey{}, &arrival{at: queued})
	slot, err := s.sched.Acquire(ctx)
	if e := s.engine.Load(); err == nil && e != nil {
		e.obs.queueTime.Observe(time.Since(queued).Seconds())
	}
	switch {
	case errors.Is(err, ErrQueueFull):
		s.refuseQueueFull(w)
		return
	case err != nil:
		s.endJob(w, r, ctx, id, sk, stageQueued, err)
		return
	}
	defer slot.Release()
	if id != "" {
		s.jobs.started(id)
	}
	if err := work(ctx, slot); err != nil {
		s.endJob(w, r, ctx, id, sk, stageRunning, err)
	}
}

// shed answers 429 QUEUE_FULL and reports true when the scheduler is
// full, before the request's body is read: a client that ignores
// Retry-After sends its request again at once, and decoding, validating
// and tokenizing it only to refuse it took the CPU the admitted work
// needed (issue #43 row 8). A request that passes may still be refused by
// Acquire if the last place went meanwhile.
//
// A request that comes on a connection refused before its Retry-After
// passed is held until it has (or its client goes): a client hammering
// on a kept-alive connection then costs a sleeping goroutine, not a
// refusal's CPU in a loop. Then it is admitted if a place came free.
func (s *Server) shed(w http.ResponseWriter, r *http.Request) bool {
	if !s.sched.Full() {
		return false
	}
	lc := connOf(r)
	if lc != nil {
		if wait := time.Until(time.Unix(0, lc.retryAt.Load())); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-r.Context().Done():
				t.Stop()
			}
			if r.Context().Err() == nil && !s.sched.Full() {
				return false
			}
		}
		lc.retryAt.Store(time.Now().Add(retryAfterSeconds * time.Second).UnixNano())
	}
	s.refuseQueueFull(w)
	return true
}

// refuseQueueFull answers 429 QUEUE_FULL, pre-rendered, and counts it.
func (s *Server) refuseQueueFull(w http.ResponseWriter) {
	s.metrics.rejected.Inc()
	writeRendered(w, http.StatusTooManyRequests, queueFullBody)
}

// jobContext is the request's context plus --request-timeout; it ends when
// the client disconnects, the timeout passes or the job is cancelled, and
// context.Cause tells which.
func (s *Server) jobContext(r *http.Request) (context.Context, context.CancelCauseFunc) {
	ctx, cancel := context.WithCancelCause(r.Context())
	unhook := context.AfterFunc(s.stop, func() { cancel(errShutdown) })
	end := func(cause error) { unhook(); cancel(cause) }
	if s.cfg.RequestTimeout > 0 {
		tctx, tcancel := context.WithTimeoutCause(ctx, s.cfg.RequestTimeout, errTimeout)
		return tctx, func(cause error) { end(cause); tcancel() }
	}
	return ctx, end
}

// arrival is when a job entered the queue. Its first generated token is
// timed from there, so time to first token includes the queue wait, as
// vLLM's does; timed makes a job of several sequences run in turn (n
// choices, a batch's prompts) count once, at its first token.
type arrival struct {
	at    time.Time
	timed atomic.Bool
}

type arrivalKey struct{}

// generate runs one sequence in slot, timing tokens for the metrics and
// applying the demo token delay. A generation cut short by its job's end
// is errEnded, for runJob to report.
func (s *Server) generate(ctx context.Context, e *engine, slot *Slot, req generation.Request,
	onToken func(generation.Token) error) (generation.Result, error) {
	start := time.Now()
	last := start
	res, err := generation.Generate(ctx, slot.Decoder(e), e.tok, req, func(t generation.Token) error {
		if s.cfg.TokenDelay > 0 {
			select {
			case <-ctx.Done():
				return nil // Generate sees ctx and ends the sequence as cancelled
			case <-time.After(s.cfg.TokenDelay):
			}
		}
		now := time.Now()
		if t.Index == 0 {
			if a, ok := ctx.Value(arrivalKey{}).(*arrival); ok {
				if a.timed.CompareAndSwap(false, true) {
					e.obs.ttft.Observe(now.Sub(a.at).Seconds())
				}
			} else {
				e.obs.ttft.Observe(now.Sub(start).Seconds())
			}
		} else {
			e.obs.interToken.Observe(now.Sub(last).Seconds())
		}
		last = now
		e.obs.generated.Inc()
		if onToken != nil {
			return onToken(t)
		}
		return nil
	})
	e.obs.promptTokens.Add(float64(len(req.Prompt)))
	e.obs.cachedTokens.Add(float64(res.CachedTokens))
	if res.PrefillTime > 0 {
		e.obs.prefillTime.Observe(res.PrefillTime.Seconds())
	}
	if err == nil && res.StopReason == generation.StopCancelled {
		err = errEnded
	}
	return res, err
}

// endCause classifies why a job context ended: the API error code and
// the metrics outcome.
func (s *Server) endCause(ctx context.Context) (code, outcome string) {
	cause := context.Cause(ctx)
	switch {
	case errors.Is(cause, errShutdown):
		code, outcome = codeShutdown, outcomeShutdown
	case errors.Is(cause, errCancelled):
		code, outcome = codeCancelled, outcomeCancelled
	case errors.Is(cause, errTimeout), errors.Is(cause, context.DeadlineExceeded):
		code, outcome = codeTimeout, outcomeTimeout
	default:
		code, outcome = codeCancelled, outcomeDisconnected
	}
	s.metrics.cancellations.WithLabelValues(outcome).Inc()
	return code, outcome
}

// endJob classifies why a job ended early and has sk tell the client.
func (s *Server) endJob(w http.ResponseWriter, r *http.Request, ctx context.Context, id string, sk sink, st stage, err error) {
	end := jobEnd{stage: st}
	switch {
	case errors.Is(err, errWrite):
		s.endCause(ctx)
		setOutcome(w, outcomeDisconnected)
		return
	case ctx.Err() != nil || errors.Is(err, context.Canceled):
		end.code, end.outcome = s.endCause(ctx)
		end.message = endMessage(end.code)
	case errors.Is(err, generation.ErrGrammarDeadEnd):
		// The request's grammar and this vocabulary, not the server: a
		// client error, told as one (startsIn catches the first step
		// before a slot is taken; this is a later one).
		s.log.Info("constrained generation reached a dead end", "request_id", requestID(r.Context()), "job_id", id, "path", r.URL.Path, "error", err)
		end.code, end.outcome = codeGrammarDeadEnd, outcomeClientError
		end.message = "the text reached a point where the grammar allows no token of this model's vocabulary (it needs a character the vocabulary cannot spell): " + err.Error()
	default:
		s.log.Error("job failed", "request_id", requestID(r.Context()), "job_id", id, "path", r.URL.Path, "error", err)
		end.code, end.outcome, end.message = codeInference, outcomeServerError, err.Error()
	}
	sk.ended(w, end)
	setOutcome(w, end.outcome)
}

func endMessage(code string) string {
	switch code {
	case codeTimeout:
		return "the request exceeded the server's request timeout"
	case codeShutdown:
		return "the server shut down before the job finished; retry on another worker"
	}
	return "the job was cancelled"
}

// jobs maps the worker API's job ids to the cancel functions of their
// requests, and remembers for a while the ids /cancel named before any job
// had them: a cancel that overtakes its /execute must still win.
type jobs struct {
	mu      sync.Mutex
	cancels map[string]*job
	early   map[string]time.Time // ids cancelled before their job arrived
}

type job struct {
	cancel  context.CancelCauseFunc
	running bool // holds a slot (false: queued)
}

// Bounds of the early-cancel memory: long enough for any client's
// cancel/execute race, small enough that a flood of ids cannot grow it.
const (
	earlyCancelTTL = 10 * time.Minute
	earlyCancelMax = 10000
)

func newJobs() *jobs {
	return &jobs{cancels: map[string]*job{}, early: map[string]time.Time{}}
}

// add registers id; false when a job with that id is already running.
// A job whose id was cancelled early starts cancelled.
func (j *jobs) add(id string, cancel context.CancelCauseFunc) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	if _, dup := j.cancels[id]; dup {
		return false
	}
	j.cancels[id] = &job{cancel: cancel}
	if t, ok := j.early[id]; ok {
		delete(j.early, id)
		if time.Since(t) < earlyCancelTTL {
			cancel(errCancelled)
		}
	}
	return true
}

// started marks id as holding a slot.
func (j *jobs) started(id string) {
	j.mu.Lock()
	if jb, ok := j.cancels[id]; ok {
		jb.running = true
	}
	j.mu.Unlock()
}

func (j *jobs) remove(id string) {
	j.mu.Lock()
	delete(j.cancels, id)
	j.mu.Unlock()
}

// cancel ends job id and says whether it was running or queued;
// cancelling an unknown or finished job is not an error (docs/api.md:
// idempotent), and an unknown id is remembered so that its job, should it
// arrive next, starts cancelled.
func (j *jobs) cancel(id string) (running, queued bool) {
	j.mu.Lock()
	jb, ok := j.cancels[id]
	if !ok {
		j.rememberEarly(id)
		j.mu.Unlock()
		return false, false
	}
	running = jb.running
	j.mu.Unlock()
	jb.cancel(errCancelled)
	return running, !running
}

// rememberEarly records id, dropping expired entries, and the oldest when
// full. j.mu is held.
func (j *jobs) rememberEarly(id string) {
	now := time.Now()
	if len(j.early) >= earlyCancelMax {
		oldest, at := "", now
		for k, t := range j.early {
			if now.Sub(t) >= earlyCancelTTL {
				delete(j.early, k)
			} else if t.Before(at) {
				oldest, at = k, t
			}
		}
		if len(j.early) >= earlyCancelMax {
			delete(j.early, oldest)
		}
	}
	j.early[id] = now
}

// jsonAnswer is the sink of every route that answers with one JSON
// document (batch, embeddings, OpenAI without stream): an error status in
// the one error shape. 499 is nginx's "client closed the request": nobody
// reads it, but logs and metrics do.
type jsonAnswer struct{}

func (jsonAnswer) ended(w http.ResponseWriter, end jobEnd) {
	status := map[string]int{codeTimeout: http.StatusGatewayTimeout, codeShutdown: http.StatusServiceUnavailable,
		codeInference: http.StatusInternalServerError, codeGrammarDeadEnd: http.StatusBadRequest}[end.code]
	code := end.code
	if status == 0 {
		status, code = 499, codeCancelled
	}
	writeError(w, status, code, end.message, "")
}

// stream is an SSE response opened on first use, so a job that ends
// before it runs can still answer with a status.
type stream struct {
	sse     *sseWriter
	timeout time.Duration
}

func (k *stream) open(w http.ResponseWriter) *sseWriter {
	if k.sse == nil {
		k.sse = startSSE(w, k.timeout)
	}
	return k.sse
}

// workerStream is /execute's sink: an error event, the stream's one
// terminal event, saying how far the job got.
type workerStream struct{ stream }

func (k *workerStream) ended(w http.ResponseWriter, end jobEnd) {
	if end.stage == stageQueued && end.code == codeShutdown {
		jsonAnswer{}.ended(w, end) // never started: a plain 503 to retry elsewhere
		return
	}
	msg := map[stage]string{stageArrival: "ended before it started: ", stageQueued: "ended while queued: "}[end.stage] + end.message
	_ = k.open(w).event("error", errorEvent{Type: "error", Code: end.code, Message: msg})
}

// openAIStream is the OpenAI routes' sink with stream: a final error chunk
// and [DONE]; before the stream opened (ended while queued), a status.
type openAIStream struct{ stream }

func (k *openAIStream) ended(w http.ResponseWriter, end jobEnd) {
	if k.sse == nil {
		jsonAnswer{}.ended(w, end)
		return
	}
	typ := "timeout_error"
	switch end.code {
	case codeShutdown, codeInference:
		typ = "server_error"
	case codeGrammarDeadEnd:
		typ = "invalid_request_error"
	}
	_ = k.sse.data(map[string]any{"error": apiError{Message: end.message, Type: typ, Code: end.code}})
	_ = k.sse.write("data: [DONE]\n\n")
}
