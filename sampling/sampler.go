package sampling

import "math/rand/v2"

// pcgStream is the fixed second PCG seed word; with it the seed alone picks
// the stream. Changing it changes every seeded output, so it never changes.
const pcgStream = 0x6c6c6f7263682d31 // "llorch-1"

// maxSeed bounds drawn seeds to integers a JSON reader using float64
// (JavaScript) keeps exactly, so a reported seed can always be replayed.
const maxSeed = 1 << 53

// Sampler draws tokens from probability vectors. Its randomness is
// math/rand/v2's PCG (PCG-DXSM, 128-bit state, seeded with (seed,
// pcgStream)), whose output sequence is fully specified; the conversion of
// its 64-bit outputs to floats is done here rather than by rand.Rand, so the
// tokens for a seed depend on nothing that a Go release could change.
// A Sampler is for one goroutine (one request) at a time.
type Sampler struct {
	src *rand.PCG
}

// NewSampler returns a sampler whose draws are fixed by seed.
func NewSampler(seed uint64) *Sampler {
	return &Sampler{src: rand.NewPCG(seed, pcgStream)}
}

// float64 is uniform in [0, 1): the top 53 bits of one PCG output.
func (s *Sampler) float64() float64 {
	return float64(s.src.Uint64()>>11) * 0x1p-53
}

// Sample draws an index with probability probs[i]/sum(probs) by inverting
// the cumulative distribution with one uniform draw, accumulated in float64
// in index order. Entries that are 0, negative or NaN are never drawn. It
// returns -1 when no entry is positive.
func (s *Sampler) Sample(probs []float32) int {
	total, last := 0.0, -1
	for i, p := range probs {
		if p > 0 {
			total += float64(p)
			last = i
		}
	}
	u := s.float64() * total // drawn even when total is 0: one draw per call keeps streams aligned
	if last < 0 {
		return -1
	}
	cum := 0.0
	for i, p := range probs[:last] {
		if p > 0 {
			cum += float64(p)
			if u < cum {
				return i
			}
		}
	}
	// Rounding can leave u ≥ the accumulated total; the mass is the last token's.
	return last
}

// RandomSeed draws a seed for a request that gave none, from the runtime's
// randomly seeded generator, below 2^53 (see maxSeed).
func RandomSeed() uint64 {
	return rand.Uint64N(maxSeed)
}
