//go:build browser

package browser

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/internal/fixture"
	"github.com/llorch/llorch-check/loader"
	"github.com/llorch/llorch-check/references"
	"github.com/llorch/llorch-check/server"
	"github.com/llorch/llorch-check/tokenizer"
)

// chromium finds Debian's chromium (or $CHROMIUM). Missing it fails in CI
// and skips elsewhere, loudly either way.
func chromium(t *testing.T) string {
	t.Helper()
	candidates := []string{os.Getenv("CHROMIUM"), "chromium", "chromium-browser", "google-chrome"}
	for _, c := range candidates {
		if c == "" {
			continue
		}
		if p, err := exec.LookPath(c); err == nil {
			return p
		}
	}
	msg := "chromium not found (apt-get install -y --no-install-recommends chromium, or set CHROMIUM)"
	if os.Getenv("CI") == "true" {
		t.Fatal("CI: " + msg)
	}
	t.Skip("SKIPPED: " + msg)
	return ""
}

// pageState is what the page records on <body> and in #generated.
type pageState struct {
	State     string `json:"state"`
	Tokens    string `json:"tokens"`
	Chunks    string `json:"chunks"`
	LL        string `json:"ll"`
	Generated string `json:"generated"`
	Status    string `json:"status"`
}

const stateJS = `JSON.stringify({state: document.body.dataset.state || "", tokens: document.body.dataset.tokens || "",
  chunks: document.body.dataset.chunks || "", ll: document.body.dataset.ll || "",
  generated: (document.getElementById("generated") || {}).textContent || "",
  status: document.getElementById("status").textContent})`

// poll opens pageURL and evaluates expr (a JSON string) into v until done
// says so, in real time (a virtual time budget would not wait for a
// streamed response).
func poll[T any](t *testing.T, c *cdp, pageURL, expr string, done func(T) bool) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	session, err := c.open(ctx, pageURL)
	require.NoError(t, err)
	return pollIn(ctx, t, c, session, expr, done)
}

// pollIn evaluates expr in an open page until done says so or ctx ends.
func pollIn[T any](ctx context.Context, t *testing.T, c *cdp, session, expr string, done func(T) bool) T {
	t.Helper()
	var v T
	var err error
	for {
		var raw string
		err = c.eval(ctx, session, expr, &raw)
		if err == nil && raw != "" {
			require.NoError(t, json.Unmarshal([]byte(raw), &v))
			if done(v) {
				return v
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("page did not finish: last state %+v, last error %v", v, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// visit polls the page at / for its state.
func visit(t *testing.T, c *cdp, pageURL string, done func(pageState) bool) pageState {
	t.Helper()
	return poll(t, c, pageURL, stateJS, done)
}

func TestPageInChromium(t *testing.T) {
	bin := chromium(t)
	m, err := loader.Load(fixture.TinyModel())
	require.NoError(t, err)
	tok, err := tokenizer.Load(fixture.TinyModel())
	require.NoError(t, err)
	set, err := references.Open(fixture.TinyReferences())
	require.NoError(t, err)
	// A per-token delay makes the stream last long enough (16 × 30 ms) for
	// the test to see the text grow while it is still running.
	srv := server.New(server.Config{TokenDelay: 30 * time.Millisecond})
	require.NoError(t, srv.SetModel(m, tok))
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()

	ref := set.Manifest.Generation.Results[0]
	c, ok := set.Case(ref.Case)
	require.True(t, ok)

	browser := launch(t, bin)

	t.Run("generate streams the greedy text", func(t *testing.T) {
		q := url.Values{"prompt": {*c.Prompt}, "max_tokens": {strconv.Itoa(len(ref.Tokens))}, "temperature": {"0"}, "autorun": {"1"}}
		// Watch the text grow: a partial text seen before the end is the
		// proof of streaming.
		var partial string
		st := visit(t, browser, ts.URL+"/?"+q.Encode(), func(s pageState) bool {
			if s.State == "running" && s.Generated != "" && partial == "" {
				partial = s.Generated
			}
			return s.State == "done" || s.State == "error"
		})
		require.Equal(t, "done", st.State, "status: %s", st.Status)
		require.Equal(t, strconv.Itoa(len(ref.Tokens)), st.Tokens)
		require.Equal(t, *ref.Text, st.Generated)
		require.NotEmpty(t, partial, "never saw a partial text: buffered, not streamed")
		require.True(t, strings.HasPrefix(*ref.Text, partial) && len(partial) < len(*ref.Text))
		chunks, _ := strconv.Atoi(st.Chunks)
		require.GreaterOrEqual(t, chunks, 2, "the stream arrived in one piece")
		t.Logf("%d tokens in %d network chunks; seen partially as %q", len(ref.Tokens), chunks, partial)
	})

	t.Run("max_tokens is bounded by the model's context", func(t *testing.T) {
		type field struct{ Model, Max string }
		got := poll(t, browser, ts.URL+"/", `JSON.stringify({model: document.getElementById("model").textContent,
			max: document.getElementById("max_tokens").max})`, func(f field) bool { return f.Model != "Model: loading…" })
		require.Equal(t, strconv.Itoa(m.Config.NPositions), got.Max, "the page says %q", got.Model)
	})

	t.Run("scorer agrees with the reference log-likelihood", func(t *testing.T) {
		p := set.Manifest.Loglikelihood[1]
		q := url.Values{"ll_context": {p.Context}, "ll_cont": {p.Continuation}, "autoscore": {"1"}}
		st := visit(t, browser, ts.URL+"/?"+q.Encode(), func(s pageState) bool { return s.LL != "" })
		ll, err := strconv.ParseFloat(st.LL, 64)
		require.NoError(t, err)
		require.InDelta(t, p.LL, ll, 1e-4)
	})
}
