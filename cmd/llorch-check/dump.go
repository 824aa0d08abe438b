package main

import (
	"fmt"

	"github.com/llorch/llorch-check/checkpoints"
	"github.com/llorch/llorch-check/model"
	"github.com/llorch/llorch-check/references"
	"github.com/llorch/llorch-check/tokenizer"
	"github.com/spf13/cobra"
)

func newDumpCmd() *cobra.Command {
	var refs, out, fault, kvCacheDType string
	var mf modelFlags
	var force bool
	cmd := &cobra.Command{
		Use:   "dump --out DIR",
		Short: "Write llorch-check's own activations as a reference set",
		Long: `dump runs the Go forward on the cases of a reference set and writes every
captured tensor, the greedy token, the sampling distributions (Go's
processors on the set's own last logits, as run does), the greedy
continuation and the log-likelihoods in the same layout (float32, no
float64 twins), so that two builds, or a build and PyTorch, can be compared
with llorch-check diff. The directory is written atomically; an existing,
different set is refused unless --force, and the set dumped from always.`,
		Example: `  llorch-check dump --out /tmp/go-refs
  llorch-check diff testdata/references/tiny-gpt2 /tmp/go-refs`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if out == "" {
				return fmt.Errorf("--out is required")
			}
			kv, err := parseKVCacheDType(kvCacheDType)
			if err != nil {
				return err
			}
			// The set first: a set made with another tokenizer or
			// from other weights is refused before the weights load.
			set, err := openModelReferences(refs, mf.path, kv)
			if err != nil {
				return err
			}
			if err := checkDumpTarget(out, set.Dir); err != nil {
				return err
			}
			m, err := mf.loadFor(cmd.Context(), set)
			if err != nil {
				return err
			}
			if err := injectFault(m, fault); err != nil {
				return err
			}
			tok, err := tokenizer.ForModel(m.Path())
			if err != nil {
				return err
			}
			report, done := progressFunc(cmd.ErrOrStderr())
			defer done()
			opt := checkpoints.Options{Force: force, Tokenizer: tok, Progress: report, KVCache: kv}
			if err := checkpoints.Dump(cmd.Context(), m, set, out, opt); err != nil {
				return err
			}
			done()
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s\n", out)
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&out, "out", "", "directory to write (required)")
	mf.register(fl)
	fl.StringVar(&refs, "references", "", "reference set whose cases and tensors to dump (default "+defaultReferences+")")
	fl.BoolVar(&force, "force", false, "replace an existing, different set")
	fl.StringVar(&fault, "inject-fault", "", "self-test: inject a classic bug, NAME or NAME@LAYER ("+model.FaultNames()+")")
	registerKVCache(fl, &kvCacheDType)
	return cmd
}

// checkDumpTarget refuses an --out that is the reference set dump reads
// its cases from (through any symbolic link), lies inside it or holds it:
// with --force, Go's own output would replace PyTorch's set, float64 twins
// and all.
func checkDumpTarget(out, refs string) error {
	absOut, absRefs, err := realPaths(out, refs)
	if err != nil {
		return err
	}
	if within(absOut, absRefs) || within(absRefs, absOut) {
		return fmt.Errorf("--out %s would overwrite %s, the reference set this dump reads (--references); write it elsewhere", out, refs)
	}
	return nil
}

func newDiffCmd() *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "diff A B",
		Short: "Compare two reference sets tensor by tensor (A is the baseline)",
		Long: `diff compares every tensor of reference set A with the same tensor of B, with
each checkpoint's tolerance, and prints the same report as run. Both sets
must come from the same weights. A's float64 twins, if it has them, give
the error budget. Exit 0 when they agree, 1 when a tensor differs.`,
		Example: `  llorch-check diff testdata/references/tiny-gpt2 /tmp/go-refs`,
		Args:    cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			opt, err := f.options()
			if err != nil {
				return err
			}
			a, err := references.Open(args[0])
			if err != nil {
				return err
			}
			b, err := references.Open(args[1])
			if err != nil {
				return err
			}
			rep, err := checkpoints.Diff(cmd.Context(), a, b, opt)
			if err != nil {
				return err
			}
			return writeReport(cmd.OutOrStdout(), rep, f.format)
		},
	}
	f.registerCompare(cmd)
	return cmd
}
