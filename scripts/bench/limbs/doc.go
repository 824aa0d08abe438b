// Package limbs is an experiment, measured and kept for the kernels'
// next step (scripts/bench/NOTES.md, "Integer dot products at
// float32-class accuracy"): a 4-bit matrix times float32 activations with
// AVX-512 VNNI's integer dot products, without rounding the activations
// to 8 bits as llama.cpp does. Each group of 32 activations is scaled by
// a power of two to integers of 22 bits and split exactly into three
// signed 8-bit limbs; VPDPBUSD sums the weights' unsigned integers times
// each limb exactly in int32, and the three sums are joined in float32
// and scaled by the group's factors. Nothing here is used by the model:
// go test ./scripts/bench/limbs -v -bench . shows the same bits from the
// assembly and from Go, the error against float64 next to the kernels'
// current arithmetic, and the speed of both on the same matrix.
package limbs
