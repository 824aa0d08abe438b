package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/llorch/llorch-check/gguf"
	"github.com/llorch/llorch-check/loader"
	"github.com/llorch/llorch-check/model"
	"github.com/llorch/llorch-check/references"
	"github.com/llorch/llorch-check/tokenizer"
	"github.com/llorch/llorch-check/weights"
	"github.com/spf13/cobra"
)

var convertTypes = map[string]gguf.GGMLType{
	"f32":  gguf.GGMLTypeF32,
	"f16":  gguf.GGMLTypeF16,
	"bf16": gguf.GGMLTypeBF16,
	"q8_0": gguf.GGMLTypeQ8_0,
}

func newConvertCmd() *cobra.Command {
	var to, typ, name, tok string
	var force bool
	cmd := &cobra.Command{
		Use:   "convert --to gguf [--type f32|f16|bf16|q8_0] HF_DIR OUT.gguf",
		Short: "Convert an HF GPT-2 or Llama-family directory to a GGUF file llama.cpp can load",
		Long: `convert writes an HF-layout GPT-2 (config.json, model.safetensors, vocab.json,
merges.txt) as GGUF in llama.cpp's gpt2 layout: the gpt2.* hyper-parameters,
the tokenizer, and the tensors token_embd, position_embd, blk.N.* and
output_norm, with the Conv1D matrices transposed as llama.cpp stores them.

A Llama-family model (model_type llama, qwen2, qwen3 or phi3) is written in
the layout of llama.cpp's converter for that architecture: the {arch}.*
hyper-parameters, blk.N.attn_q/k/v (phi3: attn_qkv), ffn_gate/up/down,
llama's q and k rows permuted for llama.cpp's rope, rope_freqs for Llama 3
scaling (and llorch.rope_scaling.* keys, from which llorch-check recomputes
HF's frequencies exactly); gemma, gemma2 and gemma3_text (llama.cpp's gemma3)
with their norms stored as 1 + w, Gemma 2's and 3's post_attention_norm and
post_ffw_norm, and the soft-cap, window and linear rope keys (a config whose query_pre_attn_scalar,
window pattern or local rope base llama.cpp fixes otherwise is refused). Its tokenizer.* keys are converted from HF_DIR's
tokenizer.json and tokenizer_config.json as llama.cpp's convert_hf_to_gguf.py
does (model gpt2 with the llama-bpe, qwen2 or gpt-2 pre-tokenizer, or model
llama for SentencePiece BPE; special ids, add_bos_token, the chat template;
"[PAD{id}]" tokens up to the model's vocab_size), or copied from a tokenizer
GGUF: --tokenizer, or without tokenizer.json the first *.gguf in HF_DIR that
has them (such as llama.cpp's vocabulary file ggml-vocab-*.gguf). The BOS
and EOS ids are config.json's.

--type sets the 2-D matrices' type (token_embd included); norms, biases and
position_embd stay F32, as in llama.cpp's converter. The file also records
llorch.source.sha256, the sha256 of the HF weights (model.safetensors, or a
sharded checkpoint's listing), so that "run --model OUT.gguf" accepts
reference sets made from the HF weights.

The weights (model.safetensors, or the shards model.safetensors.index.json
lists) are mapped, not loaded: each tensor is converted and written before
the next is read, so memory stays near the largest tensor whatever the
model's size. The file is written atomically: a failure or a kill leaves
OUT.gguf as it was. An existing OUT.gguf is replaced only with --force, and
never when it lies inside HF_DIR (it could be the weights themselves).`,
		Example: `  llorch-check convert --to gguf testdata/tiny-gpt2 tiny-f16.gguf --type f16
  llorch-check run --model tiny-f16.gguf --references testdata/references/tiny-gpt2`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if to != "gguf" {
				return fmt.Errorf("--to %q: only gguf is supported", to)
			}
			t, ok := convertTypes[strings.ToLower(typ)]
			if !ok {
				return fmt.Errorf("--type %q: want f32, f16, bf16 or q8_0", typ)
			}
			if err := checkConvertTarget(args[0], args[1], force); err != nil {
				return err
			}
			report, done := progressFunc(cmd.ErrOrStderr())
			var progress func(i, n int, name string)
			if report != nil {
				progress = func(i, n int, name string) { report("converting: tensor %d/%d %s", i+1, n, name) }
			}
			w, sha, err := convertToGGUF(args[0], args[1], t, name, tok, progress)
			done()
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "wrote %s: %s, %d tensors (%s), %d bytes; source sha256 %s\n",
				args[1], t, w.Tensors, w.Types, w.Bytes, sha)
			return err
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&to, "to", "", "output format (gguf)")
	fl.StringVar(&typ, "type", "f16", "type of the 2-D matrices: f32, f16, bf16 or q8_0")
	fl.StringVar(&name, "name", "", "general.name (default: the HF directory's name)")
	fl.BoolVar(&force, "force", false, "replace an existing output file")
	fl.StringVar(&tok, "tokenizer", "", "Llama family: GGUF file whose tokenizer.* keys to copy (default: convert HF_DIR's tokenizer.json, else HF_DIR's *.gguf that has them)")
	_ = cmd.MarkFlagRequired("to")
	return cmd
}

// checkConvertTarget keeps convert from destroying a user's file: an output
// inside the input model directory is always refused (it could be the
// weights it reads, and would change what the directory loads as), and an
// existing file is replaced only with force.
func checkConvertTarget(in, out string, force bool) error {
	absIn, absOut, err := realPaths(in, out)
	if err != nil {
		return err
	}
	if within(absOut, absIn) {
		return fmt.Errorf("%s: the output lies inside the input model directory %s; write it elsewhere", out, in)
	}
	switch fi, err := os.Stat(out); {
	case err != nil:
		return nil
	case fi.IsDir():
		return fmt.Errorf("%s is a directory; give the output file's path", out)
	case !force:
		return fmt.Errorf("%s exists; --force replaces it", out)
	}
	return nil
}

// convertToGGUF is convert's work: the HF model in dir, its tokenizer
// and the sha256 of its weights written as a GGUF file at out, tensor by
// tensor from the mapped weights (loader.ConvertGGUF). The tokenizer and
// the weights' hash come first: a missing tokenizer is refused before
// any tensor is read.
func convertToGGUF(dir, out string, typ gguf.GGMLType, name, tokPath string, progress func(i, n int, name string)) (w loader.GGUFWritten, sourceSHA string, err error) {
	if err := checkModelPath(dir); err != nil {
		return w, "", err
	}
	if loader.IsGGUF(dir) {
		return w, "", fmt.Errorf("%s is already GGUF; convert reads an HF model directory", dir)
	}
	cfg, err := model.LoadConfig(filepath.Join(dir, "config.json"))
	if err != nil {
		return w, "", err
	}
	tok, err := tokenizer.ConvertKeys(dir, tokPath, cfg.VocabSize, cfg.TokenizerJSON())
	if err != nil {
		return w, "", err
	}
	weightsPath, err := weights.WeightsFile(dir)
	if err != nil {
		return w, "", err
	}
	sha, err := references.WeightsSHA256(weightsPath)
	if err != nil {
		return w, "", err
	}
	if name == "" {
		abs, _ := filepath.Abs(dir)
		name = filepath.Base(abs)
	}
	w, err = loader.ConvertGGUF(dir, out, loader.GGUFFile{Type: typ, Name: name, Tokenizer: tok, SourceSHA256: sha}, progress)
	return w, sha, err
}
