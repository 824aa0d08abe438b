package server

import (
	"context"
	"net/http"
	"time"

	"github.com/llorch/llorch-check/generation"
)

const msgDraining = "the server is shutting down and takes no new work"

// readyEngine returns the model if new work may start, else answers 503.
func (s *Server) readyEngine(w http.ResponseWriter) (*engine, bool) {
	msg := ""
	code := codeNotReady
	switch s.state() {
	case stateReady:
		return s.engine.Load(), true
	case stateDraining:
		code, msg = codeDraining, msgDraining
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
			e.obs.ttft.Observe(now.Sub(start).Seconds())
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
