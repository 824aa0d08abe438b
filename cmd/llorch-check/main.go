// Command llorch-check validates a forward pass written in Go (GPT-2, or an
// architecture of the Llama family: llama, Qwen, Mistral, Phi-3, Gemma and
// mixtures of experts; `llorch-check --help` lists every one the model
// package registers) against PyTorch reference tensors, checkpoint by
// checkpoint, and serves the model.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
)

// Exit codes of docs/spec.md, section 4.
const (
	exitOK       = 0
	exitFailed   = 1 // a checkpoint failed
	exitBadInput = 2 // missing or corrupt file, mismatch, bad flag
)

// errFailed reports a numerical failure whose details were already printed.
var errFailed = errors.New("checkpoints failed")

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(execute(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// execute runs the command line and maps its outcome to an exit code.
func execute(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := newRootCmd()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, errFailed):
		return exitFailed
	}
	fmt.Fprintf(root.ErrOrStderr(), "llorch-check: %s\n", builtin.display(err.Error()))
	return exitBadInput
}

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "llorch-check",
		Short: "Validate a Go GPT-2, Llama, Qwen, Mistral, Phi-3, Gemma or mixture of experts against PyTorch, checkpoint by checkpoint",
		Long: reflow(`llorch-check runs a forward pass written in Go (`+families()+`),
captures its tensors at twelve checkpoints (norm,
QKV, KV cache, attention, FFN, block output, LM head, logits, sampling,
generation) and compares them with reference tensors that PyTorch computed
from the same weights.`) + `

Exit codes: 0 all passed, 1 a checkpoint failed, 2 bad input.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       versionString(),
	}
	root.SetVersionTemplate("{{.Version}}")
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return fmt.Errorf("%w (see %s --help)", err, cmd.CommandPath())
	})
	root.AddCommand(
		newListCmd(),
		newRunCmd(),
		newBisectCmd(),
		newDumpCmd(),
		newDiffCmd(),
		newTokenizeCmd(),
		newDetokenizeCmd(),
		newGenerateCmd(),
		newServeCmd(),
		newProbeCmd(),
		newConvertCmd(),
		newInspectCmd(),
		newHealthcheckCmd(),
	)
	return root
}
