package model

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
)

// ForwardOptions selects what a forward pass captures and returns.
type ForwardOptions struct {
	Probe     Probe // nil: no capture, no extra work
	AllLogits bool  // return [T,V] logits for all positions; else [V] of the last position
}

// Forward runs tokens through the model, appending their keys/values to c
// (positions continue from c.Len()), and returns logits. On any error the
// cache is left as it was. A cache must not be shared by concurrent calls.
func (m *Model) Forward(ctx context.Context, c *Cache, tokens []int, opt ForwardOptions) ([]float32, error) {
	if err := m.checkInput(c, tokens); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	cfg := m.Config
	T, off := len(tokens), c.n
	S := off + T
	C, H, D, I, V := cfg.NEmbd, cfg.NHead, cfg.HeadDim(), cfg.NInner, cfg.VocabSize
	p := probeWriter{opt.Probe}

	x := make([]float32, T*C)
	for t, tok := range tokens {
		row, we, pe := x[t*C:(t+1)*C], m.wte[tok*C:(tok+1)*C], m.wpe[(off+t)*C:(off+t+1)*C]
		for i := range row {
			row[i] = we[i] + pe[i]
		}
	}
	p.emit(7, NoLayer, "embeddings", x, T, C)

	h := make([]float32, T*C)
	qkv := make([]float32, T*3*C)
	att := make([]float32, T*C)
	proj := make([]float32, T*C)
	fc := make([]float32, T*I)
	var headBuf, scores, probs []float32
	if p.on() {
		headBuf = make([]float32, H*T*D)
		scores = make([]float32, H*T*S)
		probs = make([]float32, H*T*S)
	}

	for l := range m.h {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		b := &m.h[l]
		eps := cfg.LayerNormEpsilon
		if m.faulty(FaultLayerNormEps, l) {
			eps = faultyLayerNormEps
		}

		layerNorm(h, x, b.ln1W, b.ln1B, C, eps)
		p.emit(1, l, "ln_1", h, T, C)
		conv1D(qkv, h, b.attnW, b.attnB, T, C, 3*C, false)
		// Written past c.n, so invisible until the pass commits.
		c.store(l, qkv, off, T)
		if p.on() {
			for i, name := range []string{"q", "k", "v"} {
				splitHeads(headBuf, qkv, i*C, T, H, D)
				p.emit(2, l, name, headBuf, H, T, D)
			}
		}

		job := attnJob{qkv: qkv, out: att, kc: c.k[l], vc: c.v[l], cache: c,
			T: T, off: off, S: S, C: C, D: D, scale: float32(math.Sqrt(float64(D))),
			noMask: m.faulty(FaultNoCausalMask, l), scores: scores, probs: probs}
		if m.faulty(FaultAttnScale, l) {
			job.scale = float32(D)
		}
		job.run(H)
		p.emit(4, l, "scores", scores, H, T, S)
		p.emit(4, l, "probs", probs, H, T, S)

		conv1D(proj, att, b.projW, b.projB, T, C, C, m.faulty(FaultTransposedProj, l))
		p.emit(5, l, "attn_out", proj, T, C)
		if m.faulty(FaultNoResidual, l) {
			copy(x, proj)
		} else {
			addInto(x, proj)
		}

		layerNorm(h, x, b.ln2W, b.ln2B, C, eps)
		p.emit(1, l, "ln_2", h, T, C)
		conv1D(fc, h, b.fcW, b.fcB, T, C, I, false)
		if m.faulty(FaultErfGELU, l) {
			geluErf(fc)
		} else {
			geluNew(fc)
		}
		p.emit(6, l, "gelu", fc, T, I)
		conv1D(proj, fc, b.mlpW, b.mlpB, T, I, C, false)
		p.emit(6, l, "mlp_out", proj, T, C)
		addInto(x, proj)
		p.emit(7, l, "block_out", x, T, C)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	layerNorm(h, x, m.lnfW, m.lnfB, C, cfg.LayerNormEpsilon)
	p.emit(8, NoLayer, "ln_f", h, T, C)
	rows := 1
	if opt.AllLogits || p.on() {
		rows = T
	}
	logits := make([]float32, rows*V)
	m.lmHead(logits, h[(T-rows)*C:], rows)
	last := logits[(rows-1)*V:]
	if p.on() {
		p.emit(8, NoLayer, "logits", logits, T, V)
		p.emit(9, NoLayer, "last_logits", last, V)
		p.emit(9, NoLayer, "last_logprobs", logSoftmax(last), V)
	}
	c.n = S
	if !opt.AllLogits && rows > 1 {
		return slices.Clone(last), nil
	}
	return logits, nil
}

// checkInput rejects everything that would make the pass fail half way, so
// that errors never leave a partly written cache behind.
func (m *Model) checkInput(c *Cache, tokens []int) error {
	cfg := m.Config
	if c == nil {
		return errors.New("forward: nil cache")
	}
	if c.nLayer != cfg.NLayer || c.nHead != cfg.NHead || c.headDim != cfg.HeadDim() || c.capacity != cfg.NPositions {
		return errors.New("forward: cache was made for a model of a different shape")
	}
	if len(tokens) == 0 {
		return errors.New("forward: no tokens")
	}
	if avail := c.capacity - c.n; len(tokens) > avail {
		return fmt.Errorf("forward: %d tokens requested but only %d of %d positions are available (cache holds %d)",
			len(tokens), avail, c.capacity, c.n)
	}
	for i, tok := range tokens {
		if tok < 0 || tok >= cfg.VocabSize {
			return fmt.Errorf("forward: token %d at index %d is outside the vocabulary [0,%d)", tok, i, cfg.VocabSize)
		}
	}
	return nil
}

// splitHeads copies columns col..col+C of qkv [T,3C] into dst as [H,T,D].
func splitHeads(dst, qkv []float32, col, T, H, D int) {
	C := H * D
	for h := 0; h < H; h++ {
		for t := 0; t < T; t++ {
			copy(dst[(h*T+t)*D:(h*T+t+1)*D], qkv[t*3*C+col+h*D:])
		}
	}
}

func addInto(dst, src []float32) {
	for i, v := range src {
		dst[i] += v
	}
}

// logSoftmax returns x − logsumexp(x), accumulated in float64.
func logSoftmax(x []float32) []float32 {
	mx := float32(math.Inf(-1))
	for _, v := range x {
		mx = max(mx, v)
	}
	var sum float64
	for _, v := range x {
		sum += math.Exp(float64(v) - float64(mx))
	}
	lse := float64(mx) + math.Log(sum)
	out := make([]float32, len(x))
	for i, v := range x {
		out[i] = float32(float64(v) - lse)
	}
	return out
}
