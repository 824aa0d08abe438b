package loader

import (
	"bytes"
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
			eachExpertTensor(t, q8, f32, func(ti gguf.TensorInfo, raw, raw32 []byte) {
				require.Equal(t, gguf.GGMLTypeQ8_0, ti.Type, ti.Name)
				want := make([]float32, ti.Elements())
				require.NoError(t, gguf.DecodeFloat32(ti.Type, raw, want))
				got := make([]float32, ti.Elements())
				require.NoError(t, gguf.DecodeFloat32(gguf.GGMLTypeF32, raw32, got))
				require.Equal(t, want, got, "%s: the held experts are not the file's", ti.Name)
			})
		})
	}
}

// eachExpertTensor calls fn with each expert stack of the GGUF file a
// (there must be some), its data there and in the file b.
func eachExpertTensor(t *testing.T, a, b string, fn func(ti gguf.TensorInfo, inA, inB []byte)) {
	t.Helper()
	af, err := gguf.Open(a)
	require.NoError(t, err)
	defer af.Close()
	bf, err := gguf.Open(b)
	require.NoError(t, err)
	defer bf.Close()
	experts := 0
	for _, ti := range af.Tensors {
		if !strings.Contains(ti.Name, "_exps.") {
			continue
		}
		experts++
		inA, err := af.TensorData(ti.Name)
		require.NoError(t, err)
		inB, err := bf.TensorData(ti.Name)
		require.NoError(t, err)
		fn(ti, inA, inB)
	}
	require.Positive(t, experts, "%s has no expert stacks", a)
}

// TestHalfExpertsHeldAsTheFilesBits: an F16 file's experts held as
// float16, and a BF16 file's as bfloat16, are the file's bits, copied
// rather than decoded to float32 and rounded back (40% of a Qwen3-30B-A3B
// F16 file's first load, bench notes 42): written back in the file's
// type, every expert tensor is the file's, byte for byte.
func TestHalfExpertsHeldAsTheFilesBits(t *testing.T) {
	hf, err := Load(fixture.FamilyModel("tiny-llama-mixtral"))
	require.NoError(t, err)
	for _, typ := range []gguf.GGMLType{gguf.GGMLTypeF16, gguf.GGMLTypeBF16} {
		t.Run(typ.String(), func(t *testing.T) {
			dir := t.TempDir()
			src := filepath.Join(dir, "src.gguf")
			_, err := WriteGGUF(hf, src, GGUFFile{Type: typ})
			require.NoError(t, err)
			m, err := LoadWith(src, Options{AsStored: true})
			require.NoError(t, err)
			require.Equal(t, typ == gguf.GGMLTypeF16, m.Float16)
			require.Equal(t, typ == gguf.GGMLTypeBF16, m.BFloat16)
			out := filepath.Join(dir, "out.gguf")
			_, err = WriteGGUF(m, out, GGUFFile{Type: typ})
			require.NoError(t, err)

			eachExpertTensor(t, src, out, func(ti gguf.TensorInfo, want, got []byte) {
				require.Equal(t, typ, ti.Type, ti.Name)
				require.True(t, bytes.Equal(want, got), "%s: the held experts are not the file's bits", ti.Name)
			})
		})
	}
}

// TestMixedExpertsNotHeldAsBFloat16: a file whose 2-D matrices are BF16
// but whose expert stacks are F16 is not held as bfloat16 (which rounded
// the experts to bfloat16 by truncation): AsStored holds a model as its
// file's 16-bit type only when every matrix, the stacks included, has it.
// The experts then keep the file's values, as written back in F16 shows.
func TestMixedExpertsNotHeldAsBFloat16(t *testing.T) {
	hf, err := Load(fixture.FamilyModel("tiny-llama-mixtral"))
	require.NoError(t, err)
	kv, tensors, err := GGUF(hf, gguf.GGMLTypeBF16)
	require.NoError(t, err)
	_, f16s, err := GGUF(hf, gguf.GGMLTypeF16)
	require.NoError(t, err)
	stacks := 0
	for i, td := range tensors {
		if strings.Contains(td.Name, "_exps.") {
			require.Equal(t, td.Name, f16s[i].Name)
			tensors[i], stacks = f16s[i], stacks+1
		}
	}
	require.Positive(t, stacks)
	dir := t.TempDir()
	mixed := filepath.Join(dir, "mixed.gguf")
	require.NoError(t, gguf.WriteFile(mixed, kv, tensors))

	m, err := LoadWith(mixed, Options{AsStored: true})
	require.NoError(t, err)
	require.False(t, m.BFloat16, "a file with F16 experts held as bfloat16")
	out := filepath.Join(dir, "out.gguf")
	_, err = WriteGGUF(m, out, GGUFFile{Type: gguf.GGMLTypeF16})
	require.NoError(t, err)
	eachExpertTensor(t, mixed, out, func(ti gguf.TensorInfo, want, got []byte) {
		require.Equal(t, gguf.GGMLTypeF16, ti.Type, ti.Name)
		require.True(t, bytes.Equal(want, got), "%s: the held experts are not the file's values", ti.Name)
	})
}
