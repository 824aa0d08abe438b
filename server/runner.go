package server

import (
	"context"
	"errors"
	"net/http"
	"time"
)

var (
	// errEnded is work cut short by its job's context (a generation that
	// came back cancelled): endJob reads the cause from the context.
	errEnded = errors.New("job ended")
	// errTimeout is the cause of a job context that hit --request-timeout.
	errTimeout = errors.New("request timeout")
)

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
	code    string // CANCELLED, TIMEOUT, SHUTDOWN or INFERENCE_FAILED
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
	slot, err := s.sched.Acquire(ctx)
	if e := s.engine.Load(); err == nil && e != nil {
		e.obs.queueTime.Observe(time.Since(queued).Seconds())
	}
	switch {
	case errors.Is(err, ErrQueueFull):
		s.metrics.rejected.Inc()
		writeError(w, http.StatusTooManyRequests, codeQueueFull, "all slots are busy and the queue is full; retry later", "")
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
