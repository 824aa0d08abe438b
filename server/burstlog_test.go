package server

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestBurstLog: the first event of a burst is logged at once, the rest of
// it as one summary per interval with their count, and an event after a
// quiet interval is logged at once again. The clock and the summary's
// timer are the test's.
func TestBurstLog(t *testing.T) {
	type step struct {
		at    time.Duration // an event at this time, or
		flush bool          // the scheduled summary fires now
	}
	cases := []struct {
		name  string
		steps []step
		want  []string // the lines: "event N" or "summary COUNT"
	}{
		{"one event", []step{{at: 0}}, []string{"event 0"}},
		{"a burst is one line and a summary", []step{{at: 0}, {at: 1}, {at: 2}, {at: 3}, {at: 10, flush: true}},
			[]string{"event 0", "summary 3"}},
		{"a long burst is a summary per interval",
			[]step{{at: 0}, {at: 1}, {at: 10, flush: true}, {at: 11}, {at: 12}, {at: 20, flush: true}, {at: 21}, {at: 30, flush: true}},
			[]string{"event 0", "summary 1", "summary 2", "summary 1"}},
		{"an event after a quiet interval is logged", []step{{at: 0}, {at: 25}, {at: 40}},
			[]string{"event 0", "event 25", "event 40"}},
		{"no summary without suppressed events", []step{{at: 0}, {at: 1}, {at: 10, flush: true}, {at: 30, flush: true}},
			[]string{"event 0", "summary 1"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var buf bytes.Buffer
			b := newBurstLog(slog.New(slog.NewJSONHandler(&buf, nil)), slog.LevelWarn, "summary")
			now := time.Unix(0, 0)
			b.now = func() time.Time { return now }
			var scheduled []time.Duration
			b.after = func(d time.Duration, _ func()) { scheduled = append(scheduled, d) }
			for _, s := range c.steps {
				now = time.Unix(0, 0).Add(s.at * time.Second)
				if s.flush {
					require.NotEmpty(t, scheduled, "a summary was scheduled")
					b.flush()
					continue
				}
				b.event(context.Background(), "event", "at", int(s.at))
			}
			var got []string
			for line := range strings.SplitSeq(strings.TrimSpace(buf.String()), "\n") {
				var rec struct {
					Level, Msg string
					At         int
					Count      int
				}
				require.NoError(t, json.Unmarshal([]byte(line), &rec), line)
				require.Equal(t, "WARN", rec.Level)
				switch rec.Msg {
				case "event":
					got = append(got, "event "+strconv.Itoa(rec.At))
				default:
					got = append(got, rec.Msg+" "+strconv.Itoa(rec.Count))
				}
			}
			require.Equal(t, c.want, got)
			for _, d := range scheduled {
				require.Positive(t, d, "a summary is scheduled for the end of the quiet interval")
				require.LessOrEqual(t, d, burstInterval)
			}
		})
	}
}
