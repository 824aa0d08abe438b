package server

// gcHeadroom is the garbage a serving process lets accumulate between
// collections. Go's default (GOGC=100) lets garbage grow to the live heap,
// and the live heap of a server is mostly the weights (quantised and float16
// matrices live on it): 135 MB of GPT-2 Q8_0 let ~150 MB of per-request
// garbage sit in RSS (bench-serve, session 19). The weights hold no
// pointers, so a collection costs little more than marking the rest.
const gcHeadroom = 48 << 20

// GCPercent is the GOGC for a serving process whose live heap is mostly
// weights bytes of weights: about gcHeadroom of garbage, between 10 and
// 100 percent.
func GCPercent(weights int64) int {
	if weights <= 0 {
		return 100
	}
	return int(min(100, max(10, 100*gcHeadroom/weights)))
}
