package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/spf13/cobra"

	"github.com/llorch/llorch-check/checkpoints"
	"github.com/llorch/llorch-check/kvcache"
	"github.com/llorch/llorch-check/model"
	"github.com/llorch/llorch-check/references"
	"github.com/llorch/llorch-check/tokenizer"
)

// loadServed loads the model serve will answer with, its fault if one is
// planted and its tokenizer, then warms it up: the first requests then
// do not pay for faulting the weights in and growing the scratch pools.
func loadServed(ctx context.Context, f serveFlags, log *slog.Logger) (*model.Model, *tokenizer.Tokenizer, error) {
	path, err := modelPath(f.model.path)
	if err != nil {
		return nil, nil, err
	}
	tok, err := tokenizerFirst(path)
	if err != nil {
		return nil, nil, err
	}
	m, err := f.model.loadWith(ctx, !f.dryRun)
	if err != nil {
		return nil, nil, err
	}
	if err := injectFault(m, f.fault); err != nil {
		return nil, nil, err
	}
	if f.fault != "" {
		log.Warn("serving a deliberately broken model (--inject-fault): its answers are wrong", "fault", f.fault)
	}
	if tok == nil {
		return nil, nil, fmt.Errorf("--model %s: no tokenizer (vocab.json + merges.txt or tokenizer.json); serve needs one for text", m.Dir)
	}
	start := time.Now()
	if err := m.WarmUp(ctx); err != nil {
		return nil, nil, fmt.Errorf("warm-up: %w", err)
	}
	log.Info("warm-up done", "duration_seconds", time.Since(start).Seconds())
	return m, tok, nil
}

// dryRunServe is serve --dry-run: everything serve checks and loads, and
// the validation against --references, without listening.
func dryRunServe(cmd *cobra.Command, f serveFlags) error {
	if err := f.check(); err != nil {
		return err
	}
	if _, err := f.loadChatTemplate(); err != nil {
		return err
	}
	log := slog.New(slog.NewJSONHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	m, tok, err := loadServed(cmd.Context(), f, log)
	if err != nil {
		return err
	}
	chat, err := f.modelChat(m)
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	if chat != nil && f.chatTemplate == "" || f.jinjaTemplate() {
		fmt.Fprintf(out, "dry-run: chat template %s\n", chat.Name())
	}
	fmt.Fprintf(out, "dry-run: model %s loaded (%s, %d MB of weights), tokenizer and warm-up ok\n",
		builtin.display(m.WeightsPath), m.WeightsDType, m.WeightsBytes()>>20)
	if f.references == "" {
		fmt.Fprintln(out, "dry-run: no --references: nothing validated")
		return nil
	}
	set, err := openReferences(f.references)
	if err != nil {
		return err
	}
	kv, err := parseKVCacheDType(f.kvCacheDType)
	if err != nil {
		return err
	}
	rep, err := selfCheck(cmd.Context(), m, tok, set, kv)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "dry-run: against %s: %s\n", builtin.display(set.Dir), rep.Verdict())
	if !rep.Passed {
		return errFailed
	}
	return nil
}

// selfCheck is serve's start-up validation: every checkpoint of set on
// the KV cache serve runs with (kv: its pool's options; only the storage
// type and block size matter here). A float16 cache needs a set of the
// f16-kv profile and a float32 one a plain set (checkpoints.CheckKVCache).
func selfCheck(ctx context.Context, m *model.Model, tok *tokenizer.Tokenizer, set *references.Set, kv kvcache.Options) (*checkpoints.Report, error) {
	return checkpoints.Run(ctx, m, set, checkpoints.Options{Tokenizer: tok, KVCache: kv})
}
