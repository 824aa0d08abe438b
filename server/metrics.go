package server

import (
	"net/http"
	"runtime"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics live in a registry of their own rather than the global one, so
// that several servers (tests) can coexist in one process.
type metrics struct {
	reg           *prometheus.Registry
	requests      *prometheus.CounterVec
	duration      *prometheus.HistogramVec
	promptTokens  prometheus.Counter
	generated     prometheus.Counter
	ttft          prometheus.Histogram
	interToken    prometheus.Histogram
	queueDepth    prometheus.Gauge
	running       prometheus.Gauge
	modelMemory   prometheus.Gauge
	rejected      prometheus.Counter
	cancellations *prometheus.CounterVec
	batchSize     prometheus.Histogram
	kv            *kvMetrics
}

func newMetrics(version string) *metrics {
	reg := prometheus.NewRegistry()
	f := func(c prometheus.Collector) { reg.MustRegister(c) }
	m := &metrics{
		reg: reg,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "llorch_requests_total", Help: "HTTP requests by route and outcome.",
		}, []string{"route", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "llorch_request_duration_seconds", Help: "Time from request to the end of the response, by route.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2.5, 14),
		}, []string{"route"}),
		promptTokens: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "llorch_prompt_tokens_total", Help: "Prompt tokens processed.",
		}),
		generated: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "llorch_generated_tokens_total", Help: "Tokens generated.",
		}),
		ttft: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "llorch_time_to_first_token_seconds", Help: "Time from admission of a request to its first generated token.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}),
		interToken: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "llorch_inter_token_latency_seconds", Help: "Time between consecutive generated tokens of one sequence.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 16),
		}),
		queueDepth: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "llorch_queue_depth", Help: "Requests waiting for a slot.",
		}),
		running: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "llorch_running_requests", Help: "Requests holding a slot.",
		}),
		modelMemory: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "llorch_model_memory_bytes", Help: "Bytes of model weights held in memory (as --weight-dtype holds them: float32, float16 or quantised matrices).",
		}),
		rejected: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "llorch_rejected_requests_total", Help: "Requests refused with 429 because the queue was full.",
		}),
		cancellations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "llorch_cancelled_requests_total", Help: "Requests ended early, by cause (cancel, disconnect, timeout).",
		}, []string{"cause"}),
		batchSize: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "llorch_decode_batch_size", Help: "Sequences advanced by one batched decode step (one pass over the weights).",
			Buckets: prometheus.ExponentialBuckets(1, 2, 8),
		}),
	}
	build := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "llorch_build_info", Help: "Build information; the value is always 1.",
	}, []string{"version", "goversion"})
	build.WithLabelValues(version, runtime.Version()).Set(1)
	for _, c := range []prometheus.Collector{m.requests, m.duration, m.promptTokens, m.generated, m.ttft,
		m.interToken, m.queueDepth, m.running, m.modelMemory, m.rejected, m.cancellations, m.batchSize, build,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})} {
		f(c)
	}
	return m
}

func (m *metrics) schedulerChanged(running, queued int) {
	m.running.Set(float64(running))
	m.queueDepth.Set(float64(queued))
}

func (m *metrics) observeBatch(n int) { m.batchSize.Observe(float64(n)) }

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}
