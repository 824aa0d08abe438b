package server

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Causes of a job's context ending, so a stream can tell /cancel from a
// timeout from a client that went away.
var (
	errCancelled    = errors.New("cancelled by /cancel")
	errDisconnected = errors.New("client disconnected")
	errShutdown     = errors.New("the server shut down")
)

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
// cancelling an unknown or finished job is not an error (API.md:
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
