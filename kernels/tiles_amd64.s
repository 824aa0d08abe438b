//go:build amd64 && !purego

#include "textflag.h"

// Tile kernels: the register-blocked 4×24 (AVX2) and 4×48 (AVX-512)
// micro-kernels of prefill (gemmTiles). Dispatch in kernels_amd64.go.

// func gemm4x24AVX2(c *float32, ldcb int, a *float32, ldab int, b *float32, ldbb int, k int)
//
// C[4,24] += A[4,k]·B[k,24] (strides in bytes, k >= 1): the register-blocked
// micro-kernel of prefill. The 4×24 sums live in 12 registers for the whole
// k loop, so each B load feeds 4 FMAs and each A broadcast 3: the loop is
// bound by the FMA units, not by loads. The sums start from zero, add the
// products in k order and are then added to C, exactly what matmulCols does
// with axpyPanel over a zeroed block, so both give the same bits.
TEXT ·gemm4x24AVX2(SB), NOSPLIT, $0-56
	MOVQ c+0(FP), DI
	MOVQ ldcb+8(FP), DX
	MOVQ a+16(FP), SI
	MOVQ ldab+24(FP), AX
	LEAQ (SI)(AX*1), R8
	LEAQ (SI)(AX*2), R9
	LEAQ (R8)(AX*2), R10
	MOVQ b+32(FP), BX
	MOVQ ldbb+40(FP), R11
	MOVQ k+48(FP), CX
	LEAQ (DI)(DX*1), R12
	LEAQ (DI)(DX*2), R13

	VXORPS  Y0, Y0, Y0
	VXORPS  Y1, Y1, Y1
	VXORPS  Y2, Y2, Y2
	VXORPS  Y3, Y3, Y3
	VXORPS  Y4, Y4, Y4
	VXORPS  Y5, Y5, Y5
	VXORPS  Y6, Y6, Y6
	VXORPS  Y7, Y7, Y7
	VXORPS  Y8, Y8, Y8
	VXORPS  Y9, Y9, Y9
	VXORPS  Y10, Y10, Y10
	VXORPS  Y11, Y11, Y11
	XORQ    AX, AX

gemmloop:
	VMOVUPS      (BX), Y12
	VMOVUPS      32(BX), Y13
	VMOVUPS      64(BX), Y14
	VBROADCASTSS (SI)(AX*1), Y15
	VFMADD231PS  Y12, Y15, Y0
	VFMADD231PS  Y13, Y15, Y1
	VFMADD231PS  Y14, Y15, Y2
	VBROADCASTSS (R8)(AX*1), Y15
	VFMADD231PS  Y12, Y15, Y3
	VFMADD231PS  Y13, Y15, Y4
	VFMADD231PS  Y14, Y15, Y5
	VBROADCASTSS (R9)(AX*1), Y15
	VFMADD231PS  Y12, Y15, Y6
	VFMADD231PS  Y13, Y15, Y7
	VFMADD231PS  Y14, Y15, Y8
	VBROADCASTSS (R10)(AX*1), Y15
	VFMADD231PS  Y12, Y15, Y9
	VFMADD231PS  Y13, Y15, Y10
	VFMADD231PS  Y14, Y15, Y11
	ADDQ         $4, AX
	ADDQ         R11, BX
	DECQ         CX
	JNZ          gemmloop

	VADDPS  (DI), Y0, Y0
	VADDPS  32(DI), Y1, Y1
	VADDPS  64(DI), Y2, Y2
	VADDPS  (R12), Y3, Y3
	VADDPS  32(R12), Y4, Y4
	VADDPS  64(R12), Y5, Y5
	VADDPS  (R13), Y6, Y6
	VADDPS  32(R13), Y7, Y7
	VADDPS  64(R13), Y8, Y8
	VADDPS  (R13)(DX*1), Y9, Y9
	VADDPS  32(R13)(DX*1), Y10, Y10
	VADDPS  64(R13)(DX*1), Y11, Y11
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, (R12)
	VMOVUPS Y4, 32(R12)
	VMOVUPS Y5, 64(R12)
	VMOVUPS Y6, (R13)
	VMOVUPS Y7, 32(R13)
	VMOVUPS Y8, 64(R13)
	VMOVUPS Y9, (R13)(DX*1)
	VMOVUPS Y10, 32(R13)(DX*1)
	VMOVUPS Y11, 64(R13)(DX*1)
	VZEROUPPER
	RET

// func gemm4x48AVX512(c *float32, ldcb int, a *float32, ldab int, b *float32, ldbb int, k int)
//
// gemm4x24AVX2 with 512-bit registers: C[4,48] += A[4,k]·B[k,48]. On CPUs
// with full-width AVX-512 FMA units (Zen 5, Intel server parts) this is
// twice the FLOPs per instruction; the summation order is the same.
TEXT ·gemm4x48AVX512(SB), NOSPLIT, $0-56
	MOVQ c+0(FP), DI
	MOVQ ldcb+8(FP), DX
	MOVQ a+16(FP), SI
	MOVQ ldab+24(FP), AX
	LEAQ (SI)(AX*1), R8
	LEAQ (SI)(AX*2), R9
	LEAQ (R8)(AX*2), R10
	MOVQ b+32(FP), BX
	MOVQ ldbb+40(FP), R11
	MOVQ k+48(FP), CX
	LEAQ (DI)(DX*1), R12
	LEAQ (DI)(DX*2), R13

	VXORPS  Z0, Z0, Z0
	VXORPS  Z1, Z1, Z1
	VXORPS  Z2, Z2, Z2
	VXORPS  Z3, Z3, Z3
	VXORPS  Z4, Z4, Z4
	VXORPS  Z5, Z5, Z5
	VXORPS  Z6, Z6, Z6
	VXORPS  Z7, Z7, Z7
	VXORPS  Z8, Z8, Z8
	VXORPS  Z9, Z9, Z9
	VXORPS  Z10, Z10, Z10
	VXORPS  Z11, Z11, Z11
	XORQ    AX, AX

gemm512loop:
	VMOVUPS      (BX), Z12
	VMOVUPS      64(BX), Z13
	VMOVUPS      128(BX), Z14
	VBROADCASTSS (SI)(AX*1), Z15
	VFMADD231PS  Z12, Z15, Z0
	VFMADD231PS  Z13, Z15, Z1
	VFMADD231PS  Z14, Z15, Z2
	VBROADCASTSS (R8)(AX*1), Z15
	VFMADD231PS  Z12, Z15, Z3
	VFMADD231PS  Z13, Z15, Z4
	VFMADD231PS  Z14, Z15, Z5
	VBROADCASTSS (R9)(AX*1), Z15
	VFMADD231PS  Z12, Z15, Z6
	VFMADD231PS  Z13, Z15, Z7
	VFMADD231PS  Z14, Z15, Z8
	VBROADCASTSS (R10)(AX*1), Z15
	VFMADD231PS  Z12, Z15, Z9
	VFMADD231PS  Z13, Z15, Z10
	VFMADD231PS  Z14, Z15, Z11
	ADDQ         $4, AX
	ADDQ         R11, BX
	DECQ         CX
	JNZ          gemm512loop

	VADDPS  (DI), Z0, Z0
	VADDPS  64(DI), Z1, Z1
	VADDPS  128(DI), Z2, Z2
	VADDPS  (R12), Z3, Z3
	VADDPS  64(R12), Z4, Z4
	VADDPS  128(R12), Z5, Z5
	VADDPS  (R13), Z6, Z6
	VADDPS  64(R13), Z7, Z7
	VADDPS  128(R13), Z8, Z8
	VADDPS  (R13)(DX*1), Z9, Z9
	VADDPS  64(R13)(DX*1), Z10, Z10
	VADDPS  128(R13)(DX*1), Z11, Z11
	VMOVUPS Z0, (DI)
	VMOVUPS Z1, 64(DI)
	VMOVUPS Z2, 128(DI)
	VMOVUPS Z3, (R12)
	VMOVUPS Z4, 64(R12)
	VMOVUPS Z5, 128(R12)
	VMOVUPS Z6, (R13)
	VMOVUPS Z7, 64(R13)
	VMOVUPS Z8, 128(R13)
	VMOVUPS Z9, (R13)(DX*1)
	VMOVUPS Z10, 64(R13)(DX*1)
	VMOVUPS Z11, 128(R13)(DX*1)
	VZEROUPPER
	RET
