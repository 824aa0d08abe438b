package probe

import (
	"context"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/checkpoints"
	"github.com/llorch/llorch-check/model"
)

// TestNextSteps: a passing engine gets no advice; a faulty one is told
// where it first parts from the reference and how to bisect it; a greedy
// flip at a margin inside the log-probability error is called a near-tie,
// one outside it is not.
func TestNextSteps(t *testing.T) {
	rep, err := Run(context.Background(), tinySet(t), Options{Endpoint: serve(t, model.FaultNone)})
	require.NoError(t, err)
	require.Empty(t, rep.Next)

	rep, err = Run(context.Background(), tinySet(t), Options{Endpoint: serve(t, model.FaultAttnScale)})
	require.NoError(t, err)
	require.False(t, rep.Passed)
	require.NotEmpty(t, rep.Next)
	require.Contains(t, rep.Next[0], "first part at checkpoint 9")
	require.Contains(t, rep.Next[len(rep.Next)-1], "into engine-dump")
	require.Contains(t, rep.Next[len(rep.Next)-1], "llorch-check bisect --dump engine-dump --references "+rep.References)

	margin := func(v float64) *checkpoints.Float { f := checkpoints.Float(v); return &f }
	for _, tc := range []struct {
		margin  float64
		nearTie bool
	}{{1e-4, true}, {0.5, false}} {
		r := &checkpoints.Report{Results: []checkpoints.Result{
			{Checkpoint: 9, Name: "prompt_logprobs", Case: "a", Status: checkpoints.StatusFailed, MaxAbsErr: 0.01,
				Worst: &checkpoints.Element{Index: []int{3}, Axes: []string{"position"}, Got: -1, Want: -1.01}},
			{Checkpoint: 12, Name: "generation", Case: "a", Status: checkpoints.StatusFailed, ServerMargin: margin(tc.margin),
				Worst: &checkpoints.Element{Index: []int{7}, Axes: []string{"step"}, Got: 5, Want: 6}},
		}}
		next := strings.Join(nextSteps(r, bisectCommand("refs", false)), "\n")
		require.Contains(t, next, "greedy generation parts from the reference at step 7 (token 5 against 6)")
		require.Equal(t, tc.nearTie, strings.Contains(next, "near-tie"), next)
	}
}

// TestShellQuote: a quoted word reaches a program as the string it was,
// through a real shell, whatever it holds.
func TestShellQuote(t *testing.T) {
	for _, s := range []string{"refs/tiny-gpt2", "/tmp/a b", "(built in) references/tiny-gpt2", "it's", "$HOME", "~/refs", "a\nb", "*", "", "x;rm -rf y"} {
		out, err := exec.Command("bash", "-c", "printf %s "+shellQuote(s)).Output()
		require.NoError(t, err, "%q quoted as %s", s, shellQuote(s))
		require.Equal(t, s, string(out), "quoted as %s", shellQuote(s))
	}
	require.Equal(t, "refs/tiny-gpt2", shellQuote("refs/tiny-gpt2"), "a plain path stays as it is")
}
