package model

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/llorch/llorch-check/kernels"
)

// MoE is a mixture of experts' configuration: a sparse layer's FFN is
// Experts SwiGLU experts of width Inner, of which a router picks TopK a
// token (HF's Qwen3MoeSparseMoeBlock, MixtralSparseMoeBlock).
type MoE struct {
	Experts int // num_experts (Qwen3-MoE), num_local_experts (Mixtral)
	TopK    int // num_experts_per_tok
	Inner   int // an expert's intermediate size: moe_intermediate_size (Qwen3-MoE), intermediate_size (Mixtral)
	// NormTopK divides the chosen experts' probabilities by their sum
	// (Mixtral always; Qwen3-MoE when norm_topk_prob).
	NormTopK bool
	// Dense lists the layers whose FFN is the dense SwiGLU of
	// intermediate_size instead (Qwen3-MoE's mlp_only_layers and
	// decoder_sparse_step); nil when every layer is sparse.
	Dense []bool
}

// Sparse says whether layer l's FFN is a mixture of experts.
func (c Config) Sparse(l int) bool {
	return c.MoE != nil && !(l < len(c.MoE.Dense) && c.MoE.Dense[l])
}

// moeLayout is what a mixture-of-experts architecture adds to its Llama
// family registration: how config.json declares the experts, and the
// names of the router and of an expert's three matrices in HF's files
// (%d the layer, then the expert).
type moeLayout struct {
	read                   func(r rawConfig, c *Config) error
	router, gate, up, down string
}

// Qwen3-MoE's: mlp.gate is the router, mlp.experts.E.{gate,up,down}_proj
// the experts; Qwen3MoeConfig's defaults.
var qwen3MoELayout = &moeLayout{
	read:   readQwen3MoE,
	router: "layers.%d.mlp.gate.weight",
	gate:   "layers.%d.mlp.experts.%d.gate_proj.weight",
	up:     "layers.%d.mlp.experts.%d.up_proj.weight",
	down:   "layers.%d.mlp.experts.%d.down_proj.weight",
}

// Mixtral's: block_sparse_moe.gate the router, experts.E.w1 (gate), w3
// (up) and w2 (down), as the hub's checkpoints name them.
var mixtralLayout = &moeLayout{
	read:   readMixtral,
	router: "layers.%d.block_sparse_moe.gate.weight",
	gate:   "layers.%d.block_sparse_moe.experts.%d.w1.weight",
	up:     "layers.%d.block_sparse_moe.experts.%d.w3.weight",
	down:   "layers.%d.block_sparse_moe.experts.%d.w2.weight",
}

// readQwen3MoE reads Qwen3MoeConfig's experts: num_experts (128),
// num_experts_per_tok (8), moe_intermediate_size (768), norm_topk_prob
// (false), and the dense layers: those in mlp_only_layers, and those
// where (l+1) % decoder_sparse_step != 0 (Qwen3MoeDecoderLayer).
func readQwen3MoE(r rawConfig, c *Config) error {
	m := &MoE{}
	var err error
	if m.Experts, err = r.positiveInt("num_experts", false, 128); err != nil {
		return err
	}
	if m.TopK, err = r.positiveInt("num_experts_per_tok", false, 8); err != nil {
		return err
	}
	if m.Inner, err = r.positiveInt("moe_intermediate_size", false, 768); err != nil {
		return err
	}
	if m.NormTopK, err = r.boolean("norm_topk_prob", false); err != nil {
		return err
	}
	step, err := r.positiveInt("decoder_sparse_step", false, 1)
	if err != nil {
		return err
	}
	var only []int
	if v, ok := r.present("mlp_only_layers"); ok {
		if err := json.Unmarshal(v, &only); err != nil {
			return fmt.Errorf("field \"mlp_only_layers\": value %.80s is not a list of layer indices", v)
		}
	}
	dense := make([]bool, c.NLayer)
	any := false
	for l := range dense {
		dense[l] = slices.Contains(only, l) || (l+1)%step != 0
		any = any || dense[l]
	}
	if any {
		m.Dense = dense
	}
	return c.setMoE(m, "num_experts")
}

// readMixtral reads MixtralConfig's experts: num_local_experts (8) of
// intermediate_size, num_experts_per_tok (2), the chosen probabilities
// always renormalised, every layer sparse. router_jitter_noise acts only
// in training.
func readMixtral(r rawConfig, c *Config) error {
	m := &MoE{Inner: c.NInner, NormTopK: true}
	var err error
	if m.Experts, err = r.positiveInt("num_local_experts", false, 8); err != nil {
		return err
	}
	if m.TopK, err = r.positiveInt("num_experts_per_tok", false, 2); err != nil {
		return err
	}
	return c.setMoE(m, "num_local_experts")
}

func (c *Config) setMoE(m *MoE, expertsField string) error {
	if m.TopK > m.Experts {
		return fmt.Errorf("field \"num_experts_per_tok\": value %d is more than %s %d", m.TopK, expertsField, m.Experts)
	}
	c.MoE = m
	return nil
}

// noQwenWindow refuses Qwen3-MoE's use_sliding_window: its layers'
// windows are not implemented for it (Qwen3MoeConfig keeps
// sliding_window only with use_sliding_window).
func noQwenWindow(r rawConfig, _ *Config) error {
	on, err := r.boolean("use_sliding_window", false)
	if err != nil {
		return err
	}
	if on {
		return fmt.Errorf("field \"use_sliding_window\": value true is not implemented for qwen3_moe")
	}
	return nil
}

// moeParams are a sparse layer's router and experts' tensors, HF names,
// in expert order. GGUF names are llama.cpp's stacked tensors, which the
// GGUF side reads and writes whole (gguf name empty here).
func moeParams(c Config, l int) []Param {
	lay := c.llama().moe
	C, E, I := c.NEmbd, c.MoE.Experts, c.MoE.Inner
	ps := []Param{{hf: fmt.Sprintf(lay.router, l), shape: []int{E, C}, part: partRouter}}
	for e := range E {
		ps = append(ps,
			Param{hf: fmt.Sprintf(lay.gate, l, e), shape: []int{I, C}, part: partExpertGate, expert: e},
			Param{hf: fmt.Sprintf(lay.up, l, e), shape: []int{I, C}, part: partExpertUp, expert: e},
			Param{hf: fmt.Sprintf(lay.down, l, e), shape: []int{C, I}, part: partExpertDown, expert: e})
	}
	return ps
}

// PutExpert puts a router or expert matrix ([out,in], as matrixOf)
// into its layer's moeBlock, as the slabs of its transpose.
func (pl *Placer) PutExpert(p Param, f32 []float32, h16 []uint16) error {
	return slabbedRows(f32, h16, pl.m.BFloat16, p.shape[0], p.shape[1], pl.expertMatrix(p))
}

// PutExpertQuantized places a router or expert matrix already in the
// kernels' layout: a quantised file's, held in its own type as the dense
// matrices are (an expert in float32 took 3.8x its Q8_0 bytes).
func (pl *Placer) PutExpertQuantized(p Param, w kernels.Matrix) {
	*pl.expertMatrix(p) = w
}

// expertMatrix is where the router or expert matrix p goes, the layer's
// sparse block made on its first.
func (pl *Placer) expertMatrix(p Param) *kernels.Matrix {
	b := &pl.m.h[layerOf(p.hf)]
	if b.moe == nil {
		b.moe = &moeBlock{experts: make([]expert, pl.m.Config.MoE.Experts)}
	}
	switch p.part {
	case partExpertGate:
		return &b.moe.experts[p.expert].gate
	case partExpertUp:
		return &b.moe.experts[p.expert].up
	case partExpertDown:
		return &b.moe.experts[p.expert].down
	}
	return &b.moe.router
}
