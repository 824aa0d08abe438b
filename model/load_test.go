package model

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLoadReleasesMapping loads a model through the mapping path, whose
// source pages are released as they are converted, and checks the weights
// against the plain conversion of the same bytes.
func TestLoadReleasesMapping(t *testing.T) {
	w := randomWeights(testCfg, 7)
	dir := writeModel(t, configJSON(testCfg), w.tensors(""))
	m, err := Load(dir)
	require.NoError(t, err)
	data, err := os.ReadFile(filepath.Join(dir, "model.safetensors"))
	require.NoError(t, err)
	want, err := loadWeights(testCfg, data, LoadOptions{})
	require.NoError(t, err)
	require.Equal(t, want.wte, m.wte)
	for l := range want.h {
		require.Equal(t, want.h[l].fcW.Float32s(), m.h[l].fcW.Float32s())
	}
}

// TestLoadRestoresGCPercent: loading collects garbage more often
// (loadGCPercent) and must leave the process's own setting as it was,
// on success and on error.
func TestLoadRestoresGCPercent(t *testing.T) {
	prev := debug.SetGCPercent(137)
	defer debug.SetGCPercent(prev)
	dir := writeModel(t, configJSON(testCfg), randomWeights(testCfg, 9).tensors(""))
	_, err := Load(dir)
	require.NoError(t, err)
	require.Equal(t, 137, debug.SetGCPercent(137))
	_, err = Load(filepath.Join(dir, "missing"))
	require.Error(t, err)
	require.Equal(t, 137, debug.SetGCPercent(137))
}
