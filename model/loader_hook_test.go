package model_test

import (
	"context"

	"github.com/llorch/llorch-check/gguf"
	"github.com/llorch/llorch-check/loader"
	"github.com/llorch/llorch-check/model"
)

// The hooks loader_shims_test.go declares: package loader imports model,
// so only this external test package can.
func init() {
	t := &model.TestLoader
	t.LoadContext = func(ctx context.Context, path string, opt model.LoadOptions) (*model.Model, error) {
		return loader.LoadContext(ctx, path, options(opt))
	}
	t.GGUF = loader.GGUF
	t.WriteGGUF = func(m *model.Model, path string, f model.GGUFFile) (model.GGUFWritten, error) {
		w, err := loader.WriteGGUF(m, path, loader.GGUFFile(f))
		return model.GGUFWritten(w), err
	}
	t.ConvertGGUF = func(dir, path string, f model.GGUFFile, progress func(i, n int, name string)) (model.GGUFWritten, error) {
		w, err := loader.ConvertGGUF(dir, path, loader.GGUFFile(f), progress)
		return model.GGUFWritten(w), err
	}
	t.WithTokenizer = func(kv, tok []gguf.KV) []gguf.KV { return loader.WithTokenizer(kv, tok) }
	t.IsGGUF, t.CheckPath = loader.IsGGUF, loader.CheckPath
	t.HeldBytes = func(path string, opt model.LoadOptions) (int64, error) { return loader.HeldBytes(path, options(opt)) }
	t.WriteWeightsCache = loader.WriteWeightsCache
}

func options(o model.LoadOptions) loader.Options { return loader.Options(o) }
