package sampling

import "math"

// Argmax returns the index of the largest logit. Ties go to the lowest id,
// as torch.argmax does; NaN never wins. It returns -1 when logits is empty
// or all NaN, so that a broken forward pass is an error, not token 0.
func Argmax(logits []float32) int {
	best := -1
	for i, v := range logits {
		if v != v { // NaN
			continue
		}
		if best < 0 || v > logits[best] {
			best = i
		}
	}
	return best
}

// argmax64 is Argmax for float64.
func argmax64(s []float64) int {
	best := -1
	for i, v := range s {
		if math.IsNaN(v) {
			continue
		}
		if best < 0 || v > s[best] {
			best = i
		}
	}
	return best
}

// LogSoftmax returns log(softmax(logits)) accumulated in float64, so that a
// sum of many log-probabilities (log-likelihood) carries no float32 error of
// ours. −Inf logits give −Inf. It is the one log-softmax: the model's
// last_logprobs (rounded to float32 once, at the end), generation's
// log-likelihood and logprobs, probe's reference rows (float32 logits and
// the float64 truth) and llama.cpp's dump all call it.
func LogSoftmax[F float32 | float64](logits []F) []float64 {
	out := make([]float64, len(logits))
	mx := maxOf(logits)
	if math.IsInf(mx, -1) {
		for i := range out {
			out[i] = math.Inf(-1)
		}
		return out
	}
	sum := 0.0
	for _, v := range logits {
		sum += math.Exp(float64(v) - mx)
	}
	lse := mx + math.Log(sum)
	for i, v := range logits {
		out[i] = float64(v) - lse
	}
	return out
}

// softmax64 returns the softmax of s; −Inf entries get exactly 0.
func softmax64(s []float64) []float64 {
	return softmax64Into(make([]float64, len(s)), s)
}

// softmax64Into writes the softmax of s into out, which may be s.
func softmax64Into(out, s []float64) []float64 {
	mx := maxOf(s)
	if math.IsInf(mx, -1) {
		clear(out)
		return out
	}
	// A −Inf entry (what a grammar or top-k removed: most of the row when
	// decoding is constrained) is exactly 0 without calling Exp, unless the
	// maximum is NaN and every entry NaN.
	skip := !math.IsNaN(mx)
	sum := 0.0
	for i, v := range s {
		if skip && math.IsInf(v, -1) {
			out[i] = 0
			continue
		}
		e := math.Exp(v - mx)
		out[i] = e
		sum += e
	}
	for i := range out {
		out[i] /= sum
	}
	return out
}

// maxOf is math.Max folded over s from −Inf, the same value to the bit
// (+Inf over NaN, NaN over any other, +0 over −0) without a call per
// element: the softmaxes run it over the whole vocabulary every token.
func maxOf[F float32 | float64](s []F) float64 {
	mx, nan := math.Inf(-1), false
	for _, f := range s {
		switch v := float64(f); {
		case v > mx:
			mx = v
		case v != v:
			nan = true
		case v == 0 && mx == 0 && !math.Signbit(v):
			mx = v
		}
	}
	if nan && !math.IsInf(mx, 1) {
		return math.NaN()
	}
	return mx
}
