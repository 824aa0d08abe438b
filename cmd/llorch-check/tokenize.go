package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/llorch/llorch-check/tokenizer"
)

// loadTokenizer loads the tokenizer of --model, or of the default model.
func loadTokenizer(flag string) (*tokenizer.Tokenizer, error) {
	dir, err := modelPath(flag)
	if err != nil {
		return nil, err
	}
	return tokenizer.Load(dir)
}

// argOrStdin returns arg, or all of stdin when arg is "-".
func argOrStdin(cmd *cobra.Command, arg string) (string, error) {
	if arg != "-" {
		return arg, nil
	}
	b, err := io.ReadAll(cmd.InOrStdin())
	if err != nil {
		return "", fmt.Errorf("reading stdin: %w", err)
	}
	return string(b), nil
}

func newTokenizeCmd() *cobra.Command {
	var model string
	var asJSON, special bool
	cmd := &cobra.Command{
		Use:   "tokenize [--model DIR] [--json] [--special] TEXT",
		Short: "Print the token ids of TEXT with the model's tokenizer (- reads all of stdin as one text)",
		Long: `Print the token ids of TEXT with the model's tokenizer (vocab.json +
merges.txt, tokenizer.json or GGUF metadata, searched in that order).
"<|endoftext|>" in TEXT is ordinary text unless --special is given.`,
		Example: `  llorch-check tokenize "Hello world"          # 15496 995
  printf 'a<|endoftext|>' | llorch-check tokenize --special --json -`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			text, err := argOrStdin(cmd, args[0])
			if err != nil {
				return err
			}
			tok, err := loadTokenizer(model)
			if err != nil {
				return err
			}
			ids := tok.Encode(text)
			if special {
				ids = tok.EncodeSpecial(text)
			}
			_, err = fmt.Fprintln(cmd.OutOrStdout(), tokenizer.FormatIDs(ids, asJSON))
			return err
		},
	}
	cmd.Flags().StringVar(&model, "model", "", "model directory holding the tokenizer (default "+defaultModel+")")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array")
	cmd.Flags().BoolVar(&special, "special", false, "encode special tokens such as <|endoftext|> written in TEXT")
	return cmd
}

func newDetokenizeCmd() *cobra.Command {
	var model string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "detokenize [--model DIR] [--json] IDS...",
		Short: "Print the text of token ids (- reads them from stdin)",
		Long: `Print the text of the token ids, given as arguments or, with -, on
stdin, separated by spaces, commas or newlines, or as a JSON array. Bytes
that do not form valid UTF-8 print as U+FFFD; an id outside the vocabulary
is an error.`,
		Example: `  llorch-check detokenize 15496 995               # Hello world
  llorch-check tokenize --json "héllo" | llorch-check detokenize -`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			in := strings.Join(args, " ")
			if len(args) == 1 {
				var err error
				if in, err = argOrStdin(cmd, args[0]); err != nil {
					return err
				}
			}
			ids, err := tokenizer.ParseIDs(in)
			if err != nil {
				return err
			}
			tok, err := loadTokenizer(model)
			if err != nil {
				return err
			}
			text, err := tok.Decode(ids)
			if err != nil {
				return err
			}
			if asJSON {
				b, err := json.Marshal(map[string]string{"text": text})
				if err != nil {
					return err
				}
				text = string(b)
			}
			_, err = fmt.Fprintln(cmd.OutOrStdout(), text)
			return err
		},
	}
	cmd.Flags().StringVar(&model, "model", "", "model directory holding the tokenizer (default "+defaultModel+")")
	cmd.Flags().BoolVar(&asJSON, "json", false, `print {"text": ...} so the exact text survives the shell`)
	return cmd
}
