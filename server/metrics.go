package server

import (
	"net/http"
	"runtime"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// modelLabel names the served model on every metric of the model's work,
// as vLLM labels its own, so that a dashboard over several engines (or
// several models) selects and groups them alike.
const modelLabel = "model_name"

// metrics live in a registry of their own rather than the global one, so
// that several servers (tests) can coexist in one process. The HTTP
// metrics are labelled by route; the model's (tokens, latencies, the
// scheduler, the KV cache) by model_name, through modelMetrics and
// modelGauges once a model is loaded.
type metrics struct {
	reg           *prometheus.Registry
	requests      *prometheus.CounterVec
	duration      *prometheus.HistogramVec
	rejected      prometheus.Counter
	cancellations *prometheus.CounterVec
	connsRefused  prometheus.Counter
	idleClosed    prometheus.Counter
	openConns     prometheus.Gauge
	maxConns      prometheus.Gauge

	promptTokens *prometheus.CounterVec
	generated    *prometheus.CounterVec
	cachedTokens *prometheus.CounterVec
	ttft         *prometheus.HistogramVec
	interToken   *prometheus.HistogramVec
	queueTime    *prometheus.HistogramVec
	prefillTime  *prometheus.HistogramVec
	batchSize    *prometheus.HistogramVec
}

func newMetrics(version string) *metrics {
	counter := func(name, help string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, []string{modelLabel})
	}
	histogram := func(name, help string, buckets []float64) *prometheus.HistogramVec {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}, []string{modelLabel})
	}
	m := &metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "llorch_requests_total", Help: "HTTP requests by method, route (its path, {id} for a path parameter) and outcome.",
		}, []string{"method", "route", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "llorch_request_duration_seconds", Help: "Time from request to the end of the response, by method and route.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2.5, 14),
		}, []string{"method", "route"}),
		rejected: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "llorch_rejected_requests_total", Help: "Requests refused with 429 because the queue was full.",
		}),
		cancellations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "llorch_cancelled_requests_total", Help: "Requests ended early, by cause (cancel, disconnect, timeout).",
		}, []string{"cause"}),
		connsRefused: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "llorch_connections_refused_total", Help: "Connections refused with 503 because --max-connections were open.",
		}),
		idleClosed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "llorch_idle_connections_closed_total", Help: "Idle connections closed, oldest first, to admit a new one at the --max-connections cap.",
		}),
		openConns: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "llorch_open_connections", Help: "Connections open under the --max-connections cap.",
		}),
		maxConns: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "llorch_max_connections", Help: "The cap on open connections (--max-connections); 0: none.",
		}),

		promptTokens: counter("llorch_prompt_tokens_total", "Prompt tokens processed."),
		generated:    counter("llorch_generated_tokens_total", "Tokens generated."),
		cachedTokens: counter("llorch_prompt_tokens_cached_total", "Prompt tokens taken from the KV prefix cache instead of a forward pass."),
		ttft: histogram("llorch_time_to_first_token_seconds", "Time from a request's arrival to its first generated token: its queue wait, prefill and first step, as vLLM's; once a request, however many sequences it runs.",
			prometheus.ExponentialBuckets(0.0005, 2, 16)),
		interToken: histogram("llorch_inter_token_latency_seconds", "Time between consecutive generated tokens of one sequence.",
			prometheus.ExponentialBuckets(0.0001, 2, 16)),
		queueTime: histogram("llorch_request_queue_time_seconds", "Time a request waited in the queue for a slot.",
			prometheus.ExponentialBuckets(0.0001, 2.5, 14)),
		prefillTime: histogram("llorch_request_prefill_time_seconds", "Time of a prompt's forward pass (after the prefix cache).",
			prometheus.ExponentialBuckets(0.0005, 2, 16)),
		batchSize: histogram("llorch_decode_batch_size", "Sequences advanced by one batched decode step (one pass over the weights).",
			prometheus.ExponentialBuckets(1, 2, 8)),
	}
	build := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "llorch_build_info", Help: "Build information; the value is always 1.",
	}, []string{"version", "goversion"})
	build.WithLabelValues(version, runtime.Version()).Set(1)
	m.reg.MustRegister(m.requests, m.duration, m.rejected, m.cancellations, m.connsRefused, m.idleClosed, m.openConns, m.maxConns,
		m.promptTokens, m.generated, m.cachedTokens, m.ttft, m.interToken, m.queueTime, m.prefillTime, m.batchSize,
		build, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// modelMetrics are the metrics of one served model's work, labelled with
// its name.
type modelMetrics struct {
	promptTokens, generated, cachedTokens               prometheus.Counter
	ttft, interToken, queueTime, prefillTime, batchSize prometheus.Observer
}

// forModel curries the model's metrics with its name (a label value must
// be UTF-8; a directory's name need not be).
func (m *metrics) forModel(name string) *modelMetrics {
	name = strings.ToValidUTF8(name, "\uFFFD")
	return &modelMetrics{
		promptTokens: m.promptTokens.WithLabelValues(name),
		generated:    m.generated.WithLabelValues(name),
		cachedTokens: m.cachedTokens.WithLabelValues(name),
		ttft:         m.ttft.WithLabelValues(name),
		interToken:   m.interToken.WithLabelValues(name),
		queueTime:    m.queueTime.WithLabelValues(name),
		prefillTime:  m.prefillTime.WithLabelValues(name),
		batchSize:    m.batchSize.WithLabelValues(name),
	}
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}
