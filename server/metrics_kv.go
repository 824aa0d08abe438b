package server

import (
	"github.com/llorch/llorch-check/model"
	"github.com/prometheus/client_golang/prometheus"
)

// kvMetrics are what operators of llama.cpp and vLLM watch in a server
// under load: how full the KV cache is, how much of the prompts the prefix
// cache served, and where a request's time before its first token went.
type kvMetrics struct {
	cachedTokens prometheus.Counter
	queueTime    prometheus.Histogram
	prefillTime  prometheus.Histogram
}

// registerKV adds the KV-cache and latency metrics to reg; stats reads the
// loaded model's pool (false before a model is loaded).
func registerKV(reg *prometheus.Registry, stats func() (model.KVStats, bool)) *kvMetrics {
	k := &kvMetrics{
		cachedTokens: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "llorch_prompt_tokens_cached_total", Help: "Prompt tokens taken from the KV prefix cache instead of a forward pass.",
		}),
		queueTime: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "llorch_queue_time_seconds", Help: "Time a request waited in the queue for a slot.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2.5, 14),
		}),
		prefillTime: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "llorch_prefill_time_seconds", Help: "Time of a prompt's forward pass (after the prefix cache).",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}),
	}
	gauge := func(name, help string, v func(model.KVStats) float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, func() float64 {
			s, ok := stats()
			if !ok {
				return 0
			}
			return v(s)
		})
	}
	reg.MustRegister(k.cachedTokens, k.queueTime, k.prefillTime,
		gauge("llorch_kv_cache_usage_ratio", "Share of the KV cache's blocks held by running sequences (kept prefix blocks excluded).",
			func(s model.KVStats) float64 {
				if s.MaxBlocks == 0 {
					return 0
				}
				return float64(s.HeldBlocks-s.IdleBlocks) / float64(s.MaxBlocks)
			}),
		gauge("llorch_kv_cache_blocks_used", "KV cache blocks held by running sequences.",
			func(s model.KVStats) float64 { return float64(s.HeldBlocks - s.IdleBlocks) }),
		gauge("llorch_kv_cache_blocks_idle", "KV cache blocks kept for prefix reuse, evictable.",
			func(s model.KVStats) float64 { return float64(s.IdleBlocks) }),
		gauge("llorch_kv_cache_bytes", "Memory of the KV cache blocks allocated (used and kept).",
			func(s model.KVStats) float64 { return float64(int64(s.HeldBlocks) * s.BlockBytes) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "llorch_kv_cache_evictions_total", Help: "Kept prefix blocks evicted to make room.",
		}, func() float64 {
			s, _ := stats()
			return float64(s.Evictions)
		}),
	)
	return k
}
