package model

import (
	"fmt"
	"slices"
)

// Gemma in GGUF: llama.cpp's gemma, gemma2 and gemma3 layouts (its
// converter's GemmaModel, Gemma2Model and Gemma3Model;
// pytorch/gemma_torch.py's gguf_layout).
// The norm weights are stored as 1 + w, the form the model holds; the
// parameter table names post_attention_norm and post_ffw_norm. What
// llama.cpp does not read from the file it fixes per architecture, and a
// config that differs is not written (gemmaWritable):
//   - the attention scale: 1/√head_dim, or 1/√(hidden/heads) for a model
//     it takes for a 27B by its layer count (no query_pre_attn_scalar key);
//   - which layers slide: i % n < n − 1, n = 2 (Gemma 2) or 6 (Gemma 3);
//   - Gemma 3's local rope base, 10000.
// Absent soft-cap keys are llama.cpp's defaults for Gemma 2 (50, 30).
// Gemma 1's layout has no window, soft-cap or post norm, and its scale
// is always 1/√head_dim.

// llamaCppGemma is what llama.cpp's loader fixes for a Gemma version;
// 0, 0 for Gemma 1: no layer slides, no model scales otherwise.
func llamaCppGemma(version int) (pattern, layers27B int) {
	switch version {
	case 1:
		return 0, 0
	case 3:
		return 6, 62
	}
	return 2, 46
}

// llamaCppLocalBase is llama.cpp's rope base of Gemma 3's sliding layers.
const llamaCppLocalBase = 10000

// gemmaScalar is the query_pre_attn_scalar llama.cpp's scale amounts to.
func gemmaScalar(c Config) float64 {
	_, big := llamaCppGemma(c.Gemma.Version)
	if c.NLayer == big {
		return float64(c.NEmbd / c.NHead)
	}
	return float64(c.HeadDim())
}

// gemmaWindows are the windows llama.cpp gives a Gemma model of window w.
func gemmaWindowsOf(c Config, w int) []int {
	n, _ := llamaCppGemma(c.Gemma.Version)
	if n == 0 {
		return nil
	}
	out := make([]int, c.NLayer)
	for i := range out {
		if i%n < n-1 {
			out[i] = w
		}
	}
	return out
}

// gemmaWindow is a Gemma config's sliding window (every sliding layer's).
func gemmaWindow(c Config) int { return slices.Max(append([]int{0}, c.Windows...)) }

// gemmaWritable refuses a Gemma config llama.cpp's layout cannot say.
func gemmaWritable(c Config) error {
	g := c.Gemma
	switch w := gemmaWindow(c); {
	case g.QueryPreAttnScalar != gemmaScalar(c):
		return fmt.Errorf("%s with query_pre_attn_scalar %g is not written: llama.cpp scales by 1/√%g and stores no such key", c.ModelType, g.QueryPreAttnScalar, gemmaScalar(c))
	case !slices.Equal(c.Windows, gemmaWindowsOf(c, w)):
		return fmt.Errorf("%s with windows %v is not written: llama.cpp's layer pattern gives %v", c.ModelType, c.Windows, gemmaWindowsOf(c, w))
	case g.Version == 3 && g.LocalTheta != llamaCppLocalBase:
		return fmt.Errorf("%s with rope_local_base_freq %g is not written: llama.cpp's local layers rotate on base %d", c.ModelType, g.LocalTheta, llamaCppLocalBase)
	case g.Version == 2 && (g.AttnSoftcap == 0 || g.FinalSoftcap == 0):
		return fmt.Errorf("gemma2 without a soft-cap is not written: llama.cpp reads an absent soft-cap key as its default (50, 30)")
	}
	return nil
}

// gemmaKeys are Gemma's keys after the Llama family's: its window, then
// its soft-caps and rope scaling.
func gemmaKeys(c Config, a string) []KV {
	f32 := func(key string, v float64) KV { return KV{llamaKey(a, key), float32(v)} }
	var kv []KV
	g := c.Gemma
	if g.Version > 1 {
		kv = append(kv, KV{llamaKey(a, "attention.sliding_window"), uint32(gemmaWindow(c))})
	}
	if g.AttnSoftcap > 0 {
		kv = append(kv, f32("attn_logit_softcapping", g.AttnSoftcap))
	}
	if g.FinalSoftcap > 0 {
		kv = append(kv, f32("final_logit_softcapping", g.FinalSoftcap))
	}
	if g.LinearFactor > 0 {
		kv = append(kv, KV{llamaKey(a, "rope.scaling.type"), "linear"}, f32("rope.scaling.factor", g.LinearFactor))
	}
	return kv
}

// ggufGemma reads Gemma's settings from a file's keys, as llama.cpp's
// loader applies them.
func ggufGemma(md Metadata, c *Config, fam *llamaFamily, k func(string) string) error {
	g := &Gemma{Version: fam.gemma}
	c.ActivationFunction = "gelu_pytorch_tanh"
	if v, _, ok := md.Value(k("rope.scaling.type")); ok {
		switch s, _ := v.(string); s {
		case "none":
		case "linear":
			fac, err := md.PositiveFloat(k("rope.scaling.factor"), 0)
			if err != nil {
				return err
			}
			g.LinearFactor = fac
		default:
			return fmt.Errorf("key %s: value %.80v: only linear rope scaling is implemented for Gemma", k("rope.scaling.type"), v)
		}
	}
	if fam.gemma == 1 {
		c.Gemma = g
		g.QueryPreAttnScalar = gemmaScalar(*c)
		return nil
	}
	w, err := md.Dim(k("attention.sliding_window"))
	if err != nil {
		return err
	}
	capDefs := [2]float64{50, 30}
	if fam.gemma == 3 {
		capDefs = [2]float64{}
	}
	for i, key := range []string{"attn_logit_softcapping", "final_logit_softcapping"} {
		if _, _, ok := md.Value(k(key)); !ok && capDefs[i] == 0 {
			continue
		}
		v, err := md.PositiveFloat(k(key), capDefs[i])
		if err != nil {
			return err
		}
		if i == 0 && fam.gemma == 2 {
			g.AttnSoftcap = v // Gemma 3's attention never reads one
		} else if i == 1 {
			g.FinalSoftcap = v
		}
	}
	if fam.gemma == 3 {
		g.LocalTheta = llamaCppLocalBase
	}
	c.Gemma = g
	c.Windows = gemmaWindowsOf(*c, w)
	g.QueryPreAttnScalar = gemmaScalar(*c)
	return nil
}
