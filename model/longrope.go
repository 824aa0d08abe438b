package model

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"github.com/llorch/llorch-check/kvcache"
)

// LongRope is rope_scaling of type longrope (Phi-3-mini-128k, Phi-3.5):
// HF's _compute_longrope_parameters. A sequence past the pretrained
// context rotates with the long factors, a shorter one with the short
// ones, every key of it alike (ropeVariants), as HF's generate runs
// Phi-3; the reference does the same. cos and sin are multiplied by the
// attention factor.
type LongRope struct {
	Short, Long     []float64 // per rotary pair: inv_freq = 1 / (factor · θ^(2i/d))
	Original        int       // the pretrained context (original_max_position_embeddings)
	AttentionFactor float64
}

// longRope reads rope_scaling of type longrope (or "su", its first name)
// from sub, the config's rotary dimension and contexts being read.
func (r rawConfig) longRope(sub rawConfig, c *Config) (*LongRope, error) {
	half := c.RotaryDim / 2
	s := &LongRope{}
	for _, f := range []struct {
		field string
		dst   *[]float64
	}{{"short_factor", &s.Short}, {"long_factor", &s.Long}} {
		v, _ := sub.present(f.field)
		if err := json.Unmarshal(v, f.dst); err != nil || len(*f.dst) != half || !allPositive(*f.dst) {
			return nil, fmt.Errorf("field \"rope_scaling\": longrope needs %s: %d positive numbers (rotary dimension / 2)", f.field, half)
		}
	}
	// HF reads the config's original_max_position_embeddings (Phi-3's),
	// else rope_scaling's, else the context.
	var err error
	if s.Original, err = r.positiveInt("original_max_position_embeddings", false, 0); err != nil {
		return nil, err
	}
	if s.Original == 0 {
		if s.Original, err = sub.positiveInt("original_max_position_embeddings", false, c.NPositions); err != nil {
			return nil, fmt.Errorf("field \"rope_scaling\": %w", err)
		}
	}
	factor, err := sub.positiveFloat("factor", float64(c.NPositions)/float64(s.Original))
	if err != nil {
		return nil, fmt.Errorf("field \"rope_scaling\": %w", err)
	}
	def := 1.0
	if factor > 1 {
		def = math.Sqrt(1 + math.Log(factor)/math.Log(float64(s.Original)))
	}
	if s.AttentionFactor, err = sub.positiveFloat("attention_factor", def); err != nil {
		return nil, fmt.Errorf("field \"rope_scaling\": %w", err)
	}
	return s, nil
}

func allPositive(v []float64) bool {
	for _, x := range v {
		if !(x > 0) || math.IsInf(x, 0) {
			return false
		}
	}
	return true
}

// ropeKind reads rope_scaling's type: rope_type, else type.
func ropeKind(v json.RawMessage) (rawConfig, string, error) {
	var sub rawConfig
	dec := json.NewDecoder(bytes.NewReader(v))
	dec.UseNumber()
	if err := dec.Decode(&sub); err != nil || sub == nil {
		return nil, "", fmt.Errorf("field \"rope_scaling\": value %.80s is not null or an object", v)
	}
	kind, err := sub.str("rope_type", "")
	if err == nil && kind == "" {
		kind, err = sub.str("type", "")
	}
	if err != nil {
		return nil, "", fmt.Errorf("field \"rope_scaling\": %w", err)
	}
	return sub, kind, nil
}

// withLongRope adds the long factors, the switch and the attention factor
// to r, as newRope computes the short ones: 1 / (factor · θ^(2i/d)), each
// operation rounded to float32 as PyTorch does.
func (r *rope) withLongRope(c Config) {
	s := c.LongRope
	if s == nil {
		return
	}
	dim := c.RotaryDim
	r.invFreq, r.long = make([]float32, dim/2), make([]float32, dim/2)
	for i := range r.invFreq {
		p := float32(math.Pow(c.RopeTheta, float64(float32(2*i)/float32(dim))))
		r.invFreq[i] = 1 / (float32(s.Short[i]) * p)
		r.long[i] = 1 / (float32(s.Long[i]) * p)
	}
	r.original, r.attn = s.Original, float32(s.AttentionFactor)
}

// useLong says a forward call whose last position is last rotates with the
// long factors.
func (r rope) useLong(last int) bool { return r.long != nil && last+1 > r.original }

// longVariant is the kvcache variant of a sequence rotated with the long
// factors.
const longVariant uint8 = 1

// ropeVariants decides which spans rotate with longrope's long factors,
// as Hugging Face's generate does: a span whose last position is past the
// pretrained context does, and so does every later span of its sequence
// (Cache.Variant); a sequence's keys are all rotated alike, so every
// call's logits are those of one call over the whole sequence. A span
// that must rotate long on a cache whose keys were rotated short restarts
// the sequence: its cache is emptied and it runs the cache's tokens
// before its own, as Phi3ForCausalLM.prepare_inputs_for_generation drops
// the cache when a sequence first passes the pretrained context. Should
// the pass then fail, that cache stays empty. Returns the spans and
// tokens to run and, for a single span that restarted, the rows it put
// before the caller's (0 otherwise). A probed pass (probed) is refused
// a restart, its cache untouched: its tensors would hold rows the caller
// did not run.
func (m *Model) ropeVariants(spans []span, tokens []int, probed bool) ([]span, []int, int, error) {
	if m.rope.long == nil {
		return spans, tokens, 0, nil
	}
	byContext := m.fault == FaultLongRopeWrongFactor // the model's, whatever layer it was injected at
	var out []int
	added, row := 0, 0
	for i := range spans {
		s := &spans[i]
		own := tokens[row : row+s.T]
		row += s.T
		s.long = m.rope.useLong(s.off+s.T-1) || s.c.Variant() == longVariant
		if byContext {
			s.long = m.rope.useLong(m.Config.NPositions - 1) // as llama.cpp chooses
		}
		if s.long && s.c.Variant() != longVariant && s.off > 0 {
			if probed {
				return nil, nil, 0, errors.New("forward: a captured pass cannot restart its sequence with longrope's long factors; capture on an empty cache or call Model.PlanSequence first")
			}
			before := s.c.Tokens()
			s.c.Reset()
			s.off, s.T = 0, len(before)+s.T
			if len(spans) == 1 {
				added = len(before)
			}
			if out == nil {
				out = append(make([]int, 0, len(tokens)+len(before)), tokens[:row-len(own)]...)
			}
			out = append(out, before...)
		}
		if out != nil {
			out = append(out, own...)
		}
	}
	if out == nil {
		return spans, tokens, 0, nil
	}
	return spans, out, added, nil
}

// PlanSequence tells m that c, just emptied, will run a known sequence of
// n positions in several calls (a prompt prefilled in chunks, a text
// scored in chunks) that should compute what one call over all n does: a
// longrope model then rotates every call with the factors n selects,
// instead of restarting when a call first passes the pretrained context.
// Call it before Cache.ReusePrefix, which then reuses only blocks
// computed the same way. Other models ignore it.
func (m *Model) PlanSequence(c *kvcache.Cache, n int) {
	if c.Len() == 0 && m.rope.useLong(n-1) {
		c.SetVariant(longVariant)
	}
}
