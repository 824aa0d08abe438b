package main

import (
	"log/slog"
	"runtime/debug"

	"github.com/llorch/llorch-check/model"
)

// serveGCHeadroom is the garbage a serving process lets accumulate between
// collections. Go's default (GOGC=100) lets garbage grow to the live heap,
// and the live heap of a server is mostly the weights (quantised and float16
// matrices live on it): 135 MB of GPT-2 Q8_0 let ~150 MB of per-request
// garbage sit in RSS (bench-serve, session 19). The weights hold no
// pointers, so a collection costs little more than marking the rest.
const serveGCHeadroom = 48 << 20

// tuneGC sets GOGC so that garbage stays near serveGCHeadroom for m's
// weights, between 10 and 100 percent, unless the operator set GOGC.
func tuneGC(m *model.Model, log *slog.Logger, gogcSet bool) {
	if gogcSet {
		return
	}
	pct := gcPercent(m.WeightsBytes())
	debug.SetGCPercent(pct)
	log.Info("garbage collection tuned to the weights", "gogc", pct, "weights_bytes", m.WeightsBytes())
}

// gcPercent is the GOGC that leaves about serveGCHeadroom of garbage on a
// live heap of the weights' size, between 10 and 100.
func gcPercent(weights int64) int {
	if weights <= 0 {
		return 100
	}
	return int(min(100, max(10, 100*serveGCHeadroom/weights)))
}
