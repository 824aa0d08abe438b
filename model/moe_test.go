package model

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/llorch/llorch-check/gguf"
	"github.com/llorch/llorch-check/internal/fixture"
	"github.com/llorch/llorch-check/kernels"
	"github.com/llorch/llorch-check/tensors"
	"github.com/llorch/llorch-check/tokenizer"
	"github.com/stretchr/testify/require"
)

// TestMoEConfig reads the experts as Qwen3MoeConfig and MixtralConfig do:
// their defaults, Qwen3-MoE's dense layers, and the refusals.
func TestMoEConfig(t *testing.T) {
	tests := []struct {
		model   string
		edit    func(map[string]any)
		want    MoE
		wantErr string
	}{
		{model: "tiny-llama-qwen3moe", want: MoE{Experts: 4, TopK: 2, Inner: 32, Dense: []bool{false, true}}},
		{model: "tiny-llama-qwen3moe", edit: func(m map[string]any) {
			for _, k := range []string{"num_experts", "num_experts_per_tok", "moe_intermediate_size", "norm_topk_prob", "mlp_only_layers", "decoder_sparse_step"} {
				delete(m, k)
			}
		}, want: MoE{Experts: 128, TopK: 8, Inner: 768}},
		{model: "tiny-llama-qwen3moe", edit: func(m map[string]any) { m["mlp_only_layers"] = []int{}; m["decoder_sparse_step"] = 2 },
			want: MoE{Experts: 4, TopK: 2, Inner: 32, Dense: []bool{true, false}}},
		{model: "tiny-llama-qwen3moe", edit: func(m map[string]any) { m["norm_topk_prob"] = true; m["mlp_only_layers"] = nil },
			want: MoE{Experts: 4, TopK: 2, Inner: 32, NormTopK: true}},
		{model: "tiny-llama-qwen3moe", edit: func(m map[string]any) { m["num_experts_per_tok"] = 5 }, wantErr: "num_experts_per_tok"},
		{model: "tiny-llama-qwen3moe", edit: func(m map[string]any) { m["use_sliding_window"] = true }, wantErr: "use_sliding_window"},
		{model: "tiny-llama-qwen3moe", edit: func(m map[string]any) { m["mlp_only_layers"] = "1" }, wantErr: "mlp_only_layers"},
		{model: "tiny-llama-mixtral", want: MoE{Experts: 4, TopK: 2, Inner: 64, NormTopK: true}},
		{model: "tiny-llama-mixtral", edit: func(m map[string]any) { delete(m, "num_local_experts"); delete(m, "num_experts_per_tok") },
			want: MoE{Experts: 8, TopK: 2, Inner: 64, NormTopK: true}},
	}
	for _, tc := range tests {
		t.Run(tc.model, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join(fixture.FamilyModel(tc.model), "config.json"))
			require.NoError(t, err)
			var m map[string]any
			require.NoError(t, json.Unmarshal(b, &m))
			if tc.edit != nil {
				tc.edit(m)
			}
			b, err = json.Marshal(m)
			require.NoError(t, err)
			c, err := parseConfig(b)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, *c.MoE)
			for l := range c.NLayer {
				require.Equal(t, !(l < len(tc.want.Dense) && tc.want.Dense[l]), c.Sparse(l), "layer %d", l)
			}
		})
	}
}

// TestRoute: softmax over every expert, the top k by probability (ties to
// the lower id), renormalised only when asked; the faults' routes.
func TestRoute(t *testing.T) {
	logits := []float32{1, 3, 2.5, -1, 3}
	var e [5]float64
	var sum float64
	for i, v := range logits {
		e[i] = math.Exp(float64(v))
		sum += e[i]
	}
	p := func(i int) float64 { return e[i] / sum }
	tests := []struct {
		name  string
		k     int
		norm  bool
		f     blockFaults
		ids   []int
		wants []float64
	}{
		{"top2, tie to the lower id", 2, false, blockFaults{}, []int{1, 4}, []float64{p(1), p(4)}},
		{"top3", 3, false, blockFaults{}, []int{1, 4, 2}, []float64{p(1), p(4), p(2)}},
		{"top3 renormalised", 3, true, blockFaults{}, []int{1, 4, 2},
			[]float64{p(1) / (p(1) + p(4) + p(2)), p(4) / (p(1) + p(4) + p(2)), p(2) / (p(1) + p(4) + p(2))}},
		{"moe-no-renorm", 3, true, blockFaults{moeNoRenorm: true}, []int{1, 4, 2}, []float64{p(1), p(4), p(2)}},
		{"moe-softmax-after-topk", 3, false, blockFaults{moeSoftmaxAfterTopK: true}, []int{1, 4, 2},
			[]float64{p(1) / (p(1) + p(4) + p(2)), p(4) / (p(1) + p(4) + p(2)), p(2) / (p(1) + p(4) + p(2))}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ids, w := make([]int, tc.k), make([]float32, tc.k)
			route(ids, w, logits, make([]float32, len(logits)), make([]float64, len(logits)), tc.norm, tc.f)
			require.Equal(t, tc.ids, ids)
			for i, want := range tc.wants {
				require.InDelta(t, want, float64(w[i]), 2e-7, "slot %d", i)
			}
		})
	}
}

// TestSparseDecodeReadsChosenExperts: a one-token step computes only the
// experts its router chose. Every other expert's weights are made NaN,
// which a forward that computed all experts and masked the rest (0·NaN)
// would spread into the logits; the logits must keep their bits.
func TestSparseDecodeReadsChosenExperts(t *testing.T) {
	for _, name := range []string{"tiny-llama-qwen3moe", "tiny-llama-mixtral"} {
		t.Run(name, func(t *testing.T) {
			m, err := Load(fixture.FamilyModel(name))
			require.NoError(t, err)
			chosen := map[int][]int{}
			probe := ProbeFunc(func(c Captured) {
				if c.Name == tensors.Experts {
					for _, v := range c.Data {
						chosen[c.Layer] = append(chosen[c.Layer], int(v))
					}
				}
			})
			tokens := []int{1}
			want, err := m.Forward(context.Background(), m.NewCache(), tokens, ForwardOptions{Probe: probe})
			require.NoError(t, err)
			c := m.Config
			nan := func(rows, cols int) kernels.Matrix {
				v := make([]float32, rows*cols)
				for i := range v {
					v[i] = float32(math.NaN())
				}
				var w kernels.Matrix
				require.NoError(t, slabbedRows(v, nil, false, rows, cols, &w))
				return w
			}
			poisoned := 0
			for l := range m.h {
				if m.h[l].moe == nil {
					continue
				}
				for e := range m.h[l].moe.experts {
					if !slices.Contains(chosen[l], e) {
						m.h[l].moe.experts[e] = expert{gate: nan(c.MoE.Inner, c.NEmbd), up: nan(c.MoE.Inner, c.NEmbd), down: nan(c.NEmbd, c.MoE.Inner)}
						poisoned++
					}
				}
			}
			require.Positive(t, poisoned)
			got, err := m.Forward(context.Background(), m.NewCache(), tokens, ForwardOptions{})
			require.NoError(t, err)
			require.Equal(t, want, got)
		})
	}
}

// TestSparseBatchesSameBits: the experts computed in several batches (a
// long prefill's) give the bits of one batch, every tensor the probes see
// and the logits: each batch's slots are its own experts' rows, and each
// row's weighted products are added in ascending expert order across
// batches.
func TestSparseBatchesSameBits(t *testing.T) {
	for _, name := range []string{"tiny-llama-qwen3moe", "tiny-llama-mixtral"} {
		t.Run(name, func(t *testing.T) {
			m, err := Load(fixture.FamilyModel(name))
			require.NoError(t, err)
			tokens := make([]int, 40)
			for i := range tokens {
				tokens[i] = (i*7919 + 13) % 1000
			}
			run := func(slots int) ([]Captured, []float32) {
				defer func(s int) { moeBatchSlots = s }(moeBatchSlots)
				moeBatchSlots = slots
				var seen []Captured
				probe := ProbeFunc(func(c Captured) {
					c.Data = slices.Clone(c.Data)
					seen = append(seen, c)
				})
				logits, err := m.Forward(context.Background(), m.NewCache(), tokens, ForwardOptions{Probe: probe})
				require.NoError(t, err)
				return seen, logits
			}
			// 40 rows and two experts a row: one batch of 80 slots, or
			// batches of at most 40 (max(R, 4)), two or more a layer.
			wantSeen, wantLogits := run(1 << 20)
			gotSeen, gotLogits := run(4)
			require.Equal(t, len(wantSeen), len(gotSeen))
			for i := range wantSeen {
				require.Equal(t, wantSeen[i].Name, gotSeen[i].Name)
				require.True(t, sameBits(wantSeen[i].Data, gotSeen[i].Data), "%s layer %d", wantSeen[i].Name, wantSeen[i].Layer)
			}
			require.True(t, sameBits(wantLogits, gotLogits), "logits")
		})
	}
}

func sameBits(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return false
		}
	}
	return true
}

// TestMoEGGUF: convert writes a Mixtral in llama.cpp's layout, its router
// and stacked experts after each layer's ffn_norm, byte for byte what
// WriteGGUF writes from the loaded model, in every type convert writes;
// the experts' keys are llama's; the file reads back as Mixtral, with
// the HF model's logits (exactly from F32 and F16). A Qwen3-MoE llama.cpp cannot say (a dense layer,
// norm_topk_prob false) is refused by both writers, naming the field,
// and nothing is written.
func TestMoEGGUF(t *testing.T) {
	dir := fixture.FamilyModel("tiny-llama-mixtral")
	m, err := Load(dir)
	require.NoError(t, err)
	out := t.TempDir()
	for _, typ := range convertTypes {
		t.Run(typ.String(), func(t *testing.T) {
			f := convertFile(typ, dir)
			want, got := filepath.Join(out, "want.gguf"), filepath.Join(out, "got.gguf")
			ww, err := m.WriteGGUF(want, f)
			require.NoError(t, err)
			gw, err := ConvertGGUF(dir, got, f, nil)
			require.NoError(t, err)
			require.Equal(t, ww, gw)
			requireSameFile(t, want, got)
			g, err := gguf.Open(got)
			require.NoError(t, err)
			defer g.Close()
			var names []string
			for _, ti := range g.Tensors {
				if strings.HasPrefix(ti.Name, "blk.1.ffn") {
					names = append(names, ti.Name+fmt.Sprint(ti.Dims))
				}
			}
			require.Equal(t, []string{"blk.1.ffn_norm.weight[64]", "blk.1.ffn_gate_inp.weight[64 4]",
				"blk.1.ffn_gate_exps.weight[64 64 4]", "blk.1.ffn_up_exps.weight[64 64 4]", "blk.1.ffn_down_exps.weight[64 64 4]"}, names)
			for key, want := range map[string]uint32{"llama.expert_count": 4, "llama.expert_used_count": 2} {
				v, ok := g.Get(key)
				require.True(t, ok, key)
				require.Equal(t, want, v.V, key)
			}
			// Read back: Mixtral by its experts, the same routing; an F32
			// file holds the HF weights exactly, so the logits are the same
			// bits, and the lossy types' stay near.
			tok, err := tokenizer.FileGGUFKeys(llamaSPMVocab)
			require.NoError(t, err)
			f.Tokenizer, f.SourceSHA256 = tok, strings.Repeat("ab", 32)
			_, err = ConvertGGUF(dir, got, f, nil)
			require.NoError(t, err)
			back, err := Load(got)
			require.NoError(t, err)
			require.Equal(t, ArchMixtral, back.Config.ModelType)
			require.Equal(t, *m.Config.MoE, *back.Config.MoE)
			require.Equal(t, m.Config.Windows, back.Config.Windows)
			tokens := []int{1, 450, 4996, 338, 263, 1243, 310, 278}
			wantLogits, err := m.Forward(context.Background(), m.NewCache(), tokens, ForwardOptions{AllLogits: true})
			require.NoError(t, err)
			have, err := back.Forward(context.Background(), back.NewCache(), tokens, ForwardOptions{AllLogits: true})
			require.NoError(t, err)
			if typ == gguf.GGMLTypeF32 || typ == gguf.GGMLTypeF16 { // the tiny model's weights are float16
				require.Equal(t, wantLogits, have)
			} else {
				for i := range wantLogits {
					require.InDelta(t, wantLogits[i], have[i], 2, "logit %d", i)
				}
			}
		})
	}
	q := fixture.FamilyModel("tiny-llama-qwen3moe")
	qm, err := Load(q)
	require.NoError(t, err)
	path := filepath.Join(out, "q.gguf")
	_, err = qm.WriteGGUF(path, convertFile(gguf.GGMLTypeF16, q))
	require.ErrorContains(t, err, "dense layers (mlp_only_layers, decoder_sparse_step) is not written")
	_, err = ConvertGGUF(q, path, convertFile(gguf.GGMLTypeF16, q), nil)
	require.ErrorContains(t, err, "dense layers")
	qm.Config.MoE.Dense = nil
	_, err = qm.WriteGGUF(path, convertFile(gguf.GGMLTypeF16, q))
	require.ErrorContains(t, err, "norm_topk_prob false is not written")
	_, err = os.Stat(path)
	require.ErrorIs(t, err, os.ErrNotExist)
}
