package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/internal/fixture"
	"github.com/llorch/llorch-check/model"
)

// agreementPy loads each config.json given with pytorch/families.py and
// prints, a line each, "ok WINDOWS LONGROPE_ORIGINAL" or "refused".
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
    print("ok", json.dumps(cfg.get("windows")).replace(" ", ""), lr["original"] if lr else 0)
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
		{"mixtral", "tiny-llama", func(m map[string]any) { m["model_type"] = "mixtral" }},
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
			got = "ok " + string(w) + " " + strconv.Itoa(orig)
		}
		require.Equal(t, lines[i], got, "%s: Go said %v", tc.name, err)
	}
}
