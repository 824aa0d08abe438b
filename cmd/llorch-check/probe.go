package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/llorch/llorch-check/internal/atomicfile"
	"github.com/llorch/llorch-check/probe"
)

func newProbeCmd() *cobra.Command {
	var references, endpoint, apiKey, modelName, format, junit string
	cmd := &cobra.Command{
		Use:   "probe --endpoint URL [--references DIR]",
		Short: "Check a running server's outputs against a reference set, from the outside",
		Long: `probe drives a running inference server serving the reference set's
weights through its OpenAI-compatible /v1/completions (vLLM, llama.cpp's
server, llorch-check serve) and compares what it exposes with the
references: every case's prompt log-probabilities (echo + logprobs, as
lm-evaluation-harness asks for them) at the positions whose logits the set
keeps, and the set's (context, continuation) log-likelihoods, at checkpoint
9's tolerance; and the greedy continuation's text (checkpoint 12).

Exit 0: every check passed; 1: a check failed; 2: the server was
unreachable or did not answer the API (never a pass), or bad input.`,
		Example: `  llorch-check serve --port 8080 &
  llorch-check probe --endpoint http://127.0.0.1:8080
  llorch-check probe --endpoint http://gpu-box:8000 --references refs/gpt2 --model-name gpt2 --format json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if format != "table" && format != "json" {
				return fmt.Errorf("--format %q: want table or json", format)
			}
			if endpoint == "" {
				return fmt.Errorf("--endpoint is required (the server's base URL, e.g. http://127.0.0.1:8080)")
			}
			set, err := openReferences(references)
			if err != nil {
				return err
			}
			if apiKey == "" {
				apiKey = os.Getenv("LLORCH_API_KEY")
			}
			rep, err := probe.Run(cmd.Context(), set, probe.Options{Endpoint: endpoint, APIKey: apiKey, Model: modelName})
			if err != nil {
				return err
			}
			if junit != "" {
				if err := atomicfile.Write(junit, rep.WriteJUnit); err != nil {
					return err
				}
			}
			return writeReport(cmd.OutOrStdout(), rep, format)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&endpoint, "endpoint", "", "the server's base URL (its /v1/completions is probed)")
	fl.StringVar(&references, "references", "", "reference set of the served weights (default "+defaultReferences+")")
	fl.StringVar(&apiKey, "api-key", "", "bearer token for the server (default $LLORCH_API_KEY)")
	fl.StringVar(&modelName, "model-name", "", `the "model" field of requests, for servers that need one`)
	fl.StringVar(&format, "format", "table", "table or json")
	fl.StringVar(&junit, "junit", "", "also write a JUnit XML report to this file")
	return cmd
}
