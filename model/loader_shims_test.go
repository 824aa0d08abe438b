package model

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"

	"github.com/llorch/llorch-check/gguf"
)

// Package loader reads and writes the file formats; it imports this
// package, so these tests reach it through TestLoader, which
// loader_hook_test.go (package model_test, which may import it) sets
// before any test runs. The wrappers below keep the tests' calls as they
// were when the loaders lived here.
var TestLoader struct {
	LoadContext       func(ctx context.Context, path string, opt LoadOptions) (*Model, error)
	GGUF              func(m *Model, typ gguf.GGMLType) ([]gguf.KV, []gguf.TensorData, error)
	WriteGGUF         func(m *Model, path string, f GGUFFile) (GGUFWritten, error)
	ConvertGGUF       func(dir, path string, f GGUFFile, progress func(i, n int, name string)) (GGUFWritten, error)
	WithTokenizer     func(kv, tok []gguf.KV) []gguf.KV
	IsGGUF            func(path string) bool
	CheckPath         func(path string) error
	HeldBytes         func(path string, opt LoadOptions) (int64, error)
	WriteWeightsCache func(m *Model) string
}

// LoadOptions, GGUFFile and GGUFWritten are package loader's Options,
// GGUFFile and GGUFWritten.
type LoadOptions struct {
	Float16, AsStored bool
	WeightsCache      string
	Layers            int
	WriteCacheLater   bool
}

type GGUFFile struct {
	Type         gguf.GGMLType
	Name         string
	Tokenizer    []gguf.KV
	SourceSHA256 string
}

type GGUFWritten struct {
	Tensors int
	Types   string
	Bytes   int64
}

func Load(path string) (*Model, error) { return LoadWith(path, LoadOptions{}) }

func LoadWith(path string, opt LoadOptions) (*Model, error) {
	return LoadContext(context.Background(), path, opt)
}

func LoadContext(ctx context.Context, path string, opt LoadOptions) (*Model, error) {
	return TestLoader.LoadContext(ctx, path, opt)
}

func (m *Model) GGUF(typ gguf.GGMLType) ([]gguf.KV, []gguf.TensorData, error) {
	return TestLoader.GGUF(m, typ)
}

func (m *Model) WriteGGUF(path string, f GGUFFile) (GGUFWritten, error) {
	return TestLoader.WriteGGUF(m, path, f)
}

func (m *Model) WriteWeightsCache() string { return TestLoader.WriteWeightsCache(m) }

func ConvertGGUF(dir, path string, f GGUFFile, progress func(i, n int, name string)) (GGUFWritten, error) {
	return TestLoader.ConvertGGUF(dir, path, f, progress)
}

func WithTokenizer(kv, tok []gguf.KV) []gguf.KV             { return TestLoader.WithTokenizer(kv, tok) }
func IsGGUF(path string) bool                               { return TestLoader.IsGGUF(path) }
func CheckPath(path string) error                           { return TestLoader.CheckPath(path) }
func HeldBytes(path string, opt LoadOptions) (int64, error) { return TestLoader.HeldBytes(path, opt) }

// loadGGUFBytes loads a GGUF image, through a file: package loader reads
// files.
func loadGGUFBytes(ctx context.Context, data []byte, opt LoadOptions) (*Model, error) {
	dir, err := os.MkdirTemp("", "llorch-model-test")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "m.gguf")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return nil, err
	}
	return LoadContext(ctx, path, opt)
}

// loadWeights loads a safetensors image with the config cfg, through an
// HF directory.
func loadWeights(cfg Config, data []byte, opt LoadOptions) (*Model, error) {
	dir, err := os.MkdirTemp("", "llorch-model-test")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	fields := configJSON(cfg)
	fields["n_inner"] = cfg.NInner
	js, err := json.Marshal(fields)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), js, 0o644); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "model.safetensors"), data, 0o644); err != nil {
		return nil, err
	}
	return LoadWith(dir, opt)
}
