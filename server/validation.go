package server

import (
	"context"
	"path/filepath"
	"time"

	"github.com/llorch/llorch-check/checkpoints"
	"github.com/llorch/llorch-check/references"
)

// Validation statuses reported in /health.
const (
	ValidationSkipped = "skipped" // no --references
	ValidationRunning = "running"
	ValidationPassed  = "passed"
	ValidationFailed  = "failed" // a checkpoint was outside tolerance
	ValidationError   = "error"  // the run itself failed (bad reference set)
)

// Validation is the start-up check summary of /health.
type Validation struct {
	Status          string  `json:"status"`
	References      string  `json:"references,omitempty"`
	Passed          int     `json:"passed"`
	Total           int     `json:"total"`
	DurationSeconds float64 `json:"duration_seconds"`
	FirstFailure    string  `json:"first_failure,omitempty"`
	Error           string  `json:"error,omitempty"`
}

// public is v without what only the operator should see: the reference
// set's path becomes its directory name, an internal error a pointer to
// the log.
func (v Validation) public() Validation {
	if v.References != "" {
		v.References = filepath.Base(v.References)
	}
	if v.Error != "" {
		v.Error = "the reference set could not be checked; the server log has the error"
	}
	return v
}

// Validate runs every checkpoint of set against the loaded model, keeping
// the server unready until they pass. It returns whether they did. It must
// follow SetModel.
func (s *Server) Validate(ctx context.Context, set *references.Set) bool {
	e := s.engine.Load()
	s.setValidation(Validation{Status: ValidationRunning, References: set.Dir})
	start := time.Now()
	s.log.Info("validating model against references", "references", set.Dir)
	rep, err := checkpoints.Run(ctx, e.m, set, checkpoints.Options{Tokenizer: e.tok, KVCache: s.kvOptions(e.m)})
	v := Validation{References: set.Dir, DurationSeconds: time.Since(start).Seconds()}
	switch {
	case err != nil:
		v.Status, v.Error = ValidationError, err.Error()
	default:
		v.Total = len(rep.Results)
		for _, r := range rep.Results {
			if r.Passed {
				v.Passed++
			}
		}
		v.Status = ValidationPassed
		if !rep.Passed {
			v.Status = ValidationFailed
			if f := rep.FirstFailure(); f != nil {
				v.FirstFailure = f.CheckpointName + " " + f.Name
			}
		}
	}
	s.setValidation(v)
	if v.Status == ValidationPassed {
		s.log.Info("validation passed", "passed", v.Passed, "total", v.Total, "duration_seconds", v.DurationSeconds)
		return true
	}
	s.log.Error("validation failed: not ready", "status", v.Status, "passed", v.Passed, "total", v.Total,
		"first_failure", v.FirstFailure, "error", v.Error)
	return false
}

func (s *Server) setValidation(v Validation) {
	s.mu.Lock()
	s.validation = v
	s.mu.Unlock()
}

func (s *Server) validationSummary() Validation {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.validation
}
