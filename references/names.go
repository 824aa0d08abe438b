package references

import "strings"

// SamplingPrefix starts the name of a checkpoint 11 tensor; the rest is the
// name of a configuration in Manifest.Sampling.
const SamplingPrefix = "sampling_"

// tensorKind is one row of the tensor table in FORMAT.md.
type tensorKind struct {
	name       string
	checkpoint int
	perLayer   bool
	shape      func(d ModelDims, t int) []int
}

func shapeTC(d ModelDims, t int) []int  { return []int{t, d.NEmbd} }
func shapeT4C(d ModelDims, t int) []int { return []int{t, 4 * d.NEmbd} }
func shapeHTD(d ModelDims, t int) []int { return []int{d.NHead, t, d.NEmbd / d.NHead} }
func shapeHTT(d ModelDims, t int) []int { return []int{d.NHead, t, t} }
func shapeTV(d ModelDims, t int) []int  { return []int{t, d.VocabSize} }
func shapeV(d ModelDims, _ int) []int   { return []int{d.VocabSize} }

// tensorKinds is the FORMAT.md table in forward order; sampling_<name> is
// matched separately (samplingKind) because its name is open-ended.
var tensorKinds = []tensorKind{
	{"embeddings", 7, false, shapeTC},
	{"ln_1", 1, true, shapeTC},
	{"q", 2, true, shapeHTD},
	{"k", 2, true, shapeHTD},
	{"v", 2, true, shapeHTD},
	{"scores", 4, true, shapeHTT},
	{"probs", 4, true, shapeHTT},
	{"attn_out", 5, true, shapeTC},
	{"ln_2", 1, true, shapeTC},
	{"gelu", 6, true, shapeT4C},
	{"mlp_out", 6, true, shapeTC},
	{"block_out", 7, true, shapeTC},
	{"ln_f", 8, false, shapeTC},
	{"logits", 8, false, shapeTV}, // rows may shrink the first dimension
	{"last_logits", 9, false, shapeV},
	{"last_logprobs", 9, false, shapeV},
	{"k_cache", 3, true, shapeHTD},
	{"v_cache", 3, true, shapeHTD},
	{"step_logits", 3, false, shapeV},
}

var samplingKind = tensorKind{SamplingPrefix + "<name>", 11, false, shapeV}

// lookupKind finds the table row of a tensor name.
func lookupKind(name string) (tensorKind, bool) {
	if strings.HasPrefix(name, SamplingPrefix) {
		return samplingKind, true
	}
	for _, k := range tensorKinds {
		if k.name == name {
			return k, true
		}
	}
	return tensorKind{}, false
}

// namesOf lists the tensor names of a checkpoint, for error messages.
func namesOf(checkpoint int) []string {
	var out []string
	for _, k := range tensorKinds {
		if k.checkpoint == checkpoint {
			out = append(out, k.name)
		}
	}
	if checkpoint == samplingKind.checkpoint {
		out = append(out, samplingKind.name)
	}
	return out
}
