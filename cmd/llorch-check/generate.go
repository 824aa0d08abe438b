package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/llorch/llorch-check/generation"
	"github.com/llorch/llorch-check/sampling"
	"github.com/llorch/llorch-check/tokenizer"
)

type generateFlags struct {
	model             modelFlags
	prompt, tokens    string
	maxTokens, topK   int
	temperature, topP float64
	minP, repetition  float64
	seed              uint64
	stop              []string
	asJSON            bool
	logprobs          int
}

// generateJSON is the --json document: generated tokens and text only.
type generateJSON struct {
	Tokens       []int   `json:"tokens"`
	Text         string  `json:"text"`
	StopReason   string  `json:"stop_reason"`
	StopSequence string  `json:"stop_sequence,omitempty"`
	Seed         *uint64 `json:"seed,omitempty"` // none for greedy decoding
	PromptTokens int     `json:"prompt_tokens"`
	// With --logprobs: per generated token, its log-probability under the
	// raw distribution (before the logit processors) and the most probable
	// alternatives, most probable first.
	LogProbs []tokenLogProbJSON `json:"logprobs,omitempty"`
}

type tokenLogProbJSON struct {
	ID      int                `json:"id"`
	LogProb float64            `json:"logprob"`
	Top     []tokenLogProbJSON `json:"top,omitempty"`
}

// defaultMaxTokens is the worker API's default (docs/api.md).
const defaultMaxTokens = 100

func newGenerateCmd() *cobra.Command {
	var f generateFlags
	d := sampling.DefaultParams()
	cmd := &cobra.Command{
		Use:   "generate [--model DIR] (--prompt TEXT | --tokens IDS) [--max-tokens N] [flags]",
		Short: "Generate text with the Go model, streaming it to stdout",
		Long: reflow(`Continue a prompt with the Go model (`+families()+`),
streaming the generated text to stdout as each token is
chosen (the prompt is not echoed). Sampling follows Hugging Face's logit
processors: repetition penalty, temperature, top-k, top-p, min-p. A
temperature below 1e-6 is greedy. The seed (drawn when not given; greedy
decoding has none) and the stop reason go to stderr; with the same seed,
prompt and settings the output is the same on every machine.`) + `

Generation stops at the model's end of text (GPT-2's <|endoftext|>; the
Llama family's end-of-sequence id and generation_config.json's end-of-turn
ids), after --max-tokens, or where the text reaches a --stop string (not
included). Without --max-tokens it generates up to 100 tokens, fewer when
the context has less room; an explicit --max-tokens must fit beside the
prompt in the model's context. With --json, stdout is one document:
{"tokens", "text", "stop_reason", "stop_sequence" (when one matched), "seed"
(unless greedy), "prompt_tokens"}.`,
		Example: `  llorch-check generate --prompt "Once upon a time" --max-tokens 40 --temperature 0.8 --seed 7
  llorch-check generate --tokens 15496,13 --max-tokens 16 --temperature 0 --json
  llorch-check generate --prompt "Q: 2+2?" --max-tokens 32 --stop "\n" --stop "Q:"`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runGenerate(cmd, f) },
	}
	fl := cmd.Flags()
	f.model.register(fl)
	fl.StringVar(&f.prompt, "prompt", "", "prompt text")
	fl.StringVar(&f.tokens, "tokens", "", "prompt as token ids: 1,2,3, space separated or a JSON array")
	fl.IntVar(&f.maxTokens, "max-tokens", defaultMaxTokens, "most tokens to generate (default: 100 or the room left in the context)")
	fl.Float64Var(&f.temperature, "temperature", d.Temperature, "softmax temperature; below 1e-6 is greedy")
	fl.IntVar(&f.topK, "top-k", d.TopK, "keep the K most probable tokens (0: off)")
	fl.Float64Var(&f.topP, "top-p", d.TopP, "keep the smallest set of tokens with probability ≥ P (1: off)")
	fl.Float64Var(&f.minP, "min-p", d.MinP, "drop tokens less probable than P times the most probable (0: off)")
	fl.Float64Var(&f.repetition, "repetition-penalty", d.RepetitionPenalty, "penalise tokens already in the prompt or output (1: off)")
	fl.Uint64Var(&f.seed, "seed", 0, "sampling seed (default: drawn and printed)")
	fl.StringArrayVar(&f.stop, "stop", nil, "stop before this text (repeatable, at most 4)")
	fl.BoolVar(&f.asJSON, "json", false, "print one JSON document instead of streaming text")
	fl.IntVar(&f.logprobs, "logprobs", 0, "with --json: each token's log-probability and the N most probable alternatives (0..20)")
	cmd.MarkFlagsOneRequired("prompt", "tokens")
	cmd.MarkFlagsMutuallyExclusive("prompt", "tokens")
	return cmd
}

func runGenerate(cmd *cobra.Command, f generateFlags) error {
	// The tokenizer and the prompt first: they are read in milliseconds,
	// an 8B model's weights in minutes.
	path, err := modelPath(f.model.path)
	if err != nil {
		return err
	}
	// Only text needs the tokenizer: --tokens without --stop runs without one.
	tok, err := tokenizer.ForModel(path)
	if err != nil {
		return err
	}
	needText := f.prompt != "" || len(f.stop) > 0 || !cmd.Flags().Changed("tokens")
	if tok == nil && needText {
		return fmt.Errorf("%s: %w (give --tokens instead of --prompt)", path, tokenizer.ErrNoTokenizer)
	}
	var prompt []int
	if cmd.Flags().Changed("tokens") {
		if prompt, err = tokenizer.ParseIDs(f.tokens); err != nil {
			return fmt.Errorf("--tokens: %w", err)
		}
	} else {
		prompt = tok.EncodePrompt(f.prompt)
	}
	m, err := f.model.load(cmd.Context())
	if err != nil {
		return err
	}
	req := generation.Request{
		Prompt:           prompt,
		MaxTokens:        f.maxTokens,
		DefaultMaxTokens: !cmd.Flags().Changed("max-tokens"),
		Params: sampling.Params{Temperature: f.temperature, TopK: f.topK, TopP: f.topP, MinP: f.minP,
			RepetitionPenalty: f.repetition},
		Stop: f.stop,
	}
	if cmd.Flags().Changed("seed") {
		req.Seed = &f.seed
	}
	// Seeded now rather than by Generate so the seed prints before the text.
	// Greedy decoding draws nothing: its seed would mean nothing, and is
	// not reported.
	req = req.Seeded()
	seed := req.Seed
	if req.Params.Greedy() {
		seed = nil
	}
	d := generation.NewModelDecoder(m)
	if err := req.Validate(d.ContextLength(), d.VocabSize()); err != nil {
		return err
	}
	if f.logprobs < 0 || f.logprobs > 20 {
		return fmt.Errorf("--logprobs %d: must be 0..20", f.logprobs)
	}
	if f.logprobs > 0 && !f.asJSON {
		return fmt.Errorf("--logprobs needs --json")
	}
	req.LogProbs, req.TopLogProbs = f.logprobs > 0, f.logprobs
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	var onToken func(generation.Token) error
	var logprobs []tokenLogProbJSON
	if req.LogProbs {
		onToken = func(t generation.Token) error {
			lp := tokenLogProbJSON{ID: t.ID, LogProb: t.LogProb}
			for _, a := range t.TopLogProbs {
				lp.Top = append(lp.Top, tokenLogProbJSON{ID: a.ID, LogProb: a.LogProb})
			}
			logprobs = append(logprobs, lp)
			return nil
		}
	}
	streamed := 0 // bytes of text written so far
	if !f.asJSON {
		if seed != nil {
			fmt.Fprintf(stderr, "seed %d, %s\n", *seed, countTokens(len(prompt), "prompt token"))
		} else {
			fmt.Fprintf(stderr, "greedy, %s\n", countTokens(len(prompt), "prompt token"))
		}
		onToken = func(t generation.Token) error {
			streamed += len(t.Text)
			return writeFlushed(stdout, t.Text)
		}
	}
	res, err := generation.Generate(cmd.Context(), d, tok, req, onToken)
	if err != nil {
		return err
	}
	if f.asJSON {
		doc := generateJSON{Tokens: res.Tokens, Text: res.Text, StopReason: res.StopReason,
			StopSequence: res.StopSequence, Seed: seed, PromptTokens: res.PromptTokens, LogProbs: logprobs}
		if doc.Tokens == nil {
			doc.Tokens = []int{}
		}
		enc := json.NewEncoder(stdout)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(doc); err != nil {
			return err
		}
	} else {
		if res.StopReason == generation.StopCancelled {
			// Text held back for a stop string never reached onToken.
			if err := writeFlushed(stdout, res.Text[min(len(res.Text), streamed):]); err != nil {
				return err
			}
		}
		if _, err := fmt.Fprintln(stdout); err != nil {
			return err
		}
		stop := res.StopReason
		if res.StopSequence != "" {
			stop += fmt.Sprintf(" %q", res.StopSequence)
		}
		fmt.Fprintf(stderr, "%s, stop: %s\n", countTokens(len(res.Tokens), "token"), stop)
	}
	if res.StopReason == generation.StopCancelled {
		return fmt.Errorf("generation cancelled after %d tokens: %w", len(res.Tokens), cmd.Context().Err())
	}
	return nil
}

// writeFlushed writes s and flushes a buffered writer, so each token shows
// as soon as it is generated. (An *os.File is unbuffered already.)
func writeFlushed(w io.Writer, s string) error {
	if s == "" {
		return nil
	}
	if _, err := io.WriteString(w, s); err != nil {
		return err
	}
	if fl, ok := w.(interface{ Flush() error }); ok {
		return fl.Flush()
	}
	return nil
}

// countTokens says n of a noun in English: "1 token", "2 tokens".
func countTokens(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
