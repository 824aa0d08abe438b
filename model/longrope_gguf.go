package model

import (
	"fmt"
	"math"
	"slices"
	"strconv"
)

// Phi-3's longrope in GGUF, as llama.cpp's converter writes it
// (Phi3MiniModel): the short and long factors as two global F32 tensors
// of RotaryDim/2, the pretrained context as rope.scaling.original_context_length
// and the attention factor as rope.scaling.attn_factor. llama.cpp picks
// the long factors when its context is past the pretrained one, for every
// position; HF (and this forward) by the last position of a call
// (LongRope): the file holds both, the choice is the engine's.
const (
	ggufRopeLong  = "rope_factors_long.weight"
	ggufRopeShort = "rope_factors_short.weight"
)

// longRopeTensors are the factor tensors of a longrope config, in the
// converter's order (long, then short), rounded to float32 as the forward
// uses them.
func longRopeTensors(s *LongRope) []GGUFTensor {
	f32 := func(v []float64) []float32 {
		out := make([]float32, len(v))
		for i, x := range v {
			out[i] = float32(x)
		}
		return out
	}
	return []GGUFTensor{
		{Name: ggufRopeLong, Shape: []int{len(s.Long)}, Values: f32(s.Long)},
		{Name: ggufRopeShort, Shape: []int{len(s.Short)}, Values: f32(s.Short)},
	}
}

// ggufLongRope reads a file's longrope factors and keys into c.LongRope:
// both tensors or neither, the pretrained context required with them,
// the attention factor HF's default (from the two contexts) when absent.
func ggufLongRope(md Metadata, c *Config) error {
	k := func(key string) string { return llamaKey(c.ModelType, key) }
	_, long := md.Tensor(ggufRopeLong)
	_, short := md.Tensor(ggufRopeShort)
	switch {
	case !long && !short:
		return nil
	case long != short:
		return fmt.Errorf("tensors %q and %q: a file has both or neither (it has one)", ggufRopeLong, ggufRopeShort)
	case !c.llama().origContextKey:
		return fmt.Errorf("tensor %q: longrope is only implemented for phi3, not %s", ggufRopeLong, c.ModelType)
	}
	s := &LongRope{}
	for _, e := range []struct {
		name string
		dst  *[]float64
	}{{ggufRopeLong, &s.Long}, {ggufRopeShort, &s.Short}} {
		v, err := ggufFactors(md, e.name, c.RotaryDim/2)
		if err != nil {
			return err
		}
		*e.dst = v
	}
	orig, err := md.OptNonNegative(k("rope.scaling.original_context_length"))
	switch {
	case err != nil:
		return err
	case orig <= 0 || orig > maxDim:
		return fmt.Errorf("key %s: value %d is out of range [1, %d] (tensor %q is present)", k("rope.scaling.original_context_length"), orig, maxDim, ggufRopeLong)
	}
	s.Original = int(orig)
	// HF's default: the factor is the context over the pretrained one.
	def := 1.0
	if factor := float64(c.NPositions) / float64(s.Original); factor > 1 {
		def = math.Sqrt(1 + math.Log(factor)/math.Log(float64(s.Original)))
	}
	if s.AttentionFactor, err = md.PositiveFloat(k("rope.scaling.attn_factor"), def); err != nil {
		return err
	}
	if float32(s.AttentionFactor) == float32(def) {
		// The key holds float32: HF's default, as the writer rounded it,
		// reads back as the default (the forward rounds it so too).
		s.AttentionFactor = def
	}
	c.LongRope = s
	return nil
}

// ggufFactors reads an F32 [n] tensor of positive factors, each as the
// shortest decimal that rounds to its float32 (as a config's JSON would
// say it, so a file written from a config reads back to it).
func ggufFactors(md Metadata, name string, n int) ([]float64, error) {
	t, _ := md.Tensor(name)
	if t.Type != "F32" || !slices.Equal(t.Dims, []uint64{uint64(n)}) {
		return nil, fmt.Errorf("tensor %q: %s %v, want F32 [%d] (rotary dimension / 2)", name, t.Type, t.Dims, n)
	}
	v32, err := md.Float32s(name)
	if err != nil {
		return nil, err
	}
	out := make([]float64, n)
	for i, x := range v32 {
		if !(x > 0) || math.IsInf(float64(x), 0) {
			return nil, fmt.Errorf("tensor %q: factor %d is %g, not a positive finite number", name, i, x)
		}
		out[i], _ = strconv.ParseFloat(strconv.FormatFloat(float64(x), 'g', -1, 32), 64)
	}
	return out, nil
}
