// Package loader reads and writes the file formats of package model's
// models: it loads a Hugging Face directory (config.json and safetensors,
// one file or shards) or a llama.cpp GGUF file (Load, LoadContext),
// writes a loaded model as GGUF (WriteGGUF, GGUF) or converts an HF
// checkpoint to GGUF without loading it (ConvertGGUF), and keeps a
// model's weights in a weights cache mapped on the next load. It reads
// the files through packages weights, gguf and safetensors, and asks the
// model's family, through package model's parameter table (model.Params,
// model.Placer), GGUF configuration reader (model.ConfigFromGGUF) and GGUF
// layout (Model.GGUFLayout, model.ConvertLayout), what each tensor and
// key is.
package loader
