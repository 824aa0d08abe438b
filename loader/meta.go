package loader

import (
	"fmt"
	"path/filepath"

	"github.com/llorch/llorch-check/gguf"
	"github.com/llorch/llorch-check/model"
	"github.com/llorch/llorch-check/weights"
)

// meta is a GGUF file's metadata as package model's family config readers
// read it (model.Metadata), through package weights' checked readers.
type meta struct{ f *gguf.File }

var _ model.Metadata = meta{}

func (m meta) Value(key string) (any, string, bool) {
	v, ok := m.f.Get(key)
	if !ok {
		return nil, "", false
	}
	return v.V, v.Type.String(), true
}

func (m meta) ArrayLen(key string) (int, bool) {
	v, ok := m.f.Get(key)
	if !ok {
		return 0, false
	}
	a, isArr := v.V.(gguf.Array)
	return a.Len(), isArr
}

func (meta) NoKey(key string) error { return fmt.Errorf("%w: %s", gguf.ErrNoKey, key) }

func (m meta) String(key string) (string, error) { return m.f.String(key) }
func (m meta) Ints(key string) ([]int64, error)  { return m.f.Ints(key) }
func (m meta) Dim(key string) (int, error)       { return weights.Dim(m.f, key) }
func (m meta) OptDim(key string, def int) (int, error) {
	return weights.OptDim(m.f, key, def)
}
func (m meta) OptNonNegative(key string) (int64, error) { return weights.OptNonNegative(m.f, key) }
func (m meta) PositiveFloat(key string, def float64) (float64, error) {
	return weights.PositiveFloat(m.f, key, def)
}
func (m meta) TokenID(key string, def, vocab int) (int, error) {
	return weights.TokenID(m.f, key, def, vocab)
}

func (m meta) TensorCount() int { return len(m.f.Tensors) }

func (m meta) Tensor(name string) (model.TensorInfo, bool) {
	t, ok := m.f.Tensor(name)
	if !ok {
		return model.TensorInfo{}, false
	}
	return model.TensorInfo{Name: t.Name, Type: t.Type.String(), Dims: t.Dims}, true
}

func (m meta) Float32s(name string) ([]float32, error) {
	t, _ := m.f.Tensor(name)
	raw, err := m.f.TensorData(name)
	if err != nil {
		return nil, err
	}
	vals := make([]float32, t.Elements())
	if err := gguf.DecodeFloat32(t.Type, raw, vals); err != nil {
		return nil, fmt.Errorf("tensor %q: %w", name, err)
	}
	return vals, nil
}

// ReadConfig reads a model's hyper-parameters without loading its weights:
// config.json of an HF directory, or a GGUF file's metadata.
func ReadConfig(path string) (model.Config, error) {
	if !IsGGUF(path) {
		return model.LoadConfig(filepath.Join(path, "config.json"))
	}
	f, err := gguf.Open(path)
	if err != nil {
		return model.Config{}, err
	}
	defer f.Close()
	cfg, err := model.ConfigFromGGUF(meta{f})
	if err != nil {
		return model.Config{}, fmt.Errorf("%s: %w", path, err)
	}
	return cfg, nil
}
