package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/generation"
)

// recordSink keeps what endJob asked it to tell.
type recordSink struct{ ends []jobEnd }

func (k *recordSink) ended(_ http.ResponseWriter, end jobEnd) { k.ends = append(k.ends, end) }

// TestEndJobClassifiesOnce: however a job ends early, endJob decides its
// code and outcome from the context's cause, the same for every sink; a
// client that is gone is told nothing.
func TestEndJobClassifiesOnce(t *testing.T) {
	s := New(Config{})
	r := httptest.NewRequest(http.MethodPost, "/x", nil)
	for _, c := range []struct {
		name    string
		cause   error // the job context's, nil: still running
		err     error
		code    string
		outcome string
	}{
		{"cancel", errCancelled, errEnded, codeCancelled, outcomeCancelled},
		{"timeout", errTimeout, errEnded, codeTimeout, outcomeTimeout},
		{"shutdown", errShutdown, errEnded, codeShutdown, outcomeShutdown},
		{"client gone", errDisconnected, errEnded, codeCancelled, outcomeDisconnected},
		{"context error from the model", errCancelled, fmt.Errorf("step: %w", context.Canceled), codeCancelled, outcomeCancelled},
		{"failure", nil, errors.New("boom"), codeInference, outcomeServerError},
		{"grammar dead end", nil, fmt.Errorf("token 3: %w", generation.ErrGrammarDeadEnd), codeGrammarDeadEnd, outcomeClientError},
		{"write failed", errDisconnected, fmt.Errorf("%w: broken pipe", errWrite), "", outcomeDisconnected},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			if c.cause != nil {
				cancel(c.cause)
			}
			rec := &recorder{ResponseWriter: httptest.NewRecorder()}
			k := &recordSink{}
			s.endJob(rec, r, ctx, "", k, stageRunning, c.err)
			require.Equal(t, c.outcome, rec.outcome)
			if c.code == "" {
				require.Empty(t, k.ends, "nobody to tell")
				return
			}
			require.Len(t, k.ends, 1)
			require.Equal(t, c.code, k.ends[0].code)
			require.NotEmpty(t, k.ends[0].message)
		})
	}
}

// TestSinksTellEachEnd: each wire format's way of telling an early end.
func TestSinksTellEachEnd(t *testing.T) {
	end := func(st stage, code string) jobEnd {
		return jobEnd{stage: st, code: code, message: endMessage(code)}
	}
	json := func(http.ResponseWriter) sink { return jsonAnswer{} }
	worker := func(http.ResponseWriter) sink { return &workerStream{} }
	openAI := func(http.ResponseWriter) sink { return &openAIStream{} }
	opened := func(w http.ResponseWriter) sink {
		k := &openAIStream{}
		k.open(w)
		return k
	}
	for _, c := range []struct {
		name   string
		sink   func(http.ResponseWriter) sink
		end    jobEnd
		status int
		body   string
	}{
		{"json cancelled", json, end(stageRunning, codeCancelled), 499, `"code":"CANCELLED"`},
		{"json timeout", json, end(stageQueued, codeTimeout), http.StatusGatewayTimeout, `"code":"TIMEOUT"`},
		{"json shutdown", json, end(stageRunning, codeShutdown), http.StatusServiceUnavailable, `"code":"SHUTDOWN"`},
		{"json failure", json, jobEnd{code: codeInference, message: "boom"}, http.StatusInternalServerError, `"message":"boom"`},
		{"worker running", worker, end(stageRunning, codeCancelled), http.StatusOK,
			"event: error\ndata: {\"type\":\"error\",\"code\":\"CANCELLED\",\"message\":\"the job was cancelled\"}"},
		{"worker queued", worker, end(stageQueued, codeTimeout), http.StatusOK, `"message":"ended while queued: `},
		{"worker before it arrived", worker, end(stageArrival, codeCancelled), http.StatusOK, `"message":"ended before it started: `},
		{"worker queued at shutdown", worker, end(stageQueued, codeShutdown), http.StatusServiceUnavailable, `{"error":`},
		{"openai stream not open", openAI, end(stageQueued, codeTimeout), http.StatusGatewayTimeout, `{"error":`},
		{"openai stream timeout", opened, end(stageRunning, codeTimeout), 0,
			`"type":"timeout_error","param":null,"code":"TIMEOUT"}}` + "\n\ndata: [DONE]\n\n"},
		{"openai stream failure", opened, jobEnd{code: codeInference, message: "boom"}, 0,
			`"type":"server_error","param":null,"code":"INFERENCE_FAILED"}}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			c.sink(w).ended(w, c.end)
			if c.status != 0 {
				require.Equal(t, c.status, w.Code)
			}
			require.Contains(t, w.Body.String(), c.body)
		})
	}
}
