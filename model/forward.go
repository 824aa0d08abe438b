package model

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/llorch/llorch-check/kernels"
	"github.com/llorch/llorch-check/kvcache"
	"github.com/llorch/llorch-check/sampling"
	"github.com/llorch/llorch-check/tensors"
)

// ForwardOptions selects what a forward pass captures and returns.
type ForwardOptions struct {
	Probe     Probe // nil: no capture, no extra work
	AllLogits bool  // return [T,V] logits for all positions; else [V] of the last position
	// ForceKV, when set, replaces the keys and values each layer stores
	// with these (teacher forcing): a checkpoint harness feeds a
	// reference's float16 cache, so that what attention computes from it
	// is compared on the reference's inputs once the cache itself has
	// been compared modulo float16's rounding.
	ForceKV *ForcedKV
	// ProbeValues, with a Probe, bounds the attention scores and
	// probabilities a pass holds: when a layer's [heads, T, keys] exceed
	// it, they are computed and emitted a group of heads at a time
	// (Captured.Off), so that a 4104-token case of 32 heads holds one
	// head's 67 MB, not 2.2 GB twice. 0: DefaultProbeValues.
	ProbeValues int
	// LogitRows, with a Probe and not AllLogits, are the positions whose
	// logits the pass computes and emits (tensors.Logits, Captured.Rows),
	// the last position always among them; nil: every position. A
	// reference set keeps the logits of a few positions, and the head of
	// every position was the pass's largest buffer (600 positions of
	// Gemma 3's 262,144-token vocabulary: 629 MB) and product.
	LogitRows []int
}

// ForcedKV is a KV cache to store in place of a pass's own: Layer(l)
// returns layer l's keys and values as [KVHeads, Positions, HeadDim],
// positions from 0, or nils to keep the pass's own; a pass writes those
// of its own positions, rounded as the cache stores (float16 values go
// through a float16 cache as they are).
type ForcedKV struct {
	Positions int
	Layer     func(l int) (k, v []float32)
}

// Forward runs tokens through the model, appending their keys/values to c
// (positions continue from c.Len()), and returns logits. On any error the
// cache is left as it was. A cache must not be shared by concurrent calls.
func (m *Model) Forward(ctx context.Context, c *kvcache.Cache, tokens []int, opt ForwardOptions) ([]float32, error) {
	if err := m.checkInput(c, tokens); err != nil {
		return nil, err
	}
	T, V := len(tokens), m.Config.VocabSize
	if err := m.checkForcedKV(opt.ForceKV, c.Len()+T); err != nil {
		return nil, err
	}
	allRows := opt.AllLogits || opt.Probe != nil
	hk := hooks{probe: opt.Probe, force: opt.ForceKV, probeValues: opt.ProbeValues}
	if opt.Probe != nil && !opt.AllLogits && opt.LogitRows != nil {
		hk.logitRows = headRows(opt.LogitRows, T)
	}
	logits, err := m.forward(ctx, []span{{c: c, off: c.Len(), T: T}}, tokens, hk, allRows, nil)
	if err != nil {
		return nil, err
	}
	if allRows && !opt.AllLogits {
		return slices.Clone(logits[len(logits)-V:]), nil
	}
	return logits, nil
}

// span is one sequence's share of a pass: T new tokens at positions
// off..off+T-1 of cache c, held in rows row..row+T-1 of the stacked
// activations.
type span struct {
	c           *kvcache.Cache
	off, T, row int
	long        bool // longrope's long factors rotate its rows (ropeVariants)
}

// checkForcedKV refuses a forced cache that does not reach position
// end-1 or whose layers are not [KVHeads, Positions, HeadDim].
func (m *Model) checkForcedKV(f *ForcedKV, end int) error {
	if f == nil {
		return nil
	}
	if end > f.Positions {
		return fmt.Errorf("forced KV cache of %d positions: the pass reaches position %d", f.Positions, end-1)
	}
	n := m.Config.KVHeads() * f.Positions * m.Config.HeadDim()
	for l := range m.Config.NLayer {
		if k, v := f.Layer(l); k != nil && v != nil && (len(k) != n || len(v) != n) {
			return fmt.Errorf("forced KV cache, layer %d: %d keys and %d values, want %d each", l, len(k), len(v), n)
		}
	}
	return nil
}

// hooks are what a checkpoint harness attaches to a single-span pass.
type hooks struct {
	probe Probe
	force *ForcedKV
	// logitRows: the rows the head computes when the pass's rows are all
	// wanted (ascending, the last row last); nil: all of them.
	logitRows   []int
	probeValues int // ForwardOptions.ProbeValues
}

// DefaultProbeValues is ForwardOptions.ProbeValues's default: 64 MB of
// scores, and as much of probabilities.
const DefaultProbeValues = 1 << 24

// headRows is the positions of rows below T, ascending, once each, with
// the last position T-1 added: what a pass's head computes for them.
func headRows(rows []int, T int) []int {
	out := make([]int, 0, len(rows)+1)
	for _, r := range rows {
		if r >= 0 && r < T-1 {
			out = append(out, r)
		}
	}
	slices.Sort(out)
	return append(slices.Compact(out), T-1)
}

// forward runs the stacked rows of every span through the model. The
// matrix products see all rows at once, so each weight is read once per
// pass however many sequences share it; attention stays per span. Hooks
// are only supported for a single span. It returns the logits of every row
// if allRows, else of the last row of each span, and commits every cache
// only when the whole pass succeeded. The logits go into dst if it is
// given (allRows false: one row of VocabSize per span), else a new slice.
func (m *Model) forward(ctx context.Context, spans []span, tokens []int, hk hooks, allRows bool, dst []float32) ([]float32, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	spans, tokens, added, err := m.ropeVariants(spans, tokens, hk.probe != nil)
	if err != nil {
		return nil, err
	}
	for i, s := range spans {
		if err := m.releaseBehindWindow(s.c, s.off); err != nil {
			if len(spans) > 1 {
				err = fmt.Errorf("sequence %d: %w", i, err)
			}
			return nil, err
		}
		if err := s.c.Grow(s.T); err != nil {
			if len(spans) > 1 {
				err = fmt.Errorf("sequence %d: %w", i, err)
			}
			return nil, err
		}
	}
	ps := m.newPass(spans, tokens, hk)
	defer passBuffers.Put(ps.buf)
	ps.embed(tokens)
	fam := m.Config.family()
	for l := range m.h {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		fam.block(ps, l)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	logits := ps.head(allRows, dst)
	for _, s := range spans {
		if s.long {
			s.c.SetVariant(longVariant)
		}
		s.c.Commit(tokens[s.row : s.row+s.T])
	}
	if allRows && added > 0 { // a restarted single span: the caller's rows only
		logits = logits[added*m.Config.VocabSize:]
	}
	return logits, nil
}

// pass is one forward pass: its spans, the residual stream x of its R
// stacked rows, and the scratch the blocks share.
type pass struct {
	m     *Model
	spans []span
	p     probeWriter
	R     int

	x, h, qkv, att, proj, fc, act []float32
	buf                           *[]float32 // holds them all, from passBuffers
	lay                           qkvLayout
	cos, sin                      []float32 // [R, RotaryDim/2]: the Llama family's RoPE at each row's position
	cosL, sinL                    []float32 // the same of Model.local (Gemma 3's sliding layers); nil without one

	// Probe buffers: heads split out of qkv, attention scores and
	// probabilities of the first span's S0 keys, for probeHeads heads at
	// a time.
	headBuf, scores, probs []float32
	S0, probeHeads         int

	force     *ForcedKV // nil: the cache keeps the pass's own keys and values
	logitRows []int     // hooks.logitRows
}

func (m *Model) newPass(spans []span, tokens []int, hk hooks) *pass {
	c := m.Config
	R, C, H, D := len(tokens), c.NEmbd, c.NHead, c.HeadDim()
	ps := &pass{m: m, spans: spans, p: probeWriter{hk.probe}, R: R, lay: c.qkvLayout(), force: hk.force, logitRows: hk.logitRows}
	ff, act, rot := c.family().passWidths(c)
	bufs := []struct {
		s    *[]float32
		cols int
	}{{&ps.x, C}, {&ps.h, C}, {&ps.qkv, ps.lay.width}, {&ps.att, H * D}, {&ps.proj, C}, {&ps.fc, ff}, {&ps.act, act},
		{&ps.cos, rot / 2}, {&ps.sin, rot / 2}}
	if m.local.invFreq != nil {
		bufs = append(bufs, struct {
			s    *[]float32
			cols int
		}{&ps.cosL, rot / 2}, struct {
			s    *[]float32
			cols int
		}{&ps.sinL, rot / 2})
	}
	n := 0
	for _, b := range bufs {
		n += R * b.cols
	}
	ps.buf = passBuffers.Get(n)
	rest := *ps.buf
	for _, b := range bufs {
		n := R * b.cols
		*b.s, rest = rest[:n:n], rest[n:]
	}
	row := 0
	for i := range ps.spans {
		ps.spans[i].row = row
		row += ps.spans[i].T
	}
	ps.S0 = spans[0].off + spans[0].T
	if ps.p.on() {
		probeValues := hk.probeValues
		if probeValues <= 0 {
			probeValues = DefaultProbeValues
		}
		ps.probeHeads = min(H, max(1, probeValues/(R*ps.S0)))
		ps.headBuf = make([]float32, H*R*D)
		ps.scores = make([]float32, ps.probeHeads*R*ps.S0)
		ps.probs = make([]float32, ps.probeHeads*R*ps.S0)
	}
	return ps
}

// embed sets x to the token embeddings, plus GPT-2's learned position
// embeddings (the Llama family's positions enter through RoPE: its
// tables for the pass's rows are made here, once for every layer).
func (ps *pass) embed(tokens []int) {
	m, C := ps.m, ps.m.Config.NEmbd
	type place struct {
		row, pos int
		long     bool // longrope's long factors: the span's last position is past the pretrained context
	}
	rows := make([]place, 0, ps.R)
	for _, s := range ps.spans {
		for t := range s.T {
			rows = append(rows, place{s.row + t, s.off + t, s.long})
		}
	}
	// A quantised table decodes a row value by value: a prefill's rows
	// are shared over the cores, a decode step's taken here.
	const per = 16
	g := m.Config.Gemma
	kernels.ParallelRange(len(rows), per, func(lo, hi int) {
		buf := make([]float32, C)
		for _, p := range rows[lo:hi] {
			r := p.row
			row, we := ps.x[r*C:(r+1)*C], m.wte.Row(buf, tokens[r], C)
			if m.wpe == nil {
				copy(row, we)
				n := len(m.rope.invFreq)
				m.rope.tables(ps.cos[r*n:], ps.sin[r*n:], p.pos, p.long)
				if ps.cosL != nil {
					m.local.tables(ps.cosL[r*n:], ps.sinL[r*n:], p.pos, false)
				}
				if g != nil {
					s := embedScale(m.Config)
					for i := range row {
						row[i] *= s
					}
				}
				continue
			}
			pe := m.wpe[p.pos*C : (p.pos+1)*C]
			for i := range row {
				row[i] = we[i] + pe[i]
			}
		}
	})
	ps.p.emit(tensors.Embeddings, NoLayer, ps.x, ps.R, C)
}

// attend stores each span's keys and values from ps.qkv in its cache
// (past its length, so invisible until the pass commits) and computes its
// attention into ps.att. proto carries the family's scaling and faults.
func (ps *pass) attend(l int, f blockFaults, proto attnJob) {
	c := ps.m.Config
	H, D, W := c.NHead, c.HeadDim(), ps.lay.width
	HD := H * D
	for _, s := range ps.spans {
		qkv := ps.qkv[s.row*W:]
		s.c.Store(l, qkv[ps.lay.k:], qkv[ps.lay.v:], W, s.off, s.T)
		if ps.force != nil {
			if k, v := ps.force.Layer(l); k != nil && v != nil {
				s.c.Overwrite(l, k, v, ps.force.Positions, s.off, s.T)
			}
		}
	}
	run := func(h0, h1 int) {
		for _, s := range ps.spans {
			job := proto
			job.qkv, job.out = ps.qkv[s.row*W:], ps.att[s.row*HD:(s.row+s.T)*HD]
			job.layer, job.cache = l, s.c
			job.T, job.off, job.S = s.T, s.off, s.off+s.T
			job.width, job.D, job.HD = W, D, HD
			job.group, job.nKV = H/c.KVHeads(), c.KVHeads()
			job.noMask, job.window, job.scores, job.probs = f.noCausalMask, f.window, ps.scores, ps.probs
			job.run(h0, h1)
		}
	}
	if !ps.p.on() {
		run(0, H)
		return
	}
	// A probed pass (one span) holds probeHeads heads' scores and
	// probabilities: each group is emitted before the next is computed.
	n := ps.R * ps.S0
	for h0 := 0; h0 < H; h0 += ps.probeHeads {
		h1 := min(H, h0+ps.probeHeads)
		run(h0, h1)
		ps.p.emitPart(tensors.Scores, l, ps.scores[:(h1-h0)*n], h0*n, H, ps.R, ps.S0)
		ps.p.emitPart(tensors.Probs, l, ps.probs[:(h1-h0)*n], h0*n, H, ps.R, ps.S0)
	}
}

// head is ln_f and the LM head, over every row if allRows, else over the
// last row of each span (all that decoding needs), into dst if given.
func (ps *pass) head(allRows bool, dst []float32) []float32 {
	c, R := ps.m.Config, ps.R
	C, V := c.NEmbd, c.VocabSize
	hf, rows := ps.h, R // h is free once the blocks are done
	norm, name := c.family().finalNorm(ps.m)
	if allRows {
		norm(hf, ps.x)
	} else {
		rows = len(ps.spans)
		for i, s := range ps.spans {
			r := s.row + s.T - 1
			norm(hf[i*C:(i+1)*C], ps.x[r*C:(r+1)*C])
		}
		hf = hf[:rows*C]
	}
	ps.p.emit(name, NoLayer, hf, R, C)
	if allRows && ps.logitRows != nil {
		// The selected rows, gathered in order into the rows before them
		// (ascending: row i's source is at or after i).
		for i, r := range ps.logitRows {
			copy(hf[i*C:(i+1)*C], hf[r*C:(r+1)*C])
		}
		rows = len(ps.logitRows)
	}
	logits := dst
	if logits == nil {
		logits = make([]float32, rows*V)
	}
	ps.m.lmHead(logits, hf, rows)
	if g := c.Gemma; g != nil && g.FinalSoftcap > 0 && !ps.m.faulty(FaultNoSoftcap, -1) {
		softcap(logits[:rows*V], float32(g.FinalSoftcap))
	}
	if ps.p.on() {
		last := logits[(rows-1)*V:]
		if ps.logitRows != nil {
			ps.p.emitRows(tensors.Logits, logits, ps.logitRows, V)
		} else {
			ps.p.emit(tensors.Logits, NoLayer, logits, R, V)
		}
		ps.p.emit(tensors.LastLogits, NoLayer, last, V)
		ps.p.emit(tensors.LastLogprobs, NoLayer, logSoftmax32(last), V)
	}
	return logits
}

// checkInput rejects everything that would make the pass fail half way, so
// that errors never leave a partly written cache behind.
func (m *Model) checkInput(c *kvcache.Cache, tokens []int) error {
	cfg := m.Config
	if c == nil {
		return errors.New("forward: nil cache")
	}
	if c.Shape() != cfg.KVShape() {
		return errors.New("forward: cache was made for a model of a different shape")
	}
	if len(tokens) == 0 {
		return errors.New("forward: no tokens")
	}
	if avail := c.Cap() - c.Len(); len(tokens) > avail {
		return fmt.Errorf("forward: %d tokens requested but only %d of %d positions are available (cache holds %d)",
			len(tokens), avail, c.Cap(), c.Len())
	}
	for i, tok := range tokens {
		if tok < 0 || tok >= cfg.VocabSize {
			return fmt.Errorf("forward: token %d at index %d is outside the vocabulary [0,%d)", tok, i, cfg.VocabSize)
		}
	}
	return nil
}

// splitHeads copies H heads of D columns from col on of each row of qkv
// (width floats a row) into dst as [H,T,D].
func splitHeads(dst, qkv []float32, width, col, T, H, D int) {
	for h := 0; h < H; h++ {
		for t := 0; t < T; t++ {
			copy(dst[(h*T+t)*D:(h*T+t+1)*D], qkv[t*width+col+h*D:])
		}
	}
}

// logSoftmax32 is sampling.LogSoftmax (accumulated in float64) rounded to
// float32 once, at the end.
func logSoftmax32(x []float32) []float32 {
	lp := sampling.LogSoftmax(x)
	out := make([]float32, len(lp))
	for i, v := range lp {
		out[i] = float32(v)
	}
	return out
}
