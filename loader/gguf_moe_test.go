package loader

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/llorch/llorch-check/gguf"
	"github.com/llorch/llorch-check/internal/fixture"
)

// TestQuantisedExpertsHeldQuantised: a Q8_0 file's experts are held in
// Q8_0, as its dense matrices are, so the model is the file's size, not
// 3.8x its experts' bytes (bench notes 35: 3.4-5.3x the file on
// Qwen3-30B-A3B's layers); and they hold the file's values in the model's
// layout: written back as F32, every expert tensor is the Q8_0 one
// dequantised, bit for bit.
func TestQuantisedExpertsHeldQuantised(t *testing.T) {
	// tiny-llama-qwen3moe has a dense layer, which llama.cpp's qwen3moe
	// cannot say: no GGUF file is written of it.
	for _, name := range []string{"tiny-llama-mixtral"} {
		t.Run(name, func(t *testing.T) {
			hf, err := Load(fixture.FamilyModel(name))
			require.NoError(t, err)
			dir := t.TempDir()
			q8 := filepath.Join(dir, "q8_0.gguf")
			_, err = WriteGGUF(hf, q8, GGUFFile{Type: gguf.GGMLTypeQ8_0})
			require.NoError(t, err)
			m, err := Load(q8)
			require.NoError(t, err)

			qf, err := gguf.Open(q8)
			require.NoError(t, err)
			defer qf.Close()
			var fileBytes int64
			for _, ti := range qf.Tensors {
				raw, err := qf.TensorData(ti.Name)
				require.NoError(t, err)
				fileBytes += int64(len(raw))
			}
			require.LessOrEqual(t, m.WeightsBytes(), fileBytes+fileBytes/50,
				"held %d bytes for %d bytes of tensors in the file", m.WeightsBytes(), fileBytes)

			f32 := filepath.Join(dir, "f32.gguf")
			_, err = WriteGGUF(m, f32, GGUFFile{Type: gguf.GGMLTypeF32})
			require.NoError(t, err)
			ff, err := gguf.Open(f32)
			require.NoError(t, err)
			defer ff.Close()
			experts := 0
			for _, ti := range qf.Tensors {
				if !strings.Contains(ti.Name, "_exps.") {
					continue
				}
				experts++
				require.Equal(t, gguf.GGMLTypeQ8_0, ti.Type, ti.Name)
				raw, err := qf.TensorData(ti.Name)
				require.NoError(t, err)
				want := make([]float32, ti.Elements())
				require.NoError(t, gguf.DecodeFloat32(ti.Type, raw, want))
				raw32, err := ff.TensorData(ti.Name)
				require.NoError(t, err)
				got := make([]float32, ti.Elements())
				require.NoError(t, gguf.DecodeFloat32(gguf.GGMLTypeF32, raw32, got))
				require.Equal(t, want, got, "%s: the held experts are not the file's", ti.Name)
			}
			require.Positive(t, experts)
		})
	}
}
