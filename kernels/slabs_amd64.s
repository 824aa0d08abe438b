//go:build amd64 && !purego

#include "textflag.h"
#include "half_amd64.h"

// Slab kernels: y += x·w on one whole 64-column slab streamed from k
// weight rows, float32, float16 or bfloat16 (axpySlabKernel,
// axpySlab16Kernel). Dispatch in kernels_amd64.go.

// AXPYSLAB is the body of axpySlabAVX2, axpySlabF16AVX2 and
// axpySlabBF16AVX2, written once: y[i,0:64] += Σ_{k'<k} x[i,k']·w[k',0:64]
// for i < m, w one full slab of float32 (rows of 256 contiguous bytes) or
// 16-bit weights (rows of 128, widened as they are loaded: half_amd64.h). The loops are turned round: a
// row of y stays in Y4-Y11 while the k weight rows
// stream past it, one FMA per element per row in k order, so the bits are
// axpyPanelAVX2's either way. WROW is the FMAs of the weight row at R10
// times Y0; WSTEP its bytes.
#define AXPYSLAB(WROW, WSTEP) \
	MOVQ  y+0(FP), DI \
	MOVQ  x+16(FP), SI \
	MOVQ  m+40(FP), R13 \
	MOVQ  k+48(FP), AX \
	TESTQ R13, R13 \
	JZ    sdone \
	TESTQ AX, AX \
	JZ    sdone \
srow: \
	VMOVUPS (DI), Y4 \
	VMOVUPS 32(DI), Y5 \
	VMOVUPS 64(DI), Y6 \
	VMOVUPS 96(DI), Y7 \
	VMOVUPS 128(DI), Y8 \
	VMOVUPS 160(DI), Y9 \
	VMOVUPS 192(DI), Y10 \
	VMOVUPS 224(DI), Y11 \
	MOVQ    w+32(FP), R10 \
	MOVQ    SI, R11 \
	MOVQ    AX, R12 \
sk: \
	VBROADCASTSS (R11), Y0 \
	WROW \
	ADDQ         $WSTEP, R10 \
	ADDQ         $4, R11 \
	DECQ         R12 \
	JNZ          sk \
	VMOVUPS Y4, (DI) \
	VMOVUPS Y5, 32(DI) \
	VMOVUPS Y6, 64(DI) \
	VMOVUPS Y7, 96(DI) \
	VMOVUPS Y8, 128(DI) \
	VMOVUPS Y9, 160(DI) \
	VMOVUPS Y10, 192(DI) \
	VMOVUPS Y11, 224(DI) \
	ADDQ    ldyb+8(FP), DI \
	ADDQ    ldxb+24(FP), SI \
	DECQ    R13 \
	JNZ     srow \
sdone: \
	VZEROUPPER \
	RET

#define SLABROW32 \
	VFMADD231PS (R10), Y0, Y4 \
	VFMADD231PS 32(R10), Y0, Y5 \
	VFMADD231PS 64(R10), Y0, Y6 \
	VFMADD231PS 96(R10), Y0, Y7 \
	VFMADD231PS 128(R10), Y0, Y8 \
	VFMADD231PS 160(R10), Y0, Y9 \
	VFMADD231PS 192(R10), Y0, Y10 \
	VFMADD231PS 224(R10), Y0, Y11

// SLABROWH is a 16-bit weight row's FMAs, widened by CVT (CVTF16 or
// CVTBF16) four registers at a time through Y12-Y15.
#define SLABROWH(CVT) \
	CVT((R10), Y12) \
	CVT(16(R10), Y13) \
	CVT(32(R10), Y14) \
	CVT(48(R10), Y15) \
	VFMADD231PS Y12, Y0, Y4 \
	VFMADD231PS Y13, Y0, Y5 \
	VFMADD231PS Y14, Y0, Y6 \
	VFMADD231PS Y15, Y0, Y7 \
	CVT(64(R10), Y12) \
	CVT(80(R10), Y13) \
	CVT(96(R10), Y14) \
	CVT(112(R10), Y15) \
	VFMADD231PS Y12, Y0, Y8 \
	VFMADD231PS Y13, Y0, Y9 \
	VFMADD231PS Y14, Y0, Y10 \
	VFMADD231PS Y15, Y0, Y11

// func axpySlabAVX2(y *float32, ldyb int, x *float32, ldxb int, w *float32, m, k int)
TEXT ·axpySlabAVX2(SB), NOSPLIT, $0-56
	AXPYSLAB(SLABROW32, 256)

// func axpySlabF16AVX2(y *float32, ldyb int, x *float32, ldxb int, w *uint16, m, k int)
TEXT ·axpySlabF16AVX2(SB), NOSPLIT, $0-56
	AXPYSLAB(SLABROWH(CVTF16), 128)

// func axpySlabBF16AVX2(y *float32, ldyb int, x *float32, ldxb int, w *uint16, m, k int)
TEXT ·axpySlabBF16AVX2(SB), NOSPLIT, $0-56
	AXPYSLAB(SLABROWH(CVTBF16), 128)
