package model

import (
	"fmt"
	"strings"
)

// family is what an architecture brings to the generic code: how its
// config.json and GGUF hyper-parameters read, its tensors' names, shapes
// and places (its parameter table) and GGUF keys, and how its block
// computes. The loaders and the GGUF writer (package loader), the forward
// pass and the fault table call it instead of asking which architecture a
// model is. gpt2.go and llama.go each define one.
type family interface {
	// tensorFamily names the checkpoint tensors the forward emits:
	// tensors.GPT2 or tensors.Llama.
	tensorFamily() string
	// jsonConfig reads config.json's fields for architecture arch.
	// Every setting the forward does not implement is an error naming
	// the field, never ignored.
	jsonConfig(r rawConfig, arch string) (Config, error)
	// ggufConfig reads a GGUF file's hyper-parameters into the Config
	// the HF loader gives for the config.json the file came from.
	ggufConfig(md Metadata, arch string) (Config, error)

	// params is the model's parameter table (Param), in llama.cpp's
	// order: what the loaders (package loader) place, by name and shape.
	params(m *Model) []Param
	// ggufKeys are the GGUF keys of llama.cpp's layout for the
	// architecture (GGUFKeys); ggufTensors the model's tensors in it, with
	// their values (GGUFLayout), convertTensors the same from an HF
	// checkpoint's (ConvertLayout). tokenizerLast: a tokenizer's keys
	// follow the model's (GPT2's), not among them.
	ggufKeys(c Config, ftype uint32) ([]KV, error)
	ggufTensors(m *Model) ([]GGUFTensor, error)
	convertTensors(c Config) ([]GGUFTensor, error)
	tokenizerLast() bool
	// placement is which of package loader's ways places the family's
	// tensors (Placement); tokenizerJSON says its HF tokenizer is a
	// tokenizer.json (or a tokenizer GGUF), not GPT-2's vocab.json and
	// merges.txt.
	placement() Placement
	tokenizerJSON() bool

	// matrixShapes are the [K,N] of each of a block's matrices, as
	// block.matrices lists them; positionRows the rows of a learned
	// position table (0 without one).
	matrixShapes(c Config) [4][2]int
	positionRows(c Config) int
	// passWidths are the per-row widths of a pass's FFN buffers (fc,
	// act) and of its rotary tables (rot, 0 without RoPE).
	passWidths(c Config) (ff, act, rot int)
	// block is layer l of a pass; finalNorm the norm before the LM head
	// of one row, and the name its output is captured under.
	block(ps *pass, l int)
	finalNorm(m *Model) (norm func(dst, x []float32), name string)
	// faultMissing says why fault f has no counterpart in this family's
	// forward on c (what c lacks, by its field), or "" when it has one.
	faultMissing(f Fault, c Config) string
}

// Arch is one architecture this package implements: the names it goes by
// in the files that declare it, and its family.
type Arch struct {
	Name  string // model_type and general.architecture
	Class string // HF's model class in config.json's architectures
	fam   family
}

// Experts says whether the architecture is a mixture of experts.
func (a Arch) Experts() bool {
	l, ok := a.fam.(*llamaFamily)
	return ok && l.moe != nil
}

// Architectures lists every implemented architecture, in the order
// errors list them; each family's file registers its own, in its init,
// so the order is the files' (gpt2.go, llama_family.go, llama_gemma.go,
// moe.go): a family's file named to sort before gpt2.go would change
// every "known:" list.
var Architectures []Arch

// register adds architectures of a family; called from the family's
// file, once per name.
func register(name, class string, fam family) {
	if _, ok := archByName(name); ok {
		panic("model: architecture " + name + " registered twice")
	}
	Architectures = append(Architectures, Arch{name, class, fam})
}

// family is the config's architecture's family. A Config that did not
// come from LoadConfig or a GGUF file (no ModelType) is GPT-2's, as the
// zero Config always was.
func (c Config) family() family {
	name := c.ModelType
	if name == "" {
		name = ArchGPT2
	}
	a, ok := archByName(name)
	if !ok {
		panic(fmt.Sprintf("model: Config of unregistered architecture %q", name))
	}
	return a.fam
}

// Family names the checkpoint tensors the config's forward emits:
// tensors.GPT2 or tensors.Llama.
func (c Config) Family() string { return c.family().tensorFamily() }

// Placement is how a family's tensors go from a file into the model: which
// of package loader's ways of reading them (HF, GGUF, convert) applies.
// A family whose tensors are placed in neither way adds a value here and
// its way in loader.
type Placement int

const (
	// PlaceWhole: every matrix is one tensor, placed whole
	// (Placer.SetMatrix, Store); GPT-2's Conv1D matrices, [in,out] in HF's
	// files, stored transposed in GGUF, and an LM head tied to wte.
	PlaceWhole Placement = iota + 1
	// PlaceFused: q|k|v and gate|up fused from their parts, o and down
	// transposed, a mixture's experts from their own tensors or llama.cpp's
	// stacks (Placer.Place, PutVector, PutExpert, Finish); the Llama
	// family's.
	PlaceFused
)

// Placement is how the config's architecture's tensors are placed.
func (c Config) Placement() Placement { return c.family().placement() }

// TokenizerJSON says the architecture's HF tokenizer is a tokenizer.json
// (or a tokenizer GGUF beside the model), from which convert takes its
// GGUF keys; GPT-2's is its vocab.json and merges.txt.
func (c Config) TokenizerJSON() bool { return c.family().tokenizerJSON() }

func archByName(name string) (Arch, bool) {
	for _, a := range Architectures {
		if a.Name == name {
			return a, true
		}
	}
	return Arch{}, false
}

// archByGGUF is the architecture llama.cpp writes under a name of its
// own (Gemma 3's gemma3 for HF's gemma3_text, Qwen3-MoE's qwen3moe), for
// a name no architecture has.
func archByGGUF(name string) (Arch, bool) {
	for _, a := range Architectures {
		if l, ok := a.fam.(*llamaFamily); ok && l.gguf() == name {
			return a, true
		}
	}
	return Arch{}, false
}

func archByClass(class string) (Arch, bool) {
	for _, a := range Architectures {
		if a.Class == class {
			return a, true
		}
	}
	return Arch{}, false
}

func knownArchs() string {
	names := make([]string, len(Architectures))
	for i, a := range Architectures {
		names[i] = a.Name
	}
	return strings.Join(names, ", ")
}

func knownClasses() string {
	names := make([]string, len(Architectures))
	for i, a := range Architectures {
		names[i] = a.Class
	}
	return strings.Join(names, ", ")
}
