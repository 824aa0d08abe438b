package model

import (
	"slices"
	"strings"

	"github.com/llorch/llorch-check/kernels"
)

// Model formats, as Model.Format reports them.
const (
	FormatHF   = "hf"   // config.json + model.safetensors directory
	FormatGGUF = "gguf" // one GGUF file, llama.cpp's layout (gpt2, llama, qwen2, qwen3, phi3)
)

// Model is a GPT-2 language model. Its arithmetic is float32; the weight
// matrices (wte and the four Conv1D matrices of each block) are held as
// float32 or, loaded with loader.Options.Float16, as float16 (with
// loader.Options.AsStored, as a float16 or bfloat16 file stores them). Forward may be
// called concurrently with distinct caches; InjectFault may not run
// concurrently with Forward.
type Model struct {
	Config       Config
	Dir          string // model directory; for GGUF, the directory holding the file
	WeightsPath  string // path of model.safetensors, or of the .gguf file
	WeightsDType string // as stored: "F32", "F16", "BF16" or "Q8_0"; sorted and joined by "+" if mixed (a GGUF file keeps norms F32)
	Format       string // FormatHF or FormatGGUF
	// Layers is the number of blocks loaded when only the first ones
	// were (loader.Options.Layers); 0 when all were. Config.NLayer is
	// then this number.
	Layers int

	// Float16 says the weight matrices are held as float16 (loader.Options).
	Float16 bool
	// BFloat16 says they are held as bfloat16: a file that stores them so,
	// loaded with loader.Options.AsStored. Nothing is rounded; the products
	// are float32 weights' bits.
	BFloat16 bool

	roundedToF16 bool // some float16 matrix was rounded from another type

	// SourceSHA256 is, for a GGUF file written by llorch-check convert, the
	// sha256 of the HF weights it was converted from (KeySourceSHA256);
	// empty otherwise.
	SourceSHA256 string

	// WeightsCache says what loader.Options.WeightsCache did: "read from
	// PATH", "written to PATH", "to be written to PATH" (WriteCacheLater),
	// or why not; empty without one.
	WeightsCache string

	wte  kernels.Matrix // [V,C], also the LM head unless lmW is set
	lmW  kernels.Matrix // [V,C], an LM head the file unties from wte (llama.cpp's Q4_K_M output.weight); empty when tied
	wpe  []float32      // [P,C]; nil in the Llama family (RoPE)
	lnfW []float32      // [C]: ln_f, or the final RMSNorm
	lnfB []float32      // [C]; nil for RMSNorm
	h    []block

	rope rope // the Llama family's rotary embedding
	// local is Gemma 3's rope of its sliding layers (rope_local_base_freq);
	// empty when every layer rotates with rope.
	local rope

	fault      Fault
	faultLayer int
}

// Path is where the model was loaded from: the GGUF file, or the HF
// model directory.
func (m *Model) Path() string {
	if m.Format == FormatGGUF {
		return m.WeightsPath
	}
	return m.Dir
}

// block holds one transformer layer. Matrices are held [in,out], HF
// Conv1D's layout, so that y = x·W + b needs no transpose. The Llama
// family's layers fill the same roles: its q/k/v projections are held as
// one fused matrix (as Phi-3 stores them), its gate and up as another, so
// each takes one pass over the activations; biases and norm offsets a
// family lacks stay nil.
type block struct {
	ln1W, ln1B []float32      // [C]: ln_1, or input_layernorm (RMSNorm, no bias)
	attnW      kernels.Matrix // [C,W]: c_attn (W = 3C), or q|k|v (W = (H+2Hkv)·D)
	attnB      []float32      // [W]
	qNormW     []float32      // [D]: Qwen3's q_norm
	kNormW     []float32      // [D]: Qwen3's k_norm
	projW      kernels.Matrix // [H·D,C]: c_proj, or o_proj
	projB      []float32      // [C]
	ln2W, ln2B []float32      // [C]: ln_2, or post_attention_layernorm (Gemma: pre_feedforward_layernorm)
	fcW        kernels.Matrix // [C,F]: c_fc (F = I), or gate|up (F = 2I)
	fcB        []float32      // [F]
	mlpW       kernels.Matrix // [I,C]: c_proj, or down_proj
	mlpB       []float32      // [C]
	// Gemma's post_attention_layernorm and post_feedforward_layernorm,
	// held as 1 + w as its other norms are.
	postAttnW, postFFNW []float32 // [C]

	// attnParts (fcParts) hold the fused matrix as column blocks instead,
	// attnW (fcW) then empty, when a GGUF file stores its parts in
	// different quantised types (llama.cpp's Q4_K_M keeps some layers'
	// attn_v in Q6_K): each stays in its own type, at its own size.
	attnParts, fcParts []colBlock

	// moe holds a sparse layer's router and experts (moe.go); fcW and
	// mlpW are then empty. nil for a dense FFN.
	moe *moeBlock
}

// colBlock is n columns of a matrix held as columns blocks.
type colBlock struct {
	w kernels.Matrix // [K,n]
	n int
}

// WeightsBytes is the size of the weights held in memory.
func (m *Model) WeightsBytes() int64 {
	n := m.wte.Bytes() + m.lmW.Bytes() + 4*int64(len(m.wpe)+len(m.lnfW)+len(m.lnfB))
	for _, b := range m.h {
		for _, s := range b.vectors() {
			n += 4 * int64(len(*s))
		}
		for _, w := range b.matrices() {
			n += w.Bytes()
		}
		n += b.moe.bytes()
		for _, p := range append(b.attnParts, b.fcParts...) {
			n += p.w.Bytes()
		}
	}
	return n
}

// DecodeBytes is what one decode step reads of the weights: every block's
// matrices, vectors and the LM head, not the embedding tables a step takes
// one row of (the token embedding when the head is untied, the position
// embedding). A decode rate times it is the weight bandwidth achieved.
func (m *Model) DecodeBytes() int64 {
	n := m.WeightsBytes() - 4*int64(len(m.wpe))
	if !m.TiedHead() {
		n -= m.wte.Bytes()
	}
	return n
}

// RoundedToFloat16 says some weight matrix was rounded to float16 on load
// (Float16 on a file that stores it otherwise); an F16 file's matrices
// held as float16 were not.
func (m *Model) RoundedToFloat16() bool { return m.roundedToF16 }

// holdAsStored holds the matrices as dtype, the type the file stores
// every one of them in (loader.Options.AsStored): float16 or bfloat16 bits
// as they are; any other type as loader.Options.Float16 says.
func (m *Model) holdAsStored(dtype string) {
	switch dtype {
	case "F16":
		m.Float16 = true
	case "BF16":
		m.Float16, m.BFloat16 = false, true
	}
}

// heldAsStored says a matrix the file stores as typ is held with its
// bits as they are: float16 in a Float16 model, bfloat16 in a BFloat16 one.
func (m *Model) heldAsStored(dtype string) bool {
	return m.Float16 && dtype == "F16" || m.BFloat16 && dtype == "BF16"
}

// MatricesHeldAs says how the weight matrices are held where that is not
// as float32 or quantised: "float16", "bfloat16", or "".
func (m *Model) MatricesHeldAs() string {
	switch {
	case m.Float16:
		return "float16"
	case m.BFloat16:
		return "bfloat16"
	}
	return ""
}

// PrecisionDType is the precision of the weights the forward pass uses, as
// WeightsDType spells it: WeightsDType, plus "F16" when float16 matrices
// were rounded from another type (an F32 file held as float16 is
// "F16+F32": float16 matrices, float32 biases and norms). Reference sets
// and tolerance profiles are matched on it.
func (m *Model) PrecisionDType() string {
	types := strings.Split(m.WeightsDType, "+")
	if !m.roundedToF16 || slices.Contains(types, "F16") {
		return m.WeightsDType
	}
	types = append(types, "F16")
	slices.Sort(types)
	return strings.Join(types, "+")
}

func (b *block) vectors() []*[]float32 {
	return []*[]float32{&b.ln1W, &b.ln1B, &b.attnB, &b.qNormW, &b.kNormW, &b.projB, &b.ln2W, &b.ln2B, &b.fcB, &b.mlpB, &b.postAttnW, &b.postFFNW}
}

// matrixShapes are the [K,N] of each of a block's matrices, as matrices()
// lists them.
func (c Config) matrixShapes() [4][2]int { return c.family().matrixShapes(c) }

func (b *block) matrices() []*kernels.Matrix {
	return []*kernels.Matrix{&b.attnW, &b.projW, &b.fcW, &b.mlpW}
}

// TiedHead says the LM head is the token embedding, as in GPT-2; false
// for a GGUF file whose output.weight differs from token_embd.
func (m *Model) TiedHead() bool { return m.lmW.Len() == 0 }

// head is the LM head's matrix.
func (m *Model) head() kernels.Matrix {
	if m.TiedHead() {
		return m.wte
	}
	return m.lmW
}
