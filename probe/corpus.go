package probe

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/llorch/llorch-check/checkpoints"
)

// runCorpus teacher-forces every chunk of the corpus (the first chunks
// only, when chunks > 0) through e and gives the distribution verdict: the
// engine's statistics against the float64 truth next to PyTorch float32's
// on the same positions, by the same estimator.
func runCorpus(ctx context.Context, e engine, c *corpusSet, top, chunks int, progress func(string, ...any)) (*checkpoints.Corpus, error) {
	m := c.manifest
	perChunk := m.NCtx - 1 - m.ScoredFrom
	if chunks <= 0 || chunks > m.Chunks {
		chunks = m.Chunks
	}
	var eng, torch side
	skipped, ambiguous := 0, 0
	exactKL := 0.0 // PyTorch float32's, over the positions asked
	skipWhy := ""
	for ch := range chunks {
		if progress != nil {
			progress("corpus: chunk %d/%d (%d positions scored)", ch+1, chunks, ch*perChunk)
		}
		f, err := e.force(ctx, c.chunk(ch), m.ScoredFrom, top)
		if err != nil {
			return nil, fmt.Errorf("corpus chunk %d: %w", ch, err)
		}
		if len(f) != perChunk {
			return nil, fmt.Errorf("%w: corpus chunk %d: %d positions teacher-forced, want %d", ErrServer, ch, len(f), perChunk)
		}
		for j, fp := range f {
			p := ch*perChunk + j
			if fp.skip != "" {
				skipped++
				skipWhy = fp.skip
				continue
			}
			pos := c.position(p)
			alts, unnamed := namedOnly(fp.alts)
			if unnamed {
				ambiguous++
			}
			lp := fp.lp
			if math.IsNaN(lp) {
				lp = altLogProb(fp.alts, pos.target)
			}
			eng.add(pos, alts, lp, unnamed && topIsUnnamed(fp.alts))
			torch.add(pos, pos.torchAlts(top), float64(c.tlp32[p]), false)
			exactKL += c.kl32[p]
		}
	}
	n := eng.n
	if n == 0 {
		return nil, fmt.Errorf("corpus: no position could be asked (%s)", skipWhy)
	}
	out := &checkpoints.Corpus{Dir: c.dir, Positions: n, TopK: top, Engine: eng.summary(), Torch: torch.summary(),
		TorchKLExact: checkpoints.Float(exactKL / float64(n)), Skipped: skipped}
	if skipped > 0 {
		out.SkipWhy = "the API could not be asked them; the last because " + skipWhy
	}
	if ambiguous > 0 {
		out.Notes = append(out.Notes, fmt.Sprintf("at %d positions the server named an alternative by text only, or by a text several tokens share: it counts in the tail bucket; it was the top one at %d of them, which top-1 agreement leaves out",
			ambiguous, eng.n-eng.top1Known))
	}
	if chunks < m.Chunks {
		out.Notes = append(out.Notes, fmt.Sprintf("the first %d of the set's %d chunks", chunks, m.Chunks))
	}
	if targetHidden := eng.n - len(eng.dp); targetHidden > 0 {
		out.Engine.DeltaP, out.Engine.PPLRatio = nil, nil
		out.Notes = append(out.Notes, fmt.Sprintf("Δp and perplexity need the next token's log-probability, which the API gave at %d of %d positions (it listed the next token among its top %d there)",
			n-targetHidden, n, top))
	}
	me, mt := float64(out.Engine.KL.Mean), float64(out.Torch.KL.Mean)
	if mt > 0 {
		r := me / mt
		out.Times = checkpoints.Ratio{Value: checkpoints.Float(r),
			Sigma: checkpoints.Float(r * math.Hypot(float64(out.Engine.KL.Sigma)/me, float64(out.Torch.KL.Sigma)/mt))}
	}
	return out, nil
}

// scored is one scored position of the corpus as the truth sees it.
type scored struct {
	ids    []int32
	lp32   []float32
	lp64   []float64
	target int
	tlp64  float64
	top1   int // PyTorch float32's argmax
}

func (c *corpusSet) position(p int) scored {
	ids, lp32, lp64 := c.row(p)
	return scored{ids: ids, lp32: lp32, lp64: lp64, target: int(c.targets[p]), tlp64: c.tlp64[p], top1: int(c.top1[p])}
}

// truth is the float64 log-probability of id, when the set has it.
func (s scored) truth(id int) (float64, bool) {
	if id == s.target {
		return s.tlp64, true
	}
	for k, v := range s.ids {
		if int(v) == id {
			return s.lp64[k], true
		}
	}
	return 0, false
}

// torchAlts are PyTorch float32's top alternatives among the truth's K:
// the yardstick listed as an engine lists them.
func (s scored) torchAlts(top int) []alt {
	alts := make([]alt, len(s.ids))
	for k, id := range s.ids {
		alts[k] = alt{ID: int(id), LogProb: float64(s.lp32[k])}
	}
	sort.SliceStable(alts, func(i, j int) bool { return alts[i].LogProb > alts[j].LogProb })
	return alts[:min(top, len(alts))]
}

// namedOnly drops the alternatives an API named by a text several tokens
// share, and says whether there were any.
func namedOnly(alts []alt) ([]alt, bool) {
	out := make([]alt, 0, len(alts))
	for _, a := range alts {
		if a.ID != byText {
			out = append(out, a)
		}
	}
	return out, len(out) < len(alts)
}

// topIsUnnamed reports whether the most likely alternative has no id.
func topIsUnnamed(alts []alt) bool {
	best := alt{LogProb: math.Inf(-1)}
	for _, a := range alts {
		if a.LogProb > best.LogProb {
			best = a
		}
	}
	return best.ID == byText
}

// side accumulates one engine's per-position statistics.
type side struct {
	kl, dp, dlp []float64
	agree, n    int
	top1Known   int
}

// add scores one position: the engine listed alts and gave lp (NaN: not
// known) for the next token; topUnknown when its top-1 has no id.
func (sd *side) add(s scored, alts []alt, lp float64, topUnknown bool) {
	sd.n++
	sd.kl = append(sd.kl, klBound(s, alts, lp))
	if !topUnknown {
		sd.top1Known++
	}
	best := alt{ID: -1, LogProb: math.Inf(-1)}
	for _, a := range alts {
		if a.LogProb > best.LogProb || (a.LogProb == best.LogProb && a.ID < best.ID) {
			best = a
		}
	}
	if !topUnknown && len(s.ids) > 0 && best.ID == int(s.ids[0]) {
		sd.agree++
	}
	if math.IsNaN(lp) {
		return
	}
	sd.dp = append(sd.dp, math.Exp(lp)-math.Exp(s.tlp64))
	sd.dlp = append(sd.dlp, s.tlp64-lp)
}

// klBound is KL(truth ‖ engine) over the partition {each listed token the
// truth knows, the rest}: by the data-processing inequality it bounds the
// full-vocabulary divergence from below, and it is what an API that lists
// the top k allows.
func klBound(s scored, alts []alt, lp float64) float64 {
	listed := slices.Clone(alts)
	if !math.IsNaN(lp) && math.IsNaN(altLogProb(alts, s.target)) {
		listed = append(listed, alt{ID: s.target, LogProb: lp})
	}
	seen := map[int]bool{}
	kl, sumP, sumQ := 0.0, 0.0, 0.0
	for _, a := range listed {
		t, ok := s.truth(a.ID)
		if !ok || seen[a.ID] {
			continue
		}
		seen[a.ID] = true
		p := math.Exp(t)
		kl += p * (t - a.LogProb)
		sumP += p
		sumQ += math.Exp(a.LogProb)
	}
	restP, restQ := 1-sumP, 1-sumQ
	if restP > 0 {
		kl += restP * (math.Log(restP) - math.Log(max(restQ, math.SmallestNonzeroFloat64)))
	}
	return kl
}

func (sd *side) summary() checkpoints.CorpusSide {
	out := checkpoints.CorpusSide{KL: stat(sd.kl, sd.kl), Top1: shareOf(sd.agree, sd.top1Known)}
	if len(sd.dp) < sd.n || len(sd.dp) == 0 {
		return out
	}
	abs := make([]float64, len(sd.dp))
	for i, v := range sd.dp {
		abs[i] = math.Abs(v)
	}
	dp := stat(sd.dp, abs)
	out.DeltaP = &dp
	// ln(PPL(engine)/PPL(truth)) is the mean of lp_truth − lp_engine.
	d := stat(sd.dlp, sd.dlp)
	r := math.Exp(float64(d.Mean))
	out.PPLRatio = &checkpoints.Ratio{Value: checkpoints.Float(r), Sigma: checkpoints.Float(r * float64(d.Sigma))}
	return out
}

// stat is the mean of v with its standard error, and the percentiles of
// dist (v itself, or its magnitudes).
func stat(v, dist []float64) checkpoints.Stat {
	n := float64(len(v))
	if n == 0 {
		return checkpoints.Stat{}
	}
	mean := 0.0
	for _, x := range v {
		mean += x
	}
	mean /= n
	ss := 0.0
	for _, x := range v {
		ss += (x - mean) * (x - mean)
	}
	sigma := 0.0
	if n > 1 {
		sigma = math.Sqrt(ss/(n-1)) / math.Sqrt(n)
	}
	d := slices.Clone(dist)
	sort.Float64s(d)
	q := func(f float64) checkpoints.Float {
		return checkpoints.Float(d[max(0, int(math.Ceil(f*float64(len(d))))-1)])
	}
	return checkpoints.Stat{Mean: checkpoints.Float(mean), Sigma: checkpoints.Float(sigma),
		P50: q(0.5), P90: q(0.9), P99: q(0.99), Max: checkpoints.Float(d[len(d)-1])}
}

func shareOf(k, n int) checkpoints.Share {
	if n == 0 {
		return checkpoints.Share{}
	}
	p := float64(k) / float64(n)
	return checkpoints.Share{Count: k, Of: n, Value: checkpoints.Float(p), Sigma: checkpoints.Float(math.Sqrt(p * (1 - p) / float64(n)))}
}
