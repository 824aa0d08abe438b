package generation

import (
	"context"
	"errors"

	"github.com/llorch/llorch-check/kvcache"
)

// reserver is an optional Decoder capability: promising a sequence its
// positions of a bounded KV cache before it starts (ModelDecoder.Reserve).
type reserver interface {
	Reserve(ctx context.Context, positions int) error
}

// prefixReporter is an optional Decoder capability: how many prompt
// positions the last prefill took from a prefix cache.
type prefixReporter interface {
	CachedTokens() int
}

// reserve promises d positions, waiting while ctx lasts; a request the KV
// cache could never hold is field's error (the prompt, or the prompt and
// max_tokens together), as one that does not fit the context is.
func reserve(ctx context.Context, d Decoder, positions int, field string) error {
	r, ok := d.(reserver)
	if !ok {
		return nil
	}
	err := r.Reserve(ctx, positions)
	if errors.Is(err, kvcache.ErrFull) {
		return &FieldError{Field: field, Code: CodeContextLength, Value: positions,
			Message: "positions are more than the server's KV cache holds (" + err.Error() + ")"}
	}
	return err
}

func cachedTokens(d Decoder) int {
	if r, ok := d.(prefixReporter); ok {
		return r.CachedTokens()
	}
	return 0
}
