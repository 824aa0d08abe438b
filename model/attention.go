package model

import (
	"math"

	"github.com/llorch/llorch-check/kernels"
	"github.com/llorch/llorch-check/kvcache"
)

// attnJob is one layer's attention over T new queries at absolute positions
// off..off+T-1 against the S = off+T keys already written to the cache.
type attnJob struct {
	qkv           []float32 // [T,width]: q | k | v, heads side by side (qkvLayout)
	out           []float32 // [T,H·D] merged heads, before c_proj
	cache         *kvcache.Cache
	layer         int
	T, off, S     int
	width, D, HD  int       // row widths of qkv and out, head width
	group, nKV    int       // query heads per key/value head (grouped-query attention), key/value heads
	wrongGroup    bool      // FaultGQARepeat: query head h reads KV head h mod Hkv
	scale         float32   // divisor of q·k (GPT-2: √D, or D under FaultAttnScale)
	softcap       float32   // Gemma 2's: scores become tanh(s/softcap)·softcap after the scaling; 0: none
	mulScale      bool      // multiply by scale instead (HF's Llama family: q·kᵀ·D^-½)
	noMask        bool      // FaultNoCausalMask
	window        int       // sliding window: a query sees itself and the window−1 keys before it; 0: every earlier key
	scores, probs []float32 // [h1−h0,T,S] probe buffers of the heads run, or nil
	h0            int       // the first head run: scores[0] is its
}

// attnParallelMinWork is the multiply-adds below which a layer's heads run
// on one goroutine: a decode step's attention is split from 16 keys on
// (12 heads of 64), where it costs more than ParallelFor's hand-off.
const attnParallelMinWork = 12 * 16 * 64

// run computes heads h0..h1-1.
func (j *attnJob) run(h0, h1 int) {
	j.h0 = h0
	if (h1-h0)*j.T*j.S*j.D < attnParallelMinWork {
		sc, e64 := j.scratch()
		for h := h0; h < h1; h++ {
			j.head(h, *sc, *e64)
		}
		j.release(sc, e64)
		return
	}
	kernels.ParallelFor(h1-h0, func(i int) {
		sc, e64 := j.scratch()
		j.head(h0+i, *sc, *e64)
		j.release(sc, e64)
	})
}

// scratch takes one worker's buffers from the pools: the scores (unused
// when the probe buffers hold them, else T·S, plus a block of widened keys
// or values for a float16 cache) and the softmax's float64 terms.
func (j *attnJob) scratch() (*[]float32, *[]float64) {
	n := j.T * j.S
	if j.scores != nil {
		n = 0
	}
	n += j.cache.BlockBufLen()
	return scoreBuffers.get(n), expBuffers.get(j.S)
}

func (j *attnJob) release(sc *[]float32, e64 *[]float64) {
	scoreBuffers.put(sc)
	expBuffers.put(e64)
}

// head computes head h block by block of the cache: every row's scores
// against a block's keys, then the softmax of each row, then each row's
// weighted sum, its values added block after block in key order. Without
// a probe, scratch holds the scores and then, in place, the
// probabilities. Keys past the causal mask are never multiplied, and a
// position gets the same bits in a prefill as in a decode step, and in
// blocks as in one piece (kernels.ScoresRows, kernels.AddWeightedSumRows:
// a block's queries at once, each with Scores's and AddWeightedSum's bits).
func (j *attnJob) head(h int, scratch []float32, e64 []float64) {
	T, S, D, W, HD := j.T, j.S, j.D, j.width, j.HD
	n := T * S
	if j.scores != nil {
		n = 0
	}
	sc, pr, widened := scratch[:n], scratch[:n], scratch[n:]
	if j.scores != nil {
		i := h - j.h0
		sc = j.scores[i*T*S : (i+1)*T*S]
		pr = j.probs[i*T*S : (i+1)*T*S]
	}
	kv := h / j.group // repeat_kv: KV head j serves query heads j·group … j·group+group−1
	if j.wrongGroup {
		kv = h % j.nKV
	}
	visible := func(t int) int {
		if j.noMask {
			return S
		}
		return j.off + t + 1
	}
	B := j.cache.BlockTokens()
	vis, nv := make([]int, T), make([]int, T) // each query's visible keys, in all and in block i
	for t := range T {
		vis[t] = visible(t)
	}
	counts := func(i int) []int {
		for t, v := range vis {
			nv[t] = min(v-i*B, B)
		}
		return nv
	}
	// Blocks wholly before the first query's sliding window are neither
	// scored nor summed: softmaxRow masks their keys for every query, and
	// their zero probabilities would add nothing (a decode step at
	// position 30000 with Mistral's window of 4096 reads 4096 keys, not
	// 30000).
	i0 := j.first(0) / B
	for i := i0; i*B < S; i++ {
		k := j.cache.BlockKeys(j.layer, kv, i, widened)
		kernels.ScoresRows(sc[i*B:], S, j.qkv[h*D:], W, k, D, counts(i))
	}
	for t := range T {
		softmaxRow(pr[t*S:(t+1)*S], sc[t*S:(t+1)*S], j.first(t), visible(t), j.scale, j.mulScale, j.softcap, e64)
		clear(j.out[t*HD+h*D : t*HD+(h+1)*D])
	}
	for i := i0; i*B < S; i++ {
		v := j.cache.BlockValues(j.layer, kv, i, widened)
		kernels.AddWeightedSumRows(j.out[h*D:], HD, pr[i*B:], S, v, D, counts(i))
	}
}

// first is query t's first visible key: the sliding window's start, or 0.
// The keys before it are scored with the rest (their blocks are shared
// with keys in the window) and masked in the softmax; their exact zero
// probabilities then add nothing to the weighted sum.
func (j *attnJob) first(t int) int {
	if j.window <= 0 || j.noMask {
		return 0
	}
	return max(0, j.off+t+1-j.window)
}

// softmaxRow scales the raw dot products in sc, masks keys before first
// (a sliding window) and at or past visible with float32's most negative
// finite value (as HF does), and writes the softmax into pr (which may
// alias sc). Masked probabilities are exactly zero. Dividing by scale
// (GPT-2's attention) or multiplying by it (the Llama family's) matches
// HF's rounding in each. A positive cap soft-caps the scaled scores,
// tanh(s/cap)·cap, before the mask (Gemma 2). e64 is scratch of at least
// visible entries.
func softmaxRow(pr, sc []float32, first, visible int, scale float32, mul bool, cap float32, e64 []float64) {
	for i := range first {
		sc[i] = -math.MaxFloat32
	}
	mx := kernels.ScaleMax(sc[first:visible], scale, mul, -math.MaxFloat32)
	if cap > 0 {
		softcap(sc[first:visible], cap)
		mx = -math.MaxFloat32
		for _, s := range sc[first:visible] {
			mx = max(mx, s)
		}
	}
	for i := visible; i < len(sc); i++ {
		sc[i] = -math.MaxFloat32
	}
	kernels.ExpShifted(e64[first:visible], sc[first:visible], mx)
	var sum float64
	for _, e := range e64[first:visible] {
		sum += e
	}
	inv := 1 / sum
	kernels.NarrowScaled(pr[first:visible], e64[first:visible], inv)
	clear(pr[:first])
	for i := visible; i < len(pr); i++ {
		pr[i] = 0
	}
}
