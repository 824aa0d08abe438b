package probe

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/checkpoints"
	"github.com/llorch/llorch-check/model"
)

func scrape(t *testing.T, c *Canary) string {
	t.Helper()
	rec := httptest.NewRecorder()
	c.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	require.Equal(t, http.StatusOK, rec.Code)
	return rec.Body.String()
}

// TestCanary: a canary over a server that turns faulty, then goes down,
// records each verdict as it happens and stops when its context ends.
func TestCanary(t *testing.T) {
	good, faulty := serve(t, model.FaultNone), serve(t, model.FaultAttnScale)
	var phase atomic.Int32 // 0 good, 1 faulty, 2 down
	relay := startServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		target := good
		switch phase.Load() {
		case 1:
			target = faulty
		case 2:
			http.Error(w, "down for maintenance", http.StatusBadGateway)
			return
		}
		req, err := http.NewRequestWithContext(r.Context(), r.Method, target+r.URL.Path, r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		req.Header = r.Header.Clone()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		w.Header().Set("Content-Type", resp.Header.Get("Content-Type"))
		w.WriteHeader(resp.StatusCode)
		io.Copy(w, resp.Body)
	}))
	set := tinySet(t)
	c := NewCanary()
	logs, err := os.Create(filepath.Join(t.TempDir(), "canary.log"))
	require.NoError(t, err)
	defer logs.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var runs atomic.Int32
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		Watch(ctx, time.Millisecond, c, slog.New(slog.NewJSONHandler(logs, nil)), func(ctx context.Context) (*checkpoints.Report, error) {
			rep, err := Run(ctx, set, Options{Endpoint: relay, API: "openai"})
			if n := runs.Add(1); n < 3 {
				phase.Store(n) // the next run sees the next phase
			}
			return rep, err
		})
	}()
	require.Eventually(t, func() bool { return runs.Load() >= 3 }, time.Minute, 5*time.Millisecond)
	cancel()
	select {
	case <-stopped:
	case <-time.After(30 * time.Second):
		t.Fatal("Watch did not return after its context ended")
	}
	m := scrape(t, c)
	for _, line := range []string{
		`llorch_probe_runs_total{result="pass"} 1`,
		`llorch_probe_runs_total{result="fail"} 1`,
		"llorch_probe_up 0",
		"llorch_probe_passed 0",
		"llorch_probe_last_run_timestamp_seconds ",
	} {
		require.Contains(t, m, line, m)
	}
	require.Regexp(t, `llorch_probe_runs_total\{result="error"\} [1-9]`, m)
	ratio := regexp.MustCompile(`llorch_probe_tolerance_ratio\{checkpoint="9"\} (\S+)`).FindStringSubmatch(m)
	require.Len(t, ratio, 2, m)
	v, err := strconv.ParseFloat(ratio[1], 64)
	require.NoError(t, err)
	require.Greater(t, v, 1.0, "the faulty run's checkpoint 9 is beyond tolerance (kept from the last run that got answers)")
	require.Regexp(t, `llorch_probe_failed_checks\{checkpoint="9"\} [1-9]`, m)
	b, err := os.ReadFile(logs.Name())
	require.NoError(t, err)
	l := string(b)
	require.Contains(t, l, `"result":"pass"`)
	require.Contains(t, l, `"result":"fail"`)
	require.Contains(t, l, `"first_failure":{"checkpoint":9`)
	require.Contains(t, l, `"result":"error"`)
	require.True(t, strings.Contains(l, "502"), l)
}
