package httprecord

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRecordThenPlay: what a server answered is played back byte for byte,
// a request's answers in the order they came, keyed by the body's meaning
// (not its key order); a request never recorded is a miss, not a guess.
func TestRecordThenPlay(t *testing.T) {
	var n atomic.Int32
	live := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: %d %s %s\n\n", n.Add(1), r.URL.RequestURI(), body)
	}))
	defer live.Close()
	for _, name := range []string{"rec.jsonl", "rec.jsonl.gz"} {
		t.Run(name, func(t *testing.T) {
			n.Store(0)
			rec := &Recorder{}
			hc := &http.Client{Transport: rec}
			ask := func(c *http.Client, base, body string) (int, string, string) {
				resp, err := c.Post(base+"/v1/x?a=1", "application/json", strings.NewReader(body))
				require.NoError(t, err)
				defer resp.Body.Close()
				b, err := io.ReadAll(resp.Body)
				require.NoError(t, err)
				return resp.StatusCode, resp.Header.Get("Content-Type"), string(b)
			}
			var live3 []string
			for _, body := range []string{`{"a":1,"b":2}`, `{"a":1,"b":2}`, `{"c":3}`} {
				_, _, got := ask(hc, live.URL, body)
				live3 = append(live3, got)
			}
			path := filepath.Join(t.TempDir(), name)
			require.NoError(t, rec.WriteFile(path))
			ex, err := Read(path)
			require.NoError(t, err)
			require.Len(t, ex, 3)

			p := NewPlayer(ex)
			replay := httptest.NewServer(p)
			defer replay.Close()
			for i, body := range []string{`{"b":2, "a":1}`, `{"a":1,"b":2}`, `{"c":3}`} {
				code, ct, got := ask(http.DefaultClient, replay.URL, body)
				require.Equal(t, 200, code)
				require.Equal(t, "text/event-stream", ct)
				require.Equal(t, live3[i], got, "answer %d", i)
			}
			_, _, again := ask(http.DefaultClient, replay.URL, `{"c":3}`)
			require.Equal(t, live3[2], again, "the last answer repeats")
			require.Empty(t, p.Misses())
			code, _, _ := ask(http.DefaultClient, replay.URL, `{"c":4}`)
			require.Equal(t, 599, code)
			require.Equal(t, []string{`POST /v1/x?a=1 {"c":4}`}, p.Misses())
		})
	}
}

func TestReadRejectsGarbage(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.jsonl")
	rec := &Recorder{}
	require.NoError(t, rec.WriteFile(path))
	ex, err := Read(path)
	require.NoError(t, err)
	require.Empty(t, ex)
	require.NoError(t, writeString(path, "{\"method\":\"GET\"}\nnot json\n"))
	_, err = Read(path)
	require.ErrorContains(t, err, "bad.jsonl:2")
}

func writeString(path, s string) error {
	return os.WriteFile(path, []byte(s), 0o644)
}

// FuzzRead: any recording file, plain or gzipped, is read or refused with
// an error naming it; never a panic.
func FuzzRead(f *testing.F) {
	f.Add([]byte(`{"method":"GET","path":"/health","status":200,"answer":"{}"}` + "\n"))
	f.Add([]byte("not json\n"))
	f.Add([]byte{0x1f, 0x8b, 0x08, 0x00})
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, name := range []string{"r.jsonl", "r.jsonl.gz"} {
			path := filepath.Join(t.TempDir(), name)
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			ex, err := Read(path)
			if err != nil {
				if !strings.Contains(err.Error(), path) {
					t.Fatalf("error %q does not name %s", err, path)
				}
				continue
			}
			NewPlayer(ex) // keys every exchange
		}
	})
}
