package main

import (
	"fmt"

	"github.com/llorch/llorch-check/kvcache"
	"github.com/llorch/llorch-check/references"
	"github.com/spf13/pflag"
)

// kvCacheFlagUsage is --kv-cache-dtype's help, the same for every command
// that runs the Go forward.
const kvCacheFlagUsage = "KV cache of the Go forward: f32, or f16 (keys and values stored as float16, half the memory; validated against a set of the " + references.EmulationF16KV + " profile, e.g. testdata/references/tiny-gpt2-f16kv)"

// registerKVCache adds --kv-cache-dtype (default f32) to fl.
func registerKVCache(fl *pflag.FlagSet, dtype *string) {
	fl.StringVar(dtype, "kv-cache-dtype", "f32", kvCacheFlagUsage)
}

// parseKVCacheDType is the KV cache --kv-cache-dtype asks for: f32 (the
// zero value, as model.NewCache) or f16.
func parseKVCacheDType(dtype string) (kvcache.Options, error) {
	switch dtype {
	case "f32", "":
		return kvcache.Options{}, nil
	case "f16":
		return kvcache.Options{Float16: true}, nil
	}
	return kvcache.Options{}, fmt.Errorf("--kv-cache-dtype %q: want f32 or f16", dtype)
}
