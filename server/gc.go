package server

// gcHeadroom is the garbage a serving process lets accumulate between
// collections. Go's default (GOGC=100) lets garbage grow to the live heap,
// and the live heap of a server is mostly the weights (quantised and float16
// matrices live on it): 135 MB of GPT-2 Q8_0 let ~150 MB of per-request
// garbage sit in RSS (bench-serve, session 19). The weights hold no
// pointers, so a collection costs little more than marking the rest: 48 MB
// of headroom and 9 MB served 8 streaming clients at the same rate, at
// peaks of 361 and 320 MB (session 22), 16 and 8 MB at 250-255 and
// 241-247 MB (session 23), and what the garbage takes comes out of the
// 10% over the model and its KV cache a server should need.
const gcHeadroom = 8 << 20

// GCPercent is the GOGC for a serving process whose live heap, once the
// model is loaded, is live bytes (mostly the weights, unless a weights
// cache maps them outside the heap): about gcHeadroom of garbage, between
// 1 and 100 percent (a floor of 10 let a 4 GB model keep 400 MB of
// garbage; a ceiling of 100 keeps a small heap from collecting for every
// few kilobytes).
func GCPercent(live int64) int {
	if live <= 0 {
		return 100
	}
	return int(min(100, max(1, 100*gcHeadroom/live)))
}
