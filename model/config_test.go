package model

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestLoadConfig(t *testing.T) {
	tests := []struct {
		name    string
		edit    func(map[string]any)
		wantErr []string // substrings of the error; nil means success
		check   func(*testing.T, Config)
	}{
		{name: "valid", check: func(t *testing.T, c Config) {
			require.Equal(t, testCfg, Config{VocabSize: c.VocabSize, NPositions: c.NPositions, NEmbd: c.NEmbd,
				NLayer: c.NLayer, NHead: c.NHead, NInner: c.NInner, LayerNormEpsilon: c.LayerNormEpsilon,
				ActivationFunction: c.ActivationFunction, BOSTokenID: c.BOSTokenID, EOSTokenID: c.EOSTokenID})
			require.Equal(t, 8, c.HeadDim())
		}},
		{name: "n_inner explicit", edit: func(m map[string]any) { m["n_inner"] = 40 },
			check: func(t *testing.T, c Config) { require.Equal(t, 40, c.NInner) }},
		{name: "architectures only", edit: func(m map[string]any) { delete(m, "model_type") }},
		{name: "defaults", edit: func(m map[string]any) {
			for _, k := range []string{"layer_norm_epsilon", "activation_function", "bos_token_id", "eos_token_id",
				"scale_attn_weights", "scale_attn_by_inverse_layer_idx", "reorder_and_upcast_attn"} {
				delete(m, k)
			}
		}, check: func(t *testing.T, c Config) {
			require.Equal(t, 1e-5, c.LayerNormEpsilon)
			require.Equal(t, 50256, c.EOSTokenID)
		}},
		{name: "model_type", edit: func(m map[string]any) { m["model_type"] = "bert" }, wantErr: []string{"model_type", "bert", "known: " + knownArchs()}},
		{name: "no model_type nor arch", edit: func(m map[string]any) { delete(m, "model_type"); delete(m, "architectures") }, wantErr: []string{"model_type"}},
		{name: "wrong arch", edit: func(m map[string]any) { delete(m, "model_type"); m["architectures"] = []string{"BertModel"} }, wantErr: []string{"architectures", "BertModel"}},
		{name: "activation gelu", edit: func(m map[string]any) { m["activation_function"] = "gelu" }, wantErr: []string{"activation_function", `"gelu"`}},
		{name: "activation relu", edit: func(m map[string]any) { m["activation_function"] = "relu" }, wantErr: []string{"activation_function", "relu"}},
		{name: "inverse layer idx", edit: func(m map[string]any) { m["scale_attn_by_inverse_layer_idx"] = true }, wantErr: []string{"scale_attn_by_inverse_layer_idx", "true"}},
		{name: "reorder upcast", edit: func(m map[string]any) { m["reorder_and_upcast_attn"] = true }, wantErr: []string{"reorder_and_upcast_attn", "true"}},
		{name: "no scale", edit: func(m map[string]any) { m["scale_attn_weights"] = false }, wantErr: []string{"scale_attn_weights", "false"}},
		{name: "untied", edit: func(m map[string]any) { m["tie_word_embeddings"] = false }, wantErr: []string{"tie_word_embeddings"}},
		{name: "indivisible heads", edit: func(m map[string]any) { m["n_head"] = 3 }, wantErr: []string{"n_embd", "16", "n_head"}},
		{name: "zero vocab", edit: func(m map[string]any) { m["vocab_size"] = 0 }, wantErr: []string{"vocab_size", "0"}},
		{name: "negative layers", edit: func(m map[string]any) { m["n_layer"] = -2 }, wantErr: []string{"n_layer", "-2"}},
		{name: "fractional embd", edit: func(m map[string]any) { m["n_embd"] = 16.5 }, wantErr: []string{"n_embd", "16.5"}},
		{name: "string positions", edit: func(m map[string]any) { m["n_positions"] = "32" }, wantErr: []string{"n_positions", `"32"`}},
		{name: "missing n_head", edit: func(m map[string]any) { delete(m, "n_head") }, wantErr: []string{"n_head", "missing"}},
		{name: "huge vocab", edit: func(m map[string]any) { m["vocab_size"] = int64(1) << 40 }, wantErr: []string{"vocab_size", "1099511627776"}},
		{name: "zero eps", edit: func(m map[string]any) { m["layer_norm_epsilon"] = 0 }, wantErr: []string{"layer_norm_epsilon", "0"}},
		{name: "negative eps", edit: func(m map[string]any) { m["layer_norm_epsilon"] = -1e-5 }, wantErr: []string{"layer_norm_epsilon", "-0.00001"}},
		{name: "bad n_inner", edit: func(m map[string]any) { m["n_inner"] = 0 }, wantErr: []string{"n_inner", "0"}},
		{name: "bad eos", edit: func(m map[string]any) { m["eos_token_id"] = -1 }, wantErr: []string{"eos_token_id", "-1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := configJSON(testCfg)
			if tt.edit != nil {
				tt.edit(m)
			}
			b, err := json.Marshal(m)
			require.NoError(t, err)
			path := filepath.Join(t.TempDir(), "config.json")
			require.NoError(t, os.WriteFile(path, b, 0o644))
			c, err := LoadConfig(path)
			if tt.wantErr != nil {
				require.Error(t, err)
				require.Contains(t, err.Error(), path)
				for _, s := range tt.wantErr {
					require.Contains(t, err.Error(), s)
				}
				return
			}
			require.NoError(t, err)
			if tt.check != nil {
				tt.check(t, c)
			}
		})
	}
}

func TestLoadConfigFileErrors(t *testing.T) {
	dir := t.TempDir()
	_, err := LoadConfig(filepath.Join(dir, "absent.json"))
	require.ErrorContains(t, err, "absent.json")
	for name, body := range map[string]string{"notjson": "{", "array": "[1]", "null": "null"} {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
		_, err := LoadConfig(p)
		require.ErrorContains(t, err, p, name)
	}
}
