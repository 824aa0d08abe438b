//go:build browser

package browser

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/internal/fixture"
	"github.com/llorch/llorch-check/loader"
	"github.com/llorch/llorch-check/server"
	"github.com/llorch/llorch-check/tokenizer"
)

// sdkDir is the official OpenAI SDK that make test-openai-compat pins
// (npm ci in e2e/openai-compat); its ES modules load in a page as is.
func sdkDir(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "openai-compat", "node_modules", "openai"))
	require.NoError(t, err)
	if _, err := os.Stat(filepath.Join(dir, "index.mjs")); err != nil {
		msg := "the openai package is not installed (npm ci --prefix e2e/openai-compat)"
		if os.Getenv("CI") == "true" {
			t.Fatal("CI: " + msg)
		}
		t.Skip("SKIPPED: " + msg)
	}
	return dir
}

// sdkPage calls the server at ?api= through the SDK, as a browser app
// would, and records what came back (or the error's class) on <body>.
const sdkPage = `<!doctype html><html><body><script type="module">
import OpenAI from '/openai/index.mjs';
const api = new URLSearchParams(location.search).get('api');
const client = new OpenAI({ baseURL: api + '/v1', apiKey: 'k', dangerouslyAllowBrowser: true, maxRetries: 0 });
const messages = [{ role: 'user', content: 'Hello' }];
const out = { state: 'error' };
try {
  const chat = await client.chat.completions.create({ messages, max_tokens: 6, temperature: 0 });
  out.chat = chat.choices[0].message.content;
  const stream = await client.chat.completions.create({ messages, max_tokens: 6, temperature: 0, stream: true });
  out.streamed = '';
  for await (const c of stream) out.streamed += c.choices[0]?.delta?.content ?? '';
  const emb = await client.embeddings.create({ input: 'Hello.' });
  out.dims = emb.data[0].embedding.length;
  try { await client.models.retrieve('gpt-4'); } catch (e) { out.notFound = e.constructor.name + ' ' + e.status + ' ' + e.code; }
  out.state = 'done';
} catch (e) {
  out.error = e.constructor.name + ': ' + e.message;
}
document.body.dataset.result = JSON.stringify(out);
</script></body></html>`

type sdkResult struct {
	State, Chat, Streamed, NotFound, Error string
	Dims                                   int
}

// TestOpenAISDKInChromium: a page on another origin uses the official SDK
// against serve with an API key: the CORS preflight for its X-Stainless-*
// headers passes for an allowed origin, and fails for any other.
func TestOpenAISDKInChromium(t *testing.T) {
	bin := chromium(t)
	sdk := sdkDir(t)
	m, err := loader.Load(fixture.TinyModel())
	require.NoError(t, err)
	tok, err := tokenizer.Load(fixture.TinyModel())
	require.NoError(t, err)

	mux := http.NewServeMux()
	mux.Handle("/openai/", http.StripPrefix("/openai/", http.FileServer(http.Dir(sdk))))
	mux.HandleFunc("/{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, sdkPage)
	})
	allowed := httptest.NewServer(mux)
	defer allowed.Close()
	other := httptest.NewServer(mux)
	defer other.Close()

	srv := server.New(server.Config{APIKey: "k", CORSOrigins: []string{allowed.URL}})
	require.NoError(t, srv.SetModel(m, tok))
	api := httptest.NewServer(srv.Handler())
	defer api.Close()

	// What the page must see, asked without a browser.
	want := chatContent(t, api.URL)
	browser := launch(t, bin)
	done := func(r sdkResult) bool { return r.State != "" }
	expr := `document.body.dataset.result || ""`
	q := "/?" + url.Values{"api": {api.URL}}.Encode()

	got := poll(t, browser, allowed.URL+q, expr, done)
	require.Equal(t, "done", got.State, got.Error)
	require.Equal(t, want, got.Chat)
	require.Equal(t, want, got.Streamed)
	require.Equal(t, m.Config.NEmbd, got.Dims)
	require.Equal(t, "NotFoundError 404 model_not_found", got.NotFound)

	blocked := poll(t, browser, other.URL+q, expr, done)
	require.Equal(t, "error", blocked.State)
	require.Contains(t, blocked.Error, "APIConnectionError", "an origin not in --cors-origins is refused by the browser")
}

func chatContent(t *testing.T, api string) string {
	t.Helper()
	body := `{"messages":[{"role":"user","content":"Hello"}],"max_tokens":6,"temperature":0}`
	req, err := http.NewRequest("POST", api+"/v1/chat/completions", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer k")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var out struct {
		Choices []struct {
			Message struct{ Content string }
		}
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	require.Len(t, out.Choices, 1)
	return out.Choices[0].Message.Content
}
