package server

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/llorch/llorch-check/kvcache"
)

// modelGauges are the served model's state, read at each scrape and
// labelled with its name: what operators of llama.cpp and vLLM watch in a
// server under load (requests running and waiting, how full the KV cache
// is, evictions of kept prefixes) and the weights' memory. Before a model
// is loaded there is none to report.
type modelGauges struct {
	served func() *engine
	sched  *Scheduler
	descs  []modelGauge
}

type modelGauge struct {
	desc  *prometheus.Desc
	kind  prometheus.ValueType
	value func(e *engine, kv kvcache.Stats, running, queued int) float64
}

func newModelGauges(served func() *engine, sched *Scheduler) *modelGauges {
	g := &modelGauges{served: served, sched: sched}
	add := func(name, help string, kind prometheus.ValueType, v func(e *engine, kv kvcache.Stats, running, queued int) float64) {
		g.descs = append(g.descs, modelGauge{prometheus.NewDesc(name, help, []string{modelLabel}, nil), kind, v})
	}
	gauge := prometheus.GaugeValue
	add("llorch_running_requests", "Requests holding a slot.", gauge,
		func(_ *engine, _ kvcache.Stats, running, _ int) float64 { return float64(running) })
	add("llorch_queue_depth", "Requests waiting for a slot.", gauge,
		func(_ *engine, _ kvcache.Stats, _, queued int) float64 { return float64(queued) })
	add("llorch_model_memory_bytes", "Bytes of model weights held in memory (as --weight-dtype holds them: float32, float16, bfloat16 or quantised matrices).", gauge,
		func(e *engine, _ kvcache.Stats, _, _ int) float64 { return float64(e.m.WeightsBytes()) })
	add("llorch_kv_cache_usage_ratio", "Share of the KV cache's blocks held by running sequences (kept prefix blocks excluded).", gauge,
		func(_ *engine, s kvcache.Stats, _, _ int) float64 {
			if s.MaxBlocks == 0 {
				return 0
			}
			return float64(s.HeldBlocks-s.IdleBlocks) / float64(s.MaxBlocks)
		})
	add("llorch_kv_cache_blocks_used", "KV cache blocks held by running sequences.", gauge,
		func(_ *engine, s kvcache.Stats, _, _ int) float64 { return float64(s.HeldBlocks - s.IdleBlocks) })
	add("llorch_kv_cache_blocks_idle", "KV cache blocks kept for prefix reuse, evictable.", gauge,
		func(_ *engine, s kvcache.Stats, _, _ int) float64 { return float64(s.IdleBlocks) })
	add("llorch_kv_cache_bytes", "Memory of the KV cache blocks mapped (used, kept, and ended blocks' memory waiting for the next ones).", gauge,
		func(_ *engine, s kvcache.Stats, _, _ int) float64 { return float64(s.MappedBytes()) })
	add("llorch_kv_cache_evictions_total", "Kept prefix blocks evicted to make room.", prometheus.CounterValue,
		func(_ *engine, s kvcache.Stats, _, _ int) float64 { return float64(s.Evictions) })
	return g
}

func (g *modelGauges) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range g.descs {
		ch <- d.desc
	}
}

func (g *modelGauges) Collect(ch chan<- prometheus.Metric) {
	e := g.served()
	if e == nil {
		return
	}
	kv := e.pool.Stats()
	running, queued := g.sched.Stats()
	for _, d := range g.descs {
		m, err := prometheus.NewConstMetric(d.desc, d.kind, d.value(e, kv, running, queued), e.name)
		if err != nil {
			m = prometheus.NewInvalidMetric(d.desc, err)
		}
		ch <- m
	}
}
