package references

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestMoEDims: a mixture of experts' tensor dimensions under each
// architecture's names, with its config class's defaults; a dense
// architecture has none.
func TestMoEDims(t *testing.T) {
	tests := []struct {
		name    string
		config  string
		want    [3]int // experts, top-k, an expert's width
		wantErr string
	}{
		{"qwen3_moe", `{"model_type":"qwen3_moe","num_experts":4,"num_experts_per_tok":2,"moe_intermediate_size":32}`, [3]int{4, 2, 32}, ""},
		{"qwen3_moe defaults", `{"model_type":"qwen3_moe"}`, [3]int{128, 8, 768}, ""},
		{"mixtral", `{"model_type":"mixtral","num_local_experts":4,"num_experts_per_tok":2}`, [3]int{4, 2, 96}, ""},
		{"mixtral defaults", `{"model_type":"mixtral"}`, [3]int{8, 2, 96}, ""},
		{"dense", `{"model_type":"qwen3","num_experts":4}`, [3]int{}, ""},
		{"more chosen than experts", `{"model_type":"mixtral","num_local_experts":2,"num_experts_per_tok":3}`, [3]int{}, "num_experts_per_tok"},
		{"not a number", `{"model_type":"qwen3_moe","num_experts":"many"}`, [3]int{}, "num_experts"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var raw map[string]json.RawMessage
			require.NoError(t, json.Unmarshal([]byte(tc.config), &raw))
			d := ModelDims{NInner: 96}
			err := d.moeDims(raw, "manifest.json")
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, [3]int{d.NExperts, d.TopK, d.MoEInner})
		})
	}
}
