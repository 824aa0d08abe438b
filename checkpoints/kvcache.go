package checkpoints

import (
	"fmt"

	"github.com/llorch/llorch-check/generation"
	"github.com/llorch/llorch-check/kvcache"
	"github.com/llorch/llorch-check/model"
	"github.com/llorch/llorch-check/references"
)

// CheckKVCache refuses a reference set the Go forward cannot be validated
// against with the KV cache kv: a set of the f16-kv profile needs the
// float16 cache and a float16 cache needs such a set (a plain set fails it
// by design: float16 storage moves the cache by up to half a float16
// step, the logits past checkpoint 9's tolerance); a set of another
// engine's profile checks that engine, not Go's forward. Run applies it;
// the errors are bad input.
func CheckKVCache(set *references.Set, kv kvcache.Options) error {
	e := set.Manifest.Emulates()
	switch {
	case e == nil && kv.Float16:
		return fmt.Errorf("--kv-cache-dtype f16: %s is a plain reference set, made with a float32 KV cache, which a float16 cache fails by design (it rounds every cached key and value); validate the float16 cache against a set of the %s profile (dump_references.py --emulate %s; testdata/references has tiny-gpt2-f16kv and tiny-llama-qwen2-f16kv)",
			set.Dir, references.EmulationF16KV, references.EmulationF16KV)
	case e == nil:
		return nil
	case e.Profile == references.EmulationF16KV && !kv.Float16:
		return fmt.Errorf("%s applies %s's approximations (%s): it checks llorch-check's forward with a float16 KV cache; run with --kv-cache-dtype f16, or use a plain reference set",
			set.Dir, e.Profile, e.Applies)
	case e.Profile == references.EmulationF16KV:
		return nil
	}
	return fmt.Errorf("%s applies %s's approximations (%s): it checks that engine's dumps (diff, bisect --dump) and servers (probe), not llorch-check's forward; use a plain reference set",
		set.Dir, e.Profile, e.Applies)
}

// kvCache is what of Options.KVCache shapes the numbers: the storage and
// the block size. A server's bound and prefix cache would only limit or
// share the fresh pools a run makes.
func (o Options) kvCache() kvcache.Options {
	return kvcache.Options{Float16: o.KVCache.Float16, BlockTokens: o.KVCache.BlockTokens}
}

// decoder is the decoder checkpoints 9 and 12 run the model through: the
// server's own, generation.ModelDecoder, on a pool made with the options'
// KVCache that gives back the blocks a sliding window left, as the
// server's does (their logits are the same bits either way).
func (o Options) decoder(m *model.Model) (generation.Decoder, error) {
	opt := o.kvCache()
	opt.FreeBehindWindow = true
	pool, err := m.NewKVPool(opt)
	if err != nil {
		return nil, err
	}
	return generation.NewBatchedDecoder(m, pool, nil), nil
}
