package references

import "encoding/json"

// moeDims reads a mixture of experts' dimensions, under each
// architecture's names and with its config class's defaults: Qwen3-MoE's
// num_experts (128), num_experts_per_tok (8), moe_intermediate_size
// (768); Mixtral's num_local_experts (8), num_experts_per_tok (2) and
// intermediate_size. A dense architecture's are zero.
func (d *ModelDims) moeDims(raw map[string]json.RawMessage, path string) error {
	var modelType string
	_ = json.Unmarshal(raw["model_type"], &modelType)
	type field struct {
		name string
		dst  *int
		def  int
	}
	var fields []field
	switch modelType {
	case "qwen3_moe":
		fields = []field{{"num_experts", &d.NExperts, 128}, {"num_experts_per_tok", &d.TopK, 8}, {"moe_intermediate_size", &d.MoEInner, 768}}
	case "mixtral":
		fields = []field{{"num_local_experts", &d.NExperts, 8}, {"num_experts_per_tok", &d.TopK, 2}}
		d.MoEInner = d.NInner
	default:
		return nil
	}
	var given []dimField
	for _, f := range fields {
		*f.dst = f.def
		if v, ok := raw[f.name]; ok && !isNull(v) {
			given = append(given, dimField{f.name, f.dst})
		}
	}
	if err := readDims(raw, path, given); err != nil {
		return err
	}
	if d.TopK > d.NExperts {
		return errorf(path, "model.config.num_experts_per_tok", "%d is more than the %d experts", d.TopK, d.NExperts)
	}
	return nil
}
