//go:build amd64 && !purego

#include "textflag.h"

// Tile kernels: the register-blocked 4×24 (AVX2) and 4×48 (AVX-512)
// micro-kernels of prefill (gemmTiles). Dispatch in kernels_amd64.go.

// GEMM4 is the body of gemm4x24AVX2 and gemm4x48AVX512, written once for
// both register widths: C[4,3·VL/4] += A[4,k]·B[k,3·VL/4] (strides in
// bytes, k >= 1, VL a register's bytes), the register-blocked
// micro-kernel of prefill. The 4 rows' sums live in 12 registers, C0-C11
// (row r in C(3r)-C(3r+2)), for the whole k loop, so each B load (into
// B0-B2) feeds 4 FMAs and each A broadcast (into X) 3: the loop is bound
// by the FMA units, not by loads. The sums start from zero, add the
// products in k order and are then added to C, exactly what matmulCols
// does with axpyPanel over a zeroed block, so both give the same bits;
// the 512-bit kernel (twice the FLOPs per instruction on CPUs with
// full-width AVX-512 FMA units: Zen 5, Intel server parts) sums in the
// same order.
// TILEROW adds row ra's A element times B0-B2 to that row's sums c0-c2.
#define TILEROW(ra, X, B0, B1, B2, c0, c1, c2) \
	VBROADCASTSS (ra)(AX*1), X \
	VFMADD231PS  B0, X, c0 \
	VFMADD231PS  B1, X, c1 \
	VFMADD231PS  B2, X, c2

#define GEMM4(C0, C1, C2, C3, C4, C5, C6, C7, C8, C9, C10, C11, B0, B1, B2, X, VL) \
	MOVQ c+0(FP), DI \
	MOVQ ldcb+8(FP), DX \
	MOVQ a+16(FP), SI \
	MOVQ ldab+24(FP), AX \
	LEAQ (SI)(AX*1), R8 \
	LEAQ (SI)(AX*2), R9 \
	LEAQ (R8)(AX*2), R10 \
	MOVQ b+32(FP), BX \
	MOVQ ldbb+40(FP), R11 \
	MOVQ k+48(FP), CX \
	LEAQ (DI)(DX*1), R12 \
	LEAQ (DI)(DX*2), R13 \
	VXORPS  C0, C0, C0 \
	VXORPS  C1, C1, C1 \
	VXORPS  C2, C2, C2 \
	VXORPS  C3, C3, C3 \
	VXORPS  C4, C4, C4 \
	VXORPS  C5, C5, C5 \
	VXORPS  C6, C6, C6 \
	VXORPS  C7, C7, C7 \
	VXORPS  C8, C8, C8 \
	VXORPS  C9, C9, C9 \
	VXORPS  C10, C10, C10 \
	VXORPS  C11, C11, C11 \
	XORQ    AX, AX \
gemmloop: \
	VMOVUPS      (BX), B0 \
	VMOVUPS      VL(BX), B1 \
	VMOVUPS      2*VL(BX), B2 \
	TILEROW(SI, X, B0, B1, B2, C0, C1, C2) \
	TILEROW(R8, X, B0, B1, B2, C3, C4, C5) \
	TILEROW(R9, X, B0, B1, B2, C6, C7, C8) \
	TILEROW(R10, X, B0, B1, B2, C9, C10, C11) \
	ADDQ         $4, AX \
	ADDQ         R11, BX \
	DECQ         CX \
	JNZ          gemmloop \
	VADDPS  (DI), C0, C0 \
	VADDPS  VL(DI), C1, C1 \
	VADDPS  2*VL(DI), C2, C2 \
	VADDPS  (R12), C3, C3 \
	VADDPS  VL(R12), C4, C4 \
	VADDPS  2*VL(R12), C5, C5 \
	VADDPS  (R13), C6, C6 \
	VADDPS  VL(R13), C7, C7 \
	VADDPS  2*VL(R13), C8, C8 \
	VADDPS  (R13)(DX*1), C9, C9 \
	VADDPS  VL(R13)(DX*1), C10, C10 \
	VADDPS  2*VL(R13)(DX*1), C11, C11 \
	VMOVUPS C0, (DI) \
	VMOVUPS C1, VL(DI) \
	VMOVUPS C2, 2*VL(DI) \
	VMOVUPS C3, (R12) \
	VMOVUPS C4, VL(R12) \
	VMOVUPS C5, 2*VL(R12) \
	VMOVUPS C6, (R13) \
	VMOVUPS C7, VL(R13) \
	VMOVUPS C8, 2*VL(R13) \
	VMOVUPS C9, (R13)(DX*1) \
	VMOVUPS C10, VL(R13)(DX*1) \
	VMOVUPS C11, 2*VL(R13)(DX*1) \
	VZEROUPPER \
	RET

// func gemm4x24AVX2(c *float32, ldcb int, a *float32, ldab int, b *float32, ldbb int, k int)
TEXT ·gemm4x24AVX2(SB), NOSPLIT, $0-56
	GEMM4(Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7, Y8, Y9, Y10, Y11, Y12, Y13, Y14, Y15, 32)

// func gemm4x48AVX512(c *float32, ldcb int, a *float32, ldab int, b *float32, ldbb int, k int)
TEXT ·gemm4x48AVX512(SB), NOSPLIT, $0-56
	GEMM4(Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7, Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15, 64)
