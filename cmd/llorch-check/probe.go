package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/llorch/llorch-check/checkpoints"
	"github.com/llorch/llorch-check/internal/atomicfile"
	"github.com/llorch/llorch-check/internal/httprecord"
	"github.com/llorch/llorch-check/probe"
	"github.com/llorch/llorch-check/references"
	"github.com/llorch/llorch-check/tokenizer"
)

type probeFlags struct {
	references, endpoint, apiKey, modelName, format, junit, api, metricsAddr string
	corpus, record, model                                                    string
	topK, corpusChunks                                                       int
	invariance                                                               bool
	every                                                                    time.Duration
}

func newProbeCmd() *cobra.Command {
	var f probeFlags
	cmd := &cobra.Command{
		Use:   "probe --endpoint URL [--references DIR]",
		Short: "Check a running server's outputs against a reference set, from the outside",
		Long: `probe drives a running inference server serving the reference set's
weights and compares what its HTTP API exposes with the references:

  --api openai  /v1/completions (vLLM, llama.cpp's server, llorch-check serve):
                prompt log-probabilities (echo + logprobs, as lm-evaluation-
                harness asks) and the set's log-likelihoods (checkpoint 9), the
                top-k alternatives (11), the greedy text (12)
  --api worker  the llama-orch worker's /execute stream: greedy token (10) and
                continuation (12) by id, and its text
  --api llorch  serve's /loglikelihood (9, and whether each continuation is
                greedy: 10) and /generate (12, text)
  --api tgi     TGI's /generate with details and decoder_input_details: prompt
                log-probabilities (9), greedy ids and text (10, 12), the first
                generated token's top_n_tokens by id (11)

Without --api (or with --api auto) the API is detected from GET /info
(TGI), /v1/models (OpenAI), /health and /readyz (worker, batch), and the
report says which and why. Every value is a log-probability judged at
checkpoint 9's tolerance; a greedy mismatch is reported with the reference's
and the server's top-1 − top-2 margins, so a near-tie shows as one.

--every DURATION turns probe into a canary: it re-checks the endpoint at
that interval until SIGINT or SIGTERM, logs each run's verdict as a JSON
line on stderr, and with --metrics-addr serves the latest verdict as
Prometheus text at /metrics.

Exit 0: every check passed; 1: a check failed; 2: the server was
unreachable or did not answer its API (never a pass), or bad input. With
--every: 0 once stopped by a signal.`,
		Example: `  llorch-check serve --port 8080 &
  llorch-check probe --endpoint http://127.0.0.1:8080
  llorch-check probe --endpoint http://127.0.0.1:8080 --api worker
  llorch-check probe --endpoint http://gpu-box:8000 --references refs/gpt2 --model-name gpt2 --format json
  llorch-check probe --endpoint http://worker:8080 --every 5m --metrics-addr :9464`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runProbe(cmd, f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.endpoint, "endpoint", "", "the server's base URL")
	fl.StringVar(&f.references, "references", "", "reference set of the served weights (default "+defaultReferences+")")
	fl.StringVar(&f.api, "api", "auto", "the server's API: auto, "+strings.Join(probe.APIs, ", "))
	fl.IntVar(&f.topK, "top-k", probe.DefaultTopK, "alternatives to ask for where the API lists them (OpenAI logprobs, TGI top_n_tokens)")
	fl.StringVar(&f.apiKey, "api-key", "", "bearer token for the server (default $LLORCH_API_KEY)")
	fl.StringVar(&f.modelName, "model-name", "", `the "model" field of OpenAI requests (default the first of /v1/models)`)
	fl.StringVar(&f.format, "format", "table", "table or json")
	fl.StringVar(&f.junit, "junit", "", "also write a JUnit XML report to this file")
	fl.StringVar(&f.model, "model", "", "the served model's directory or .gguf file, for its tokenizer: Ollama takes text prompts, and generated text is compared as text (default the reference set's model when it is here, else "+defaultModel+")")
	fl.StringVar(&f.corpus, "corpus", "", "a corpus set (dump_references.py --corpus) to teacher-force for a distribution verdict: KL, top-1 agreement, Δp, perplexity ratio")
	fl.IntVar(&f.corpusChunks, "corpus-chunks", 0, "with --corpus: only its first N chunks (0: all)")
	fl.BoolVar(&f.invariance, "invariance", true, "ask the engine the same thing several ways (logprobs on/off, streamed, concurrent, prompt cache, decode vs prefill); --invariance=false skips it")
	fl.StringVar(&f.record, "record", "", "write every request and the server's answer, byte for byte, to this file (JSON Lines; gzipped if it ends in .gz), also when the probe fails")
	fl.DurationVar(&f.every, "every", 0, "re-check at this interval until SIGINT/SIGTERM, logging each verdict (0: once)")
	fl.StringVar(&f.metricsAddr, "metrics-addr", "", "with --every: serve the latest verdict as Prometheus text at HOST:PORT/metrics")
	return cmd
}

func (f probeFlags) check() error {
	switch {
	case f.format != "table" && f.format != "json":
		return fmt.Errorf("--format %q: want table or json", f.format)
	case f.endpoint == "":
		return fmt.Errorf("--endpoint is required (the server's base URL, e.g. http://127.0.0.1:8080)")
	case f.api != "auto" && !slices.Contains(probe.APIs, f.api):
		return fmt.Errorf("--api %q: want auto, %s", f.api, strings.Join(probe.APIs, ", "))
	case f.topK < 2:
		return fmt.Errorf("--top-k %d: want at least 2, so a greedy margin can be measured", f.topK)
	case f.every < 0:
		return fmt.Errorf("--every %s: want a positive interval, or 0 for one run", f.every)
	case f.corpusChunks < 0:
		return fmt.Errorf("--corpus-chunks %d: want 0 (all) or more", f.corpusChunks)
	case f.record != "" && f.every > 0:
		return fmt.Errorf("--record %s with --every: a canary would record without end; record one run", f.record)
	case f.metricsAddr != "" && f.every == 0:
		return fmt.Errorf("--metrics-addr %s needs --every: a single run exits with its verdict", f.metricsAddr)
	}
	if f.metricsAddr != "" {
		if _, _, err := net.SplitHostPort(f.metricsAddr); err != nil {
			return fmt.Errorf("--metrics-addr %q: want HOST:PORT: %w", f.metricsAddr, err)
		}
	}
	return nil
}

func runProbe(cmd *cobra.Command, f probeFlags) error {
	if err := f.check(); err != nil {
		return err
	}
	set, err := openReferences(f.references)
	if err != nil {
		return err
	}
	if f.apiKey == "" {
		f.apiKey = os.Getenv("LLORCH_API_KEY")
	}
	tok, err := probeTokenizer(f.model, set)
	if err != nil {
		return err
	}
	opt := probe.Options{Endpoint: f.endpoint, APIKey: f.apiKey, Model: f.modelName, API: f.api, TopK: f.topK,
		Corpus: f.corpus, CorpusChunks: f.corpusChunks, Tokenizer: tok, NoInvariance: !f.invariance,
		DefaultReferences: f.references == ""}
	if f.every > 0 {
		return canary(cmd.Context(), cmd.ErrOrStderr(), f, set, opt)
	}
	var rec *httprecord.Recorder
	if f.record != "" {
		rec = &httprecord.Recorder{}
		opt.Client = &http.Client{Timeout: 2 * time.Minute, Transport: rec}
	}
	report, done := progressFunc(cmd.ErrOrStderr())
	opt.Progress = report
	rep, err := probe.Run(cmd.Context(), set, opt)
	done()
	if rep != nil {
		rep.References = builtin.display(rep.References)
		for i, n := range rep.Next {
			rep.Next[i] = builtin.display(n)
		}
	}
	if rec != nil {
		if werr := rec.WriteFile(f.record); werr != nil {
			return errors.Join(err, fmt.Errorf("--record %s: %w", f.record, werr))
		}
	}
	if err != nil {
		return err
	}
	if f.junit != "" {
		if err := atomicfile.Write(f.junit, rep.WriteJUnit); err != nil {
			return err
		}
	}
	return writeReport(cmd.OutOrStdout(), rep, f.format)
}

// probeTokenizer is the tokenizer of --model (a directory or a .gguf
// file), else of the model the reference set was made from when it is
// here (its manifest's path, absolute or inside this clone), else of the
// default model; nil without one (Ollama and generated texts need it).
func probeTokenizer(flag string, set *references.Set) (*tokenizer.Tokenizer, error) {
	if mp := set.Manifest.Model.Path; flag == "" && mp != "" {
		if filepath.IsAbs(mp) {
			if _, err := os.Stat(mp); err == nil {
				flag = mp
			}
		} else if p, err := resolveDefault(mp); err == nil {
			flag = p
		}
	}
	path, err := pathOrDefault(flag, defaultModel)
	if err != nil {
		if flag == "" {
			return nil, nil
		}
		return nil, err
	}
	// The texts the probe compares are this tokenizer's: it must be the
	// one that gave the set's ids.
	if err := checkDirTokenizer(set, path); err != nil {
		return nil, err
	}
	return tokenizer.ForModel(path)
}

// canary probes every f.every until ctx ends; a failed or erroring run is
// logged and counted, not the end.
func canary(ctx context.Context, stderr io.Writer, f probeFlags, set *references.Set, opt probe.Options) error {
	log := slog.New(slog.NewJSONHandler(stderr, nil))
	c := probe.NewCanary()
	if f.metricsAddr != "" {
		ln, err := net.Listen("tcp", f.metricsAddr)
		if err != nil {
			return fmt.Errorf("--metrics-addr %s: %w", f.metricsAddr, err)
		}
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", c.Handler())
		hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		served := make(chan error, 1)
		go func() { served <- hs.Serve(ln) }()
		defer func() {
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = hs.Shutdown(sctx)
			if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
				log.Error("metrics server", "error", err.Error())
			}
		}()
		log.Info("metrics", "addr", ln.Addr().String())
	}
	log.Info("canary", "endpoint", f.endpoint, "every", f.every.String())
	probe.Watch(ctx, f.every, c, log, func(ctx context.Context) (*checkpoints.Report, error) {
		rep, err := probe.Run(ctx, set, opt)
		if err == nil && f.junit != "" {
			err = atomicfile.Write(f.junit, rep.WriteJUnit)
		}
		return rep, err
	})
	log.Info("canary stopped")
	return nil
}
