package model

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// BenchmarkDecodeMoE times a decode step of a Mixtral-shaped model (8
// experts of width 512, 2 a token) against a Mistral-shaped dense model of
// the same active parameters (intermediate 1024), everything else equal:
// hidden 256, 4 layers, 8 heads, 2 KV heads. A sparse step that reads only
// its chosen experts reads the dense step's FFN bytes plus the router's.
func BenchmarkDecodeMoE(b *testing.B) {
	const C, layers, E, K, Ie = 256, 4, 8, 2, 512
	for _, sparse := range []bool{false, true} {
		name := map[bool]string{false: "dense-I1024", true: "moe-8x512-top2"}[sparse]
		b.Run(name, func(b *testing.B) {
			m := benchLlama(b, C, layers, E, K, Ie, sparse)
			c := m.NewCache()
			ctx := context.Background()
			if _, err := m.Forward(ctx, c, make([]int, 65), ForwardOptions{}); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if err := c.Truncate(65); err != nil {
					b.Fatal(err)
				}
				if _, err := m.Forward(ctx, c, []int{7}, ForwardOptions{}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
			b.ReportMetric(float64(m.DecodeBytes())/1e6, "MB-held")
		})
	}
}

// benchLlama writes and loads a float32 mixtral (sparse) or mistral model
// of random weights.
func benchLlama(b *testing.B, C, layers, E, K, Ie int, sparse bool) *Model {
	const V, H, Hkv = 512, 8, 2
	D := C / H
	r := rand.New(rand.NewPCG(3, 4))
	var ts []stTensor
	add := func(name string, scale float64, shape ...int) {
		n := 1
		for _, d := range shape {
			n *= d
		}
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(scale * r.NormFloat64())
			if len(shape) == 1 {
				v[i] += 1
			}
		}
		ts = append(ts, stTensor{Name: name, DType: "F32", Shape: shape, Data: v})
	}
	cfg := map[string]any{"vocab_size": V, "hidden_size": C, "num_hidden_layers": layers, "num_attention_heads": H,
		"num_key_value_heads": Hkv, "max_position_embeddings": 128, "rms_norm_eps": 1e-5, "sliding_window": nil}
	if sparse {
		cfg["model_type"], cfg["intermediate_size"], cfg["num_local_experts"], cfg["num_experts_per_tok"] = ArchMixtral, Ie, E, K
	} else {
		cfg["model_type"], cfg["intermediate_size"] = ArchMistral, K*Ie
	}
	add("model.embed_tokens.weight", 0.1, V, C)
	for l := range layers {
		p := fmt.Sprintf("model.layers.%d.", l)
		add(p+"input_layernorm.weight", 0.1, C)
		add(p+"post_attention_layernorm.weight", 0.1, C)
		add(p+"self_attn.q_proj.weight", 0.05, H*D, C)
		add(p+"self_attn.k_proj.weight", 0.05, Hkv*D, C)
		add(p+"self_attn.v_proj.weight", 0.05, Hkv*D, C)
		add(p+"self_attn.o_proj.weight", 0.05, C, H*D)
		if !sparse {
			add(p+"mlp.gate_proj.weight", 0.05, K*Ie, C)
			add(p+"mlp.up_proj.weight", 0.05, K*Ie, C)
			add(p+"mlp.down_proj.weight", 0.05, C, K*Ie)
			continue
		}
		add(p+"block_sparse_moe.gate.weight", 0.1, E, C)
		for e := range E {
			q := fmt.Sprintf("%sblock_sparse_moe.experts.%d.", p, e)
			add(q+"w1.weight", 0.05, Ie, C)
			add(q+"w3.weight", 0.05, Ie, C)
			add(q+"w2.weight", 0.05, C, Ie)
		}
	}
	add("model.norm.weight", 0.1, C)
	add("lm_head.weight", 0.1, V, C)
	m, err := Load(writeModel(b, cfg, ts))
	require.NoError(b, err)
	return m
}
