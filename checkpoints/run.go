package checkpoints

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/llorch/llorch-check/kvcache"
	"github.com/llorch/llorch-check/model"
	"github.com/llorch/llorch-check/references"
	"github.com/llorch/llorch-check/tensors"
	"github.com/llorch/llorch-check/tokenizer"
)

// Options select what Run compares and how strictly.
type Options struct {
	Checkpoints Selection                        // nil selects all twelve
	Layer       *int                             // compare only this layer's tensors; nil for all
	Overrides   map[int]Tolerance                // per-checkpoint tolerances replacing the defaults
	Budget      float64                          // fail tensors whose float64 budget ratio exceeds it; 0 is off
	Progress    func(format string, args ...any) // nil for silence
	Force       bool                             // Dump: replace an existing, different set
	Tokenizer   *tokenizer.Tokenizer             // checks generated text and log-likelihood tokens; nil skips them with a failure
	Cost        *Cost                            // a cost report, not a validation; Run decides (CostFor) when nil
	// KVCache is the KV cache the Go forward runs on (Run, Dump): every
	// pass of a case, prefill and decode steps alike, on fresh pools made
	// with its Float16 and BlockTokens (MaxTokens and PrefixCache
	// are ignored). The zero value is float32; Float16 needs a set of the
	// f16-kv profile (CheckKVCache).
	KVCache kvcache.Options
}

// Report is everything one run found.
type Report struct {
	Model string `json:"model"`
	// Engine names what was checked in the budget column: "Go" for the
	// forward pass, "engine" for a server probed from outside.
	Engine         string            `json:"engine,omitempty"`
	References     string            `json:"references"`
	Passed         bool              `json:"passed"`
	Results        []Result          `json:"results"`
	Overrides      map[int]Tolerance `json:"overrides,omitempty"`
	Budget         float64           `json:"budget,omitempty"`
	NotImplemented []int             `json:"not_implemented,omitempty"`
	Cost           *Cost             `json:"cost,omitempty"`          // set: a quantisation-cost report, not a validation
	WeightsMatch   string            `json:"weights_match,omitempty"` // how the set was matched to the model
	// HeldAs is "float16" or "bfloat16" when the model's matrices are
	// held so (model.Model.MatricesHeldAs), empty for float32 or
	// quantised.
	HeldAs string `json:"matrices_held_as,omitempty"`
	// Layers is the number of blocks run when only the first ones were
	// (--layers); 0 when all were.
	Layers int `json:"layers,omitempty"`
	// KVCache is "float16" when the Go forward ran on a float16 KV cache
	// (Options.KVCache), empty for float32.
	KVCache string `json:"kv_cache,omitempty"`
	// NotDumped lists, by checkpoint, what a partial dump (FORMAT.md,
	// "Dumps from other engines") left out and diff therefore did not compare.
	NotDumped map[int][]string `json:"not_dumped,omitempty"`
	// API is the HTTP API a probed engine answered through; nil for Go's own.
	API *API `json:"api,omitempty"`
	// Emulates is the engine whose approximations the reference set
	// applies (dump_references.py --emulate); nil for plain PyTorch.
	Emulates *references.Emulation `json:"emulates,omitempty"`
	// Invariance, Corpus and Next are a probed engine's (probed.go).
	Invariance []Invariance `json:"invariance,omitempty"`
	Corpus     *Corpus      `json:"corpus,omitempty"`
	Next       []string     `json:"next,omitempty"`
}

// Run compares the model's captured tensors with every selected tensor of
// the reference set. Errors are bad input (unreadable or mismatched files);
// a numerical failure is a Report with Passed false.
func Run(ctx context.Context, m *model.Model, set *references.Set, opt Options) (*Report, error) {
	if err := CheckKVCache(set, opt.KVCache); err != nil {
		return nil, err
	}
	match, err := checkCompatible(m, set)
	if err != nil {
		return nil, err
	}
	// Identical weights get the defaults: a set made with float16
	// matrices against a model holding them so, or a set made from this
	// very file (dump_references.py reads a GGUF's exact dequantised
	// weights) against a model that rounds nothing in memory.
	sameWeights := set.Manifest.Model.MatricesHeldAs != "" ||
		(match == matchedByFile && m.PrecisionDType() == m.WeightsDType)
	if opt.Cost == nil && !sameWeights {
		opt.Cost = CostFor(m.PrecisionDType(), set.Manifest.Model.WeightsDType)
	}
	if opt.Checkpoints == nil {
		opt.Checkpoints, _ = ParseSelection("")
	}
	if l := opt.Layer; l != nil && (*l < 0 || *l >= m.Config.NLayer) {
		return nil, fmt.Errorf("--layer %d: the model has layers 0..%d", *l, m.Config.NLayer-1)
	}
	rep := &Report{Model: m.Dir, References: set.Dir, Overrides: opt.Overrides, Budget: opt.Budget, Cost: opt.Cost,
		WeightsMatch: match, Emulates: set.Manifest.Emulates(), Layers: m.Layers}
	rep.HeldAs = m.MatricesHeldAs()
	if opt.KVCache.Float16 {
		rep.KVCache = references.Float16
	}
	if m.Format == model.FormatGGUF {
		rep.Model = m.WeightsPath
	}
	nLayer := m.Config.NLayer
	add := func(res Result, caseIndex int) {
		res = opt.informational(res)
		res.caseIndex = caseIndex
		res.rank = tensors.Rank(res.Name, res.LayerIndex(), nLayer)
		rep.Results = append(rep.Results, res)
	}
	for ci, c := range set.Manifest.Cases {
		results, err := runCase(ctx, m, set, c, opt)
		if err != nil {
			return nil, fmt.Errorf("case %s: %w", c.ID, err)
		}
		for _, res := range results {
			add(res, ci)
		}
	}
	if opt.Checkpoints[9] && opt.Layer == nil {
		progress(opt, "log-likelihoods")
		results, err := checkLoglikelihood(ctx, m, set, opt)
		if err != nil {
			return nil, err
		}
		for _, res := range results {
			add(res, len(set.Manifest.Cases))
		}
	}
	rep.addNotImplemented(opt.Checkpoints)
	sortForward(rep.Results)
	rep.Passed = rep.count(StatusFailed) == 0 && rep.count(StatusPassed)+rep.count(StatusCost) > 0
	return rep, nil
}

// runCase compares everything selected for one case: the captured tensors,
// then the greedy token, the sampling distributions and the generation.
func runCase(ctx context.Context, m *model.Model, set *references.Set, c references.Case, opt Options) ([]Result, error) {
	var out []Result
	wanted := selectTensors(set, c.ID, opt)
	wholeSeq := opt.Layer == nil // checkpoints 10–12 are not per layer
	if len(wanted) > 0 || (wholeSeq && opt.Checkpoints[10]) {
		var results []Result
		var got *captured
		var err error
		if opt.KVCache.Float16 {
			results, got, err = compareOnF16Cache(ctx, m, set, c, wanted, opt)
		} else {
			progress(opt, "case %s (%d tokens): forward", c.ID, len(c.Tokens))
			results, got, err = captureCompared(ctx, m, set, c, wanted, opt)
		}
		if err != nil {
			return nil, err
		}
		out = append(out, results...)
		if res, ok := checkGreedy(set, c, got); ok && wholeSeq && opt.Checkpoints[10] {
			out = append(out, res)
		}
	}
	if wholeSeq && opt.Checkpoints[11] {
		results, err := checkSampling(set, c, opt)
		if err != nil {
			return nil, err
		}
		out = append(out, results...)
	}
	if wholeSeq && opt.Checkpoints[12] {
		progress(opt, "case %s: greedy generation", c.ID)
		res, ok, err := checkGeneration(ctx, m, set, c, opt)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, res)
		}
	}
	return out, nil
}

// compareAll compares each of ts with what got captured.
func compareAll(set *references.Set, c references.Case, ts []references.TensorInfo, got *captured, opt Options) ([]Result, error) {
	var out []Result
	for i, ti := range ts {
		progress(opt, "case %s: comparing %d/%d", c.ID, i+1, len(ts))
		res, err := compareTensor(set, ti, got, opt)
		if err != nil {
			return nil, err
		}
		out = append(out, res)
	}
	return out, nil
}

func (o Options) layerSelected(layer int) bool {
	return o.Layer == nil || *o.Layer == layer
}

func progress(opt Options, format string, args ...any) {
	if opt.Progress != nil {
		opt.Progress(format, args...)
	}
}

// matchedByFile is Report.WeightsMatch when the weights file itself is the
// one the set was made from.
const matchedByFile = "weights file sha256"

// checkCompatible refuses a reference set made from other weights, and
// says how the weights matched: the file itself, or, for a GGUF written by
// llorch-check convert, the HF weights it records it was converted from
// (model.KeySourceSHA256). The checkpoints, not this match, then prove the
// conversion right.
func checkCompatible(m *model.Model, set *references.Set) (string, error) {
	if set.Manifest.Model.MatricesHeldAs == references.Float16 && !m.Float16 {
		return "", fmt.Errorf("%s was made with the weight matrices rounded to float16; load the model the same way (--weight-dtype f16): %w",
			set.Dir, references.ErrWeightsMismatch)
	}
	match := matchedByFile
	if err := set.CheckWeights(m.WeightsPath); err != nil {
		want := set.Manifest.Model.WeightsSHA256
		switch {
		case !errors.Is(err, references.ErrWeightsMismatch):
			return "", err
		case m.SourceSHA256 == "":
			return "", err
		case !strings.EqualFold(m.SourceSHA256, want):
			return "", fmt.Errorf("%w (the GGUF was converted from weights with sha256 %s, not those either)", err, m.SourceSHA256)
		}
		match = "converted from the reference's weights (" + model.KeySourceSHA256 + ")"
	}
	dims, err := set.Manifest.ModelConfig()
	if err != nil {
		return "", err
	}
	c := m.Config
	if fam := c.Family(); dims.Family != fam {
		return "", fmt.Errorf("%s: reference set is of a %s-family model, the model is %s (%s family)", set.Dir, dims.Family, c.ModelType, fam)
	}
	if dims.VocabSize != c.VocabSize || dims.NEmbd != c.NEmbd || dims.NHead != c.NHead || dims.NLayer != c.NLayer ||
		(dims.Family == tensors.Llama && (dims.NKVHead != c.KVHeads() || dims.HeadDim != c.HeadDim() || dims.NInner != c.NInner)) {
		return "", fmt.Errorf("%s: reference config (vocab %d, hidden %d, heads %d/%d of %d, layers %d, inner %d) differs from the model's (vocab %d, hidden %d, heads %d/%d of %d, layers %d, inner %d)",
			set.Dir, dims.VocabSize, dims.NEmbd, dims.NHead, dims.NKVHead, dims.HeadDim, dims.NLayer, dims.NInner,
			c.VocabSize, c.NEmbd, c.NHead, c.KVHeads(), c.HeadDim(), c.NLayer, c.NInner)
	}
	return match, nil
}

// selectTensors lists the case's tensors that the options select and that
// belong to an implemented checkpoint.
func selectTensors(set *references.Set, caseID string, opt Options) []references.TensorInfo {
	var out []references.TensorInfo
	for _, ti := range set.Manifest.Tensors {
		cp, ok := ByNumber(ti.Checkpoint)
		// Checkpoint 11's tensors are outputs of the processors, not of
		// the forward: checkSampling handles them.
		if ti.Case != caseID || !ok || !cp.Implemented || !opt.Checkpoints[ti.Checkpoint] || ti.Checkpoint == 11 {
			continue
		}
		if !opt.layerSelected(ti.LayerIndex()) {
			continue
		}
		out = append(out, ti)
	}
	return out
}

// captureFor is captureFor on the options' KV cache.
func (o Options) captureFor(ts []references.TensorInfo, extra ...string) captureSpec {
	spec := captureFor(ts, extra...)
	spec.kv = o.kvCache()
	return spec
}

// captureFor is what to capture for the tensors ts, plus extra names:
// only those tensors are copied, and checkpoint 3's incremental run is
// made only when one of them needs it.
func captureFor(ts []references.TensorInfo, extra ...string) captureSpec {
	spec := captureSpec{names: map[string]bool{}}
	for _, name := range extra {
		spec.names[name] = true
	}
	for _, ti := range ts {
		spec.names[ti.Name] = true
		spec.incremental = spec.incremental || tensors.IncrementalRun(ti.Name)
		if ti.Name == tensors.Experts {
			spec.names[tensors.RouterLogits] = true // a routing flip's margins (routing.go)
		}
	}
	return spec
}

func (r *Report) addNotImplemented(sel Selection) {
	for _, cp := range all {
		if !sel[cp.Number] || cp.Implemented {
			continue
		}
		r.NotImplemented = append(r.NotImplemented, cp.Number)
		r.Results = append(r.Results, Result{
			Checkpoint: cp.Number, CheckpointName: cp.Name, Status: StatusNotImplemented,
			Message: "checkpoint not implemented yet: nothing was compared",
			rank:    1 << 30, caseIndex: cp.Number,
		})
	}
}

func (r *Report) count(status string) int {
	n := 0
	for _, res := range r.Results {
		if res.Status == status {
			n++
		}
	}
	return n
}

// sortForward orders results as the forward pass produced them, cases
// interleaved, so the first failure is the earliest point of divergence.
func sortForward(rs []Result) {
	sort.SliceStable(rs, func(i, j int) bool {
		if rs[i].rank != rs[j].rank {
			return rs[i].rank < rs[j].rank
		}
		return rs[i].caseIndex < rs[j].caseIndex
	})
}
