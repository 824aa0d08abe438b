package model

// Model formats, as Model.Format reports them.
const (
	FormatHF   = "hf"   // config.json + model.safetensors directory
	FormatGGUF = "gguf" // one GGUF file, llama.cpp's gpt2 layout
)

// Model is a GPT-2 language model held as float32 weights. Forward may be
// called concurrently with distinct caches; InjectFault may not run
// concurrently with Forward.
type Model struct {
	Config       Config
	Dir          string // model directory; for GGUF, the directory holding the file
	WeightsPath  string // path of model.safetensors, or of the .gguf file
	WeightsDType string // as stored: "F32", "F16", "BF16" or "Q8_0"; sorted and joined by "+" if mixed (a GGUF file keeps norms F32)
	Format       string // FormatHF or FormatGGUF

	// SourceSHA256 is, for a GGUF file written by llorch-check convert, the
	// sha256 of the HF weights it was converted from (KeySourceSHA256);
	// empty otherwise.
	SourceSHA256 string

	wte  []float32 // [V,C], also the tied LM head
	wpe  []float32 // [P,C]
	lnfW []float32 // [C]
	lnfB []float32 // [C]
	h    []block

	fault      Fault
	faultLayer int
}

// block holds one transformer layer. Conv1D weights keep HF's [in,out]
// layout so that y = x·W + b needs no transpose.
type block struct {
	ln1W, ln1B   []float32 // [C]
	attnW, attnB []float32 // [C,3C], [3C]
	projW, projB []float32 // [C,C], [C]
	ln2W, ln2B   []float32 // [C]
	fcW, fcB     []float32 // [C,I], [I]
	mlpW, mlpB   []float32 // [I,C], [C]
}

// WeightsBytes is the size of the float32 weights held in memory.
func (m *Model) WeightsBytes() int64 {
	n := len(m.wte) + len(m.wpe) + len(m.lnfW) + len(m.lnfB)
	for _, b := range m.h {
		for _, s := range b.params() {
			n += len(*s)
		}
	}
	return int64(n) * 4
}

func (b *block) params() []*[]float32 {
	return []*[]float32{&b.ln1W, &b.ln1B, &b.attnW, &b.attnB, &b.projW, &b.projB,
		&b.ln2W, &b.ln2B, &b.fcW, &b.fcB, &b.mlpW, &b.mlpB}
}
