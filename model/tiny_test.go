package model

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/sbinet/npyio"
	"github.com/stretchr/testify/require"
)

const (
	tinyModelDir = "../testdata/tiny-gpt2"
	tinyRefsDir  = "../testdata/references/tiny-gpt2"
)

// TestTinyReference checks the committed tiny model against its PyTorch
// reference set end to end: the first case's last-position logits.
func TestTinyReference(t *testing.T) {
	for _, d := range []string{tinyModelDir, tinyRefsDir} {
		if _, err := os.Stat(d); os.IsNotExist(err) {
			t.Skipf("%s is absent", d)
		}
	}
	checkLastLogits(t, tinyModelDir, tinyRefsDir)
}

func checkLastLogits(t *testing.T, modelDir, refsDir string) {
	var manifest struct {
		Cases []struct {
			ID     string `json:"id"`
			Tokens []int  `json:"tokens"`
		} `json:"cases"`
		Tensors []struct {
			Case  string `json:"case"`
			Name  string `json:"name"`
			Layer *int   `json:"layer"`
			File  string `json:"file"`
		} `json:"tensors"`
	}
	b, err := os.ReadFile(filepath.Join(refsDir, "manifest.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &manifest))
	require.NotEmpty(t, manifest.Cases)
	c := manifest.Cases[0]
	file := ""
	for _, e := range manifest.Tensors {
		if e.Case == c.ID && e.Name == "last_logits" && e.Layer == nil {
			file = e.File
		}
	}
	require.NotEmpty(t, file, "manifest lists no last_logits for case %q", c.ID)
	f, err := os.Open(filepath.Join(refsDir, filepath.FromSlash(file)))
	require.NoError(t, err)
	defer f.Close()
	var want []float32
	require.NoError(t, npyio.Read(f, &want))

	m, err := Load(modelDir)
	require.NoError(t, err)
	got, err := m.Forward(context.Background(), m.NewCache(), c.Tokens, ForwardOptions{})
	require.NoError(t, err)
	require.Len(t, got, len(want))
	worst, at := 0.0, 0
	for i := range want {
		if d := math.Abs(float64(got[i]) - float64(want[i])); !(d <= worst) {
			worst, at = d, i
		}
	}
	require.LessOrEqual(t, worst, 1e-3, "case %q: worst |diff| at token %d: got %g, want %g", c.ID, at, got[at], want[at])
}
