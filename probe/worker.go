package probe

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/llorch/llorch-check/checkpoints"
)

var jobSeq atomic.Int64

// workerRun is one /execute stream as the probe saw it.
type workerRun struct {
	promptTokens int
	ids          []int
	text         strings.Builder
}

// runWorker checks the greedy token and continuation by id through the
// llama-orch worker API's /execute stream (docs/api.md), which takes text and
// reports no log-probabilities.
func runWorker(ctx context.Context, p *prober) ([]checkpoints.Result, error) {
	return p.collect(ctx, p.workerCase, nil)
}

func (p *prober) workerCase(ctx context.Context, rc *refCase) ([]checkpoints.Result, error) {
	if rc.Gen == nil && rc.Greedy < 0 {
		return nil, nil
	}
	prompt, err := rc.prompt("worker")
	if err != nil {
		return nil, err
	}
	run, err := p.execute(ctx, prompt, max(rc.GenN, 1))
	if err != nil {
		return nil, err
	}
	rs := greedyIDResults(rc, run.ids, nil)
	if rc.Gen != nil && rc.Gen.Text != nil {
		rs = append(rs, greedyTextResult(rc, "generation_text", run.text.String(), nil))
	}
	if run.promptTokens != len(rc.Tokens) {
		rs = tokenCountFailure(rc, run.promptTokens, rs)
	}
	return rs, nil
}

// execute runs one greedy job and checks the stream keeps docs/api.md's
// contract: started first, token indices in order, one terminal event
// whose count matches.
func (p *prober) execute(ctx context.Context, prompt string, n int) (*workerRun, error) {
	job := fmt.Sprintf("llorch-probe-%d-%d", time.Now().UnixNano(), jobSeq.Add(1))
	body := map[string]any{"job_id": job, "prompt": prompt, "max_tokens": n, "temperature": 0, "seed": 0}
	run := &workerRun{promptTokens: -1}
	err := p.c.sse(ctx, "/execute", body, func(event string, data []byte) (bool, error) {
		var ev struct {
			Type         string `json:"type"`
			PromptTokens *int   `json:"prompt_tokens"`
			Index        *int   `json:"i"`
			ID           *int   `json:"id"`
			Text         string `json:"t"`
			TokensOut    *int   `json:"tokens_out"`
			StopReason   string `json:"stop_reason"`
			Code         string `json:"code"`
			Message      string `json:"message"`
		}
		if err := json.Unmarshal(data, &ev); err != nil {
			return false, fmt.Errorf("%w: /execute event %q is not JSON: %v", ErrServer, event, err)
		}
		if event == "" {
			event = ev.Type
		}
		if event != "started" && run.promptTokens < 0 && event != "error" {
			return false, fmt.Errorf("%w: /execute sent %q before started", ErrServer, event)
		}
		switch event {
		case "started":
			if ev.PromptTokens == nil {
				return false, fmt.Errorf("%w: /execute's started event has no prompt_tokens", ErrServer)
			}
			run.promptTokens = *ev.PromptTokens
		case "token":
			if ev.Index == nil || ev.ID == nil {
				return false, fmt.Errorf("%w: /execute token event without i or id: %s", ErrServer, data)
			}
			if *ev.Index != len(run.ids) {
				return false, fmt.Errorf("%w: /execute token event %d has index %d", ErrServer, len(run.ids), *ev.Index)
			}
			run.ids = append(run.ids, *ev.ID)
			run.text.WriteString(ev.Text)
		case "end":
			if ev.TokensOut == nil || *ev.TokensOut != len(run.ids) {
				return false, fmt.Errorf("%w: /execute's end event counts %s tokens after %d token events", ErrServer, intOrNone(ev.TokensOut), len(run.ids))
			}
			return true, nil
		case "error":
			return false, fmt.Errorf("%w: /execute ended with error %s: %s", ErrServer, ev.Code, ev.Message)
		}
		return false, nil
	})
	if err != nil {
		return nil, err
	}
	return run, nil
}

func intOrNone(p *int) string {
	if p == nil {
		return "no"
	}
	return fmt.Sprint(*p)
}
