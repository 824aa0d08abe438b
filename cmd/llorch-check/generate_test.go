package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/internal/fixture"
	"github.com/llorch/llorch-check/references"
)

// runGenerate runs the generate command in-process. Until it is wired into
// the root command this calls newGenerateCmd directly.
func runGenerateCLI(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errb bytes.Buffer
	cmd := newGenerateCmd()
	cmd.SetArgs(append([]string{"--model", fixture.TinyModel()}, args...))
	cmd.SetOut(&out)
	cmd.SetErr(&errb)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	err = cmd.ExecuteContext(context.Background())
	return out.String(), errb.String(), err
}

func generateJSONDoc(t *testing.T, args ...string) generateJSON {
	t.Helper()
	out, stderr, err := runGenerateCLI(t, append(args, "--json")...)
	require.NoError(t, err, stderr)
	var doc generateJSON
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&doc), "stdout: %s", out)
	require.False(t, dec.More(), "stdout holds one document and nothing else: %s", out)
	return doc
}

// TestGenerateGreedyMatchesReference: the command's greedy output is
// checkpoint 12's committed continuation.
func TestGenerateGreedyMatchesReference(t *testing.T) {
	set, err := references.Open(fixture.TinyReferences())
	require.NoError(t, err)
	want := set.Manifest.Generation.Results[0]
	c, ok := set.Case(want.Case)
	require.True(t, ok)
	ids, _ := json.Marshal(c.Tokens)

	doc := generateJSONDoc(t, "--tokens", string(ids), "--max-tokens", "16", "--temperature", "0")
	require.Equal(t, want.Tokens, doc.Tokens)
	require.Equal(t, *want.Text, doc.Text)
	require.Equal(t, "max_tokens", doc.StopReason)
	require.Equal(t, len(c.Tokens), doc.PromptTokens)

	// The same from the prompt text, streamed.
	out, stderr, err := runGenerateCLI(t, "--prompt", *c.Prompt, "--max-tokens", "16", "--temperature", "0")
	require.NoError(t, err)
	require.Equal(t, *want.Text+"\n", out, "stdout is the generated text only")
	require.Contains(t, stderr, fmt.Sprintf("greedy, %d prompt tokens", len(c.Tokens)))
	require.Contains(t, stderr, "16 tokens, stop: max_tokens")
}

// TestGenerateReportsSeedOnlyWhenSampling: greedy decoding draws nothing,
// so neither stderr nor --json reports a seed for it, given or drawn;
// sampling reports the seed it used.
func TestGenerateReportsSeedOnlyWhenSampling(t *testing.T) {
	for _, tc := range []struct {
		name     string
		args     []string
		wantSeed bool
	}{
		{"greedy", []string{"--temperature", "0"}, false},
		{"greedy with a seed", []string{"--temperature", "0", "--seed", "7"}, false},
		{"sampled", []string{"--temperature", "0.8"}, true},
		{"sampled with a seed", []string{"--temperature", "0.8", "--seed", "7"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"--prompt", "Hello.", "--max-tokens", "2"}, tc.args...)
			_, stderr, err := runGenerateCLI(t, args...)
			require.NoError(t, err)
			require.Equal(t, tc.wantSeed, strings.Contains(stderr, "seed"), "stderr: %s", stderr)
			require.Equal(t, !tc.wantSeed, strings.Contains(stderr, "greedy, 2 prompt tokens"), "stderr: %s", stderr)
			out, _, err := runGenerateCLI(t, append(args, "--json")...)
			require.NoError(t, err)
			var doc map[string]any
			require.NoError(t, json.Unmarshal([]byte(out), &doc))
			_, hasSeed := doc["seed"]
			require.Equal(t, tc.wantSeed, hasSeed, "document: %s", out)
		})
	}
}

func TestGenerateStop(t *testing.T) {
	// Greedy "Hello." continues "Beast praying praying ..." (checkpoint 12).
	doc := generateJSONDoc(t, "--prompt", "Hello.", "--max-tokens", "16", "--temperature", "0", "--stop", "ng pr", "--stop", "zzz")
	require.Equal(t, "Beast prayi", doc.Text)
	require.Equal(t, "stop_sequence", doc.StopReason)
	require.Equal(t, "ng pr", doc.StopSequence)
	require.Len(t, doc.Tokens, 3, "Beast, praying, praying: the third completes the stop string")

	out, stderr, err := runGenerateCLI(t, "--prompt", "Hello.", "--max-tokens", "16", "--temperature", "0", "--stop", "ng pr")
	require.NoError(t, err)
	require.Equal(t, "Beast prayi\n", out)
	require.Contains(t, stderr, `stop: stop_sequence "ng pr"`)
}

func TestGenerateSeed(t *testing.T) {
	args := []string{"--prompt", "Once upon a time", "--max-tokens", "8", "--temperature", "0.9", "--top-p", "0.95"}
	a := generateJSONDoc(t, append(args, "--seed", "42")...)
	b := generateJSONDoc(t, append(args, "--seed", "42")...)
	require.Equal(t, a, b, "same seed, same output")
	require.NotNil(t, a.Seed)
	require.EqualValues(t, 42, *a.Seed)

	drawn := generateJSONDoc(t, args...)
	require.NotNil(t, drawn.Seed, "a drawn seed is reported")
	replay := generateJSONDoc(t, append(args, "--seed", jsonNumber(*drawn.Seed))...)
	require.Equal(t, drawn.Tokens, replay.Tokens, "the reported seed replays the generation")

	if testing.Short() {
		return
	}
	// And in another process.
	cmd := exec.Command(os.Args[0], "-test.run=^TestGenerateChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), generateChildEnv+"="+strings.Join(append(args, "--seed", "42", "--json"), "\x1f"))
	out, err := cmd.Output()
	require.NoError(t, err, "child: %s", out)
	var child generateJSON
	require.NoError(t, json.NewDecoder(bytes.NewReader(out)).Decode(&child), "child output: %s", out)
	require.Equal(t, a, child)
}

// generateChildEnv holds \x1f-separated generate arguments for
// TestGenerateChild, the second process of TestGenerateSeed.
const generateChildEnv = "LLORCH_GENERATE_CHILD_ARGS"

func TestGenerateChild(t *testing.T) {
	v := os.Getenv(generateChildEnv)
	if v == "" {
		t.Skip("only run as TestGenerateSeed's subprocess")
	}
	out, stderr, err := runGenerateCLI(t, strings.Split(v, "\x1f")...)
	require.NoError(t, err, stderr)
	_, err = os.Stdout.WriteString(out)
	require.NoError(t, err)
}

func jsonNumber(v uint64) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestGenerateDefaultMaxTokens: without --max-tokens, 100 tokens, or the
// room the context leaves when that is less.
func TestGenerateDefaultMaxTokens(t *testing.T) {
	for _, tt := range []struct {
		prompt string
		want   int
	}{
		{"Hello.", 100},
		{strings.Repeat(" word", 120), 8},
	} {
		doc := generateJSONDoc(t, "--prompt", tt.prompt, "--temperature", "0", "--seed", "1")
		if doc.StopReason == "eos" {
			require.LessOrEqual(t, len(doc.Tokens), tt.want)
			continue
		}
		require.Equal(t, "max_tokens", doc.StopReason)
		require.Len(t, doc.Tokens, tt.want)
	}
}

// TestGenerateLogProbs: --logprobs N gives each token's log-probability
// and N alternatives, most probable first; greedy picks the first.
func TestGenerateLogProbs(t *testing.T) {
	doc := generateJSONDoc(t, "--prompt", "Hello.", "--max-tokens", "6", "--temperature", "0", "--logprobs", "3")
	require.Len(t, doc.LogProbs, len(doc.Tokens))
	for i, lp := range doc.LogProbs {
		require.Equal(t, doc.Tokens[i], lp.ID)
		require.Len(t, lp.Top, 3)
		require.Equal(t, lp.ID, lp.Top[0].ID, "greedy takes the most probable")
		require.Equal(t, lp.LogProb, lp.Top[0].LogProb)
		require.LessOrEqual(t, lp.Top[0].LogProb, 0.0)
		require.GreaterOrEqual(t, lp.Top[0].LogProb, lp.Top[1].LogProb)
		require.GreaterOrEqual(t, lp.Top[1].LogProb, lp.Top[2].LogProb)
	}
	plain := generateJSONDoc(t, "--prompt", "Hello.", "--max-tokens", "6", "--temperature", "0")
	require.Equal(t, plain.Tokens, doc.Tokens)
	require.Empty(t, plain.LogProbs)
}

func TestGenerateInvalid(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"negative temperature", []string{"--prompt", "a", "--max-tokens", "2", "--temperature", "-1"}, "temperature -1"},
		{"top-p above 1", []string{"--prompt", "a", "--max-tokens", "2", "--top-p", "1.5"}, "top_p 1.5"},
		{"top-k beyond the vocabulary", []string{"--prompt", "a", "--max-tokens", "2", "--top-k", "50258"}, "top_k 50258"},
		{"repetition penalty 0", []string{"--prompt", "a", "--max-tokens", "2", "--repetition-penalty", "0"}, "repetition_penalty 0"},
		{"five stop strings", []string{"--prompt", "a", "--max-tokens", "2", "--stop", "1", "--stop", "2", "--stop", "3", "--stop", "4", "--stop", "5"}, "at most 4"},
		{"beyond the context", []string{"--tokens", "1,2,3", "--max-tokens", "126"}, "prompt of 3 tokens + 126 new tokens = 129 exceeds the context length 128"},
		{"max-tokens 0", []string{"--prompt", "a", "--max-tokens", "0"}, "max_tokens 0"},
		{"logprobs without json", []string{"--prompt", "a", "--logprobs", "2"}, "--logprobs needs --json"},
		{"logprobs 21", []string{"--prompt", "a", "--json", "--logprobs", "21"}, "--logprobs 21: must be 0..20"},
		{"a prompt filling the context", []string{"--prompt", strings.Repeat(" word", 128)}, "prompt of 128 tokens leaves no room"},
		{"no prompt", []string{"--max-tokens", "2"}, "prompt"},
		{"both prompts", []string{"--prompt", "a", "--tokens", "1", "--max-tokens", "2"}, "prompt"},
		{"empty prompt", []string{"--prompt", "", "--max-tokens", "2"}, "prompt: empty"},
		{"bad ids", []string{"--tokens", "1,x", "--max-tokens", "2"}, "--tokens"},
		{"id outside the vocabulary", []string{"--tokens", "50257", "--max-tokens", "2"}, "token 50257 at index 0"},
		{"missing model", []string{"--model", "/nonexistent", "--prompt", "a", "--max-tokens", "2"}, "nonexistent"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, _, err := runGenerateCLI(t, tt.args...)
			require.ErrorContains(t, err, tt.want)
			require.Empty(t, out)
		})
	}
}

func TestGenerateCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out, errb bytes.Buffer
	cmd := newGenerateCmd()
	cmd.SetArgs([]string{"--model", fixture.TinyModel(), "--prompt", "Hello.", "--max-tokens", "4", "--json"})
	cmd.SetOut(&out)
	cmd.SetErr(&errb)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	err := cmd.ExecuteContext(ctx)
	// Cancelled before the model finished loading: loading stops, and
	// nothing is printed rather than a document of nothing.
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorContains(t, err, "loading stopped")
	require.Empty(t, out.String())
}

// TestGenerateCountsInEnglish: stderr's counts agree with their number
// ("1 prompt token", not "1 prompt tokens").
func TestGenerateCountsInEnglish(t *testing.T) {
	for _, tc := range []struct {
		tokens, maxTokens string
		want              []string
	}{
		{"15496", "1", []string{"greedy, 1 prompt token\n", "1 token, stop: max_tokens"}},
		{"15496,13", "2", []string{"greedy, 2 prompt tokens\n", "2 tokens, stop: max_tokens"}},
	} {
		_, stderr, err := runGenerateCLI(t, "--tokens", tc.tokens, "--max-tokens", tc.maxTokens, "--temperature", "0")
		require.NoError(t, err)
		for _, w := range tc.want {
			require.Contains(t, stderr, w)
		}
	}
}
