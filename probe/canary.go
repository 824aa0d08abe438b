package probe

import (
	"context"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/llorch/llorch-check/checkpoints"
)

// Canary keeps the verdict of the latest probe runs for Prometheus.
type Canary struct {
	reg                           *prometheus.Registry
	up, passed, lastRun, lastTook prometheus.Gauge
	tolRatio, failedChecks        *prometheus.GaugeVec
	runs                          *prometheus.CounterVec
}

// NewCanary makes a Canary with no run recorded.
func NewCanary() *Canary {
	c := &Canary{
		reg: prometheus.NewRegistry(),
		up: prometheus.NewGauge(prometheus.GaugeOpts{Name: "llorch_probe_up",
			Help: "1 when the last run got usable answers from the server, 0 when it ended in an error."}),
		passed: prometheus.NewGauge(prometheus.GaugeOpts{Name: "llorch_probe_passed",
			Help: "1 when the last run passed every check, 0 when a check failed or the run ended in an error."}),
		lastRun: prometheus.NewGauge(prometheus.GaugeOpts{Name: "llorch_probe_last_run_timestamp_seconds",
			Help: "When the last run started, Unix time."}),
		lastTook: prometheus.NewGauge(prometheus.GaugeOpts{Name: "llorch_probe_last_run_duration_seconds",
			Help: "How long the last run took."}),
		tolRatio: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "llorch_probe_tolerance_ratio",
			Help: "Worst |got - want| / (atol + rtol |want|) per checkpoint in the last run that got answers; above 1 fails."}, []string{"checkpoint"}),
		failedChecks: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "llorch_probe_failed_checks",
			Help: "Failed checks per checkpoint in the last run that got answers."}, []string{"checkpoint"}),
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "llorch_probe_runs_total",
			Help: "Probe runs by result: pass, fail, or error (the server was unreachable or answered garbage)."}, []string{"result"}),
	}
	c.reg.MustRegister(c.up, c.passed, c.lastRun, c.lastTook, c.tolRatio, c.failedChecks, c.runs)
	for _, r := range []string{"pass", "fail", "error"} {
		c.runs.WithLabelValues(r)
	}
	return c
}

// Handler serves the metrics in Prometheus' text format.
func (c *Canary) Handler() http.Handler {
	return promhttp.HandlerFor(c.reg, promhttp.HandlerOpts{})
}

// Record takes one run's outcome: its report, or the error that ended it.
func (c *Canary) Record(rep *checkpoints.Report, err error, start time.Time, took time.Duration) {
	c.lastRun.Set(float64(start.UnixNano()) / 1e9)
	c.lastTook.Set(took.Seconds())
	c.passed.Set(0)
	if err != nil {
		c.up.Set(0)
		c.runs.WithLabelValues("error").Inc()
		return
	}
	c.up.Set(1)
	result := "fail"
	if rep.Passed {
		c.passed.Set(1)
		result = "pass"
	}
	c.runs.WithLabelValues(result).Inc()
	c.tolRatio.Reset()
	c.failedChecks.Reset()
	for _, s := range rep.Summaries() {
		n := strconv.Itoa(s.Checkpoint.Number)
		ratio := s.TolRatio
		if math.IsNaN(ratio) {
			ratio = math.Inf(1)
		}
		c.tolRatio.WithLabelValues(n).Set(ratio)
		c.failedChecks.WithLabelValues(n).Set(float64(s.Failed))
	}
}

// Watch calls once now and then every interval until ctx ends, records
// each outcome in c and logs its verdict. A run cut short by ctx is not
// recorded, whatever it returned: it says nothing about the server.
func Watch(ctx context.Context, every time.Duration, c *Canary, log *slog.Logger, once func(context.Context) (*checkpoints.Report, error)) {
	t := time.NewTimer(0)
	defer t.Stop()
	for run := 1; ; run++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		start := time.Now()
		rep, err := once(ctx)
		if ctx.Err() != nil {
			return
		}
		took := time.Since(start)
		c.Record(rep, err, start, took)
		logRun(log, run, rep, err, took)
		t.Reset(max(every-took, 0))
	}
}

func logRun(log *slog.Logger, run int, rep *checkpoints.Report, err error, took time.Duration) {
	attrs := []any{"run", run, "duration_seconds", took.Seconds()}
	if err != nil {
		log.Error("probe run", append(attrs, "result", "error", "error", err.Error())...)
		return
	}
	attrs = append(attrs, "verdict", rep.Verdict())
	if rep.API != nil {
		attrs = append(attrs, "api", rep.API.Name)
	}
	if f := rep.FirstFailure(); f != nil {
		attrs = append(attrs, "first_failure", slog.GroupValue(slog.Int("checkpoint", f.Checkpoint),
			slog.String("name", f.Name), slog.String("case", f.Case), slog.String("message", f.Message)))
		log.Warn("probe run", append(attrs, "result", "fail")...)
		return
	}
	log.Info("probe run", append(attrs, "result", "pass")...)
}
