package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/internal/fixture"
	"github.com/llorch/llorch-check/model"
)

// agreementPy loads each config.json given with pytorch/families.py and
// prints, a line each, "ok WINDOWS LONGROPE_ORIGINAL GEMMA EXPERTS" or
// "refused"; GEMMA is "-" for the other families, else
// query_pre_attn_scalar, the attention and final soft-caps, the local rope
// base and the linear rope factor, 0 for none; EXPERTS a mixture of
// experts' [experts, top-k, width, renormalised, sparse layers] or null.
const agreementPy = `
import json, sys
sys.path.insert(0, "pytorch")
import families
from safetensors_io import BadInput
for path in sys.argv[1:]:
    try:
        _, _, cfg = families.load_config(path)
    except BadInput:
        print("refused")
        continue
    lr = cfg.get("longrope")
    g = "-"
    if "query_pre_attn_scalar" in cfg:
        g = ",".join("%g" % (cfg[k] or 0) for k in ("query_pre_attn_scalar", "attn_softcap", "final_softcap",
                                                     "local_rope_theta", "rope_linear"))
    m = cfg.get("moe")
    moe = [m["experts"], m["top_k"], m["inner"], m["norm"], m["sparse"]] if m else None
    print("ok", json.dumps(cfg.get("windows")).replace(" ", ""), lr["original"] if lr else 0, g,
          json.dumps(moe).replace(" ", ""))
`

// TestConfigsAgreeWithTheReference: dump_references.py and run accept and
// refuse the same configs, and read the same windows and longrope switch
// from what they accept (issue #41: a window or scaling is never dropped
// on one side only).
func TestConfigsAgreeWithTheReference(t *testing.T) {
	py := python(t)
	type edit = func(map[string]any)
	rs := func(f func(map[string]any)) edit {
		return func(m map[string]any) { f(m["rope_scaling"].(map[string]any)) }
	}
	cases := []struct {
		name, model string
		edit        edit
	}{
		{"mistral as committed", "tiny-llama-mistral", func(map[string]any) {}},
		{"mistral's null window", "tiny-llama-mistral", func(m map[string]any) { m["sliding_window"] = nil }},
		{"mistral's default window", "tiny-llama-mistral", func(m map[string]any) { delete(m, "sliding_window") }},
		{"mistral's negative window", "tiny-llama-mistral", func(m map[string]any) { m["sliding_window"] = -1 }},
		{"llama ignores a window", "tiny-llama", func(m map[string]any) { m["sliding_window"] = 8 }},
		{"phi3's window", "tiny-llama-phi3", func(m map[string]any) { m["sliding_window"] = 7 }},
		{"qwen2 off", "tiny-llama-qwen2", func(m map[string]any) { m["sliding_window"] = 4 }},
		{"qwen2 from max_window_layers", "tiny-llama-qwen2", func(m map[string]any) {
			m["use_sliding_window"], m["sliding_window"], m["max_window_layers"] = true, 4, 1
		}},
		{"qwen3 layer_types", "tiny-llama-qwen3", func(m map[string]any) {
			m["use_sliding_window"], m["sliding_window"], m["layer_types"] = true, 6, []string{"sliding_attention", "full_attention"}
		}},
		{"qwen3 unknown layer type", "tiny-llama-qwen3", func(m map[string]any) {
			m["use_sliding_window"], m["layer_types"] = true, []string{"chunked_attention", "full_attention"}
		}},
		{"qwen3 short layer_types", "tiny-llama-qwen3", func(m map[string]any) {
			m["use_sliding_window"], m["layer_types"] = true, []string{"full_attention"}
		}},
		{"longrope as committed", "tiny-llama-phi3-longrope", func(map[string]any) {}},
		{"longrope as su", "tiny-llama-phi3-longrope", rs(func(s map[string]any) { s["type"] = "su" })},
		{"longrope short factors short", "tiny-llama-phi3-longrope", rs(func(s map[string]any) { s["short_factor"] = []float64{1, 1} })},
		{"longrope zero long factor", "tiny-llama-phi3-longrope", rs(func(s map[string]any) {
			s["long_factor"] = []float64{0, 1, 1, 1, 1, 1, 1, 1}
		})},
		{"yarn", "tiny-llama", func(m map[string]any) { m["rope_scaling"] = map[string]any{"rope_type": "yarn", "factor": 4.0} }},
		{"linear", "tiny-llama-qwen2", func(m map[string]any) { m["rope_scaling"] = map[string]any{"type": "linear", "factor": 2.0} }},
		{"gelu", "tiny-llama-mistral", func(m map[string]any) { m["hidden_act"] = "gelu" }},
		// Gemma: the config classes' defaults, HF's layer rules, and what
		// HF's modeling files read (Gemma 3's attention never reads
		// attn_logit_softcapping) or that is not implemented.
		{"gemma as committed", "tiny-llama-gemma", func(map[string]any) {}},
		{"gemma defaults", "tiny-llama-gemma", func(m map[string]any) {
			for _, k := range []string{"num_key_value_heads", "head_dim", "hidden_act", "hidden_activation", "rms_norm_eps", "tie_word_embeddings"} {
				delete(m, k)
			}
			m["num_attention_heads"] = 16
		}},
		{"gemma reads no Gemma 2 settings", "tiny-llama-gemma", func(m map[string]any) {
			m["query_pre_attn_scalar"], m["attn_logit_softcapping"], m["final_logit_softcapping"] = 24, 50.0, 30.0
			m["sliding_window"], m["layer_types"], m["use_bidirectional_attention"] = 4, []string{"sliding_attention", "sliding_attention"}, true
		}},
		{"gemma null hidden_activation", "tiny-llama-gemma", func(m map[string]any) { m["hidden_activation"] = nil }},
		{"gemma legacy gelu hidden_act", "tiny-llama-gemma", func(m map[string]any) { m["hidden_act"] = "gelu" }},
		{"gemma erf gelu", "tiny-llama-gemma", func(m map[string]any) { m["hidden_activation"] = "gelu" }},
		{"gemma adarms", "tiny-llama-gemma", func(m map[string]any) { m["use_adarms"] = true }},
		{"gemma linear rope", "tiny-llama-gemma", func(m map[string]any) { m["rope_scaling"] = map[string]any{"rope_type": "linear", "factor": 4.0} }},
		{"gemma yarn", "tiny-llama-gemma", func(m map[string]any) { m["rope_scaling"] = map[string]any{"rope_type": "yarn", "factor": 2.0} }},
		{"gemma rope_parameters", "tiny-llama-gemma", func(m map[string]any) { m["rope_parameters"] = map[string]any{"rope_theta": 10000.0} }},
		{"gemma attention bias", "tiny-llama-gemma", func(m map[string]any) { m["attention_bias"] = true }},
		{"gemma2 as committed", "tiny-llama-gemma2", func(map[string]any) {}},
		{"gemma2 defaults", "tiny-llama-gemma2", func(m map[string]any) {
			for _, k := range []string{"attn_logit_softcapping", "final_logit_softcapping", "query_pre_attn_scalar", "sliding_window", "num_key_value_heads"} {
				delete(m, k)
			}
		}},
		{"gemma2 null soft-caps", "tiny-llama-gemma2", func(m map[string]any) {
			m["attn_logit_softcapping"], m["final_logit_softcapping"] = nil, nil
		}},
		{"gemma2 layer_types", "tiny-llama-gemma2", func(m map[string]any) {
			m["layer_types"] = []string{"full_attention", "sliding_attention"}
		}},
		{"gemma2 zero soft-cap", "tiny-llama-gemma2", func(m map[string]any) { m["attn_logit_softcapping"] = 0 }},
		{"gemma2 erf gelu", "tiny-llama-gemma2", func(m map[string]any) { m["hidden_activation"] = "gelu" }},
		{"gemma2 silu hidden_act ignored", "tiny-llama-gemma2", func(m map[string]any) { m["hidden_act"] = "silu" }},
		{"gemma2 attention bias", "tiny-llama-gemma2", func(m map[string]any) { m["attention_bias"] = true }},
		{"gemma2 bidirectional", "tiny-llama-gemma2", func(m map[string]any) { m["use_bidirectional_attention"] = true }},
		{"gemma2 yarn", "tiny-llama-gemma2", func(m map[string]any) { m["rope_scaling"] = map[string]any{"rope_type": "yarn", "factor": 2.0} }},
		{"gemma3 as committed", "tiny-llama-gemma3", func(map[string]any) {}},
		{"gemma3 attention soft-cap unread", "tiny-llama-gemma3", func(m map[string]any) { m["attn_logit_softcapping"] = 50.0 }},
		{"gemma3 final soft-cap", "tiny-llama-gemma3", func(m map[string]any) { m["final_logit_softcapping"] = 30.0 }},
		{"gemma3 default pattern", "tiny-llama-gemma3", func(m map[string]any) { delete(m, "sliding_window_pattern") }},
		{"gemma3 layer_types over the pattern", "tiny-llama-gemma3", func(m map[string]any) {
			m["layer_types"] = []string{"sliding_attention", "full_attention", "sliding_attention", "full_attention", "full_attention", "sliding_attention"}
		}},
		{"gemma3 pattern 2", "tiny-llama-gemma3", func(m map[string]any) { m["sliding_window_pattern"] = 2 }},
		{"gemma3 default rope", "tiny-llama-gemma3", func(m map[string]any) {
			for _, k := range []string{"rope_theta", "rope_local_base_freq", "rope_scaling"} {
				delete(m, k)
			}
		}},
		{"gemma3 llama3 scaling", "tiny-llama-gemma3", rs(func(s map[string]any) {
			s["rope_type"], s["low_freq_factor"], s["high_freq_factor"], s["original_max_position_embeddings"] = "llama3", 1.0, 4.0, 64
		})},
		{"gemma3 linear without factor", "tiny-llama-gemma3", rs(func(s map[string]any) { delete(s, "factor") })},
		{"gemma3 rope_parameters", "tiny-llama-gemma3", func(m map[string]any) {
			m["rope_parameters"] = map[string]any{"full_attention": map[string]any{"rope_type": "default"}}
		}},
		{"gemma3 zero local base", "tiny-llama-gemma3", func(m map[string]any) { m["rope_local_base_freq"] = 0 }},
		{"llama as mixtral", "tiny-llama", func(m map[string]any) { m["model_type"] = "mixtral" }},
		{"mamba", "tiny-llama", func(m map[string]any) { m["model_type"] = "mamba" }},
		{"qwen3_moe as committed", "tiny-llama-qwen3moe", func(map[string]any) {}},
		{"qwen3_moe's defaults", "tiny-llama-qwen3moe", func(m map[string]any) {
			for _, k := range []string{"num_experts", "num_experts_per_tok", "moe_intermediate_size", "norm_topk_prob", "mlp_only_layers", "decoder_sparse_step"} {
				delete(m, k)
			}
		}},
		{"qwen3_moe sparse step 2", "tiny-llama-qwen3moe", func(m map[string]any) { m["mlp_only_layers"], m["decoder_sparse_step"] = nil, 2 }},
		{"qwen3_moe renormalised", "tiny-llama-qwen3moe", func(m map[string]any) { m["norm_topk_prob"] = true }},
		{"qwen3_moe window", "tiny-llama-qwen3moe", func(m map[string]any) { m["use_sliding_window"] = true }},
		{"qwen3_moe top 5 of 4", "tiny-llama-qwen3moe", func(m map[string]any) { m["num_experts_per_tok"] = 5 }},
		{"mixtral as committed", "tiny-llama-mixtral", func(map[string]any) {}},
		{"mixtral's defaults", "tiny-llama-mixtral", func(m map[string]any) {
			delete(m, "num_local_experts")
			delete(m, "num_experts_per_tok")
			delete(m, "sliding_window")
		}},
		{"mixtral no experts", "tiny-llama-mixtral", func(m map[string]any) { m["num_local_experts"] = 0 }},
	}
	var paths []string
	for _, tc := range cases {
		dir := filepath.Join(t.TempDir(), "m")
		require.NoError(t, os.MkdirAll(dir, 0o755))
		path := filepath.Join(dir, "config.json")
		fixture.CopyFile(t, filepath.Join(fixture.FamilyModel(tc.model), "config.json"), path)
		fixture.EditJSON(t, path, tc.edit)
		paths = append(paths, path)
	}
	cmd := exec.Command(py, append([]string{"-c", agreementPy}, paths...)...)
	cmd.Dir = fixture.Root()
	out, err := cmd.Output()
	require.NoError(t, err, "%s", out)
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	require.Len(t, lines, len(cases), "%s", out)
	for i, tc := range cases {
		c, err := model.LoadConfig(paths[i])
		got := "refused"
		if err == nil {
			w, _ := json.Marshal(c.Windows)
			orig := 0
			if c.LongRope != nil {
				orig = c.LongRope.Original
			}
			g := "-"
			if c.Gemma != nil {
				g = fmt.Sprintf("%g,%g,%g,%g,%g", c.Gemma.QueryPreAttnScalar, c.Gemma.AttnSoftcap, c.Gemma.FinalSoftcap, c.Gemma.LocalTheta, c.Gemma.LinearFactor)
			}
			moe := []byte("null")
			if e := c.MoE; e != nil {
				sparse := make([]bool, c.NLayer)
				for l := range sparse {
					sparse[l] = c.Sparse(l)
				}
				moe, _ = json.Marshal([]any{e.Experts, e.TopK, e.Inner, e.NormTopK, sparse})
			}
			got = "ok " + string(w) + " " + strconv.Itoa(orig) + " " + g + " " + string(moe)
		}
		require.Equal(t, lines[i], got, "%s: Go said %v", tc.name, err)
	}
}

// TestArchitecturesAgreeWithTheReference: the Go side and the PyTorch side
// register the same architectures, so that a family added on one side
// only fails here, and no test has to spell out the list.
func TestArchitecturesAgreeWithTheReference(t *testing.T) {
	py := python(t)
	cmd := exec.Command(py, "-c", `import sys; sys.path.insert(0, "pytorch"); import families; print(" ".join(sorted(families.BY_ARCH)))`)
	cmd.Dir = fixture.Root()
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	var goArchs []string
	for _, a := range model.Architectures {
		goArchs = append(goArchs, a.Name)
	}
	slices.Sort(goArchs)
	require.Equal(t, strings.Join(goArchs, " "), strings.TrimSpace(string(out)))
}
