// Package sampling turns a model's next-token logits into a token: the
// Hugging Face logit processors (repetition penalty, temperature, top-k,
// top-p, min-p, in that order, as transformers 4.40–4.46 and
// pytorch/dump_references.py apply them) and a seeded inverse-CDF sampler.
//
// Everything here is deterministic: the same logits, history, settings and
// seed give the same token on any machine and any Go release, because the
// processors are plain float64 arithmetic and the sampler's bit stream is the
// specified PCG-DXSM algorithm turned into floats by this package itself.
package sampling
