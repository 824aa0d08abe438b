package probe

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/checkpoints"
	"github.com/llorch/llorch-check/generation"
	"github.com/llorch/llorch-check/model"
	"github.com/llorch/llorch-check/sampling"
)

// checkpointsOf lists the checkpoints a report has results at.
func checkpointsOf(rep *checkpoints.Report) []int {
	var out []int
	for _, r := range rep.Results {
		if !slices.Contains(out, r.Checkpoint) {
			out = append(out, r.Checkpoint)
		}
	}
	return out
}

// TestProbeDialectsPass: llorch-check serve, seen from outside through
// every API it speaks, passes; and so does the loopback TGI that answers
// from the same model. Each dialect checks exactly the checkpoints it
// claims, and detection names the API it picked.
func TestProbeDialectsPass(t *testing.T) {
	own := serve(t, model.FaultNone)
	tgi := tgiServer(t, model.FaultNone)
	for _, tc := range []struct {
		endpoint, api, want string
	}{
		{own, "", "openai"},
		{own, "openai", "openai"},
		{own, "worker", "worker"},
		{own, "llorch", "llorch"},
		{tgi, "auto", "tgi"},
		{tgi, "tgi", "tgi"},
	} {
		t.Run(tc.want+"/"+tc.api, func(t *testing.T) {
			rep, err := Run(context.Background(), tinySet(t), Options{Endpoint: tc.endpoint, API: tc.api})
			require.NoError(t, err)
			require.True(t, rep.Passed, "%s: %+v", rep.Verdict(), rep.Failures())
			require.Equal(t, tc.want, rep.API.Name)
			if tc.api == tc.want {
				require.Equal(t, "--api", rep.API.Chosen)
			} else {
				require.Contains(t, rep.API.Chosen, "detected: GET ")
			}
			require.Equal(t, dialects[tc.want].checks, checkpointsOf(rep), "the checkpoints the dialect claims")
			var table bytes.Buffer
			require.NoError(t, rep.WriteTable(&table))
			require.Contains(t, table.String(), "api:        "+tc.want+" (")
			require.Contains(t, table.String(), "engine/torch vs f64", "the budget column names what was checked")
		})
	}
}

// TestProbeOpenAICoversTheSet: every case with kept logits gets its
// prompt log-probabilities and alternatives checked, every generation its
// text, every log-likelihood pair its sum.
func TestProbeOpenAICoversTheSet(t *testing.T) {
	set := tinySet(t)
	rep, err := Run(context.Background(), set, Options{Endpoint: serve(t, model.FaultNone), API: "openai"})
	require.NoError(t, err)
	cases, err := loadCases(set)
	require.NoError(t, err)
	want := map[string]int{"loglikelihood": len(set.Manifest.Loglikelihood)}
	for _, rc := range cases {
		if len(rc.Rows) > 0 {
			want["prompt_logprobs"]++
		}
		if rc.Gen != nil {
			want["generation"]++
		}
		if len(rc.Rows) > 0 || rc.Gen != nil {
			want["top_logprobs"]++
		}
	}
	seen := map[string]int{}
	for _, r := range rep.Results {
		seen[r.Name]++
		require.Positive(t, r.Compared, "%s %s compared nothing", r.Name, r.Case)
	}
	require.Equal(t, want, seen)
}

// greedyMoves reports which cases' greedy continuations a fault changes,
// from the faulted model itself.
func greedyMoves(t *testing.T, fault model.Fault) []string {
	t.Helper()
	m, tok := tinyModel(t, fault)
	set := tinySet(t)
	cases, err := loadCases(set)
	require.NoError(t, err)
	var moved []string
	for _, rc := range cases {
		if rc.Gen == nil {
			continue
		}
		res, err := generation.Generate(context.Background(), generation.NewModelDecoder(m), tok,
			generation.Request{Prompt: rc.Tokens, MaxTokens: rc.GenN, Params: sampling.Params{Temperature: 0}}, nil)
		require.NoError(t, err)
		if !slices.Equal(res.Tokens, rc.Gen.Tokens[:rc.GenN]) {
			moved = append(moved, rc.ID)
		}
	}
	return moved
}

// TestProbeCatchesFaults: a server whose model has a classic porting bug
// fails. Through an API with log-probabilities the first failure is at
// checkpoint 9 whatever the bug. The worker API shows only greedy ids: it
// fails exactly the cases whose greedy continuation the bug moves (at 10
// or 12, with the margins), and cannot see a bug that moves none.
func TestProbeCatchesFaults(t *testing.T) {
	faults := []model.Fault{model.FaultErfGELU, model.FaultTransposedProj, model.FaultNoCausalMask,
		model.FaultAttnScale, model.FaultLayerNormEps, model.FaultNoResidual}
	for _, f := range faults {
		own, tgi := serve(t, f), tgiServer(t, f)
		moved := greedyMoves(t, f)
		for _, tc := range []struct{ api, endpoint string }{{"openai", own}, {"llorch", own}, {"tgi", tgi}, {"worker", own}} {
			t.Run(f.String()+"/"+tc.api, func(t *testing.T) {
				// The faults are the model's; invariance is tested on its own.
				rep, err := Run(context.Background(), tinySet(t), Options{Endpoint: tc.endpoint, API: tc.api, NoInvariance: true})
				require.NoError(t, err)
				require.Empty(t, rep.Invariance)
				if tc.api != "worker" {
					require.False(t, rep.Passed)
					require.Equal(t, 9, rep.Failures()[0].Checkpoint, "%+v", rep.Failures()[0])
					return
				}
				var failed []string
				for _, r := range rep.Failures() {
					require.Contains(t, []int{10, 12}, r.Checkpoint)
					require.Contains(t, r.Message, "top-1 − top-2 at step")
					if !slices.Contains(failed, r.Case) {
						failed = append(failed, r.Case)
					}
				}
				slices.Sort(failed)
				slices.Sort(moved)
				require.Equal(t, moved, failed)
				require.Equal(t, len(moved) == 0, rep.Passed)
			})
		}
	}
}

// TestProbeBadEndpoints: unreachable, erroring or garbage-answering servers
// are errors, never a pass.
func TestProbeBadEndpoints(t *testing.T) {
	_, tok := tinyModel(t, model.FaultNone)
	for _, tc := range badEndpoints(t) {
		t.Run(tc.name, func(t *testing.T) {
			opt := Options{Endpoint: tc.endpoint, API: tc.api, Tokenizer: tok}
			if tc.api == "ollama" {
				opt.Model = "m" // else asked of /api/tags
			}
			rep, err := Run(context.Background(), tinySet(t), opt)
			if tc.fails != 0 {
				require.NoError(t, err)
				require.False(t, rep.Passed)
				require.Equal(t, tc.fails, rep.Failures()[0].Checkpoint, "%+v", rep.Failures()[0])
				require.Contains(t, rep.Failures()[0].Message+rep.Failures()[0].Name, tc.says)
				return
			}
			require.Error(t, err)
			require.True(t, errors.Is(err, ErrServer), "%v", err)
			require.Contains(t, err.Error(), tc.says)
		})
	}
}
