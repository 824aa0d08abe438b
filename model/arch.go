package model

import (
	"strings"
)

// Architecture names, as config.json's model_type and GGUF's
// general.architecture spell them.
const (
	ArchGPT2  = "gpt2"
	ArchLlama = "llama" // Llama 2/3, Mistral, TinyLlama, SmolLM
	ArchQwen2 = "qwen2" // Qwen2, Qwen2.5
	ArchQwen3 = "qwen3"
	ArchPhi3  = "phi3"
)

// Arch is one architecture this package implements: the names it goes by
// in the files that declare it.
type Arch struct {
	Name  string // model_type and general.architecture
	Class string // HF's model class in config.json's architectures
}

// Architectures lists every implemented architecture.
var Architectures = []Arch{
	{ArchGPT2, "GPT2LMHeadModel"},
	{ArchLlama, "LlamaForCausalLM"},
	{ArchQwen2, "Qwen2ForCausalLM"},
	{ArchQwen3, "Qwen3ForCausalLM"},
	{ArchPhi3, "Phi3ForCausalLM"},
}

func archByName(name string) (Arch, bool) {
	for _, a := range Architectures {
		if a.Name == name {
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
