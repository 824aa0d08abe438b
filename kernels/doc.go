// Package kernels holds the weight matrices of the forward pass as they
// sit in memory (float32, float16 or bfloat16 bits, quantised blocks) and the matrix
// kernels that read them: x·W for HF's Conv1D layout, x·Wᵀ for the LM head,
// and the small vector helpers around them. Each fast kernel (AVX2/FMA,
// AVX-512 assembly) has a pure-Go reference beside it with the same
// summation order, so the bits a forward pass produces do not depend on
// batch size. A float16 or bfloat16 matrix gives the bits of float32
// weights holding the same values; a quantised one is multiplied by limb products
// (limbs.go): exact integer sums of its integers with the activations'
// integer limbs, then float32, at float32's accuracy.
//
// The files are laid out as math/big's: reference.go holds the pure-Go
// body of every kernel, the pure-Go build's kernels and the assembly's
// specification; kernels_amd64.go declares the assembly and dispatches
// between it and those bodies (limbs_amd64.go for the limb products,
// softmax_amd64.go for a softmax row's scaling and narrowing),
// kernels_generic.go is the pure-Go build's dispatch. The assembly is one file a kernel family: panels_amd64.s
// (float32, float16 and bfloat16 panels), tiles_amd64.s (prefill's
// register tiles), float16_amd64.s (widening float16 and bfloat16; the
// one instruction the 16-bit twins differ by in half_amd64.h), quant_amd64.s (quantised groups' scales, and prefetching them),
// limbs_amd64.s, limbs_rows2_amd64.s, limbs_avx2_amd64.s,
// limbs_avx2w_amd64.s and limbs_avxvnni_amd64.s (limb products: AVX-512
// VNNI, one row and two; AVX2 on bytes, and on words for 8 bits; AVX-VNNI,
// the AVX2 loops with VEX VPDPBUSD, limbs_avxvnni_amd64.go; their group
// loop in limbs_amd64.h, the AVX2 pieces in limbs_avx2_amd64.h, the AVX2
// constants in limbconsts_amd64.s),
// limbsplit_amd64.s (activations into limbs), slabs_amd64.s (whole float
// slabs), exp_amd64.s (GELU and exp) and softmax_amd64.s. No file calls anything above it;
// in order
// from the bottom: reference.go and scratch.go; the dispatch; the float16
// and bfloat16 panels, summation blocking, vector helpers and parallel loop
// (float16.go, blocking.go, attention.go, exp.go, gelu.go, softmax.go,
// parallel.go);
// the quantised and slabbed layouts and limb products (quant.go,
// limbs.go, slabs.go); Matrix
// (matrix.go); the products (matmul.go, then matmul_t.go, and batch.go:
// many products in one sharing-out over the cores).
package kernels
