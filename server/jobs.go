package server

import (
	"context"
	"errors"
	"sync"
)

// Causes of a job's context ending, so a stream can tell /cancel from a
// timeout from a client that went away.
var (
	errCancelled    = errors.New("cancelled by /cancel")
	errDisconnected = errors.New("client disconnected")
)

// jobs maps the worker API's job ids to the cancel functions of their
// running requests.
type jobs struct {
	mu      sync.Mutex
	cancels map[string]context.CancelCauseFunc
}

func newJobs() *jobs { return &jobs{cancels: map[string]context.CancelCauseFunc{}} }

// add registers id; false when a job with that id is already running.
func (j *jobs) add(id string, cancel context.CancelCauseFunc) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	if _, dup := j.cancels[id]; dup {
		return false
	}
	j.cancels[id] = cancel
	return true
}

func (j *jobs) remove(id string) {
	j.mu.Lock()
	delete(j.cancels, id)
	j.mu.Unlock()
}

// cancel ends job id if it is running; cancelling an unknown or finished
// job is not an error (API.md: idempotent).
func (j *jobs) cancel(id string) bool {
	j.mu.Lock()
	c, ok := j.cancels[id]
	j.mu.Unlock()
	if ok {
		c(errCancelled)
	}
	return ok
}
