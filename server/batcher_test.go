package server_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/server"
)

// batchedSteps scrapes llorch_decode_batch_size: decode steps that
// advanced more than one sequence.
func batchedSteps(t *testing.T, ts *testServer) int {
	t.Helper()
	resp := ts.do(t, "GET", "/metrics", nil)
	defer resp.Body.Close()
	var ones, all int
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		name, val, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		switch name {
		case `llorch_decode_batch_size_bucket{model_name="tiny-gpt2",le="1"}`:
			ones, _ = strconv.Atoi(val)
		case `llorch_decode_batch_size_count{model_name="tiny-gpt2"}`:
			all, _ = strconv.Atoi(val)
		}
	}
	require.NoError(t, sc.Err())
	return all - ones
}

func greedy(t *testing.T, ts *testServer, prompt string) string {
	t.Helper()
	out := ts.call(t, "POST", "/generate", map[string]any{"prompts": []string{prompt}, "max_tokens": 60, "temperature": 0}, http.StatusOK)
	return out["completions"].([]any)[0].(string)
}

// TestConcurrentDecodeIsBatched: concurrent sequences share decode steps
// and still produce exactly the texts they produce alone.
func TestConcurrentDecodeIsBatched(t *testing.T) {
	ts := start(t, server.Config{Parallel: 4})
	leak := checkNoLeak(t, ts)
	prompts := []string{"Hello", "Once upon a time", "The library opened in 1887", "Hi"}
	want := make([]string, len(prompts))
	for i, p := range prompts {
		want[i] = greedy(t, ts, p)
	}
	require.Zero(t, batchedSteps(t, ts), "one sequence at a time never batches")

	// Requests start at slightly different times, so a round may (rarely)
	// not overlap; texts must match in every round.
	for round := 0; round < 10 && batchedSteps(t, ts) == 0; round++ {
		got := make([]string, len(prompts))
		var wg sync.WaitGroup
		for i, p := range prompts {
			wg.Go(func() { got[i] = greedy(t, ts, p) })
		}
		wg.Wait()
		require.Equal(t, want, got, "round %d", round)
	}
	require.Positive(t, batchedSteps(t, ts), "no decode step advanced more than one sequence")
	leak()
}

// TestCancelOneOfBatch: cancelling one of several batched streams ends it
// promptly, frees its slot, and the others run to their end with the
// texts they produce alone.
func TestCancelOneOfBatch(t *testing.T) {
	ts := start(t, server.Config{Parallel: 3, MaxQueue: 0, TokenDelay: 5 * time.Millisecond})
	leak := checkNoLeak(t, ts)
	const prompt = "Once upon a time"
	alone := ts.execute(t, context.Background(), map[string]any{"job_id": "alone", "prompt": prompt, "max_tokens": 60, "temperature": 0})
	_, want, terminal, _ := alone.run(t)
	require.Equal(t, "end", terminal)

	streams := make([]*stream, 3)
	for i := range streams {
		streams[i] = ts.execute(t, context.Background(), map[string]any{
			"job_id": fmt.Sprint("j", i), "prompt": prompt, "max_tokens": 60, "temperature": 0})
		name, _ := streams[i].next(t)
		require.Equal(t, "started", name)
	}
	first := make([]string, len(streams))
	// Read a token from each until a decode step has served several of
	// them: requests start at slightly different times, and on a loaded
	// machine the first steps may not overlap.
	for k := 0; k == 0 || (k < 40 && batchedSteps(t, ts) == 0); k++ {
		for i, st := range streams {
			name, data := st.next(t)
			require.Equal(t, "token", name)
			first[i] += data["t"].(string)
		}
	}
	require.Positive(t, batchedSteps(t, ts), "the streams shared decode steps")
	sent := time.Now()
	ts.call(t, "POST", "/cancel", map[string]any{"job_id": "j1"}, http.StatusAccepted)
	_, _, terminal, data := streams[1].run2(t)
	require.Less(t, time.Since(sent), cancelBound)
	require.Equal(t, "error", terminal)
	require.Equal(t, "CANCELLED", data["code"])

	// Its slot is free while the others still run: a fourth sequence fits.
	require.Eventually(t, func() bool {
		return ts.call(t, "GET", "/health", nil, http.StatusOK)["running"].(float64) == 2
	}, 5*time.Second, time.Millisecond)
	extra := ts.execute(t, context.Background(), map[string]any{"job_id": "extra", "prompt": "Hi", "max_tokens": 3})
	_, _, terminal, _ = extra.run(t)
	require.Equal(t, "end", terminal)

	for _, i := range []int{0, 2} {
		_, tokens, terminal, _ := streams[i].run2(t)
		require.Equal(t, "end", terminal)
		require.Equal(t, tokenText(want), first[i]+tokenText(tokens), "stream %d", i)
		streams[i].resp.Body.Close()
	}
	streams[1].resp.Body.Close()
	alone.resp.Body.Close()
	require.Eventually(t, func() bool {
		return ts.call(t, "GET", "/health", nil, http.StatusOK)["running"].(float64) == 0
	}, 5*time.Second, 5*time.Millisecond)
	leak()
}
