package model

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/llorch/llorch-check/kernels"
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
	T, V := len(tokens), m.Config.VocabSize
	allRows := opt.AllLogits || opt.Probe != nil
	logits, err := m.forward(ctx, []span{{c: c, off: c.n, T: T}}, tokens, opt.Probe, allRows)
	if err != nil {
		return nil, err
	}
	if allRows && !opt.AllLogits {
		return slices.Clone(logits[(T-1)*V:]), nil
	}
	return logits, nil
}

// span is one sequence's share of a pass: T new tokens at positions
// off..off+T-1 of cache c, held in rows row..row+T-1 of the stacked
// activations.
type span struct {
	c           *Cache
	off, T, row int
}

// forward runs the stacked rows of every span through the model. The
// matrix products see all rows at once, so each weight is read once per
// pass however many sequences share it; attention stays per span. Probes
// are only supported for a single span. It returns the logits of every row
// if allRows, else of the last row of each span, and commits every cache
// only when the whole pass succeeded.
func (m *Model) forward(ctx context.Context, spans []span, tokens []int, probe Probe, allRows bool) ([]float32, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	cfg := m.Config
	R := len(tokens)
	C, H, D, I, V := cfg.NEmbd, cfg.NHead, cfg.HeadDim(), cfg.NInner, cfg.VocabSize
	p := probeWriter{probe}
	row := 0
	for i := range spans {
		spans[i].row = row
		row += spans[i].T
	}

	x := make([]float32, R*C)
	embBuf := make([]float32, C)
	for _, s := range spans {
		for t := 0; t < s.T; t++ {
			tok, r := tokens[s.row+t], s.row+t
			row, we, pe := x[r*C:(r+1)*C], m.wte.Row(embBuf, tok, C), m.wpe[(s.off+t)*C:(s.off+t+1)*C]
			for i := range row {
				row[i] = we[i] + pe[i]
			}
		}
	}
	p.emit(7, NoLayer, "embeddings", x, R, C)

	h := make([]float32, R*C)
	qkv := make([]float32, R*3*C)
	att := make([]float32, R*C)
	proj := make([]float32, R*C)
	fc := make([]float32, R*I)
	var headBuf, scores, probs []float32
	S0 := spans[0].off + spans[0].T
	if p.on() {
		headBuf = make([]float32, H*R*D)
		scores = make([]float32, H*R*S0)
		probs = make([]float32, H*R*S0)
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
		p.emit(1, l, "ln_1", h, R, C)
		conv1D(qkv, h, b.attnW, b.attnB, R, C, 3*C, false)
		for _, s := range spans {
			// Written past c.n, so invisible until the pass commits.
			s.c.store(l, qkv[s.row*3*C:], s.off, s.T)
		}
		if p.on() {
			for i, name := range []string{"q", "k", "v"} {
				splitHeads(headBuf, qkv, i*C, R, H, D)
				p.emit(2, l, name, headBuf, H, R, D)
			}
		}

		for _, s := range spans {
			job := attnJob{qkv: qkv[s.row*3*C:], out: att[s.row*C:], kc: s.c.k[l], vc: s.c.v[l], cache: s.c,
				T: s.T, off: s.off, S: s.off + s.T, C: C, D: D, scale: float32(math.Sqrt(float64(D))),
				noMask: m.faulty(FaultNoCausalMask, l), scores: scores, probs: probs}
			if m.faulty(FaultAttnScale, l) {
				job.scale = float32(D)
			}
			job.run(H)
		}
		p.emit(4, l, "scores", scores, H, R, S0)
		p.emit(4, l, "probs", probs, H, R, S0)

		conv1D(proj, att, b.projW, b.projB, R, C, C, m.faulty(FaultTransposedProj, l))
		p.emit(5, l, "attn_out", proj, R, C)
		if m.faulty(FaultNoResidual, l) {
			copy(x, proj)
		} else {
			kernels.Add(x, proj)
		}

		layerNorm(h, x, b.ln2W, b.ln2B, C, eps)
		p.emit(1, l, "ln_2", h, R, C)
		conv1D(fc, h, b.fcW, b.fcB, R, C, I, false)
		if m.faulty(FaultErfGELU, l) {
			geluErf(fc)
		} else {
			geluNew(fc)
		}
		p.emit(6, l, "gelu", fc, R, I)
		conv1D(proj, fc, b.mlpW, b.mlpB, R, I, C, false)
		p.emit(6, l, "mlp_out", proj, R, C)
		kernels.Add(x, proj)
		p.emit(7, l, "block_out", x, R, C)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	var hf []float32
	rows := R
	if allRows {
		hf = make([]float32, R*C)
		layerNorm(hf, x, m.lnfW, m.lnfB, C, cfg.LayerNormEpsilon)
	} else {
		// Only the last row of each span needs ln_f and the LM head.
		rows = len(spans)
		last := make([]float32, rows*C)
		for i, s := range spans {
			r := s.row + s.T - 1
			copy(last[i*C:(i+1)*C], x[r*C:(r+1)*C])
		}
		hf = make([]float32, rows*C)
		layerNorm(hf, last, m.lnfW, m.lnfB, C, cfg.LayerNormEpsilon)
	}
	p.emit(8, NoLayer, "ln_f", hf, R, C)
	logits := make([]float32, rows*V)
	m.lmHead(logits, hf, rows)
	if p.on() {
		last := logits[(rows-1)*V:]
		p.emit(8, NoLayer, "logits", logits, R, V)
		p.emit(9, NoLayer, "last_logits", last, V)
		p.emit(9, NoLayer, "last_logprobs", logSoftmax(last), V)
	}
	for _, s := range spans {
		s.c.n = s.off + s.T
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
