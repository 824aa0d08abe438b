package server

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/llorch/llorch-check/generation"
)

// errTimeout is the cause of a job context that hit --request-timeout.
var errTimeout = errors.New("request timeout")

// beginRequest is the start of every model route: the engine must be
// ready and the body valid JSON. On failure it has written the response.
func (s *Server) beginRequest(w http.ResponseWriter, r *http.Request, fam family) (*engine, *fields, bool) {
	e, ok := s.readyEngine(w)
	if !ok {
		return nil, nil, false
	}
	f, rerr := decodeBody(r)
	if rerr != nil {
		writeRequestError(w, fam, rerr)
		return nil, nil, false
	}
	return e, f, true
}

// readyEngine returns the model if new work may start, else answers 503.
func (s *Server) readyEngine(w http.ResponseWriter) (*engine, bool) {
	msg := ""
	code := codeNotReady
	switch s.state() {
	case stateReady:
		return s.engine.Load(), true
	case stateDraining:
		code, msg = codeDraining, "the server is shutting down and takes no new work"
	case stateLoading:
		msg = "the model is loading"
	case stateValidating:
		msg = "the model is being validated against its references"
	case stateFailed:
		msg = "the model failed validation against its references; see /health"
	}
	writeError(w, http.StatusServiceUnavailable, code, msg, "")
	return nil, false
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

// admit counts the request as in flight (refused while draining) and waits
// for a slot. With ok false it has answered (503, 429). A non-nil err is
// the job's context ending while queued, for the caller to report in its
// own form. Unless ok is false, release must be called when done.
func (s *Server) admit(ctx context.Context, w http.ResponseWriter) (slot *Slot, release func(), ok bool, err error) {
	done, ok := s.enter()
	if !ok {
		writeError(w, http.StatusServiceUnavailable, codeDraining, "the server is shutting down and takes no new work", "")
		return nil, nil, false, nil
	}
	slot, err = s.sched.Acquire(ctx)
	switch {
	case errors.Is(err, ErrQueueFull):
		done()
		s.metrics.rejected.Inc()
		writeError(w, http.StatusTooManyRequests, codeQueueFull, "all slots are busy and the queue is full; retry later", "")
		return nil, nil, false, nil
	case err != nil:
		// The job ended while queued; the caller reports it in its own form.
		return nil, done, true, err
	}
	return slot, func() { slot.Release(); done() }, true, nil
}

// admitJob gives a request its job context and a slot; done releases both.
// When it returns false it has written the response (429, draining, or
// the end of a job that ended while queued) and released everything.
func (s *Server) admitJob(w http.ResponseWriter, r *http.Request) (context.Context, *Slot, func(), bool) {
	ctx, cancel := s.jobContext(r)
	slot, release, ok, err := s.admit(ctx, w)
	if !ok {
		cancel(nil)
		return nil, nil, nil, false
	}
	if err != nil {
		s.writeEnded(w, ctx)
		release()
		cancel(nil)
		return nil, nil, nil, false
	}
	return ctx, slot, func() { release(); cancel(nil) }, true
}

// generate runs one sequence in slot, timing tokens for the metrics and
// applying the demo token delay.
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
			s.metrics.ttft.Observe(now.Sub(start).Seconds())
		} else {
			s.metrics.interToken.Observe(now.Sub(last).Seconds())
		}
		last = now
		s.metrics.generated.Inc()
		if onToken != nil {
			return onToken(t)
		}
		return nil
	})
	s.metrics.promptTokens.Add(float64(len(req.Prompt)))
	return res, err
}
