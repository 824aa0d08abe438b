package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeServer streams canned /v1/completions chunks in one of the two wire
// styles serveload meets: "ours" (usage in its own chunk, only with
// include_usage; ignore_eos refused with a 400 naming it) and "llama"
// (usage and timings in the last text-less chunk; ignore_eos taken).
type fakeServer struct {
	style      string
	reject     int64 // every reject-th streaming request gets a 429 (0: none)
	prefill    time.Duration
	longDelay  time.Duration // extra first-token wait for prompts over 100 words
	gap        time.Duration
	streamReqs atomic.Int64
}

func (f *fakeServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/v1/models":
		fmt.Fprint(w, `{"object":"list","data":[{"id":"fake","max_model_len":1024}]}`)
		return
	case "/health":
		if f.style == "ours" {
			fmt.Fprint(w, `{"status":"healthy","kv_cache":{"bytes":0,"peak_bytes":3000000}}`)
		} else {
			fmt.Fprint(w, `{"status":"ok"}`)
		}
		return
	case "/v1/completions":
	default:
		http.NotFound(w, r)
		return
	}
	var req map[string]any
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if _, ok := req["ignore_eos"]; ok && f.style == "ours" {
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, `{"error":{"message":"ignore_eos: is not a parameter of this endpoint","param":"ignore_eos"}}`)
		return
	}
	if req["model"] != "fake" {
		http.Error(w, "model", http.StatusNotFound)
		return
	}
	if req["stream"] != true {
		fmt.Fprint(w, `{"choices":[{"text":"x"}]}`)
		return
	}
	if n := f.streamReqs.Add(1); f.reject > 0 && n%f.reject == 0 {
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusTooManyRequests)
		fmt.Fprint(w, `{"error":{"message":"queue full"}}`)
		return
	}
	promptWords := len(strings.Fields(req["prompt"].(string)))
	maxTokens := int(req["max_tokens"].(float64))
	w.Header().Set("Content-Type", "text/event-stream")
	fl := w.(http.Flusher)
	wait := f.prefill
	if promptWords > 100 {
		wait += f.longDelay
	}
	time.Sleep(wait)
	for i := range maxTokens {
		if i > 0 {
			time.Sleep(f.gap)
		}
		text := fmt.Sprintf(" t%d", i)
		if i == 1 {
			text = "" // held back to a UTF-8 boundary: a token without text
		}
		fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"text\":%q,\"finish_reason\":null}]}\n\n", text)
		fl.Flush()
	}
	usage := fmt.Sprintf(`"usage":{"prompt_tokens":%d,"completion_tokens":%d}`, promptWords, maxTokens)
	switch f.style {
	case "ours":
		fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"text\":\"\",\"finish_reason\":\"length\"}]}\n\n")
		if so, _ := req["stream_options"].(map[string]any); so["include_usage"] == true {
			fmt.Fprintf(w, "data: {\"choices\":[],%s}\n\n", usage)
		}
	case "llama":
		fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"text\":\"\",\"finish_reason\":\"length\"}],%s,\"timings\":{\"prompt_n\":5}}\n\n", usage)
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
}

// runFake runs serveload's command line against srv and returns the
// table and the JSON summary.
func runFake(t *testing.T, srv *fakeServer, args ...string) (string, summary) {
	t.Helper()
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	path := filepath.Join(t.TempDir(), "out.json")
	o, err := parseFlags(append([]string{"--url", ts.URL, "--json", path, "--label", srv.style}, args...))
	require.NoError(t, err)
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), o, &out, io.Discard))
	sm, err := readSummary(path)
	require.NoError(t, err)
	return out.String(), sm
}

func TestRunCountsAndLatencies(t *testing.T) {
	for _, tc := range []struct {
		style     string
		ignoreEOS bool
		cached    bool
	}{
		{"ours", false, false},
		{"llama", true, true},
	} {
		t.Run(tc.style, func(t *testing.T) {
			// 17 streams: the warm-up, then 8 a level; the 5th, 10th and
			// 15th are refused (one in level 1, two in level 4).
			srv := &fakeServer{style: tc.style, reject: 5, prefill: 20 * time.Millisecond, gap: 2 * time.Millisecond}
			table, sm := runFake(t, srv, "--clients", "1,4", "--requests", "8", "--max-tokens", "5")
			assert.Equal(t, tc.ignoreEOS, sm.IgnoreEOS, "ignore_eos probe")
			assert.Equal(t, "fake", sm.Model, "model from /v1/models")
			require.Len(t, sm.Levels, 2)
			for i, wantErr := range []int{1, 2} {
				l := sm.Levels[i]
				assert.Equal(t, 8, l.Requests)
				assert.Equal(t, 8-wantErr, l.OK)
				assert.Equal(t, map[string]int{"429": wantErr}, l.Errors)
				// usage.completion_tokens (5), not the 4 chunks with text.
				assert.Equal(t, 5*(8-wantErr), l.Tokens)
				assert.GreaterOrEqual(t, float64(l.TTFTp50), 20.0, "TTFT includes the prefill")
				assert.LessOrEqual(t, float64(l.TTFTp50), float64(l.TTFTp99))
				assert.LessOrEqual(t, float64(l.ITLp50), float64(l.ITLp99))
				assert.Greater(t, float64(l.ITLp50), 0.0)
				assert.Greater(t, float64(l.TokensPerSec), 0.0)
				assert.Equal(t, tc.cached, l.CachedTokens != nil)
				assert.Nil(t, l.LongTTFT, "only long-prompt reports the long request")
			}
			assert.Contains(t, table, "429:1")
			assert.Contains(t, table, "429:2")
		})
	}
}

// With --pid, each level has the process's memory; with --model-bytes and
// a server that reports its KV cache's peak, the bound the peak should
// stay within: (model + KV peak) × 1.1.
func TestMemoryBound(t *testing.T) {
	for _, tc := range []struct {
		style       string
		kv, bound   *int64
		boundColumn string
	}{
		{"ours", ptr[int64](3000000), ptr[int64](4400000), "4"},
		{"llama", nil, nil, "-"},
	} {
		t.Run(tc.style, func(t *testing.T) {
			srv := &fakeServer{style: tc.style}
			table, sm := runFake(t, srv, "--clients", "1", "--requests", "2", "--max-tokens", "2",
				"--pid", strconv.Itoa(os.Getpid()), "--model-bytes", "1000000")
			require.Len(t, sm.Levels, 1)
			l := sm.Levels[0]
			require.NotNil(t, l.HWMBytes)
			assert.Positive(t, *l.HWMBytes, "this test's own VmHWM")
			assert.Equal(t, tc.kv, l.KVPeakBytes)
			assert.Equal(t, tc.bound, l.BoundBytes)
			lines := strings.Split(strings.TrimSpace(table), "\n")
			require.GreaterOrEqual(t, len(lines), 3)
			head, row := strings.Fields(lines[1]), strings.Fields(lines[2])
			assert.Equal(t, "bound", head[len(head)-2], "the last column")
			assert.Equal(t, tc.boundColumn, row[len(row)-1], "bound MB, whole megabytes")
		})
	}
}

func ptr[T any](v T) *T { return &v }

// The stream's own timeline: sent, then every chunk in order, then end.
func TestStreamTimeline(t *testing.T) {
	srv := &fakeServer{style: "ours", prefill: 10 * time.Millisecond, gap: 3 * time.Millisecond}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	c := &client{http: ts.Client(), url: ts.URL, model: "fake"}
	r := c.stream(context.Background(), time.Now(), request{prompt: "a b c", maxTokens: 6}, nil)
	require.True(t, r.ok(), r.errKind)
	assert.Equal(t, 200, r.status)
	assert.Equal(t, 6, r.tokens, "usage wins over the 5 chunks with text")
	require.Len(t, r.chunks, 5)
	ttft, ok := r.ttft()
	require.True(t, ok)
	assert.GreaterOrEqual(t, ttft, 10*time.Millisecond)
	prev := r.sent
	for _, at := range r.chunks {
		assert.Greater(t, at, prev)
		prev = at
	}
	assert.GreaterOrEqual(t, r.end, prev)

	// Without include_usage's chunk the count is the chunks with text.
	srv.style = "bare"
	r = c.stream(context.Background(), time.Now(), request{prompt: "a b c", maxTokens: 6}, nil)
	require.True(t, r.ok(), r.errKind)
	assert.Equal(t, 5, r.tokens)
}

func TestSharedPrefixCachedTokens(t *testing.T) {
	srv := &fakeServer{style: "llama", gap: time.Millisecond}
	_, sm := runFake(t, srv, "--clients", "2", "--requests", "4", "--max-tokens", "3",
		"--scenario", "shared-prefix", "--prefix-tokens", "50", "--prompt-tokens", "10")
	require.Len(t, sm.Levels, 1)
	require.NotNil(t, sm.Levels[0].CachedTokens)
	// The fake evaluates 5 of each 60-word prompt: 55 reused, 4 requests.
	assert.Equal(t, 4*55, *sm.Levels[0].CachedTokens)
}

func TestLongPromptStallWindow(t *testing.T) {
	srv := &fakeServer{style: "ours", prefill: 2 * time.Millisecond, longDelay: 120 * time.Millisecond, gap: 4 * time.Millisecond}
	table, sm := runFake(t, srv, "--clients", "3", "--requests", "7", "--max-tokens", "20",
		"--scenario", "long-prompt", "--long-tokens", "300")
	require.Len(t, sm.Levels, 1)
	l := sm.Levels[0]
	assert.Equal(t, 7, l.Requests)
	assert.Equal(t, 7, l.OK)
	assert.Equal(t, 7*20, l.Tokens)
	require.NotNil(t, l.LongTTFT)
	assert.GreaterOrEqual(t, float64(*l.LongTTFT), 120.0)
	assert.Less(t, float64(l.TTFTp99), 120.0, "the long prompt's wait is not in the short prompts' TTFT")
	require.NotNil(t, l.DuringGapsCnt)
	assert.Positive(t, *l.DuringGapsCnt, "short streams decode while the long one waits")
	assert.LessOrEqual(t, float64(*l.DuringITLp99), float64(*l.DuringITLmax))
	assert.Equal(t, 300, sm.LongTokens)
	assert.Contains(t, table, "ITL p99 during")
}

func TestGapsDuring(t *testing.T) {
	d := func(v int) time.Duration { return time.Duration(v) * time.Millisecond }
	long := result{req: request{long: true}, sent: d(100), chunks: []time.Duration{d(200), d(210)}, end: d(220)}
	short := result{chunks: []time.Duration{d(50), d(60), d(90), d(150), d(199), d(205), d(300)}}
	// Gaps overlapping (100, 200): 90->150 and 150->199 and 199->205.
	assert.Equal(t, []float64{60, 49, 6}, gapsDuring([]result{short, long}, &long))
	assert.Nil(t, gapsDuring([]result{short}, nil))
	// No first token: the window runs to the long request's end.
	noTok := result{req: request{long: true}, sent: d(250), end: d(260)}
	assert.Equal(t, []float64{95}, gapsDuring([]result{short, noTok}, &noTok))
}

func TestFitContext(t *testing.T) {
	s := settings{scenario: longPrompt, promptTokens: 32, maxTokens: 64, longTokens: 1000}
	require.NoError(t, fitContext(&s, 1024, io.Discard))
	assert.Equal(t, 1024-64-16, s.longTokens)
	s = settings{scenario: sharedPrefix, promptTokens: 32, maxTokens: 64, prefixTokens: 2000}
	assert.Error(t, fitContext(&s, 1024, io.Discard))
	s = settings{scenario: longPrompt, promptTokens: 32, maxTokens: 64, longTokens: 1000}
	require.NoError(t, fitContext(&s, 0, io.Discard), "unknown context: left alone")
	assert.Equal(t, 1000, s.longTokens)
}

func TestParseFlags(t *testing.T) {
	o, err := parseFlags([]string{"--url", "http://h:1/", "--clients", "1, 8,32"})
	require.NoError(t, err)
	assert.Equal(t, []int{1, 8, 32}, o.clients)
	assert.Equal(t, "http://h:1", o.url)
	assert.Equal(t, 8, o.requestsFor(1))
	assert.Equal(t, 96, o.requestsFor(32))
	for _, bad := range [][]string{
		{},
		{"--url", "u", "--clients", "0"},
		{"--url", "u", "--scenario", "nope"},
		{"--url", "u", "--ignore-eos", "maybe"},
		{"--url", "u", "extra"},
	} {
		_, err := parseFlags(bad)
		assert.Error(t, err, "%q", bad)
	}
}
