package server

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// burstInterval is how often a burst of refusals (429s, connections over
// the cap) is summarised in the log.
const burstInterval = 10 * time.Second

// burstLog logs the first event of a burst at once and the rest as one
// summary line per interval with their count: an overload refusing
// thousands of requests a second costs a line every interval, not one
// line a request (237 MB of log in 6 minutes, before).
type burstLog struct {
	log      *slog.Logger
	level    slog.Level
	summary  string // the summary line's message
	interval time.Duration
	now      func() time.Time
	after    func(time.Duration, func()) // schedules the summary: time.AfterFunc

	mu         sync.Mutex
	quietUntil time.Time // events before this are counted, not logged
	suppressed int       // events counted since the last line
	pending    bool      // a summary is scheduled
}

func newBurstLog(log *slog.Logger, level slog.Level, summary string) *burstLog {
	return &burstLog{log: log, level: level, summary: summary, interval: burstInterval, now: time.Now,
		after: func(d time.Duration, f func()) { time.AfterFunc(d, f) }}
}

// event logs msg with attrs when no line of this log was written in the
// last interval; otherwise it counts the event for the next summary.
func (b *burstLog) event(ctx context.Context, msg string, attrs ...any) {
	if b.first() {
		b.emit(ctx, msg, attrs...)
	}
}

// emit logs msg at the log's level, for a caller that asked first.
func (b *burstLog) emit(ctx context.Context, msg string, attrs ...any) {
	b.log.Log(ctx, b.level, msg, attrs...)
}

// first reports whether an event is to be logged now, the first of a
// burst; if not, it is counted for the next summary. A caller that
// builds the line's attributes only when first says so costs an event
// a counted lock, no allocation.
func (b *burstLog) first() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	if b.suppressed == 0 && !now.Before(b.quietUntil) {
		b.quietUntil = now.Add(b.interval)
		return true
	}
	b.suppressed++
	if !b.pending {
		b.pending = true
		b.after(b.quietUntil.Sub(now), b.flush)
	}
	return false
}

// flush writes the summary of the events counted since the last line.
func (b *burstLog) flush() {
	b.mu.Lock()
	n := b.suppressed
	b.suppressed, b.pending = 0, false
	b.quietUntil = b.now().Add(b.interval)
	b.mu.Unlock()
	if n > 0 {
		b.log.Log(context.Background(), b.level, b.summary, "count", n, "interval", b.interval.String())
	}
}
