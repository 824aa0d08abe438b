package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/llorch/llorch-check/checkpoints"
	"github.com/llorch/llorch-check/internal/atomicfile"
	"github.com/llorch/llorch-check/model"
	"github.com/llorch/llorch-check/references"
	"github.com/llorch/llorch-check/tokenizer"
	"github.com/spf13/cobra"
)

// runFlags are shared by run and bisect.
type runFlags struct {
	checkpoint, references, format, junit, plot, fault string
	kvCacheDType                                       string
	model                                              modelFlags
	layer                                              int
	budget, atol, rtol                                 float64
	tolerances                                         []string
}

// registerCompare adds the flags that select and judge tensors.
func (f *runFlags) registerCompare(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.checkpoint, "checkpoint", "", "checkpoints to compare: N, N-M or a comma list (default all twelve)")
	fl.IntVar(&f.layer, "layer", -1, "compare only this layer's tensors")
	fl.StringVar(&f.format, "format", "table", "output format: table or json")
	fl.Float64Var(&f.budget, "budget", 0, "fail tensors whose error against float64 exceeds F times PyTorch float32's (0: off)")
	fl.Float64Var(&f.atol, "atol", -1, "override atol for every checkpoint")
	fl.Float64Var(&f.rtol, "rtol", -1, "override rtol for every checkpoint")
	fl.StringArrayVar(&f.tolerances, "tolerance", nil, "override one checkpoint's tolerance: N=ATOL,RTOL (repeatable)")
}

// register adds the comparison flags and those that pick the model.
func (f *runFlags) register(cmd *cobra.Command) {
	f.registerCompare(cmd)
	fl := cmd.Flags()
	f.model.register(fl)
	fl.StringVar(&f.references, "references", "", "reference set directory (default "+defaultReferences+")")
	fl.StringVar(&f.junit, "junit", "", "also write a JUnit XML report to this file")
	fl.StringVar(&f.fault, "inject-fault", "", "self-test: inject a classic bug into the Go forward, NAME or NAME@LAYER ("+model.FaultNames()+")")
	registerKVCache(fl, &f.kvCacheDType)
}

func (f *runFlags) options() (checkpoints.Options, error) {
	sel, err := checkpoints.ParseSelection(f.checkpoint)
	if err != nil {
		return checkpoints.Options{}, fmt.Errorf("--checkpoint: %w", err)
	}
	if f.format != "table" && f.format != "json" {
		return checkpoints.Options{}, fmt.Errorf("--format %q: want table or json", f.format)
	}
	if ext := strings.TrimPrefix(filepath.Ext(f.plot), "."); f.plot != "" && !checkpoints.PlotFormats[ext] {
		return checkpoints.Options{}, fmt.Errorf("--plot %s: want a .svg, .png or .pdf file", f.plot)
	}
	if f.budget < 0 {
		return checkpoints.Options{}, fmt.Errorf("--budget %g: want a positive factor, or 0 for off", f.budget)
	}
	overrides, err := checkpoints.Overrides(f.atol, f.rtol, f.tolerances)
	if err != nil {
		return checkpoints.Options{}, fmt.Errorf("--tolerance: %w", err)
	}
	opt := checkpoints.Options{Checkpoints: sel, Budget: f.budget, Overrides: overrides}
	if opt.KVCache, err = parseKVCacheDType(f.kvCacheDType); err != nil {
		return opt, err
	}
	switch {
	case f.layer < -1:
		return opt, fmt.Errorf("--layer %d: want a layer index ≥ 0", f.layer)
	case f.layer >= 0:
		opt.Layer = &f.layer
	}
	return opt, nil
}

// injectFault applies --inject-fault's NAME[@LAYER] to m.
func injectFault(m *model.Model, spec string) error {
	if err := m.InjectFaultSpec(spec); err != nil {
		return fmt.Errorf("--inject-fault %w", err)
	}
	return nil
}

// checkReportTarget refuses a --junit or --plot path that would replace
// one of the run's inputs (a file of the model directory or the reference
// set, or the weights), and says so on stderr when it replaces another
// existing file.
func checkReportTarget(stderr io.Writer, flag, path string, inputs ...string) error {
	if path == "" {
		return nil
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	for _, in := range inputs {
		in, err := filepath.Abs(in)
		if err != nil {
			continue
		}
		if rel, err := filepath.Rel(in, abs); err == nil && (rel == "." || !strings.HasPrefix(rel, "..")) {
			if fi, err := os.Stat(abs); err == nil && !fi.IsDir() {
				return fmt.Errorf("%s %s would replace a file of %s, an input of this run; write it elsewhere", flag, path, in)
			}
		}
	}
	switch fi, err := os.Stat(path); {
	case err != nil:
	case fi.IsDir():
		return fmt.Errorf("%s %s is a directory; give a file path", flag, path)
	default:
		fmt.Fprintf(stderr, "llorch-check: %s replaces the existing %s\n", flag, path)
	}
	return nil
}

// execRun loads, runs and writes side files; the caller prints the report.
func (f *runFlags) execRun(cmd *cobra.Command) (*checkpoints.Report, *model.Model, error) {
	opt, err := f.options()
	if err != nil {
		return nil, nil, err
	}
	// From the start, not once the model is loaded: what follows the load
	// (the tokenizer's parse, the comparisons' reference tensors) left
	// garbage at the default GOGC, and Qwen2.5-0.5B's run peaked 120 MiB
	// over its weights before the first collection (bench notes 34).
	_, _, stopGC := tuneGC()
	defer stopGC()
	// The set first: its manifest is cheap to read, and a set made with
	// another tokenizer or from other weights is refused before the
	// weights load (loadFor).
	set, err := openModelReferences(f.references, f.model.path, opt.KVCache)
	if err != nil {
		return nil, nil, err
	}
	m, err := f.model.loadFor(cmd.Context(), set)
	if err != nil {
		return nil, nil, err
	}
	if err := injectFault(m, f.fault); err != nil {
		return nil, nil, err
	}
	for _, o := range []struct{ flag, path string }{{"--junit", f.junit}, {"--plot", f.plot}} {
		if err := checkReportTarget(cmd.ErrOrStderr(), o.flag, o.path, m.Dir, m.WeightsPath, set.Dir); err != nil {
			return nil, nil, err
		}
	}
	if opt.Tokenizer, err = tokenizer.ForModel(m.Path()); err != nil {
		return nil, nil, err
	}
	report, done := progressFunc(cmd.ErrOrStderr())
	opt.Progress = report
	rep, err := checkpoints.Run(cmd.Context(), m, set, opt)
	done()
	if err != nil {
		return nil, nil, err
	}
	rep.Model, rep.References = builtin.display(rep.Model), builtin.display(rep.References)
	if f.junit != "" {
		if err := atomicfile.Write(f.junit, rep.WriteJUnit); err != nil {
			return nil, nil, err
		}
	}
	return rep, m, nil
}

func newRunCmd() *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Compare the Go forward with a reference set, checkpoint by checkpoint",
		Long: reflow(`run executes the Go forward (`+families()+`,
as config.json or the GGUF file says) on every case of a
reference set, captures the tensors of the selected checkpoints for every
layer, and compares each with PyTorch's (numpy allclose:
|got − want| ≤ atol + rtol·|want|).`) + `

With no flags it runs all twelve checkpoints on the default tiny model and
its committed reference set. Exit 0: all passed; 1: a checkpoint failed;
2: bad input (missing or corrupt file, reference from other weights).`,
		Example: `  llorch-check run
  llorch-check run --checkpoint 4 --layer 1 --format json
  llorch-check run --model ~/gpt2 --references refs/gpt2 --junit report.xml --plot drift.svg`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			rep, m, err := f.execRun(cmd)
			if err != nil {
				return err
			}
			if f.plot != "" {
				format := strings.TrimPrefix(filepath.Ext(f.plot), ".")
				err := atomicfile.Write(f.plot, func(w io.Writer) error { return rep.WritePlot(w, m.Config.NLayer, format) })
				if err != nil {
					return err
				}
			}
			return writeReport(cmd.OutOrStdout(), rep, f.format)
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&f.plot, "plot", "", "draw error per checkpoint across layers to this file (.svg, .png or .pdf)")
	return cmd
}

// writeReport prints the report and turns a failed one into exit code 1.
func writeReport(w io.Writer, rep *checkpoints.Report, format string) error {
	write := rep.WriteTable
	if format == "json" {
		write = rep.WriteJSON
	}
	if err := write(w); err != nil {
		return err
	}
	if !rep.Passed {
		return errFailed
	}
	return nil
}

func newBisectCmd() *cobra.Command {
	var f runFlags
	var dump string
	cmd := &cobra.Command{
		Use:   "bisect [--dump DIR]",
		Short: "Name the first checkpoint, layer and tensor where Go (or a dump) leaves the reference",
		Long: `bisect runs the same comparison as run, walks the tensors in forward order
(GPT-2: embeddings, then each block's ln_1, q/k/v, scores, probs, attn_out,
ln_2, gelu, mlp_out, block_out, then ln_f and the logits; the Llama family:
embeddings, then each block's attn_norm, q/k/v, q_norm/k_norm (Qwen3),
q_rope/k_rope, scores, probs, attn_out, ffn_norm, gate/up, act, down,
block_out, then norm and the logits) and names the first one
outside tolerance, with its worst element (token position, head, channel)
and both values. Exit 1 when it finds one, 0 when everything passes.

--dump DIR bisects another engine's activations instead of Go's forward:
DIR is a dump as diff takes it (a reference set, or a partial dump such as
pytorch/dump_hooks.py or cmd/llamacpp-ggml dump (llama.cpp) write;
references/FORMAT.md, "Dumps from other engines"), compared with
--references as diff compares it: what a partial dump lacks is not compared.`,
		Example: `  llorch-check bisect
  llorch-check bisect --inject-fault erf-gelu@1 --format json
  llorch-check bisect --dump /tmp/llama-dump --references testdata/references/tiny-gpt2`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var rep *checkpoints.Report
			var err error
			if dump != "" {
				rep, err = f.execDiff(cmd, dump)
			} else {
				rep, _, err = f.execRun(cmd)
			}
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if f.format == "json" {
				err = rep.WriteBisectJSON(out)
			} else {
				err = rep.WriteBisectText(out)
			}
			if err != nil {
				return err
			}
			if rep.FirstFailure() != nil {
				return errFailed
			}
			return nil
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&dump, "dump", "", "bisect this dump (another engine's activations, as diff takes them) against --references instead of Go's forward")
	return cmd
}

// execDiff compares the dump in dir with --references as diff does, for
// bisect; the flags that configure Go's own forward do not apply to it.
func (f *runFlags) execDiff(cmd *cobra.Command, dir string) (*checkpoints.Report, error) {
	for _, name := range []string{"model", "weight-dtype", "inject-fault", "kv-cache-dtype"} {
		if cmd.Flags().Changed(name) {
			return nil, fmt.Errorf("--%s configures Go's forward; --dump %s bisects a dump instead", name, dir)
		}
	}
	opt, err := f.options()
	if err != nil {
		return nil, err
	}
	set, err := openReferences(f.references)
	if err != nil {
		return nil, err
	}
	got, err := references.Open(dir)
	if err != nil {
		return nil, err
	}
	if err := checkReportTarget(cmd.ErrOrStderr(), "--junit", f.junit, set.Dir, got.Dir); err != nil {
		return nil, err
	}
	rep, err := checkpoints.Diff(cmd.Context(), set, got, opt)
	if err != nil {
		return nil, err
	}
	if f.junit != "" {
		if err := atomicfile.Write(f.junit, rep.WriteJUnit); err != nil {
			return nil, err
		}
	}
	return rep, nil
}
