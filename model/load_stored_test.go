package model

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/internal/fixture"
	"github.com/llorch/llorch-check/internal/ggmlnum"
	"github.com/llorch/llorch-check/safetensors"
)

// TestFusedPartsOfMixedDTypes: a float16 model from a file whose fused
// matrix's parts come in different dtypes (k_proj and up_proj widened to
// F32, their values still float16's) assembles them the converting way
// and is the all-F16 file's model, bit for bit: the parts read straight
// from the file's pages and those converted meet in one matrix.
func TestFusedPartsOfMixedDTypes(t *testing.T) {
	src := fixture.FamilyModel("tiny-llama")
	dir := fixture.CopyDir(t, src)
	widenToF32(t, filepath.Join(dir, "model.safetensors"),
		"model.layers.0.self_attn.k_proj.weight", "model.layers.1.mlp.up_proj.weight")
	want, err := LoadWith(src, LoadOptions{Float16: true})
	require.NoError(t, err)
	got, err := LoadWith(dir, LoadOptions{Float16: true})
	require.NoError(t, err)
	require.Equal(t, "F16+F32", got.WeightsDType)
	require.Equal(t, "float16", got.MatricesHeldAs())
	for l := range want.h {
		requireSameBits(t, want.h[l].attnW.Float32s(), got.h[l].attnW.Float32s(), "attn")
		requireSameBits(t, want.h[l].fcW.Float32s(), got.h[l].fcW.Float32s(), "fc")
	}
	requireSameRun(t, want, got)
}

// widenToF32 rewrites the named F16 tensors of a safetensors file as F32
// holding the same values.
func widenToF32(t *testing.T, path string, names ...string) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	f, err := safetensors.Parse(b)
	require.NoError(t, err)
	widen := map[string]bool{}
	for _, n := range names {
		widen[n] = true
	}
	header := map[string]any{}
	var body []byte
	for _, ts := range f.Tensors {
		raw, dtype := f.Raw(ts), ts.DType
		begin := len(body)
		if widen[ts.Name] {
			require.Equal(t, "F16", dtype, ts.Name)
			for i := 0; i < len(raw); i += 2 {
				body = binary.LittleEndian.AppendUint32(body, math.Float32bits(ggmlnum.Float16To32(binary.LittleEndian.Uint16(raw[i:]))))
			}
			dtype = "F32"
			delete(widen, ts.Name)
		} else {
			body = append(body, raw...)
		}
		header[ts.Name] = map[string]any{"dtype": dtype, "shape": ts.Shape, "data_offsets": []int{begin, len(body)}}
	}
	require.Empty(t, widen, "tensors not in %s", path)
	require.NoError(t, os.WriteFile(path, fixture.Safetensors(t, header, body), 0o644))
}
