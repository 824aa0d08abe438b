package server_test

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"math"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/internal/fixture"
	"github.com/llorch/llorch-check/internal/fixture/tiny"
	"github.com/llorch/llorch-check/model"
	"github.com/llorch/llorch-check/server"
	"github.com/llorch/llorch-check/tensors"
)

// meanLNF is the embedding computed apart from the server: one forward
// pass over all of tokens, the mean of its final norm's rows (ln_f, or the
// Llama family's norm).
func meanLNF(t *testing.T, m *model.Model, tokens []int) []float64 {
	t.Helper()
	C := m.Config.NEmbd
	mean := make([]float64, C)
	final := map[string]string{tensors.GPT2: "ln_f", tensors.Llama: "norm"}[m.Config.Family()]
	_, err := m.Forward(context.Background(), m.NewCache(), tokens, model.ForwardOptions{Probe: model.ProbeFunc(func(c model.Captured) {
		if c.Name == final {
			require.Equal(t, []int{len(tokens), C}, c.Shape)
			for j, v := range c.Data {
				mean[j%C] += float64(v) / float64(len(tokens))
			}
		}
	})})
	require.NoError(t, err)
	return mean
}

func vector(t *testing.T, v any) []float64 {
	t.Helper()
	if s, ok := v.(string); ok {
		b, err := base64.StdEncoding.DecodeString(s)
		require.NoError(t, err)
		require.Zero(t, len(b)%4)
		var out []float64
		for i := 0; i < len(b); i += 4 {
			out = append(out, float64(math.Float32frombits(binary.LittleEndian.Uint32(b[i:]))))
		}
		return out
	}
	var out []float64
	for _, x := range v.([]any) {
		out = append(out, x.(float64))
	}
	return out
}

// TestEmbeddingsFamilies: every Llama-family model's embedding is its
// final norm's mean over one pass (it was all zeros: only ln_f was
// summed), for a short text and for one the server runs in chunks of 32
// positions past the tiny models' sliding window (24) and Phi-3
// longrope's pretrained context (32); the two differ.
func TestEmbeddingsFamilies(t *testing.T) {
	texts := []string{"Hello, world.", strings.Repeat("The ship left port at dawn. ", 8)}
	for _, name := range fixture.Served() {
		t.Run(name, func(t *testing.T) {
			ts, m, tok := familyServer(t, name)
			require.Greater(t, len(tok.EncodePrompt(texts[1])), 40)
			out := ts.call(t, "POST", "/v1/embeddings", map[string]any{"input": texts}, http.StatusOK)
			data := out["data"].([]any)
			require.Len(t, data, 2)
			var got [2][]float64
			for i, text := range texts {
				got[i] = vector(t, data[i].(map[string]any)["embedding"])
				require.InDeltaSlice(t, meanLNF(t, m, tok.EncodePrompt(text)), got[i], 1e-6, "text %d", i)
				nonzero := 0
				for _, v := range got[i] {
					if v != 0 {
						nonzero++
					}
				}
				require.Equal(t, m.Config.NEmbd, nonzero)
			}
			require.NotEqual(t, got[0], got[1])
		})
	}
}

// TestEmbeddings: every input form gives the mean-pooled ln_f state, in
// float or base64; an input longer than one scoring chunk too.
func TestEmbeddings(t *testing.T) {
	ts := start(t, server.Config{})
	m, tok, _ := tiny.Load(t)
	long := strings.Repeat("The ship left port at dawn. ", 10)
	texts := []string{"Hello.", long}
	want := [][]float64{meanLNF(t, m, tok.Encode(texts[0])), meanLNF(t, m, tok.Encode(texts[1]))}
	n0, n1 := len(tok.Encode(texts[0])), len(tok.Encode(texts[1]))
	require.Greater(t, n1, 40, "more than one chunk of 32 positions")
	for _, c := range []struct {
		name   string
		input  any
		want   [][]float64
		tokens int
	}{
		{"string", texts[0], want[:1], n0},
		{"strings", texts, want, n0 + n1},
		{"token ids", tok.Encode(texts[1]), want[1:], n1},
		{"lists of ids", [][]int{tok.Encode(texts[0]), tok.Encode(texts[1])}, want, n0 + n1},
	} {
		for _, format := range []string{"float", "base64"} {
			t.Run(c.name+"/"+format, func(t *testing.T) {
				out := ts.call(t, "POST", "/v1/embeddings", map[string]any{"model": "tiny-gpt2", "input": c.input,
					"encoding_format": format}, http.StatusOK)
				require.Equal(t, "list", out["object"])
				data := out["data"].([]any)
				require.Len(t, data, len(c.want))
				for i, d := range data {
					d := d.(map[string]any)
					require.Equal(t, "embedding", d["object"])
					require.EqualValues(t, i, d["index"])
					got := vector(t, d["embedding"])
					require.Len(t, got, m.Config.NEmbd)
					require.InDeltaSlice(t, c.want[i], got, 1e-6)
				}
				require.EqualValues(t, c.tokens, out["usage"].(map[string]any)["prompt_tokens"])
			})
		}
	}
}

func TestEmbeddingsRejected(t *testing.T) {
	ts := start(t, server.Config{})
	for _, c := range []struct {
		name  string
		body  map[string]any
		param string
	}{
		{"no input", map[string]any{}, "input"},
		{"empty input", map[string]any{"input": ""}, "input"},
		{"beyond the context", map[string]any{"input": make([]int, 129)}, "input"},
		{"second beyond the context", map[string]any{"input": [][]int{{1}, make([]int, 129)}}, "input[1]"},
		{"id outside the vocabulary", map[string]any{"input": []int{50257}}, "input[0][0]"},
		{"format", map[string]any{"input": "x", "encoding_format": "int8"}, "encoding_format"},
		{"dimensions", map[string]any{"input": "x", "dimensions": 8}, "dimensions"},
		{"unknown field", map[string]any{"input": "x", "pooling": "cls"}, "pooling"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := ts.call(t, "POST", "/v1/embeddings", c.body, http.StatusBadRequest)["error"].(map[string]any)
			require.Equal(t, c.param, e["param"], e["message"])
		})
	}
	ts.call(t, "POST", "/v1/embeddings", map[string]any{"input": "x", "dimensions": 64, "user": "u"}, http.StatusOK)
	e := ts.call(t, "POST", "/v1/embeddings", map[string]any{"input": "x", "model": "text-embedding-3-small"}, http.StatusNotFound)
	require.Equal(t, "model_not_found", e["error"].(map[string]any)["code"])
}
