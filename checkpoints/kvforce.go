package checkpoints

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/llorch/llorch-check/generation"
	"github.com/llorch/llorch-check/gguf"
	"github.com/llorch/llorch-check/kvcache"
	"github.com/llorch/llorch-check/model"
	"github.com/llorch/llorch-check/references"
	"github.com/llorch/llorch-check/tensors"
)

// A float16 KV cache is validated in two parts (FORMAT.md, "f16-kv").
// Go's cache is its own keys and values rounded to float16, PyTorch's is
// its own rounded the same way; where a float32 value sits at a rounding
// midpoint, last-bit differences no float32 engine can avoid round to
// neighbouring float16 values, a step of 1e-3 at |k| ≈ 2, and every
// tensor after it moves by as much. So checkpoint 3 compares the cache
// modulo such flips (flipAllowed), and every other tensor is compared
// with the set's own cache stored in place of Go's (model.ForcedKV):
// attention then reads the inputs PyTorch's read, and the default
// tolerances hold. Layer l's cache is Go's own on the set's cache of the
// layers before it (one forward a layer compared), so that a flip in
// layer 0 does not move layer 1's keys. Checkpoint 12's generation runs
// on Go's own cache.

// forcedKV is the set's KV cache for case c, every layer, to store in
// place of Go's own; an error when the set lacks a layer's cache or its
// shape is not the model's.
func forcedKV(set *references.Set, c references.Case, cfg model.Config) (*model.ForcedKV, error) {
	T, L := len(c.Tokens), cfg.NLayer
	want := []int{cfg.KVHeads(), T, cfg.HeadDim()}
	k, v := make([][]float32, L), make([][]float32, L)
	for l := range L {
		for i, name := range []string{tensors.KCache, tensors.VCache} {
			ti, ok := set.Find(c.ID, name, l)
			if !ok {
				return nil, fmt.Errorf("%s: case %s has no %s of layer %d, which a float16 KV cache is compared on (checkpoints 1-2 after layer 0, 4-9)", set.Dir, c.ID, name, l)
			}
			if !slices.Equal(ti.Shape, want) {
				return nil, fmt.Errorf("%s: %s of layer %d has shape %v, the model's cache of %d positions is %v", set.Dir, name, l, ti.Shape, T, want)
			}
			data, err := set.Tensor(ti)
			if err != nil {
				return nil, err
			}
			if i == 0 {
				k[l] = data
			} else {
				v[l] = data
			}
		}
	}
	return &model.ForcedKV{Positions: T, Layer: func(l int) ([]float32, []float32) { return k[l], v[l] }}, nil
}

// below is f for the layers before l, Go's own cache from l on.
func below(f *model.ForcedKV, l int) *model.ForcedKV {
	return &model.ForcedKV{Positions: f.Positions, Layer: func(i int) ([]float32, []float32) {
		if i >= l {
			return nil, nil
		}
		return f.Layer(i)
	}}
}

// unrounded is the tensor whose float16 rounding a cache tensor holds: v
// for v_cache, the family's cached keys (tensors.CachedK: GPT-2's k, the
// Llama family's k after RoPE) for k_cache.
func unrounded(name, family string) string {
	if name == tensors.VCache {
		return tensors.V
	}
	return tensors.CachedK(family)
}

// compareCacheF16 compares a float16 cache tensor modulo rounding flips:
// an element outside tolerance passes if flipAllowed says its two values
// are the neighbouring float16 roundings of an exact value at their
// midpoint. What is missing to judge a flip (Go's unrounded tensor, the
// set's float64 twin of it) leaves every difference a mismatch.
func compareCacheF16(set *references.Set, ti references.TensorInfo, got *captured, family string, opt Options) (Result, error) {
	want, truth, g, failed, err := operands(set, ti, got, opt)
	if failed != nil || err != nil {
		return *failed, err
	}
	if !slices.Equal(g.Shape, ti.Shape) {
		return newResult(ti, opt).fail("got shape %v, the reference has %v", g.Shape, ti.Shape), nil
	}
	var allow func(int) bool
	name := unrounded(ti.Name, family)
	goU, okGo := got.get(name, ti.LayerIndex())
	uti, okSet := set.Find(ti.Case, name, ti.LayerIndex())
	if okGo && okSet && slices.Equal(goU.Shape, ti.Shape) && slices.Equal(uti.Shape, ti.Shape) {
		exact, err := set.TensorF64(uti)
		if err != nil {
			return Result{}, err
		}
		cp2, _ := ByNumber(2)
		tol := opt.tolerance(cp2)
		if exact != nil {
			allow = func(i int) bool { return flipAllowed(g.Data[i], want[i], goU.Data[i], exact[i], tol) }
		}
	}
	res := newResult(ti, opt)
	s := compareAllowing(g.Data, want, truth, Tolerance{res.Atol, res.Rtol}, nil, allow)
	res.record(s, axesOf(ti.Name), nil)
	res.Flips = s.Flips
	res.Passed = s.Mismatches == 0 && s.Compared > 0
	if res.Passed {
		res.Status = StatusPassed
	}
	if s.Flips > 0 {
		res.Message = fmt.Sprintf("%d elements one float16 step from the set's, at a rounding midpoint (their exact value within checkpoint 2's tolerance of it): either rounding is right", s.Flips)
	}
	return res, nil
}

// flipAllowed says that got and want, Go's and the set's float16 values
// of one element, differ only by where a midpoint fell: Go's value is its
// own unrounded goU rounded to nearest even, the two are neighbouring
// float16 values, and the exact (float64) unrounded value is within
// checkpoint 2's tolerance tol of their midpoint, so float32 values that
// checkpoint 2 accepts round to either side.
func flipAllowed(got, want, goU float32, exact float64, tol Tolerance) bool {
	g, w := gguf.Float32To16(got), gguf.Float32To16(want)
	if gguf.Float16To32(g) != got || gguf.Float16To32(w) != want || gguf.Float32To16(goU) != g {
		return false
	}
	if !adjacent16(g, w) {
		return false
	}
	mid := (float64(got) + float64(want)) / 2
	return math.Abs(exact-mid) <= tol.Atol+tol.Rtol*math.Abs(exact)
}

// adjacent16 says a and b are neighbouring finite float16 values of one
// sign (bit patterns of one sign are ordered as their values).
func adjacent16(a, b uint16) bool {
	const sign, inf = 0x8000, 0x7c00
	if a&sign != b&sign || a&^sign >= inf || b&^sign >= inf {
		return false
	}
	d := int(a&^sign) - int(b&^sign)
	return d == 1 || d == -1
}

// compareOnF16Cache is runCase's comparison of the tensors wanted on a
// float16 cache: the cache's own (k_cache, v_cache) from a forward on
// Go's own cache, modulo rounding flips; everything else from a forward
// on the set's cache. It returns the latter's capture, for checkpoint 10.
func compareOnF16Cache(ctx context.Context, m *model.Model, set *references.Set, c references.Case, wanted []references.TensorInfo, opt Options) ([]Result, *captured, error) {
	family := m.Config.Family()
	var cache, rest []references.TensorInfo
	for _, ti := range wanted {
		if ti.Name == tensors.KCache || ti.Name == tensors.VCache {
			cache = append(cache, ti)
		} else {
			rest = append(rest, ti)
		}
	}
	force, err := forcedKV(set, c, m.Config)
	if err != nil {
		return nil, nil, err
	}
	var out []Result
	for l := range m.Config.NLayer {
		var layer []references.TensorInfo
		for _, ti := range cache {
			if ti.LayerIndex() == l {
				layer = append(layer, ti)
			}
		}
		if len(layer) == 0 {
			continue
		}
		progress(opt, "case %s (%d tokens): forward on Go's float16 cache of layer %d", c.ID, len(c.Tokens), l)
		spec := opt.captureFor(layer)
		for _, ti := range layer {
			spec.names[unrounded(ti.Name, family)] = true
		}
		spec.force = below(force, l)
		own, err := capture(ctx, m, c.Tokens, spec)
		if err != nil {
			return nil, nil, err
		}
		for _, ti := range layer {
			res, err := compareCacheF16(set, ti, own, family, opt)
			if err != nil {
				return nil, nil, err
			}
			out = append(out, res)
		}
	}
	progress(opt, "case %s (%d tokens): forward on the set's float16 cache", c.ID, len(c.Tokens))
	spec := opt.captureFor(rest, tensors.LastLogits)
	spec.force = force
	got, err := capture(ctx, m, c.Tokens, spec)
	if err != nil {
		return nil, nil, err
	}
	results, err := compareAll(set, c, rest, got, opt)
	if err != nil {
		return nil, nil, err
	}
	return append(out, results...), got, nil
}

// kvCacheNote says, after "kv cache: float16", how a float16 cache was
// compared and how many rounding flips checkpoint 3 let through.
func (r *Report) kvCacheNote() string {
	if r.KVCache != references.Float16 {
		return ""
	}
	flips := 0
	for _, res := range r.Results {
		flips += res.Flips
	}
	return fmt.Sprintf("; checkpoint 3 modulo float16 rounding flips (%d found), the other tensors on the set's cache", flips)
}

// pairDecoder is the decoder log-likelihood pair i runs through: with a
// float16 cache and a set that holds the pair's cache, one that stores
// the set's cache in place of its own; else opt.decoder.
func (o Options) pairDecoder(m *model.Model, set *references.Set, i int, ll references.Loglikelihood) (generation.Decoder, error) {
	if !o.KVCache.Float16 || ll.KVCache == nil {
		return o.decoder(m)
	}
	cfg := m.Config
	T := len(generation.PairInput(ll.ContextTokens, ll.ContinuationTokens, cfg.NPositions))
	if T < 1 {
		return o.decoder(m) // ValidatePair refuses it
	}
	k, v, err := set.PairKVCache(i, []int{cfg.KVHeads(), T, cfg.HeadDim()})
	if err != nil {
		return nil, err
	}
	if len(k) != cfg.NLayer {
		return nil, fmt.Errorf("%s: loglikelihood[%d].kv_cache has %d layers, the model %d", set.Dir, i, len(k), cfg.NLayer)
	}
	pool, err := m.NewKVPool(o.kvCache())
	if err != nil {
		return nil, err
	}
	force := &model.ForcedKV{Positions: T, Layer: func(l int) ([]float32, []float32) { return k[l], v[l] }}
	return &forcedDecoder{m: m, pool: pool, force: force}, nil
}

// forcedDecoder is a generation.Decoder whose every pass stores force's
// keys and values in place of its own.
type forcedDecoder struct {
	m     *model.Model
	pool  *kvcache.Pool
	force *model.ForcedKV
	cache *kvcache.Cache
}

func (d *forcedDecoder) Prefill(ctx context.Context, tokens []int) ([]float32, error) {
	d.cache = d.pool.NewCache()
	return d.m.Forward(ctx, d.cache, tokens, model.ForwardOptions{ForceKV: d.force})
}

func (d *forcedDecoder) Step(ctx context.Context, token int) ([]float32, error) {
	if d.cache == nil {
		return nil, errors.New("forced decoder: Step before Prefill")
	}
	return d.m.Forward(ctx, d.cache, []int{token}, model.ForwardOptions{ForceKV: d.force})
}

func (d *forcedDecoder) ContextLength() int { return d.m.Config.NPositions }
func (d *forcedDecoder) VocabSize() int     { return d.m.Config.VocabSize }
