package server

import (
	"context"
	"fmt"
	"net/http"

	"github.com/llorch/llorch-check/generation"
)

// batchDefaults are docs/api.md's /generate defaults.
var batchDefaults = settingDefaults{maxTokens: 128, minMaxTokens: 1, temperature: 0.7}

func (s *Server) handleHealthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

func (s *Server) handleReadyz(w http.ResponseWriter, r *http.Request) {
	status := map[state]string{stateLoading: "loading", stateValidating: "validating",
		stateFailed: "validation_failed", stateDraining: "draining", stateReady: "ready"}
	st := s.state()
	code := http.StatusServiceUnavailable
	if st == stateReady {
		code = http.StatusOK
	}
	writeJSON(w, code, map[string]string{"status": status[st]})
}

// promptList reads a required list of 1..MaxBatch strings.
func (s *Server) promptList(f *fields, name string, checkEach bool) ([]string, bool) {
	list, ok := f.strings(name)
	if !ok {
		if !f.present(name) {
			f.bad(name, "required", "is required", nil)
		}
		return nil, false
	}
	if len(list) == 0 || len(list) > s.cfg.MaxBatch {
		f.bad(name, "length", fmt.Sprintf("must hold 1..%d items", s.cfg.MaxBatch), len(list))
		return list, false
	}
	if checkEach {
		for i, p := range list {
			f.checkPrompt(fmt.Sprintf("%s[%d]", name, i), p)
		}
	}
	return list, true
}

type usage struct {
	PromptTokens        int             `json:"prompt_tokens"`
	CompletionTokens    int             `json:"completion_tokens"`
	TotalTokens         int             `json:"total_tokens"`
	PromptTokensDetails *promptTokenUse `json:"prompt_tokens_details,omitempty"`
}

// promptTokenUse is OpenAI's prompt_tokens_details: the prompt tokens the
// KV prefix cache served, as vLLM and OpenAI report them. Present when the
// server caches prefixes.
type promptTokenUse struct {
	CachedTokens int `json:"cached_tokens"`
}

// addCached counts n prompt tokens served from the prefix cache, when the
// engine has one.
func (u *usage) addCached(e *engine, n int) {
	if !e.pool.PrefixCache() {
		return
	}
	if u.PromptTokensDetails == nil {
		u.PromptTokensDetails = &promptTokenUse{}
	}
	u.PromptTokensDetails.CachedTokens += n
}

// handleGenerate completes every prompt in order. The request holds one
// slot and runs its prompts one after another, so a batch counts as one
// sequence against --parallel and cannot starve other clients of slots.
func (s *Server) handleGenerate(w http.ResponseWriter, r *http.Request, e *engine, f *fields) func() {
	prompts, _ := s.promptList(f, "prompts", true)
	tmpl := f.settings(batchDefaults, e.m.Config.VocabSize)
	tmpl.Grammar = f.constraint(e) // shared by the prompts: a compiled grammar is read-only
	s.extraFields(f, generateFields, nil)
	var encoded [][]int
	if f.ok("prompts") { // else the list is at fault: its settings are still checked
		for _, p := range prompts {
			encoded = append(encoded, e.encode(p))
		}
	}
	reqs := f.requests(e, tmpl, encoded, promptNames("prompts", false))
	return func() {
		s.runJob(w, r, "", jsonAnswer{}, func(ctx context.Context, slot *Slot) error {
			out := struct {
				Completions   []string `json:"completions"`
				FinishReasons []string `json:"finish_reasons"`
				Seeds         []uint64 `json:"seeds"`
				Usage         usage    `json:"usage"`
			}{}
			for _, req := range reqs {
				res, err := s.generate(ctx, e, slot, req, nil)
				if err != nil {
					return err
				}
				out.Completions = append(out.Completions, res.Text)
				out.FinishReasons = append(out.FinishReasons, res.StopReason)
				out.Seeds = append(out.Seeds, res.Seed)
				out.Usage.PromptTokens += len(req.Prompt)
				out.Usage.CompletionTokens += len(res.Tokens)
				out.Usage.addCached(e, res.CachedTokens)
			}
			out.Usage.TotalTokens = out.Usage.PromptTokens + out.Usage.CompletionTokens
			writeJSON(w, http.StatusOK, out)
			return nil
		})
	}
}

// handleLoglikelihood scores each continuation after its prompt, tokenized
// as lm-evaluation-harness does (generation.EncodePair).
func (s *Server) handleLoglikelihood(w http.ResponseWriter, r *http.Request, e *engine, f *fields) func() {
	prompts, okP := s.promptList(f, "prompts", false)
	conts, okC := s.promptList(f, "continuations", false)
	s.extraFields(f, loglikelihoodFields, nil)
	type pair struct{ ctx, cont []int }
	var pairs []pair
	if okP && okC {
		if len(prompts) != len(conts) {
			f.bad("continuations", "length", fmt.Sprintf("has %d items for %d prompts; they must pair up", len(conts), len(prompts)), len(conts))
		}
		for i := range min(len(prompts), len(conts)) {
			names := map[string]string{"context": fmt.Sprintf("prompts[%d]", i), "continuation": fmt.Sprintf("continuations[%d]", i)}
			c, t, err := generation.EncodePair(e.tok, prompts[i], conts[i])
			if err != nil {
				f.check(err, names)
				continue
			}
			f.check(generation.ValidatePair(c, t, e.positions(), e.m.Config.VocabSize), names)
			pairs = append(pairs, pair{c, t})
		}
	}
	return func() {
		s.runJob(w, r, "", jsonAnswer{}, func(ctx context.Context, slot *Slot) error {
			out := struct {
				LL       []float64 `json:"ll"`
				IsGreedy []bool    `json:"is_greedy"`
			}{LL: []float64{}, IsGreedy: []bool{}}
			for _, p := range pairs {
				res, err := generation.LoglikelihoodTokens(ctx, slot.Decoder(e), p.ctx, p.cont)
				e.obs.promptTokens.Add(float64(len(p.ctx) + len(p.cont)))
				if err != nil {
					return err
				}
				out.LL = append(out.LL, res.LL)
				out.IsGreedy = append(out.IsGreedy, res.IsGreedy)
			}
			writeJSON(w, http.StatusOK, out)
			return nil
		})
	}
}
