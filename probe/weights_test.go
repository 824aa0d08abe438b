package probe

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/checkpoints"
	"github.com/llorch/llorch-check/internal/fixture"
	"github.com/llorch/llorch-check/loader"
	"github.com/llorch/llorch-check/server"
	"github.com/llorch/llorch-check/tokenizer"
)

// negateWTERow copies the tiny model and flips the sign of one row of its
// float16 wte: with the LM head tied, that token's logit changes sign
// everywhere, and nothing else moves unless the token is read.
func negateWTERow(t *testing.T, id int) string {
	t.Helper()
	dir := fixture.CopyDir(t, fixture.TinyModel())
	path := filepath.Join(dir, "model.safetensors")
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	n := binary.LittleEndian.Uint64(b[:8])
	var header map[string]struct {
		DType   string `json:"dtype"`
		Shape   []int  `json:"shape"`
		Offsets [2]int `json:"data_offsets"`
	}
	require.NoError(t, json.Unmarshal(b[8:8+n], &header))
	wte, ok := header["wte.weight"]
	require.True(t, ok, "the tiny model names its embedding wte.weight")
	require.Equal(t, "F16", wte.DType)
	C := wte.Shape[1]
	start := 8 + int(n) + wte.Offsets[0] + 2*id*C
	for i := range C {
		b[start+2*i+1] ^= 0x80 // the sign bit of a little-endian float16
	}
	require.NoError(t, os.WriteFile(path, b, 0o644))
	return dir
}

// TestProbePerturbedLMHead: a server whose LM head differs from the
// reference's in one token that no prompt, pair or greedy continuation
// contains, but that the reference ranks second after a prompt, fails at
// the top-k alternatives (checkpoint 11), where the token is listed. (The
// log-softmax normaliser moves too, so checkpoint 9 may fail as well.)
func TestProbePerturbedLMHead(t *testing.T) {
	set := tinySet(t)
	cases, err := loadCases(set)
	require.NoError(t, err)
	var used []int
	for _, c := range cases {
		used = append(used, c.Tokens...)
		if c.Gen != nil {
			used = append(used, c.Gen.Tokens...)
		}
	}
	for _, ll := range set.Manifest.Loglikelihood {
		used = append(used, slices.Concat(ll.ContextTokens, ll.ContinuationTokens)...)
	}
	victim, victimCase := -1, ""
	for _, c := range cases {
		if c.LastLP == nil {
			continue
		}
		second := topIDs(c.LastLP, 2)[1]
		if !slices.Contains(used, second) {
			victim, victimCase = second, c.ID
			break
		}
	}
	require.GreaterOrEqual(t, victim, 0, "some case's second-ranked next token is used nowhere else")
	dir := negateWTERow(t, victim)
	m, err := loader.Load(dir)
	require.NoError(t, err)
	tok, err := tokenizer.Load(dir)
	require.NoError(t, err)
	srv := server.New(server.Config{})
	require.NoError(t, srv.SetModel(m, tok))
	url := startServer(t, srv.Handler())
	for _, api := range []string{"openai", "tgi"} {
		endpoint := url
		if api == "tgi" {
			endpoint = tgiServerFor(t, m, tok)
		}
		rep, err := Run(context.Background(), set, Options{Endpoint: endpoint, API: api})
		require.NoError(t, err)
		require.False(t, rep.Passed, api)
		i := slices.IndexFunc(rep.Failures(), func(r checkpoints.Result) bool { return r.Checkpoint == 11 && r.Case == victimCase })
		require.GreaterOrEqual(t, i, 0, "%s: checkpoint 11 fails for %s: %+v", api, victimCase, rep.Failures())
	}
}

// topIDs are the ids of the k largest values of row.
func topIDs(row []float32, k int) []int {
	ids := make([]int, len(row))
	for i := range ids {
		ids[i] = i
	}
	slices.SortStableFunc(ids, func(a, b int) int {
		switch {
		case row[a] > row[b]:
			return -1
		case row[a] < row[b]:
			return 1
		}
		return 0
	})
	return ids[:k]
}
