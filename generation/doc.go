// Package generation runs a language model token by token: the sampling
// loop over the KV cache with stop conditions and streaming text
// (Generate), and lm-evaluation-harness log-likelihood scoring
// (EncodePair, LoglikelihoodTokens). It sees the model only through the
// Decoder interface, so tests drive it with fakes.
package generation
