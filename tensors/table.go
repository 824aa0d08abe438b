// Package tensors is the one table of the tensors the checkpoints compare:
// each one's name, checkpoint, whether it repeats per layer, its shape and
// the names of its axes, in the order the forward pass computes them. The
// model emits them by these names, reference sets store them under them,
// and the checkpoints compare and order them by this table.
package tensors

import (
	"slices"
	"strings"
)

// Names of the checkpoint tensors (references/FORMAT.md's table).
const (
	Embeddings   = "embeddings"
	LN1          = "ln_1"
	Q            = "q"
	K            = "k"
	V            = "v"
	Scores       = "scores"
	Probs        = "probs"
	AttnOut      = "attn_out"
	LN2          = "ln_2"
	GELU         = "gelu"
	MLPOut       = "mlp_out"
	BlockOut     = "block_out"
	LNF          = "ln_f"
	Logits       = "logits"
	LastLogits   = "last_logits"
	LastLogprobs = "last_logprobs"
	KCache       = "k_cache"
	VCache       = "v_cache"
	StepLogits   = "step_logits"

	// The Llama family's names (pytorch/llama_torch.py's probes): RMSNorm
	// in place of LayerNorm, q and k after RoPE, the SwiGLU's parts.
	AttnNorm = "attn_norm"
	QNorm    = "q_norm" // Qwen3's per-head RMSNorm of q, before RoPE
	KNorm    = "k_norm"
	QRope    = "q_rope"
	KRope    = "k_rope"
	FFNNorm  = "ffn_norm"
	Gate     = "gate"
	Up       = "up"
	Act      = "act" // silu(gate)·up; Gemma's gelu_tanh(gate)·up
	Down     = "down"
	Norm     = "norm"
	// Gemma's norms after attention and after the FFN, before each
	// residual add.
	PostAttnNorm = "post_attn_norm"
	PostFFNNorm  = "post_ffn_norm"

	// A mixture of experts' FFN (checkpoint 6 of a sparse layer): the
	// router's logits, the experts chosen for each token (ids, compared
	// exactly) and their weights, in top-k order; then each chosen
	// expert's SwiGLU, unweighted, a slot at a time; Down is then their
	// weighted sum.
	RouterLogits  = "router_logits"
	Experts       = "experts"
	ExpertWeights = "expert_weights"
	ExpertGate    = "expert_gate"
	ExpertUp      = "expert_up"
	ExpertAct     = "expert_act"
	ExpertDown    = "expert_down"

	// SamplingPrefix starts the name of a checkpoint 11 tensor; the rest
	// is the name of a sampling configuration.
	SamplingPrefix = "sampling_"
)

// Dims are the model dimensions the shapes depend on. Zero NKVHead,
// HeadDim and NInner take GPT-2's values: NHead, NEmbd/NHead, 4·NEmbd.
type Dims struct {
	NEmbd, NHead, VocabSize  int
	NKVHead, HeadDim, NInner int
	// A mixture of experts': the experts, those chosen a token, and an
	// expert's intermediate size (zero for a dense model).
	NExperts, TopK, MoEInner int
}

func (d Dims) kvHeads() int {
	if d.NKVHead > 0 {
		return d.NKVHead
	}
	return d.NHead
}

func (d Dims) headDim() int {
	if d.HeadDim > 0 {
		return d.HeadDim
	}
	return d.NEmbd / d.NHead
}

func (d Dims) inner() int {
	if d.NInner > 0 {
		return d.NInner
	}
	return 4 * d.NEmbd
}

// Families whose forward passes emit different names for a checkpoint.
const (
	GPT2  = "gpt2"  // LayerNorm, GELU MLP
	Llama = "llama" // the Llama family: RMSNorm, RoPE, SwiGLU
)

// Kind is one row of the table.
type Kind struct {
	Name       string
	Checkpoint int
	PerLayer   bool
	Shape      func(d Dims, t int) []int // for a sequence of t tokens
	Axes       []string
	Family     string // GPT2 or Llama if only that family emits it; "" for both
}

func shapeTC(d Dims, t int) []int  { return []int{t, d.NEmbd} }
func shapeTI(d Dims, t int) []int  { return []int{t, d.inner()} }
func shapeHTD(d Dims, t int) []int { return []int{d.NHead, t, d.headDim()} }
func shapeKTD(d Dims, t int) []int { return []int{d.kvHeads(), t, d.headDim()} }
func shapeHTT(d Dims, t int) []int { return []int{d.NHead, t, t} }
func shapeTV(d Dims, t int) []int  { return []int{t, d.VocabSize} }
func shapeV(d Dims, _ int) []int   { return []int{d.VocabSize} }
func shapeTE(d Dims, t int) []int  { return []int{t, d.NExperts} }
func shapeTK(d Dims, t int) []int  { return []int{t, d.TopK} }
func shapeTKI(d Dims, t int) []int { return []int{t, d.TopK, d.MoEInner} }
func shapeTKC(d Dims, t int) []int { return []int{t, d.TopK, d.NEmbd} }

var (
	tokenChannel = []string{"token", "channel"}
	headToken    = []string{"head", "token", "channel"}
	headQueryKey = []string{"head", "query", "key"}
	vocab        = []string{"vocab"}
	// slot: the rank of a chosen expert in the token's top-k.
	tokenSlot        = []string{"token", "slot"}
	tokenSlotChannel = []string{"token", "slot", "channel"}
)

// Table lists every tensor in forward order: the embeddings, each block's
// tensors (PerLayer), the head, then checkpoint 3's second, incremental
// run. Sampling tensors (checkpoint 11) come last; their names are open.
// GPT-2's and the Llama family's names share the table, each family's in
// its own forward order (a model emits only its own): the checkpoints
// mean the same thing in both.
var Table = []Kind{
	{Embeddings, 7, false, shapeTC, tokenChannel, ""},
	{LN1, 1, true, shapeTC, tokenChannel, GPT2},
	{AttnNorm, 1, true, shapeTC, tokenChannel, Llama},
	{Q, 2, true, shapeHTD, headToken, ""},
	{K, 2, true, shapeKTD, headToken, ""},
	{V, 2, true, shapeKTD, headToken, ""},
	{QNorm, 2, true, shapeHTD, headToken, Llama},
	{KNorm, 2, true, shapeKTD, headToken, Llama},
	{QRope, 2, true, shapeHTD, headToken, Llama},
	{KRope, 2, true, shapeKTD, headToken, Llama},
	{Scores, 4, true, shapeHTT, headQueryKey, ""},
	{Probs, 4, true, shapeHTT, headQueryKey, ""},
	{AttnOut, 5, true, shapeTC, tokenChannel, ""},
	{PostAttnNorm, 1, true, shapeTC, tokenChannel, Llama},
	{LN2, 1, true, shapeTC, tokenChannel, GPT2},
	{FFNNorm, 1, true, shapeTC, tokenChannel, Llama},
	{GELU, 6, true, shapeTI, tokenChannel, GPT2},
	{MLPOut, 6, true, shapeTC, tokenChannel, GPT2},
	{Gate, 6, true, shapeTI, tokenChannel, Llama},
	{Up, 6, true, shapeTI, tokenChannel, Llama},
	{Act, 6, true, shapeTI, tokenChannel, Llama},
	{RouterLogits, 6, true, shapeTE, []string{"token", "expert"}, Llama},
	{Experts, 6, true, shapeTK, tokenSlot, Llama},
	{ExpertWeights, 6, true, shapeTK, tokenSlot, Llama},
	{ExpertGate, 6, true, shapeTKI, tokenSlotChannel, Llama},
	{ExpertUp, 6, true, shapeTKI, tokenSlotChannel, Llama},
	{ExpertAct, 6, true, shapeTKI, tokenSlotChannel, Llama},
	{ExpertDown, 6, true, shapeTKC, tokenSlotChannel, Llama},
	{Down, 6, true, shapeTC, tokenChannel, Llama},
	{PostFFNNorm, 1, true, shapeTC, tokenChannel, Llama},
	{BlockOut, 7, true, shapeTC, tokenChannel, ""},
	{LNF, 8, false, shapeTC, tokenChannel, GPT2},
	{Norm, 8, false, shapeTC, tokenChannel, Llama},
	{Logits, 8, false, shapeTV, []string{"token", "vocab"}, ""}, // rows may shrink the first dimension
	{LastLogits, 9, false, shapeV, vocab, ""},
	{LastLogprobs, 9, false, shapeV, vocab, ""},
	{KCache, 3, true, shapeKTD, headToken, ""},
	{VCache, 3, true, shapeKTD, headToken, ""},
	{StepLogits, 3, false, shapeV, vocab, ""},
}

// sampling is the row of every SamplingPrefix name.
var sampling = Kind{SamplingPrefix + "<name>", 11, false, shapeV, vocab, ""}

// Lookup finds the row of a tensor name.
func Lookup(name string) (Kind, bool) {
	if strings.HasPrefix(name, SamplingPrefix) {
		return sampling, true
	}
	for _, k := range Table {
		if k.Name == name {
			return k, true
		}
	}
	return Kind{}, false
}

// Checkpoint is the checkpoint of a tensor name, 0 if it has none.
func Checkpoint(name string) int {
	k, _ := Lookup(name)
	return k.Checkpoint
}

// Names lists the tensor names of a checkpoint, of every family.
func Names(checkpoint int) []string { return FamilyNames("", checkpoint) }

// FamilyNames lists the tensor names a family's models emit at a
// checkpoint; family "" lists every family's.
func FamilyNames(family string, checkpoint int) []string {
	var out []string
	for _, k := range append(Table, sampling) {
		if k.Checkpoint == checkpoint && (family == "" || k.Family == "" || k.Family == family) {
			out = append(out, k.Name)
		}
	}
	return out
}

// FamilyOf is the family of a model_type, for what knows a model only by
// its config (a reference set's manifest): GPT2 for gpt2 (and a config
// without one, as GPT-2's once were), Llama for every other architecture
// (the model package's registry says which it implements; a loaded
// model's is model.Config.Family).
func FamilyOf(modelType string) string {
	if modelType == "" || modelType == "gpt2" {
		return GPT2
	}
	return Llama
}

// FinalNorm is the name of a family's final norm output, the hidden state
// the LM head reads: GPT-2's ln_f, the Llama family's norm.
func FinalNorm(family string) string {
	if family == Llama {
		return Norm
	}
	return LNF
}

// CachedK is the name of the keys a family's KV cache holds, before any
// rounding to the cache's type: GPT-2's k, the Llama family's k after
// RoPE (k_rope).
func CachedK(family string) string {
	if family == Llama {
		return KRope
	}
	return K
}

// IncrementalRun says whether a tensor needs checkpoint 3's second,
// incremental forward (prefill of T−1 tokens, then one step).
func IncrementalRun(name string) bool {
	return name == KCache || name == VCache || name == StepLogits
}

// blockOrder and headOrder are the forward order of one block's tensors
// and of those after the last block (the incremental run's aside).
var blockOrder, headOrder = forwardOrders()

func forwardOrders() (block, head []string) {
	for _, k := range Table {
		switch {
		case IncrementalRun(k.Name) || k.Name == Embeddings:
		case k.PerLayer:
			block = append(block, k.Name)
		default:
			head = append(head, k.Name)
		}
	}
	return block, head
}

// Rank orders tensors as the forward pass computes them, so that bisect
// names the first one that leaves the reference: the embeddings, each
// layer's block tensors, the head, then the incremental run's caches
// (layer by layer) and step logits, then sampling, then anything else.
func Rank(name string, layer, nLayer int) int {
	if name == Embeddings {
		return 0
	}
	if i := slices.Index(blockOrder, name); i >= 0 && layer >= 0 {
		return 1 + layer*len(blockOrder) + i
	}
	base := 1 + nLayer*len(blockOrder)
	if i := slices.Index(headOrder, name); i >= 0 {
		return base + i
	}
	base += len(headOrder)
	switch name {
	case KCache:
		return base + 2*layer
	case VCache:
		return base + 2*layer + 1
	case StepLogits:
		return base + 2*nLayer
	}
	base += 2*nLayer + 1
	if strings.HasPrefix(name, SamplingPrefix) {
		return base
	}
	return base + 1
}
