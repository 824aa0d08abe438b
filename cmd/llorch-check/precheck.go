package main

import (
	"context"
	"fmt"

	"github.com/llorch/llorch-check/loader"
	"github.com/llorch/llorch-check/model"
	"github.com/llorch/llorch-check/references"
	"github.com/llorch/llorch-check/weights"
)

// loadFor loads the model for a comparison with set, after the checks
// that need no weights: an 8B checkpoint takes minutes and 16 GB to
// load, and a set made with another tokenizer, from other weights or
// with another --layers is refused before that. --layers defaults to the
// set's.
func (f *modelFlags) loadFor(ctx context.Context, set *references.Set) (*model.Model, error) {
	path, err := modelPath(f.path)
	if err != nil {
		return nil, err
	}
	if err := checkSetTokenizer(set, f.path); err != nil {
		return nil, err
	}
	setLayers := set.Manifest.Model.Layers
	if f.layers == 0 {
		f.layers = setLayers
	}
	if !loader.IsGGUF(path) {
		if err := precheckHF(path, set, f.layers); err != nil {
			return nil, err
		}
	}
	return f.load(ctx)
}

// precheckHF compares an HF checkpoint's config and weights with what set
// records: the number of blocks run and the weights' sha256 (the hash is
// kept, so the comparison after the load does not read the files again).
func precheckHF(dir string, set *references.Set, layers int) error {
	cfg, err := loader.ReadConfig(dir)
	if err != nil {
		return err
	}
	runs := func(n int) int {
		if n == 0 {
			return cfg.NLayer
		}
		return n
	}
	if want := set.Manifest.Model.Layers; runs(layers) != runs(want) {
		return fmt.Errorf("%s ran %d of the model's %d blocks (dump_references.py --layers), this run %d: give --layers %d: %w",
			set.Dir, runs(want), cfg.NLayer, runs(layers), runs(want), references.ErrWeightsMismatch)
	}
	path, err := weights.WeightsFile(dir)
	if err != nil {
		return err
	}
	return set.CheckWeights(path)
}
