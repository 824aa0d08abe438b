package model

import (
	"math"

	"github.com/llorch/llorch-check/internal/keep"
	"github.com/llorch/llorch-check/kernels"
	"github.com/llorch/llorch-check/tensors"
)

// Mixtures of experts: Qwen3-MoE and Mixtral are the Llama family's block
// with a sparse FFN, as HF's Qwen3MoeSparseMoeBlock and
// MixtralSparseMoeBlock compute it in float32: router logits (a Linear
// without bias), a softmax over every expert in float32, the top k of
// those probabilities, divided by their sum where the architecture
// renormalises, then Σ wₖ · down(silu(gate)·up) over the chosen experts,
// each product rounded to float32 and added in ascending expert order
// from zero (HF's index_add_, an expert at a time).

// Architecture names of the mixtures of experts.
const (
	ArchQwen3MoE = "qwen3_moe"
	// Mixtral: Mistral's block with experts; llama.cpp converts it as llama.
	ArchMixtral = "mixtral"
)

func init() {
	register(ArchQwen3MoE, "Qwen3MoeForCausalLM", &llamaFamily{name: ArchQwen3MoE, eps: 1e-6, theta: 10000, positions: 32768,
		qkNorm: true, noGGUFAttnBias: true, ggufArch: "qwen3moe",
		biases:     qwen3Biases,
		ggufBiases: func(c *Config, has func(string) bool) { c.QKVBias = has("blk.0.attn_q.bias"); c.OBias = c.QKVBias },
		windows:    noQwenWindow,
		moe:        qwen3MoELayout})
	register(ArchMixtral, "MixtralForCausalLM", &llamaFamily{name: ArchMixtral, eps: 1e-5, theta: 1e6, positions: 4096 * 32,
		llamaCppRope: true, ggufArch: ArchLlama,
		biases:     func(*Config, bool, bool) error { return nil },
		ggufBiases: func(*Config, func(string) bool) {},
		windows:    everyLayerWindow(0),
		moe:        mixtralLayout})
}

// moeBlock is a sparse layer's router and experts, each matrix held
// [in,out] as the block's others.
type moeBlock struct {
	router  kernels.Matrix // [C,E]
	experts []expert
}

// expert is one SwiGLU expert: gate and up [C,I], down [I,C].
type expert struct {
	gate, up, down kernels.Matrix
}

// bytes is the size of the router and experts; 0 for a dense layer.
func (mb *moeBlock) bytes() int64 {
	if mb == nil {
		return 0
	}
	n := mb.router.Bytes()
	for _, e := range mb.experts {
		n += e.gate.Bytes() + e.up.Bytes() + e.down.Bytes()
	}
	return n
}

// sparseFFN is x += Σₖ wₖ · expertₖ(h), h the post-attention RMSNorm. Each
// expert computes only the rows routed to it, so a decode step reads the
// chosen experts' weights and no others.
func (ps *pass) sparseFFN(l int, b *block, f blockFaults) {
	c, R := ps.m.Config, ps.R
	C, E, K, I := c.NEmbd, c.MoE.Experts, c.MoE.TopK, c.MoE.Inner
	rmsNorm(ps.h, ps.x, b.ln2W, C, f.rmsEps, f.rmsF16)
	ps.p.emit(tensors.FFNNorm, l, ps.h, R, C)
	// One pooled buffer for the layer's scratch: the router logits, the
	// weights, a token's probabilities, and a batch of experts' gathered
	// rows and products (S slots: every slot of a decode step, at most
	// max(R, moeBatchSlots) of a prefill).
	S := min(R*K, max(R, moeBatchSlots))
	fb := moeBuffers.Get(R*E + R*K + E + 2*S*C + 3*S*I)
	defer moeBuffers.Put(fb)
	buf := *fb
	take := func(n int) []float32 { s := buf[:n:n]; buf = buf[n:]; return s }
	logits, w, probs := take(R*E), take(R*K), take(E)
	xg, gate, up, act, down := take(S*C), take(S*I), take(S*I), take(S*I), take(S*C)
	ib := moeInts.get(2*R*K + E + 1)
	defer moeInts.put(ib)
	ids, order, start := (*ib)[:R*K], (*ib)[R*K:2*R*K], (*ib)[2*R*K:]
	e64 := expBuffers.get(max(E, I))
	defer expBuffers.put(e64)

	conv1D(logits, ps.h, b.moe.router, nil, R, C, E, false)
	ps.p.emit(tensors.RouterLogits, l, logits, R, E)
	for r := range R {
		route(ids[r*K:(r+1)*K], w[r*K:(r+1)*K], logits[r*E:(r+1)*E], probs, (*e64)[:E], c.MoE.NormTopK, f)
	}
	on := ps.p.on()
	var pg, pu, pa, pd []float32 // the probes' [R,K,·] of each slot's expert
	if on {
		idf := make([]float32, R*K)
		for i, e := range ids {
			idf[i] = float32(e)
		}
		ps.p.emit(tensors.Experts, l, idf, R, K)
		ps.p.emit(tensors.ExpertWeights, l, w, R, K)
		pg, pu, pa, pd = make([]float32, R*K*I), make([]float32, R*K*I), make([]float32, R*K*I), make([]float32, R*K*C)
	}
	// The slots (r·K + slot) routed to each expert e, in row order:
	// order[start[e]:start[e+1]], a counting sort.
	clear(start)
	for _, e := range ids {
		start[e+1]++
	}
	for e := range E {
		start[e+1] += start[e]
	}
	for i := range ids {
		e := ids[i]
		// start[e] moves on as slots are placed; restored below.
		order[start[e]] = i
		start[e]++
	}
	for e := E; e > 0; e-- {
		start[e] = start[e-1]
	}
	start[0] = 0
	out := ps.proj[:R*C]
	clear(out)
	g, u := gate, up
	if f.swigluSwap {
		g, u = up, gate
	}
	pb := moeProducts.get(2 * E)
	defer moeProducts.put(pb)
	// The experts in batches of at most S slots (one expert's slots are
	// never split), each batch's products in one kernels.MatMulBatch: a
	// prefill's hundreds of small products were a dispatch each, with the
	// other core idle through the gathers between them (notes 45).
	for e0 := 0; e0 < E; {
		e1 := e0 + 1
		for e1 < E && start[e1+1]-start[e0] <= S {
			e1++
		}
		b0, nb := start[e0], start[e1]-start[e0]
		slots := order[b0:start[e1]]
		ee := e0
		e0 = e1
		if nb == 0 {
			continue
		}
		shareOut(nb, 16, nb*C, func(j0, j1 int) {
			for j := j0; j < j1; j++ {
				copy(xg[j*C:(j+1)*C], ps.h[(slots[j]/K)*C:])
			}
		})
		prods := (*pb)[:0]
		for e := ee; e < e1; e++ {
			at, n := start[e]-b0, start[e+1]-start[e]
			if n == 0 {
				continue
			}
			ex, x := &b.moe.experts[e], xg[at*C:(at+n)*C]
			prods = append(prods,
				kernels.Product{Dst: gate[at*I : (at+n)*I], X: x, W: ex.gate, M: n, K: C, N: I},
				kernels.Product{Dst: up[at*I : (at+n)*I], X: x, W: ex.up, M: n, K: C, N: I})
		}
		kernels.MatMulBatch(prods)
		shareOut(nb, 16, nb*I, func(j0, j1 int) {
			neg, e64 := scoreBuffers.get(I), expBuffers.get(I)
			for j := j0; j < j1; j++ {
				siluMul(act[j*I:(j+1)*I], g[j*I:(j+1)*I], u[j*I:(j+1)*I], *neg, *e64)
			}
			scoreBuffers.put(neg)
			expBuffers.put(e64)
		})
		prods = prods[:0]
		for e := ee; e < e1; e++ {
			at, n := start[e]-b0, start[e+1]-start[e]
			if n == 0 {
				continue
			}
			prods = append(prods, kernels.Product{Dst: down[at*C : (at+n)*C], X: act[at*I : (at+n)*I], W: b.moe.experts[e].down, M: n, K: I, N: C})
		}
		kernels.MatMulBatch(prods)
		// Each slot's product, weighted, added to its row in ascending
		// expert order (HF's index_add_ an expert at a time); the columns
		// are shared out, each column's additions in that order.
		shareOut(C, 256, nb*C, func(c0, c1 int) {
			for j, s := range slots {
				r := s / K
				kernels.AddScaled(out[r*C+c0:r*C+c1], down[j*C+c0:j*C+c1], w[s])
			}
		})
		for j, s := range slots {
			if !on {
				break
			}
			copy(pg[s*I:(s+1)*I], gate[j*I:])
			copy(pu[s*I:(s+1)*I], up[j*I:])
			copy(pa[s*I:(s+1)*I], act[j*I:])
			copy(pd[s*C:(s+1)*C], down[j*C:])
		}
	}
	if on {
		ps.p.emit(tensors.ExpertGate, l, pg, R, K, I)
		ps.p.emit(tensors.ExpertUp, l, pu, R, K, I)
		ps.p.emit(tensors.ExpertAct, l, pa, R, K, I)
		ps.p.emit(tensors.ExpertDown, l, pd, R, K, C)
	}
	ps.p.emit(tensors.Down, l, out, R, C)
	kernels.AddShared(ps.x, out)
}

// The sparse FFN's scratch: its floats, kept between passes as a pass's
// are, and its ints (expert ids, the slots by expert).
var (
	moeBuffers  keep.Buffer[float32]
	moeInts     slicePool[int]
	moeProducts slicePool[kernels.Product]
)

// moeBatchSlots is the fewest slots a prefill's batch of experts may hold:
// a 128-token prefill of Qwen3-30B-A3B (1024 slots) is four batches, some
// fifty products each, with scratch of 2·C + 3·I floats a slot (~6 MB).
var moeBatchSlots = 256 // a variable for tests: fewer slots make more batches

// shareOut runs fn over 0..n, in chunks shared over the cores when there
// is more than a decode step's work (floats it touches).
func shareOut(n, chunk, work int, fn func(lo, hi int)) {
	if n <= chunk || work < 1<<15 {
		fn(0, n)
		return
	}
	kernels.ParallelRange(n, chunk, fn)
}

// route chooses a token's experts: ids and w (len k each, in top-k
// order) from its router logits. probs and e are scratch of
// len(logits).
// The probabilities are F.softmax(logits, dtype=float32): exponentials
// and their sum in float64, each quotient rounded to float32 once. The
// top k are the largest probabilities, ties to the lower expert id
// (torch.topk leaves the order of exactly equal values to its
// partial sort: a tie is a routing flip, which the checkpoints report as
// one). norm divides them by their float32 sum (Mixtral,
// Qwen3-MoE's norm_topk_prob).
func route(ids []int, w, logits, probs []float32, e []float64, norm bool, f blockFaults) {
	if f.moeSoftmaxAfterTopK {
		// The bug: top-k of the logits, then a softmax over those k alone,
		// which renormalises whether the architecture does or not.
		topK(ids, w, logits)
		softmax32(w, w, e)
		return
	}
	softmax32(probs, logits, e)
	topK(ids, w, probs)
	if !norm || f.moeNoRenorm {
		return
	}
	var sum float64
	for _, v := range w {
		sum += float64(v)
	}
	s := float32(sum)
	for i := range w {
		w[i] /= s
	}
}

// softmax32 writes the softmax of x into dst (which may alias x), in
// float64 and rounded to float32 once per element; e is scratch of at
// least len(x).
func softmax32(dst, x []float32, e []float64) {
	mx := float32(math.Inf(-1))
	for _, v := range x {
		mx = max(mx, v)
	}
	var sum float64
	for i, v := range x {
		e[i] = math.Exp(float64(v) - float64(mx))
		sum += e[i]
	}
	for i := range x {
		dst[i] = float32(e[i] / sum)
	}
}

// topK puts the indices of the len(ids) largest values of p into ids, in
// descending order of value (ties: the lower index first), and the
// values into w.
func topK(ids []int, w, p []float32) {
	for k := range ids {
		best := -1
		for i, v := range p {
			if taken(ids[:k], i) {
				continue
			}
			if best < 0 || v > p[best] {
				best = i
			}
		}
		ids[k], w[k] = best, p[best]
	}
}

func taken(ids []int, i int) bool {
	for _, j := range ids {
		if j == i {
			return true
		}
	}
	return false
}

// moeFaultMissing says why a mixture-of-experts fault does not change c's
// forward, or "": moe-no-renorm changes it where the chosen
// probabilities are renormalised; moe-softmax-after-topk where they are
// not (a softmax over the chosen logits is exactly the renormalised top k).
func moeFaultMissing(f Fault, c Config) string {
	switch {
	case c.MoE == nil:
		return "it has no experts"
	case f == FaultMoENoRenorm && !c.MoE.NormTopK:
		return "its chosen experts' probabilities are not renormalised (norm_topk_prob false)"
	case f == FaultMoESoftmaxAfterTopK && c.MoE.NormTopK:
		return "its chosen experts' probabilities are renormalised (norm_topk_prob, or Mixtral), which a softmax over the chosen logits computes exactly"
	}
	return ""
}
