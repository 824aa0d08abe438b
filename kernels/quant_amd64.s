//go:build amd64 && !purego

#include "textflag.h"

// func axpyPanelAVX2(y *float32, ldyb int, x *float32, ldxb int, w *float32, ldwb int, n, m, k int)
//
// For each block of 4 weight rows kb..kb+3 (k a multiple of 4) and each of
// the m rows i of y and x (strides in bytes):
//   y[i,0:n] += x[i,kb]*w[kb,0:n] + x[i,kb+1]*w[kb+1,0:n] + ...   (n a multiple of 16)
// Each weight row is read contiguously (from memory for i = 0, then from
// L1 for the other rows), and y accumulates in k order, the same order for
// every m: batching never changes a sequence's result.
TEXT ·axpyPanelAVX2(SB), NOSPLIT, $0-72
	MOVQ y+0(FP), DI
	MOVQ x+16(FP), SI
	MOVQ w+32(FP), R8
	MOVQ n+48(FP), DX
	SHLQ $2, DX
	JZ   done
	MOVQ k+64(FP), AX
	SHRQ $2, AX
	JZ   done

kblock:
	MOVQ ldwb+40(FP), BX
	LEAQ (R8)(BX*1), R9
	LEAQ (R8)(BX*2), R10
	LEAQ (R9)(BX*2), R11
	MOVQ DI, BX               // y row i
	MOVQ SI, R12              // x row i, column kb
	MOVQ m+56(FP), R13

mrow:
	VBROADCASTSS 0(R12), Y0
	VBROADCASTSS 4(R12), Y1
	VBROADCASTSS 8(R12), Y2
	VBROADCASTSS 12(R12), Y3
	XORQ         CX, CX

loop16:
	VMOVUPS     (BX)(CX*1), Y4
	VMOVUPS     32(BX)(CX*1), Y5
	VFMADD231PS (R8)(CX*1), Y0, Y4
	VFMADD231PS 32(R8)(CX*1), Y0, Y5
	VFMADD231PS (R9)(CX*1), Y1, Y4
	VFMADD231PS 32(R9)(CX*1), Y1, Y5
	VFMADD231PS (R10)(CX*1), Y2, Y4
	VFMADD231PS 32(R10)(CX*1), Y2, Y5
	VFMADD231PS (R11)(CX*1), Y3, Y4
	VFMADD231PS 32(R11)(CX*1), Y3, Y5
	VMOVUPS     Y4, (BX)(CX*1)
	VMOVUPS     Y5, 32(BX)(CX*1)
	ADDQ        $64, CX
	CMPQ        CX, DX
	JL          loop16

	ADDQ ldyb+8(FP), BX
	ADDQ ldxb+24(FP), R12
	DECQ R13
	JNZ  mrow

	ADDQ $16, SI
	MOVQ ldwb+40(FP), BX
	SHLQ $2, BX
	ADDQ BX, R8
	DECQ AX
	JNZ  kblock

done:
	VZEROUPPER
	RET

// func dotPanelAVX2(h *float32, ldhb int, m int, w *float32, ldwb int, n int, out *float32, ldob int)
//
// out[i*ldo + r] = h[i,0:n]·w[r,0:n] for the 4 weight rows r and the m rows
// i of h (strides in bytes; n a multiple of 16). The 4 rows of w stream from
// memory for i = 0 and come from L1 for the other rows. Two accumulators
// per row (even and odd 8-lane chunks) hide the FMA latency.
TEXT ·dotPanelAVX2(SB), NOSPLIT, $0-64
	MOVQ h+0(FP), SI
	MOVQ w+24(FP), R8
	MOVQ ldwb+32(FP), BX
	LEAQ (R8)(BX*1), R9
	LEAQ (R8)(BX*2), R10
	LEAQ (R9)(BX*2), R11
	MOVQ n+40(FP), DX
	SHLQ $2, DX
	MOVQ out+48(FP), DI
	MOVQ m+16(FP), R13
	TESTQ R13, R13
	JZ   dotdone

dotrow:
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	XORQ   CX, CX
	TESTQ  DX, DX
	JZ     dotsum

dotloop:
	VMOVUPS     (SI)(CX*1), Y8
	VMOVUPS     32(SI)(CX*1), Y9
	VFMADD231PS (R8)(CX*1), Y8, Y0
	VFMADD231PS 32(R8)(CX*1), Y9, Y1
	VFMADD231PS (R9)(CX*1), Y8, Y2
	VFMADD231PS 32(R9)(CX*1), Y9, Y3
	VFMADD231PS (R10)(CX*1), Y8, Y4
	VFMADD231PS 32(R10)(CX*1), Y9, Y5
	VFMADD231PS (R11)(CX*1), Y8, Y6
	VFMADD231PS 32(R11)(CX*1), Y9, Y7
	ADDQ        $64, CX
	CMPQ        CX, DX
	JL          dotloop

dotsum:
	// Row r's sum is in Y(2r)+Y(2r+1); reduce the four to one XMM of
	// four lanes, lane r = row r.
	VADDPS       Y1, Y0, Y0
	VADDPS       Y3, Y2, Y2
	VADDPS       Y5, Y4, Y4
	VADDPS       Y7, Y6, Y6
	VHADDPS      Y2, Y0, Y0        // [r0 r0 r1 r1 | r0 r0 r1 r1]
	VHADDPS      Y6, Y4, Y4        // [r2 r2 r3 r3 | ...]
	VHADDPS      Y4, Y0, Y0        // [r0 r1 r2 r3 | r0 r1 r2 r3]
	VEXTRACTF128 $1, Y0, X1
	VADDPS       X1, X0, X0
	VMOVUPS      X0, (DI)

	ADDQ ldhb+8(FP), SI
	ADDQ ldob+56(FP), DI
	DECQ R13
	JNZ  dotrow

dotdone:
	VZEROUPPER
	RET

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

// func widenF16AVX512(dst *float32, lddb int, src *uint16, ldsb int, rows, n int)
//
// dst[r,0:n] = float32(src[r,0:n]) for r < rows (strides in bytes; n a
// multiple of 32). VCVTPH2PS is exact, subnormals and NaNs included.
TEXT ·widenF16AVX512(SB), NOSPLIT, $0-48
	MOVQ dst+0(FP), DI
	MOVQ src+16(FP), SI
	MOVQ rows+32(FP), R8
	MOVQ n+40(FP), DX
	SHLQ $1, DX               // bytes of src per row
	TESTQ R8, R8
	JZ   w512done
	TESTQ DX, DX
	JZ   w512done

w512row:
	XORQ CX, CX

w512loop:
	VCVTPH2PS (SI)(CX*1), Z0
	VCVTPH2PS 32(SI)(CX*1), Z1
	VMOVUPS   Z0, (DI)(CX*2)
	VMOVUPS   Z1, 64(DI)(CX*2)
	ADDQ      $64, CX
	CMPQ      CX, DX
	JL        w512loop

	ADDQ ldsb+24(FP), SI
	ADDQ lddb+8(FP), DI
	DECQ R8
	JNZ  w512row

w512done:
	VZEROUPPER
	RET

// func widenF16F16C(dst *float32, lddb int, src *uint16, ldsb int, rows, n int)
//
// widenF16AVX512 with 256-bit registers (F16C); n a multiple of 16.
TEXT ·widenF16F16C(SB), NOSPLIT, $0-48
	MOVQ dst+0(FP), DI
	MOVQ src+16(FP), SI
	MOVQ rows+32(FP), R8
	MOVQ n+40(FP), DX
	SHLQ $1, DX
	TESTQ R8, R8
	JZ   w256done
	TESTQ DX, DX
	JZ   w256done

w256row:
	XORQ CX, CX

w256loop:
	VCVTPH2PS (SI)(CX*1), Y0
	VCVTPH2PS 16(SI)(CX*1), Y1
	VMOVUPS   Y0, (DI)(CX*2)
	VMOVUPS   Y1, 32(DI)(CX*2)
	ADDQ      $32, CX
	CMPQ      CX, DX
	JL        w256loop

	ADDQ ldsb+24(FP), SI
	ADDQ lddb+8(FP), DI
	DECQ R8
	JNZ  w256row

w256done:
	VZEROUPPER
	RET

// func axpyPanelF16AVX2(y *float32, ldyb int, x *float32, ldxb int, w *uint16, ldwb int, n, m, k int)
//
// axpyPanelAVX2 with float16 weights, widened by VCVTPH2PS as they are
// loaded: the same FMAs in the same order, so the same bits as float32
// weights of the same values, from half the memory traffic.
TEXT ·axpyPanelF16AVX2(SB), NOSPLIT, $0-72
	MOVQ y+0(FP), DI
	MOVQ x+16(FP), SI
	MOVQ w+32(FP), R8
	MOVQ n+48(FP), DX
	SHLQ $1, DX               // bytes of float16 per weight row segment
	JZ   hdone
	MOVQ k+64(FP), AX
	SHRQ $2, AX
	JZ   hdone

hkblock:
	MOVQ ldwb+40(FP), BX
	LEAQ (R8)(BX*1), R9
	LEAQ (R8)(BX*2), R10
	LEAQ (R9)(BX*2), R11
	MOVQ DI, BX
	MOVQ SI, R12
	MOVQ m+56(FP), R13

hmrow:
	VBROADCASTSS 0(R12), Y0
	VBROADCASTSS 4(R12), Y1
	VBROADCASTSS 8(R12), Y2
	VBROADCASTSS 12(R12), Y3
	XORQ         CX, CX

hloop16:
	VMOVUPS     (BX)(CX*2), Y4
	VMOVUPS     32(BX)(CX*2), Y5
	VCVTPH2PS   (R8)(CX*1), Y6
	VCVTPH2PS   16(R8)(CX*1), Y7
	VFMADD231PS Y6, Y0, Y4
	VFMADD231PS Y7, Y0, Y5
	VCVTPH2PS   (R9)(CX*1), Y8
	VCVTPH2PS   16(R9)(CX*1), Y9
	VFMADD231PS Y8, Y1, Y4
	VFMADD231PS Y9, Y1, Y5
	VCVTPH2PS   (R10)(CX*1), Y6
	VCVTPH2PS   16(R10)(CX*1), Y7
	VFMADD231PS Y6, Y2, Y4
	VFMADD231PS Y7, Y2, Y5
	VCVTPH2PS   (R11)(CX*1), Y8
	VCVTPH2PS   16(R11)(CX*1), Y9
	VFMADD231PS Y8, Y3, Y4
	VFMADD231PS Y9, Y3, Y5
	VMOVUPS     Y4, (BX)(CX*2)
	VMOVUPS     Y5, 32(BX)(CX*2)
	ADDQ        $32, CX
	CMPQ        CX, DX
	JL          hloop16

	ADDQ ldyb+8(FP), BX
	ADDQ ldxb+24(FP), R12
	DECQ R13
	JNZ  hmrow

	ADDQ $16, SI
	MOVQ ldwb+40(FP), BX
	SHLQ $2, BX
	ADDQ BX, R8
	DECQ AX
	JNZ  hkblock

hdone:
	VZEROUPPER
	RET

// func dotPanelF16AVX2(h *float32, ldhb int, m int, w *uint16, ldwb int, n int, out *float32, ldob int)
//
// dotPanelAVX2 with float16 weight rows widened as they are loaded; same
// accumulators, same order, same bits.
TEXT ·dotPanelF16AVX2(SB), NOSPLIT, $0-64
	MOVQ h+0(FP), SI
	MOVQ w+24(FP), R8
	MOVQ ldwb+32(FP), BX
	LEAQ (R8)(BX*1), R9
	LEAQ (R8)(BX*2), R10
	LEAQ (R9)(BX*2), R11
	MOVQ n+40(FP), DX
	SHLQ $1, DX
	MOVQ out+48(FP), DI
	MOVQ m+16(FP), R13
	TESTQ R13, R13
	JZ   hdotdone

hdotrow:
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	XORQ   CX, CX
	TESTQ  DX, DX
	JZ     hdotsum

hdotloop:
	VMOVUPS     (SI)(CX*2), Y8
	VMOVUPS     32(SI)(CX*2), Y9
	VCVTPH2PS   (R8)(CX*1), Y10
	VCVTPH2PS   16(R8)(CX*1), Y11
	VCVTPH2PS   (R9)(CX*1), Y12
	VCVTPH2PS   16(R9)(CX*1), Y13
	VFMADD231PS Y10, Y8, Y0
	VFMADD231PS Y11, Y9, Y1
	VFMADD231PS Y12, Y8, Y2
	VFMADD231PS Y13, Y9, Y3
	VCVTPH2PS   (R10)(CX*1), Y10
	VCVTPH2PS   16(R10)(CX*1), Y11
	VCVTPH2PS   (R11)(CX*1), Y12
	VCVTPH2PS   16(R11)(CX*1), Y13
	VFMADD231PS Y10, Y8, Y4
	VFMADD231PS Y11, Y9, Y5
	VFMADD231PS Y12, Y8, Y6
	VFMADD231PS Y13, Y9, Y7
	ADDQ        $32, CX
	CMPQ        CX, DX
	JL          hdotloop

hdotsum:
	VADDPS       Y1, Y0, Y0
	VADDPS       Y3, Y2, Y2
	VADDPS       Y5, Y4, Y4
	VADDPS       Y7, Y6, Y6
	VHADDPS      Y2, Y0, Y0
	VHADDPS      Y6, Y4, Y4
	VHADDPS      Y4, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS       X1, X0, X0
	VMOVUPS      X0, (DI)

	ADDQ ldhb+8(FP), SI
	ADDQ ldob+56(FP), DI
	DECQ R13
	JNZ  hdotrow

hdotdone:
	VZEROUPPER
	RET

// func addVecAVX2(dst, src *float32, n int)
//
// dst[0:n] += src[0:n], n a multiple of 16.
TEXT ·addVecAVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), DX
	SHLQ $2, DX
	XORQ CX, CX
	TESTQ DX, DX
	JZ   adddone

addloop:
	VMOVUPS (DI)(CX*1), Y0
	VMOVUPS 32(DI)(CX*1), Y1
	VADDPS  (SI)(CX*1), Y0, Y0
	VADDPS  32(SI)(CX*1), Y1, Y1
	VMOVUPS Y0, (DI)(CX*1)
	VMOVUPS Y1, 32(DI)(CX*1)
	ADDQ    $64, CX
	CMPQ    CX, DX
	JL      addloop

adddone:
	VZEROUPPER
	RET

// Forming and using 16 int8 weights of axpyPanelQAVX2 (column CX of row
// pointer rq; scales in Y10:Y11, offsets in Y12:Y13, sums in Y4:Y5).
#define QWEIGHTS(rq, t0, t1) \
	VPMOVSXBD (rq)(CX*1), t0; \
	VPMOVSXBD 8(rq)(CX*1), t1; \
	VCVTDQ2PS t0, t0; \
	VCVTDQ2PS t1, t1; \
	VMULPS    Y10, t0, t0; \
	VMULPS    Y11, t1, t1

#define QOFFSET(t0, t1) \
	VADDPS Y12, t0, t0; \
	VADDPS Y13, t1, t1

#define QFMA(xr, t0, t1) \
	VFMADD231PS t0, xr, Y4; \
	VFMADD231PS t1, xr, Y5

// func axpyPanelQAVX2(y *float32, ldyb int, x *float32, ldxb int, q *int8, ldqb int, s, o *float32, n, m, k int)
//
// axpyPanelAVX2 with int8 weights: rows kb..kb+3 of q (k a multiple of 4,
// all k rows in one quantisation group) share the per-column scales s[0:n]
// and, if o is not nil, offsets o[0:n]. Each weight is formed as ggml
// forms it, s·q rounded, then + o rounded (VMULPS, VADDPS; never an FMA),
// and then used in the same FMA, in the same order, as a float32 weight:
// the same bits, from a quarter of the bytes. n a multiple of 16, strides
// in bytes; the k-block count lives in k's argument slot, for want of
// registers.
TEXT ·axpyPanelQAVX2(SB), NOSPLIT, $0-88
	MOVQ  x+16(FP), SI
	MOVQ  q+32(FP), R8
	MOVQ  s+48(FP), DI
	MOVQ  o+56(FP), AX
	MOVQ  n+64(FP), DX        // bytes of int8 per weight row segment
	TESTQ DX, DX
	JZ    qdone
	MOVQ  k+80(FP), CX
	SHRQ  $2, CX
	JZ    qdone
	MOVQ  CX, k+80(FP)

qkblock:
	MOVQ ldqb+40(FP), BX
	LEAQ (R8)(BX*1), R9
	LEAQ (R8)(BX*2), R10
	LEAQ (R9)(BX*2), R11
	MOVQ y+0(FP), BX
	MOVQ SI, R12
	MOVQ m+72(FP), R13

qmrow:
	VBROADCASTSS 0(R12), Y0
	VBROADCASTSS 4(R12), Y1
	VBROADCASTSS 8(R12), Y2
	VBROADCASTSS 12(R12), Y3
	XORQ         CX, CX
	TESTQ        AX, AX
	JNZ          qloopo

qloop:
	VMOVUPS (DI)(CX*4), Y10
	VMOVUPS 32(DI)(CX*4), Y11
	VMOVUPS (BX)(CX*4), Y4
	VMOVUPS 32(BX)(CX*4), Y5
	QWEIGHTS(R8, Y6, Y7)
	QFMA(Y0, Y6, Y7)
	QWEIGHTS(R9, Y8, Y9)
	QFMA(Y1, Y8, Y9)
	QWEIGHTS(R10, Y6, Y7)
	QFMA(Y2, Y6, Y7)
	QWEIGHTS(R11, Y8, Y9)
	QFMA(Y3, Y8, Y9)
	VMOVUPS Y4, (BX)(CX*4)
	VMOVUPS Y5, 32(BX)(CX*4)
	ADDQ    $16, CX
	CMPQ    CX, DX
	JL      qloop
	JMP     qnext

qloopo:
	VMOVUPS (DI)(CX*4), Y10
	VMOVUPS 32(DI)(CX*4), Y11
	VMOVUPS (AX)(CX*4), Y12
	VMOVUPS 32(AX)(CX*4), Y13
	VMOVUPS (BX)(CX*4), Y4
	VMOVUPS 32(BX)(CX*4), Y5
	QWEIGHTS(R8, Y6, Y7)
	QOFFSET(Y6, Y7)
	QFMA(Y0, Y6, Y7)
	QWEIGHTS(R9, Y8, Y9)
	QOFFSET(Y8, Y9)
	QFMA(Y1, Y8, Y9)
	QWEIGHTS(R10, Y6, Y7)
	QOFFSET(Y6, Y7)
	QFMA(Y2, Y6, Y7)
	QWEIGHTS(R11, Y8, Y9)
	QOFFSET(Y8, Y9)
	QFMA(Y3, Y8, Y9)
	VMOVUPS Y4, (BX)(CX*4)
	VMOVUPS Y5, 32(BX)(CX*4)
	ADDQ    $16, CX
	CMPQ    CX, DX
	JL      qloopo

qnext:
	ADDQ ldyb+8(FP), BX
	ADDQ ldxb+24(FP), R12
	DECQ R13
	JNZ  qmrow

	ADDQ $16, SI
	MOVQ ldqb+40(FP), BX
	SHLQ $2, BX
	ADDQ BX, R8
	DECQ k+80(FP)
	JNZ  qkblock

qdone:
	VZEROUPPER
	RET

// func axpyPanelQAVX512(y *float32, ldyb int, x *float32, ldxb int, q *int8, ldqb int, s, o *float32, n, m, k int)
//
// axpyPanelQAVX2 with 512-bit registers and the loops turned round: for
// each row of y, a strip of 64 columns (32 at the end; n a multiple of
// 32) stays in four registers while all k rows of q (one group, so one
// scale row) stream past it, one row a step, 64 contiguous bytes apart.
// Each sum still takes its products in k order, one FMA at a time, so
// the bits are those of the 256-bit kernel; but y is loaded and stored
// once per group instead of once per four rows, and four independent
// FMA chains hide the FMA latency.
TEXT ·axpyPanelQAVX512(SB), NOSPLIT, $0-88
	MOVQ  y+0(FP), DI
	MOVQ  x+16(FP), SI
	MOVQ  s+48(FP), R8
	MOVQ  o+56(FP), R9
	MOVQ  n+64(FP), DX
	MOVQ  ldqb+40(FP), BX
	MOVQ  m+72(FP), R13
	TESTQ DX, DX
	JZ    zdone
	MOVQ  k+80(FP), AX
	TESTQ AX, AX
	JZ    zdone

zrow:
	XORQ CX, CX

zstrip:
	MOVQ DX, R12
	SUBQ CX, R12
	CMPQ R12, $64
	JL   zstrip32
	VMOVUPS (R8)(CX*4), Z8
	VMOVUPS 64(R8)(CX*4), Z9
	VMOVUPS 128(R8)(CX*4), Z10
	VMOVUPS 192(R8)(CX*4), Z11
	VMOVUPS (DI)(CX*4), Z4
	VMOVUPS 64(DI)(CX*4), Z5
	VMOVUPS 128(DI)(CX*4), Z6
	VMOVUPS 192(DI)(CX*4), Z7
	MOVQ    q+32(FP), R10
	ADDQ    CX, R10
	MOVQ    SI, R11
	MOVQ    AX, R12
	TESTQ   R9, R9
	JNZ     zk64o

zk64:
	VBROADCASTSS (R11), Z0
	VPMOVSXBD    (R10), Z16
	VPMOVSXBD    16(R10), Z17
	VPMOVSXBD    32(R10), Z18
	VPMOVSXBD    48(R10), Z19
	VCVTDQ2PS    Z16, Z16
	VCVTDQ2PS    Z17, Z17
	VCVTDQ2PS    Z18, Z18
	VCVTDQ2PS    Z19, Z19
	VMULPS       Z8, Z16, Z16
	VMULPS       Z9, Z17, Z17
	VMULPS       Z10, Z18, Z18
	VMULPS       Z11, Z19, Z19
	VFMADD231PS  Z16, Z0, Z4
	VFMADD231PS  Z17, Z0, Z5
	VFMADD231PS  Z18, Z0, Z6
	VFMADD231PS  Z19, Z0, Z7
	ADDQ         BX, R10
	ADDQ         $4, R11
	DECQ         R12
	JNZ          zk64
	JMP          zstore64

zk64o:
	VMOVUPS      (R9)(CX*4), Z12
	VMOVUPS      64(R9)(CX*4), Z13
	VMOVUPS      128(R9)(CX*4), Z14
	VMOVUPS      192(R9)(CX*4), Z15

zk64oloop:
	VBROADCASTSS (R11), Z0
	VPMOVSXBD    (R10), Z16
	VPMOVSXBD    16(R10), Z17
	VPMOVSXBD    32(R10), Z18
	VPMOVSXBD    48(R10), Z19
	VCVTDQ2PS    Z16, Z16
	VCVTDQ2PS    Z17, Z17
	VCVTDQ2PS    Z18, Z18
	VCVTDQ2PS    Z19, Z19
	VMULPS       Z8, Z16, Z16
	VMULPS       Z9, Z17, Z17
	VMULPS       Z10, Z18, Z18
	VMULPS       Z11, Z19, Z19
	VADDPS       Z12, Z16, Z16
	VADDPS       Z13, Z17, Z17
	VADDPS       Z14, Z18, Z18
	VADDPS       Z15, Z19, Z19
	VFMADD231PS  Z16, Z0, Z4
	VFMADD231PS  Z17, Z0, Z5
	VFMADD231PS  Z18, Z0, Z6
	VFMADD231PS  Z19, Z0, Z7
	ADDQ         BX, R10
	ADDQ         $4, R11
	DECQ         R12
	JNZ          zk64oloop

zstore64:
	VMOVUPS Z4, (DI)(CX*4)
	VMOVUPS Z5, 64(DI)(CX*4)
	VMOVUPS Z6, 128(DI)(CX*4)
	VMOVUPS Z7, 192(DI)(CX*4)
	ADDQ    $64, CX
	CMPQ    CX, DX
	JL      zstrip
	JMP     znext

zstrip32:
	VMOVUPS (R8)(CX*4), Z8
	VMOVUPS 64(R8)(CX*4), Z9
	VXORPS  Z12, Z12, Z12
	VXORPS  Z13, Z13, Z13
	VMOVUPS (DI)(CX*4), Z4
	VMOVUPS 64(DI)(CX*4), Z5
	MOVQ    q+32(FP), R10
	ADDQ    CX, R10
	MOVQ    SI, R11
	MOVQ    AX, R12
	TESTQ   R9, R9
	JZ      zk32
	VMOVUPS (R9)(CX*4), Z12
	VMOVUPS 64(R9)(CX*4), Z13

zk32:
	VBROADCASTSS (R11), Z0
	VPMOVSXBD    (R10), Z16
	VPMOVSXBD    16(R10), Z17
	VCVTDQ2PS    Z16, Z16
	VCVTDQ2PS    Z17, Z17
	VMULPS       Z8, Z16, Z16
	VMULPS       Z9, Z17, Z17
	TESTQ        R9, R9
	JZ           zk32fma
	VADDPS       Z12, Z16, Z16
	VADDPS       Z13, Z17, Z17

zk32fma:
	VFMADD231PS Z16, Z0, Z4
	VFMADD231PS Z17, Z0, Z5
	ADDQ        BX, R10
	ADDQ        $4, R11
	DECQ        R12
	JNZ         zk32
	VMOVUPS     Z4, (DI)(CX*4)
	VMOVUPS     Z5, 64(DI)(CX*4)
	ADDQ        $32, CX
	CMPQ        CX, DX
	JL          zstrip

znext:
	ADDQ ldyb+8(FP), DI
	ADDQ ldxb+24(FP), SI
	DECQ R13
	JNZ  zrow

zdone:
	VZEROUPPER
	RET

// func dequantQAVX2(dst *float32, lddb int, q *int8, ldqb int, s, o *float32, rows, n int)
//
// dst[r,0:n] = s[0:n]·q[r,0:n] (+ o[0:n] if o is not nil), each rounded as
// axpyPanelQAVX2 forms a weight (strides in bytes; n a multiple of 16).
TEXT ·dequantQAVX2(SB), NOSPLIT, $0-64
	MOVQ  dst+0(FP), DI
	MOVQ  q+16(FP), SI
	MOVQ  s+32(FP), R8
	MOVQ  o+40(FP), R9
	MOVQ  rows+48(FP), R10
	MOVQ  n+56(FP), DX
	TESTQ DX, DX
	JZ    dqdone
	TESTQ R10, R10
	JZ    dqdone

dqrow:
	XORQ CX, CX

dqloop:
	VPMOVSXBD (SI)(CX*1), Y0
	VPMOVSXBD 8(SI)(CX*1), Y1
	VCVTDQ2PS Y0, Y0
	VCVTDQ2PS Y1, Y1
	VMULPS    (R8)(CX*4), Y0, Y0
	VMULPS    32(R8)(CX*4), Y1, Y1
	TESTQ     R9, R9
	JZ        dqstore
	VADDPS    (R9)(CX*4), Y0, Y0
	VADDPS    32(R9)(CX*4), Y1, Y1

dqstore:
	VMOVUPS Y0, (DI)(CX*4)
	VMOVUPS Y1, 32(DI)(CX*4)
	ADDQ    $16, CX
	CMPQ    CX, DX
	JL      dqloop

	ADDQ lddb+8(FP), DI
	ADDQ ldqb+24(FP), SI
	DECQ R10
	JNZ  dqrow

dqdone:
	VZEROUPPER
	RET

// Forming 64 weights from one 32-byte row of nibbles (R10): columns 0..15
// and 16..31 in the low nibbles, 32..47 and 48..63 in the high ones, each
// nibble + min (Z21; Z20 holds 15) converted and scaled by Z8..Z11.
#define Q4WEIGHTS64 \
	VPMOVZXBD (R10), Z16; \
	VPMOVZXBD 16(R10), Z17; \
	VPSRLD    $4, Z16, Z18; \
	VPSRLD    $4, Z17, Z19; \
	VPANDD    Z20, Z16, Z16; \
	VPANDD    Z20, Z17, Z17; \
	VPADDD    Z21, Z16, Z16; \
	VPADDD    Z21, Z17, Z17; \
	VPADDD    Z21, Z18, Z18; \
	VPADDD    Z21, Z19, Z19; \
	VCVTDQ2PS Z16, Z16; \
	VCVTDQ2PS Z17, Z17; \
	VCVTDQ2PS Z18, Z18; \
	VCVTDQ2PS Z19, Z19; \
	VMULPS    Z8, Z16, Z16; \
	VMULPS    Z9, Z17, Z17; \
	VMULPS    Z10, Z18, Z18; \
	VMULPS    Z11, Z19, Z19

// The first 32 columns only: the low nibbles.
#define Q4WEIGHTS32 \
	VPMOVZXBD (R10), Z16; \
	VPMOVZXBD 16(R10), Z17; \
	VPANDD    Z20, Z16, Z16; \
	VPANDD    Z20, Z17, Z17; \
	VPADDD    Z21, Z16, Z16; \
	VPADDD    Z21, Z17, Z17; \
	VCVTDQ2PS Z16, Z16; \
	VCVTDQ2PS Z17, Z17; \
	VMULPS    Z8, Z16, Z16; \
	VMULPS    Z9, Z17, Z17

#define Q4OFFSETS64 \
	VADDPS Z12, Z16, Z16; \
	VADDPS Z13, Z17, Z17; \
	VADDPS Z14, Z18, Z18; \
	VADDPS Z15, Z19, Z19

// func axpyPanelQ4AVX512(y *float32, ldyb int, x *float32, ldxb int, q *byte, s, o *float32, min, n, m, k int)
//
// axpyPanelQAVX512 on one slab of nibbles (rows 32 bytes apart): the 64
// columns of a full slab (n = 64) or its first 32 (n = 32), for the m
// rows of y and the k rows of one group. Each weight is (nibble + min),
// converted, times its scale, plus its offset: the integers and the float
// operations of the int8 kernel, so the same bits.
TEXT ·axpyPanelQ4AVX512(SB), NOSPLIT, $0-88
	MOVQ         y+0(FP), DI
	MOVQ         x+16(FP), SI
	MOVQ         s+40(FP), R8
	MOVQ         o+48(FP), R9
	VPBROADCASTD min+56(FP), Z21
	MOVL         $15, AX
	VPBROADCASTD AX, Z20
	MOVQ         n+64(FP), DX
	MOVQ         m+72(FP), R13
	MOVQ         k+80(FP), AX
	TESTQ        AX, AX
	JZ           q4done
	TESTQ        R13, R13
	JZ           q4done
	VMOVUPS      (R8), Z8
	VMOVUPS      64(R8), Z9
	CMPQ         DX, $64
	JL           q4row
	VMOVUPS      128(R8), Z10
	VMOVUPS      192(R8), Z11
	TESTQ        R9, R9
	JZ           q4row
	VMOVUPS      (R9), Z12
	VMOVUPS      64(R9), Z13
	VMOVUPS      128(R9), Z14
	VMOVUPS      192(R9), Z15

q4row:
	MOVQ q+32(FP), R10
	MOVQ SI, R11
	MOVQ AX, R12
	CMPQ DX, $64
	JL   q4s32
	VMOVUPS (DI), Z4
	VMOVUPS 64(DI), Z5
	VMOVUPS 128(DI), Z6
	VMOVUPS 192(DI), Z7
	TESTQ   R9, R9
	JNZ     q4k64o

q4k64:
	VBROADCASTSS (R11), Z0
	Q4WEIGHTS64
	VFMADD231PS  Z16, Z0, Z4
	VFMADD231PS  Z17, Z0, Z5
	VFMADD231PS  Z18, Z0, Z6
	VFMADD231PS  Z19, Z0, Z7
	ADDQ         $32, R10
	ADDQ         $4, R11
	DECQ         R12
	JNZ          q4k64
	JMP          q4store64

q4k64o:
	VBROADCASTSS (R11), Z0
	Q4WEIGHTS64
	Q4OFFSETS64
	VFMADD231PS  Z16, Z0, Z4
	VFMADD231PS  Z17, Z0, Z5
	VFMADD231PS  Z18, Z0, Z6
	VFMADD231PS  Z19, Z0, Z7
	ADDQ         $32, R10
	ADDQ         $4, R11
	DECQ         R12
	JNZ          q4k64o

q4store64:
	VMOVUPS Z4, (DI)
	VMOVUPS Z5, 64(DI)
	VMOVUPS Z6, 128(DI)
	VMOVUPS Z7, 192(DI)
	JMP     q4next

q4s32:
	VMOVUPS (DI), Z4
	VMOVUPS 64(DI), Z5

q4k32:
	VBROADCASTSS (R11), Z0
	Q4WEIGHTS32
	TESTQ        R9, R9
	JZ           q4k32fma
	VADDPS       (R9), Z16, Z16
	VADDPS       64(R9), Z17, Z17

q4k32fma:
	VFMADD231PS Z16, Z0, Z4
	VFMADD231PS Z17, Z0, Z5
	ADDQ        $32, R10
	ADDQ        $4, R11
	DECQ        R12
	JNZ         q4k32
	VMOVUPS     Z4, (DI)
	VMOVUPS     Z5, 64(DI)

q4next:
	ADDQ ldyb+8(FP), DI
	ADDQ ldxb+24(FP), SI
	DECQ R13
	JNZ  q4row

q4done:
	VZEROUPPER
	RET

// func dequantQ4AVX512(dst *float32, lddb int, q *byte, s, o *float32, min, rows, n int)
//
// dst[r,0:n] = the weights of rows r < rows of one slab of nibbles and one
// group, formed as axpyPanelQ4AVX512 forms them (n = 64 or 32).
TEXT ·dequantQ4AVX512(SB), NOSPLIT, $0-64
	MOVQ         dst+0(FP), DI
	MOVQ         q+16(FP), R10
	MOVQ         s+24(FP), R8
	MOVQ         o+32(FP), R9
	VPBROADCASTD min+40(FP), Z21
	MOVL         $15, AX
	VPBROADCASTD AX, Z20
	MOVQ         rows+48(FP), R12
	MOVQ         n+56(FP), DX
	TESTQ        R12, R12
	JZ           d4done
	VMOVUPS      (R8), Z8
	VMOVUPS      64(R8), Z9
	CMPQ         DX, $64
	JL           d4r32
	VMOVUPS      128(R8), Z10
	VMOVUPS      192(R8), Z11

d4r64:
	Q4WEIGHTS64
	TESTQ   R9, R9
	JZ      d4s64
	VADDPS  (R9), Z16, Z16
	VADDPS  64(R9), Z17, Z17
	VADDPS  128(R9), Z18, Z18
	VADDPS  192(R9), Z19, Z19

d4s64:
	VMOVUPS Z16, (DI)
	VMOVUPS Z17, 64(DI)
	VMOVUPS Z18, 128(DI)
	VMOVUPS Z19, 192(DI)
	ADDQ    $32, R10
	ADDQ    lddb+8(FP), DI
	DECQ    R12
	JNZ     d4r64
	JMP     d4done

d4r32:
	Q4WEIGHTS32
	TESTQ   R9, R9
	JZ      d4s32
	VADDPS  (R9), Z16, Z16
	VADDPS  64(R9), Z17, Z17

d4s32:
	VMOVUPS Z16, (DI)
	VMOVUPS Z17, 64(DI)
	ADDQ    $32, R10
	ADDQ    lddb+8(FP), DI
	DECQ    R12
	JNZ     d4r32

d4done:
	VZEROUPPER
	RET

// func axpySlabAVX2(y *float32, ldyb int, x *float32, ldxb int, w *float32, m, k int)
//
// y[i,0:64] += Σ_{k'<k} x[i,k']·w[k',0:64] for i < m, w one full slab
// (rows of 64 floats, 256 contiguous bytes). The loops are turned round
// as in axpyPanelQAVX512: a row of y stays in eight registers while the k
// weight rows stream past it, one FMA per element per row in k order, so
// the bits are axpyPanelAVX2's.
TEXT ·axpySlabAVX2(SB), NOSPLIT, $0-56
	MOVQ  y+0(FP), DI
	MOVQ  x+16(FP), SI
	MOVQ  m+40(FP), R13
	MOVQ  k+48(FP), AX
	TESTQ R13, R13
	JZ    sdone
	TESTQ AX, AX
	JZ    sdone

srow:
	VMOVUPS (DI), Y4
	VMOVUPS 32(DI), Y5
	VMOVUPS 64(DI), Y6
	VMOVUPS 96(DI), Y7
	VMOVUPS 128(DI), Y8
	VMOVUPS 160(DI), Y9
	VMOVUPS 192(DI), Y10
	VMOVUPS 224(DI), Y11
	MOVQ    w+32(FP), R10
	MOVQ    SI, R11
	MOVQ    AX, R12

sk:
	VBROADCASTSS (R11), Y0
	VFMADD231PS  (R10), Y0, Y4
	VFMADD231PS  32(R10), Y0, Y5
	VFMADD231PS  64(R10), Y0, Y6
	VFMADD231PS  96(R10), Y0, Y7
	VFMADD231PS  128(R10), Y0, Y8
	VFMADD231PS  160(R10), Y0, Y9
	VFMADD231PS  192(R10), Y0, Y10
	VFMADD231PS  224(R10), Y0, Y11
	ADDQ         $256, R10
	ADDQ         $4, R11
	DECQ         R12
	JNZ          sk

	VMOVUPS Y4, (DI)
	VMOVUPS Y5, 32(DI)
	VMOVUPS Y6, 64(DI)
	VMOVUPS Y7, 96(DI)
	VMOVUPS Y8, 128(DI)
	VMOVUPS Y9, 160(DI)
	VMOVUPS Y10, 192(DI)
	VMOVUPS Y11, 224(DI)
	ADDQ    ldyb+8(FP), DI
	ADDQ    ldxb+24(FP), SI
	DECQ    R13
	JNZ     srow

sdone:
	VZEROUPPER
	RET

// func axpySlabF16AVX2(y *float32, ldyb int, x *float32, ldxb int, w *uint16, m, k int)
//
// axpySlabAVX2 on float16 weights (rows of 128 bytes), widened by
// VCVTPH2PS as they are loaded: the same FMAs in the same order.
TEXT ·axpySlabF16AVX2(SB), NOSPLIT, $0-56
	MOVQ  y+0(FP), DI
	MOVQ  x+16(FP), SI
	MOVQ  m+40(FP), R13
	MOVQ  k+48(FP), AX
	TESTQ R13, R13
	JZ    hsdone
	TESTQ AX, AX
	JZ    hsdone

hsrow:
	VMOVUPS (DI), Y4
	VMOVUPS 32(DI), Y5
	VMOVUPS 64(DI), Y6
	VMOVUPS 96(DI), Y7
	VMOVUPS 128(DI), Y8
	VMOVUPS 160(DI), Y9
	VMOVUPS 192(DI), Y10
	VMOVUPS 224(DI), Y11
	MOVQ    w+32(FP), R10
	MOVQ    SI, R11
	MOVQ    AX, R12

hsk:
	VBROADCASTSS (R11), Y0
	VCVTPH2PS    (R10), Y12
	VCVTPH2PS    16(R10), Y13
	VCVTPH2PS    32(R10), Y14
	VCVTPH2PS    48(R10), Y15
	VFMADD231PS  Y12, Y0, Y4
	VFMADD231PS  Y13, Y0, Y5
	VFMADD231PS  Y14, Y0, Y6
	VFMADD231PS  Y15, Y0, Y7
	VCVTPH2PS    64(R10), Y12
	VCVTPH2PS    80(R10), Y13
	VCVTPH2PS    96(R10), Y14
	VCVTPH2PS    112(R10), Y15
	VFMADD231PS  Y12, Y0, Y8
	VFMADD231PS  Y13, Y0, Y9
	VFMADD231PS  Y14, Y0, Y10
	VFMADD231PS  Y15, Y0, Y11
	ADDQ         $128, R10
	ADDQ         $4, R11
	DECQ         R12
	JNZ          hsk

	VMOVUPS Y4, (DI)
	VMOVUPS Y5, 32(DI)
	VMOVUPS Y6, 64(DI)
	VMOVUPS Y7, 96(DI)
	VMOVUPS Y8, 128(DI)
	VMOVUPS Y9, 160(DI)
	VMOVUPS Y10, 192(DI)
	VMOVUPS Y11, 224(DI)
	ADDQ    ldyb+8(FP), DI
	ADDQ    ldxb+24(FP), SI
	DECQ    R13
	JNZ     hsrow

hsdone:
	VZEROUPPER
	RET

// func geluAVX2(x *float32, n int) int
//
// geluGeneric on blocks of four (n a multiple of 4), each operation that
// of the scalar code in the same order, math.Exp's FMA path included
// (Shibata's method: k = round(a·log2e), r = (a − k·ln2)/16, a Taylor
// series, squared four times, scaled by 2^k). It returns how many values
// it did: fewer than n when a block's exponent a is beyond ±700 or NaN,
// which the caller does in Go.
DATA geludata<>+0(SB)/8, $0.044715
DATA geludata<>+8(SB)/8, $-1.5957691216057308
DATA geludata<>+16(SB)/8, $700.0
DATA geludata<>+24(SB)/8, $1.4426950408889634073599246810018920
DATA geludata<>+32(SB)/8, $0.69314718055966295651160180568695068359375
DATA geludata<>+40(SB)/8, $0.28235290563031577122588448175013436025525412068e-12
DATA geludata<>+48(SB)/8, $0.0625
DATA geludata<>+56(SB)/8, $2.4801587301587301587e-5
DATA geludata<>+64(SB)/8, $1.9841269841269841270e-4
DATA geludata<>+72(SB)/8, $1.3888888888888888889e-3
DATA geludata<>+80(SB)/8, $8.3333333333333333333e-3
DATA geludata<>+88(SB)/8, $4.1666666666666666667e-2
DATA geludata<>+96(SB)/8, $1.6666666666666666667e-1
DATA geludata<>+104(SB)/8, $0.5
DATA geludata<>+112(SB)/8, $1.0
DATA geludata<>+120(SB)/8, $2.0
DATA geludata<>+128(SB)/8, $0x7fffffffffffffff
DATA geludata<>+136(SB)/4, $1023
GLOBL geludata<>(SB), RODATA, $144

// EXPPD is math.Exp of the four float64 in Y1, its avxfma path lane by
// lane (a·log2e rounded to k, a − k·ln2 in two parts, a degree-7
// polynomial of r = a/16 squared four times, times 2^k), into Y1; Y2–Y5
// and X3 are scratch, Y11 holds 2, Y12 1 and X13 the exponent bias. Valid
// for |a| ≤ 700, which the callers check.
#define EXPPD \
	VBROADCASTSD geludata<>+24(SB), Y2; \
	VMULPD       Y1, Y2, Y2; \
	VCVTPD2DQY   Y2, X3; \
	VCVTDQ2PD    X3, Y2; \
	VBROADCASTSD geludata<>+32(SB), Y4; \
	VFNMADD231PD Y4, Y2, Y1; \
	VBROADCASTSD geludata<>+40(SB), Y4; \
	VFNMADD231PD Y4, Y2, Y1; \
	VBROADCASTSD geludata<>+48(SB), Y4; \
	VMULPD       Y4, Y1, Y1; \
	VBROADCASTSD geludata<>+56(SB), Y5; \
	VBROADCASTSD geludata<>+64(SB), Y4; \
	VFMADD213PD  Y4, Y1, Y5; \
	VBROADCASTSD geludata<>+72(SB), Y4; \
	VFMADD213PD  Y4, Y1, Y5; \
	VBROADCASTSD geludata<>+80(SB), Y4; \
	VFMADD213PD  Y4, Y1, Y5; \
	VBROADCASTSD geludata<>+88(SB), Y4; \
	VFMADD213PD  Y4, Y1, Y5; \
	VBROADCASTSD geludata<>+96(SB), Y4; \
	VFMADD213PD  Y4, Y1, Y5; \
	VBROADCASTSD geludata<>+104(SB), Y4; \
	VFMADD213PD  Y4, Y1, Y5; \
	VFMADD213PD  Y12, Y1, Y5; \
	VMULPD       Y5, Y1, Y1; \
	VADDPD       Y11, Y1, Y5; \
	VMULPD       Y5, Y1, Y1; \
	VADDPD       Y11, Y1, Y5; \
	VMULPD       Y5, Y1, Y1; \
	VADDPD       Y11, Y1, Y5; \
	VMULPD       Y5, Y1, Y1; \
	VADDPD       Y11, Y1, Y5; \
	VFMADD213PD  Y12, Y5, Y1; \
	VPADDD       X13, X3, X3; \
	VPMOVZXDQ    X3, Y3; \
	VPSLLQ       $52, Y3, Y3; \
	VMULPD       Y3, Y1, Y1

TEXT ·geluAVX2(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), DI
	MOVQ n+8(FP), CX
	XORQ AX, AX
	VBROADCASTSD geludata<>+128(SB), Y15 // |.| mask
	VBROADCASTSD geludata<>+16(SB), Y14  // 700
	VPBROADCASTD geludata<>+136(SB), X13 // exponent bias
	VBROADCASTSD geludata<>+112(SB), Y12 // 1
	VBROADCASTSD geludata<>+120(SB), Y11 // 2

gblock:
	CMPQ AX, CX
	JGE  gdone
	VCVTPS2PD (DI)(AX*4), Y0             // f
	VBROADCASTSD geludata<>+0(SB), Y1
	VMULPD    Y0, Y1, Y1                 // 0.044715·f
	VMULPD    Y0, Y1, Y1                 // ·f
	VMULPD    Y0, Y1, Y1                 // ·f
	VADDPD    Y1, Y0, Y1                 // u = f + …
	VBROADCASTSD geludata<>+8(SB), Y2
	VMULPD    Y1, Y2, Y1                 // a
	VANDPD    Y15, Y1, Y2
	VCMPPD    $6, Y14, Y2, Y2            // |a| > 700 or NaN (NLE_US)
	VMOVMSKPD Y2, BX
	TESTQ     BX, BX
	JNZ       gdone

	EXPPD                                // e = math.Exp(a)

	VADDPD    Y12, Y1, Y1                // 1 + e
	VDIVPD    Y1, Y0, Y0                 // f / (1 + e)
	VCVTPD2PSY Y0, X0
	VMOVUPS   X0, (DI)(AX*4)
	ADDQ      $4, AX
	JMP       gblock

gdone:
	MOVQ AX, ret+16(FP)
	VZEROUPPER
	RET

// The slab kernels below run whole 64-column strips of a quantised slab
// through groups consecutive groups of rows: R8 (R9) points at a group's
// scale (offset) row, R14 counts the groups, R12 the group's rows, R10
// walks the integers and R11 (R15) the x rows. Rows of y stay in
// registers across the groups; every element still takes its products in
// k order, one FMA each, so the bits are axpyPanelQAVX512's.

// SLABSCALES loads one group's scales into s0–s3 and, when there are
// offsets (R9 not nil), its offsets into o0–o3.
#define SLABSCALES(s0, s1, s2, s3, o0, o1, o2, o3) \
	VMOVUPS (R8), s0; VMOVUPS 64(R8), s1; VMOVUPS 128(R8), s2; VMOVUPS 192(R8), s3; \
	TESTQ R9, R9; JZ 5(PC); \
	VMOVUPS (R9), o0; VMOVUPS 64(R9), o1; VMOVUPS 128(R9), o2; VMOVUPS 192(R9), o3

// NEXTGROUP moves to the next group's scale and offset rows (256 bytes
// on) and loops to label while groups remain.
#define NEXTGROUP(label) \
	ADDQ $256, R8; TESTQ R9, R9; JZ 2(PC); ADDQ $256, R9; \
	DECQ R14; JNZ label

// SLABOFFSETS adds the offsets o0–o3 to the weights w0–w3, if any.
#define SLABOFFSETS(w0, w1, w2, w3, o0, o1, o2, o3) \
	TESTQ R9, R9; JZ 5(PC); \
	VADDPS o0, w0, w0; VADDPS o1, w1, w1; VADDPS o2, w2, w2; VADDPS o3, w3, w3

// Q8ROW forms the weights of the int8 row at R10: w = float32(q)·s (+ o).
#define Q8ROW(w0, w1, w2, w3, s0, s1, s2, s3, o0, o1, o2, o3) \
	VPMOVSXBD (R10), w0; VPMOVSXBD 16(R10), w1; VPMOVSXBD 32(R10), w2; VPMOVSXBD 48(R10), w3; \
	VCVTDQ2PS w0, w0; VCVTDQ2PS w1, w1; VCVTDQ2PS w2, w2; VCVTDQ2PS w3, w3; \
	VMULPS s0, w0, w0; VMULPS s1, w1, w1; VMULPS s2, w2, w2; VMULPS s3, w3, w3; \
	SLABOFFSETS(w0, w1, w2, w3, o0, o1, o2, o3)

// Q4ROW forms the weights of the nibble row at R10 (column c in byte c's
// low nibble, c+32 in byte c's high one): w = float32(nibble + min)·s
// (+ o), float32(nibble + min) looked up in table (Q4TABLE) by VPERMPS,
// which reads an index's low 4 bits: one instruction where masking,
// adding min and converting took three, in a kernel bound by its vector
// instructions.
#define Q4ROW(w0, w1, w2, w3, s0, s1, s2, s3, o0, o1, o2, o3, table) \
	VPMOVZXBD (R10), w0; VPMOVZXBD 16(R10), w1; VPSRLD $4, w0, w2; VPSRLD $4, w1, w3; \
	VPERMPS table, w0, w0; VPERMPS table, w1, w1; VPERMPS table, w2, w2; VPERMPS table, w3, w3; \
	VMULPS s0, w0, w0; VMULPS s1, w1, w1; VMULPS s2, w2, w2; VMULPS s3, w3, w3; \
	SLABOFFSETS(w0, w1, w2, w3, o0, o1, o2, o3)

// Q4TABLE sets table to float32(min + i) in lane i, min in AX.
#define Q4TABLE(table) \
	VPBROADCASTD AX, table; VPADDD nibbleLanes<>(SB), table, table; VCVTDQ2PS table, table

DATA nibbleLanes<>+0(SB)/8, $0x0000000100000000
DATA nibbleLanes<>+8(SB)/8, $0x0000000300000002
DATA nibbleLanes<>+16(SB)/8, $0x0000000500000004
DATA nibbleLanes<>+24(SB)/8, $0x0000000700000006
DATA nibbleLanes<>+32(SB)/8, $0x0000000900000008
DATA nibbleLanes<>+40(SB)/8, $0x0000000b0000000a
DATA nibbleLanes<>+48(SB)/8, $0x0000000d0000000c
DATA nibbleLanes<>+56(SB)/8, $0x0000000f0000000e
GLOBL nibbleLanes<>(SB), RODATA|NOPTR, $64

// One row of y (a 64-column strip at DI) in Z4–Z7, and its FMAs with the
// weights in Z16–Z19 and x[k] from (R11).
#define Y1LOAD VMOVUPS (DI), Z4; VMOVUPS 64(DI), Z5; VMOVUPS 128(DI), Z6; VMOVUPS 192(DI), Z7
#define Y1STORE VMOVUPS Z4, (DI); VMOVUPS Z5, 64(DI); VMOVUPS Z6, 128(DI); VMOVUPS Z7, 192(DI)
#define FMA1ROW \
	VBROADCASTSS (R11), Z0; \
	VFMADD231PS Z16, Z0, Z4; VFMADD231PS Z17, Z0, Z5; VFMADD231PS Z18, Z0, Z6; VFMADD231PS Z19, Z0, Z7

// func axpySlabQAVX512(y *float32, ldyb int, x *float32, ldxb int, q *int8, s, o *float32, group, groups, m int)
//
// axpyPanelQAVX512 on a whole slab strip for m rows, through groups
// groups of group rows in one call: a call, and a store and load of y,
// per group cost as much as a Q6_K group's 16 rows.
TEXT ·axpySlabQAVX512(SB), NOSPLIT, $0-80
	MOVQ  y+0(FP), DI
	MOVQ  x+16(FP), SI
	MOVQ  m+72(FP), R13
	TESTQ R13, R13
	JZ    done

row:
	Y1LOAD
	MOVQ q+32(FP), R10
	MOVQ SI, R11
	MOVQ s+40(FP), R8
	MOVQ o+48(FP), R9
	MOVQ groups+64(FP), R14

group:
	SLABSCALES(Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15)
	MOVQ group+56(FP), R12

k:
	Q8ROW(Z16, Z17, Z18, Z19, Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15)
	FMA1ROW
	ADDQ $64, R10
	ADDQ $4, R11
	DECQ R12
	JNZ  k
	NEXTGROUP(group)

	Y1STORE
	ADDQ ldyb+8(FP), DI
	ADDQ ldxb+24(FP), SI
	DECQ R13
	JNZ  row

done:
	VZEROUPPER
	RET

// func axpySlabQ4AVX512(y *float32, ldyb int, x *float32, ldxb int, q *byte, s, o *float32, min, group, groups, m int)
//
// axpySlabQAVX512 on nibbles (rows 32 bytes apart).
TEXT ·axpySlabQ4AVX512(SB), NOSPLIT, $0-88
	MOVQ         y+0(FP), DI
	MOVQ         x+16(FP), SI
	MOVQ         min+56(FP), AX
	Q4TABLE(Z20)
	MOVQ         m+80(FP), R13
	TESTQ        R13, R13
	JZ           done

row:
	Y1LOAD
	MOVQ q+32(FP), R10
	MOVQ SI, R11
	MOVQ s+40(FP), R8
	MOVQ o+48(FP), R9
	MOVQ groups+72(FP), R14

group:
	SLABSCALES(Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15)
	MOVQ group+64(FP), R12

k:
	Q4ROW(Z16, Z17, Z18, Z19, Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15, Z20)
	FMA1ROW
	ADDQ $32, R10
	ADDQ $4, R11
	DECQ R12
	JNZ  k
	NEXTGROUP(group)

	Y1STORE
	ADDQ ldyb+8(FP), DI
	ADDQ ldxb+24(FP), SI
	DECQ R13
	JNZ  row

done:
	VZEROUPPER
	RET

// Four rows of y, one 64-column strip each, in Z4–Z19 (row r in
// Z(4+4r)..Z(7+4r)); rows 0 and 1 from DI, rows 2 and 3 from R13, DX
// apart.
#define Y4LOAD \
	VMOVUPS (DI), Z4; VMOVUPS 64(DI), Z5; VMOVUPS 128(DI), Z6; VMOVUPS 192(DI), Z7; \
	VMOVUPS (DI)(DX*1), Z8; VMOVUPS 64(DI)(DX*1), Z9; VMOVUPS 128(DI)(DX*1), Z10; VMOVUPS 192(DI)(DX*1), Z11; \
	VMOVUPS (R13), Z12; VMOVUPS 64(R13), Z13; VMOVUPS 128(R13), Z14; VMOVUPS 192(R13), Z15; \
	VMOVUPS (R13)(DX*1), Z16; VMOVUPS 64(R13)(DX*1), Z17; VMOVUPS 128(R13)(DX*1), Z18; VMOVUPS 192(R13)(DX*1), Z19

#define Y4STORE \
	VMOVUPS Z4, (DI); VMOVUPS Z5, 64(DI); VMOVUPS Z6, 128(DI); VMOVUPS Z7, 192(DI); \
	VMOVUPS Z8, (DI)(DX*1); VMOVUPS Z9, 64(DI)(DX*1); VMOVUPS Z10, 128(DI)(DX*1); VMOVUPS Z11, 192(DI)(DX*1); \
	VMOVUPS Z12, (R13); VMOVUPS Z13, 64(R13); VMOVUPS Z14, 128(R13); VMOVUPS Z15, 192(R13); \
	VMOVUPS Z16, (R13)(DX*1); VMOVUPS Z17, 64(R13)(DX*1); VMOVUPS Z18, 128(R13)(DX*1); VMOVUPS Z19, 192(R13)(DX*1)

// x[r,k] of the four rows (R11 and R15, BX apart) broadcast into Z0 in
// turn, each row's FMAs with the weights in Z20–Z23.
#define FMA4ROWS \
	VBROADCASTSS (R11), Z0; \
	VFMADD231PS Z20, Z0, Z4; VFMADD231PS Z21, Z0, Z5; VFMADD231PS Z22, Z0, Z6; VFMADD231PS Z23, Z0, Z7; \
	VBROADCASTSS (R11)(BX*1), Z0; \
	VFMADD231PS Z20, Z0, Z8; VFMADD231PS Z21, Z0, Z9; VFMADD231PS Z22, Z0, Z10; VFMADD231PS Z23, Z0, Z11; \
	VBROADCASTSS (R15), Z0; \
	VFMADD231PS Z20, Z0, Z12; VFMADD231PS Z21, Z0, Z13; VFMADD231PS Z22, Z0, Z14; VFMADD231PS Z23, Z0, Z15; \
	VBROADCASTSS (R15)(BX*1), Z0; \
	VFMADD231PS Z20, Z0, Z16; VFMADD231PS Z21, Z0, Z17; VFMADD231PS Z22, Z0, Z18; VFMADD231PS Z23, Z0, Z19

// The four-row kernels' registers: y in Z4–Z19, rows 2 and 3 at R13 = DI
// + 2·ldyb and R15 = x + 2·ldxb.
#define ROWS4SETUP \
	MOVQ y+0(FP), DI; MOVQ ldyb+8(FP), DX; LEAQ (DI)(DX*2), R13; \
	MOVQ x+16(FP), R11; MOVQ ldxb+24(FP), BX; LEAQ (R11)(BX*2), R15; \
	MOVQ q+32(FP), R10; MOVQ s+40(FP), R8; MOVQ o+48(FP), R9; \
	Y4LOAD

// func axpySlabQRows4AVX512(y *float32, ldyb int, x *float32, ldxb int, q *int8, s, o *float32, group, groups int)
//
// axpySlabQAVX512 for exactly four rows of y at once: each weight is
// formed once and used by the four rows (batched decode paid the integer
// conversion and scaling once per row).
TEXT ·axpySlabQRows4AVX512(SB), NOSPLIT, $0-72
	ROWS4SETUP
	MOVQ groups+64(FP), R14

group:
	SLABSCALES(Z24, Z25, Z26, Z27, Z28, Z29, Z30, Z31)
	MOVQ group+56(FP), R12

k:
	Q8ROW(Z20, Z21, Z22, Z23, Z24, Z25, Z26, Z27, Z28, Z29, Z30, Z31)
	FMA4ROWS
	ADDQ $64, R10
	ADDQ $4, R11
	ADDQ $4, R15
	DECQ R12
	JNZ  k
	NEXTGROUP(group)

	Y4STORE
	VZEROUPPER
	RET

// func axpySlabQ4Rows4AVX512(y *float32, ldyb int, x *float32, ldxb int, q *byte, s, o *float32, min, group, groups int)
//
// axpySlabQRows4AVX512 on nibbles (rows 32 bytes apart); Z1 holds the
// nibbles' values.
TEXT ·axpySlabQ4Rows4AVX512(SB), NOSPLIT, $0-80
	ROWS4SETUP
	MOVQ         min+56(FP), AX
	Q4TABLE(Z1)
	MOVQ         groups+72(FP), R14

group:
	SLABSCALES(Z24, Z25, Z26, Z27, Z28, Z29, Z30, Z31)
	MOVQ group+64(FP), R12

k:
	Q4ROW(Z20, Z21, Z22, Z23, Z24, Z25, Z26, Z27, Z28, Z29, Z30, Z31, Z1)
	FMA4ROWS
	ADDQ $32, R10
	ADDQ $4, R11
	ADDQ $4, R15
	DECQ R12
	JNZ  k
	NEXTGROUP(group)

	Y4STORE
	VZEROUPPER
	RET

// func scaleRowsAVX512(dst *float32, d *uint16, a *int8, n int)
//
// The scales of n groups of one slab from their block's float16 factors
// d (64 columns) and the groups' int8 factors a (rows of 64):
// dst[g,c] = float32(d[c])·float32(a[g,c]), one rounding, as ggml forms
// d·sc before scaling the integers (gguf.Scale).
TEXT ·scaleRowsAVX512(SB), NOSPLIT, $0-32
	MOVQ      dst+0(FP), DI
	MOVQ      d+8(FP), SI
	MOVQ      a+16(FP), R8
	MOVQ      n+24(FP), CX
	TESTQ     CX, CX
	JZ        srdone
	VCVTPH2PS (SI), Z0
	VCVTPH2PS 32(SI), Z1
	VCVTPH2PS 64(SI), Z2
	VCVTPH2PS 96(SI), Z3

srloop:
	VPMOVSXBD (R8), Z4
	VPMOVSXBD 16(R8), Z5
	VPMOVSXBD 32(R8), Z6
	VPMOVSXBD 48(R8), Z7
	VCVTDQ2PS Z4, Z4
	VCVTDQ2PS Z5, Z5
	VCVTDQ2PS Z6, Z6
	VCVTDQ2PS Z7, Z7
	VMULPS    Z0, Z4, Z4
	VMULPS    Z1, Z5, Z5
	VMULPS    Z2, Z6, Z6
	VMULPS    Z3, Z7, Z7
	VMOVUPS   Z4, (DI)
	VMOVUPS   Z5, 64(DI)
	VMOVUPS   Z6, 128(DI)
	VMOVUPS   Z7, 192(DI)
	ADDQ      $64, R8
	ADDQ      $256, DI
	DECQ      CX
	JNZ       srloop

srdone:
	VZEROUPPER
	RET

// Word shift counts that bring a slab row's high bits to the bottom of
// each byte: with 2 bits, 128-bit lane L (columns 16L..16L+15) shifts by
// 2L; with 1 bit, 64-bit lane L (columns 8L..8L+7) by L.
DATA unpackShift2<>+0(SB)/8, $0x0000000000000000
DATA unpackShift2<>+8(SB)/8, $0x0000000000000000
DATA unpackShift2<>+16(SB)/8, $0x0002000200020002
DATA unpackShift2<>+24(SB)/8, $0x0002000200020002
DATA unpackShift2<>+32(SB)/8, $0x0004000400040004
DATA unpackShift2<>+40(SB)/8, $0x0004000400040004
DATA unpackShift2<>+48(SB)/8, $0x0006000600060006
DATA unpackShift2<>+56(SB)/8, $0x0006000600060006
GLOBL unpackShift2<>(SB), RODATA|NOPTR, $64

DATA unpackShift1<>+0(SB)/8, $0x0000000000000000
DATA unpackShift1<>+8(SB)/8, $0x0001000100010001
DATA unpackShift1<>+16(SB)/8, $0x0002000200020002
DATA unpackShift1<>+24(SB)/8, $0x0003000300030003
DATA unpackShift1<>+32(SB)/8, $0x0004000400040004
DATA unpackShift1<>+40(SB)/8, $0x0005000500050005
DATA unpackShift1<>+48(SB)/8, $0x0006000600060006
DATA unpackShift1<>+56(SB)/8, $0x0007000700070007
GLOBL unpackShift1<>(SB), RODATA|NOPTR, $64

// UNPACKNIBBLES forms row SI's 64 low nibbles in Z0, in column order:
// the 32 bytes' low nibbles (columns 0..31), then their high ones; Z21
// holds 0x0f in every byte.
#define UNPACKNIBBLES \
	VMOVDQU      (SI), Y0; \
	VPSRLW       $4, Y0, Y1; \
	VINSERTI64X4 $1, Y1, Z0, Z0; \
	VPANDQ       Z21, Z0, Z0

// UNPACKHIGH shifts the high-bit bytes in Z1 by the counts in Z23, moves
// them to bit 4, keeps the bits of mask Z22, ORs them into Z0 (ternary
// logic 0xf8: Z0 | (Z1 & Z22)), adds min (Z20) and stores the row at dst.
#define UNPACKHIGH(dst) \
	VPSRLVW    Z23, Z1, Z1; \
	VPSLLW     $4, Z1, Z1; \
	VPTERNLOGD $0xf8, Z22, Z1, Z0; \
	VPADDB     Z20, Z0, Z0; \
	VMOVDQU64  Z0, (dst)

// UNPACKSETUP loads the arguments of the unpack kernels: dst in DI, lo
// in SI, hi in R8, min in every byte of Z20, 0x0f of Z21, the high bits'
// mask of Z22, their shift counts in Z23, and k in CX, tested for zero.
#define UNPACKSETUP(mask, counts) \
	MOVQ dst+0(FP), DI; MOVQ lo+8(FP), SI; MOVQ hi+16(FP), R8; \
	MOVQ min+24(FP), AX; VPBROADCASTB AX, Z20; \
	MOVL $0x0f0f0f0f, AX; VPBROADCASTD AX, Z21; \
	MOVL mask, AX; VPBROADCASTD AX, Z22; \
	VMOVDQU64 counts, Z23; \
	MOVQ k+32(FP), CX; TESTQ CX, CX

// func unpackRows2AVX512(dst *int8, lo, hi *byte, min, k int)
//
// k slab rows of 6-bit integers to int8 rows (64 bytes apart): each
// column's nibble from lo (rows 32 bytes apart), its top two bits from hi
// (rows 16 bytes apart; byte c%16 holds column c at bit 2·(c/16)), + min.
TEXT ·unpackRows2AVX512(SB), NOSPLIT, $0-40
	UNPACKSETUP($0x30303030, unpackShift2<>(SB))
	JZ          u2done

u2loop:
	UNPACKNIBBLES
	VBROADCASTI32X4 (R8), Z1
	UNPACKHIGH(DI)
	ADDQ            $32, SI
	ADDQ            $16, R8
	ADDQ            $64, DI
	DECQ            CX
	JNZ             u2loop

u2done:
	VZEROUPPER
	RET

// func unpackRows1AVX512(dst *int8, lo, hi *byte, min, k int)
//
// unpackRows2AVX512 for 5-bit integers: one high bit each, hi rows 8
// bytes apart (byte c%8 holds column c at bit c/8).
TEXT ·unpackRows1AVX512(SB), NOSPLIT, $0-40
	UNPACKSETUP($0x10101010, unpackShift1<>(SB))
	JZ          u1done

u1loop:
	UNPACKNIBBLES
	VPBROADCASTQ (R8), Z1
	UNPACKHIGH(DI)
	ADDQ         $32, SI
	ADDQ         $8, R8
	ADDQ         $64, DI
	DECQ         CX
	JNZ          u1loop

u1done:
	VZEROUPPER
	RET

// func axpySlabQHAVX512(y, x *float32, lo, hi *byte, s, o *float32, buf *int8, hbits, min, group, groups int)
//
// axpySlabQAVX512 for one row of y on packed 5-bit (hbits 1) or 6-bit
// (hbits 2) integers: each group's rows are unpacked into buf (group rows
// of 64 bytes, in L1) just before their FMAs, as unpackRows{1,2}AVX512
// unpacks them, so the stream of packed integers overlaps the arithmetic
// instead of coming before it. The same integers and float operations,
// so the same bits.
TEXT ·axpySlabQHAVX512(SB), NOSPLIT, $0-88
	MOVQ         y+0(FP), DI
	Y1LOAD
	MOVQ         x+8(FP), R11
	MOVQ         lo+16(FP), SI
	MOVQ         hi+24(FP), BX
	MOVQ         s+32(FP), R8
	MOVQ         o+40(FP), R9
	MOVQ         min+64(FP), AX
	VPBROADCASTB AX, Z20
	MOVL         $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z21
	MOVQ         hbits+56(FP), DX
	CMPQ         DX, $2
	JEQ          qhtwo
	MOVL         $0x10101010, AX
	VPBROADCASTD AX, Z22
	VMOVDQU64    unpackShift1<>(SB), Z23
	JMP          qhgroups

qhtwo:
	MOVL         $0x30303030, AX
	VPBROADCASTD AX, Z22
	VMOVDQU64    unpackShift2<>(SB), Z23

qhgroups:
	MOVQ groups+80(FP), R14

qhgroup:
	SLABSCALES(Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15)
	MOVQ buf+48(FP), R10
	MOVQ group+72(FP), CX

qhunpack:
	UNPACKNIBBLES
	CMPQ         DX, $2
	JNE          qhone
	VBROADCASTI32X4 (BX), Z1
	ADDQ         $16, BX
	JMP          qhhigh

qhone:
	VPBROADCASTQ (BX), Z1
	ADDQ         $8, BX

qhhigh:
	UNPACKHIGH(R10)
	ADDQ $32, SI
	ADDQ $64, R10
	DECQ CX
	JNZ  qhunpack

	MOVQ buf+48(FP), R10
	MOVQ group+72(FP), R12

qhk:
	Q8ROW(Z16, Z17, Z18, Z19, Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15)
	FMA1ROW
	ADDQ $64, R10
	ADDQ $4, R11
	DECQ R12
	JNZ  qhk
	NEXTGROUP(qhgroup)

	Y1STORE
	VZEROUPPER
	RET

// func expShiftedAVX2(dst *float64, src *float32, sub float32, n int) int
//
// dst[i] = math.Exp(float64(src[i]) − float64(sub)) for i < n (a multiple
// of 4), four at a time with math.Exp's own operations, so its bits. It
// stops at the first block with an argument outside ±700 or NaN and
// returns how many it did; the caller finishes with math.Exp.
TEXT ·expShiftedAVX2(SB), NOSPLIT, $0-40
	MOVQ         dst+0(FP), DI
	MOVQ         src+8(FP), SI
	VCVTSS2SD    sub+16(FP), X10, X10
	VBROADCASTSD X10, Y10
	MOVQ         n+24(FP), CX
	XORQ         AX, AX
	VBROADCASTSD geludata<>+128(SB), Y15 // |.| mask
	VBROADCASTSD geludata<>+16(SB), Y14  // 700
	VPBROADCASTD geludata<>+136(SB), X13 // exponent bias
	VBROADCASTSD geludata<>+112(SB), Y12 // 1
	VBROADCASTSD geludata<>+120(SB), Y11 // 2

eblock:
	CMPQ      AX, CX
	JGE       edone
	VCVTPS2PD (SI)(AX*4), Y1
	VSUBPD    Y10, Y1, Y1                // a
	VANDPD    Y15, Y1, Y2
	VCMPPD    $6, Y14, Y2, Y2            // |a| > 700 or NaN (NLE_US)
	VMOVMSKPD Y2, BX
	TESTQ     BX, BX
	JNZ       edone
	EXPPD
	VMOVUPD   Y1, (DI)(AX*8)
	ADDQ      $4, AX
	JMP       eblock

edone:
	MOVQ AX, ret+32(FP)
	VZEROUPPER
	RET

// Quadword shift counts that bring a slab row's high bits to the bottom of
// each byte, for 32 columns a register: with 1 bit, quadword j of
// columns 8j.. (j < 4) shifts by j, of columns 32+8j.. by 4+j; with 2
// bits, columns 16L.. shift by 2L.
DATA unpackQ1<>+0(SB)/8, $0
DATA unpackQ1<>+8(SB)/8, $1
DATA unpackQ1<>+16(SB)/8, $2
DATA unpackQ1<>+24(SB)/8, $3
DATA unpackQ1<>+32(SB)/8, $4
DATA unpackQ1<>+40(SB)/8, $5
DATA unpackQ1<>+48(SB)/8, $6
DATA unpackQ1<>+56(SB)/8, $7
GLOBL unpackQ1<>(SB), RODATA|NOPTR, $64

DATA unpackQ2<>+0(SB)/8, $0
DATA unpackQ2<>+8(SB)/8, $0
DATA unpackQ2<>+16(SB)/8, $2
DATA unpackQ2<>+24(SB)/8, $2
DATA unpackQ2<>+32(SB)/8, $4
DATA unpackQ2<>+40(SB)/8, $4
DATA unpackQ2<>+48(SB)/8, $6
DATA unpackQ2<>+56(SB)/8, $6
GLOBL unpackQ2<>(SB), RODATA|NOPTR, $64

// UNPACKHIGHAVX2 merges the high bits in Y2 (their bytes repeated for 32
// columns in each of Y2's uses) into the nibbles of Y0 (columns 0..31)
// and Y1 (32..63): shifted by the counts in Y12 and Y11, moved to bit 4,
// kept by the mask in Y13.
#define UNPACKHIGHAVX2 \
	VPSRLVQ Y12, Y2, Y3; VPSRLVQ Y11, Y2, Y2; \
	VPSLLW $4, Y3, Y3; VPSLLW $4, Y2, Y2; \
	VPAND Y13, Y3, Y3; VPAND Y13, Y2, Y2; \
	VPOR Y3, Y0, Y0; VPOR Y2, Y1, Y1

// func unpackRowsAVX2(dst *int8, lo, hi *byte, hbits, min, k int)
//
// unpackRows{1,2}AVX512 for CPUs without AVX-512, and for nibbles alone
// (hbits 0, hi unused): k slab rows to int8 rows, 64 bytes apart, so that
// the AVX2 int8 kernels read every quantised type.
TEXT ·unpackRowsAVX2(SB), NOSPLIT, $0-48
	MOVQ         dst+0(FP), DI
	MOVQ         lo+8(FP), SI
	MOVQ         hi+16(FP), R8
	MOVQ         hbits+24(FP), DX
	MOVQ         min+32(FP), AX
	MOVQ         AX, X15
	VPBROADCASTB X15, Y15
	MOVL         $0x0f0f0f0f, AX
	MOVQ         AX, X14
	VPBROADCASTD X14, Y14
	MOVQ         k+40(FP), CX
	TESTQ        CX, CX
	JZ           uadone
	CMPQ         DX, $1
	JEQ          uaone
	CMPQ         DX, $2
	JNE          ualoop
	MOVL         $0x30303030, AX
	MOVQ         AX, X13
	VPBROADCASTD X13, Y13
	VMOVDQU      unpackQ2<>+0(SB), Y12
	VMOVDQU      unpackQ2<>+32(SB), Y11
	JMP          ualoop

uaone:
	MOVL         $0x10101010, AX
	MOVQ         AX, X13
	VPBROADCASTD X13, Y13
	VMOVDQU      unpackQ1<>+0(SB), Y12
	VMOVDQU      unpackQ1<>+32(SB), Y11

ualoop:
	VMOVDQU (SI), Y0
	VPSRLW  $4, Y0, Y1
	VPAND   Y14, Y0, Y0
	VPAND   Y14, Y1, Y1
	CMPQ    DX, $1
	JEQ     uah1
	CMPQ    DX, $2
	JNE     uastore
	VBROADCASTI128 (R8), Y2
	ADDQ    $16, R8
	UNPACKHIGHAVX2
	JMP     uastore

uah1:
	VPBROADCASTQ (R8), Y2
	ADDQ         $8, R8
	UNPACKHIGHAVX2

uastore:
	VPADDB  Y15, Y0, Y0
	VPADDB  Y15, Y1, Y1
	VMOVDQU Y0, (DI)
	VMOVDQU Y1, 32(DI)
	ADDQ    $32, SI
	ADDQ    $64, DI
	DECQ    CX
	JNZ     ualoop

uadone:
	VZEROUPPER
	RET

// SCALE8 forms 8 scales: the int8 factors at off(R8), converted, times
// the widened block factors in dreg, stored at 4·off(DI).
#define SCALE8(off, dreg) \
	VPMOVSXBD off(R8), Y8; VCVTDQ2PS Y8, Y8; VMULPS dreg, Y8, Y8; VMOVUPS Y8, (4*off)(DI)

// func scaleRowsAVX2(dst *float32, d *uint16, a *int8, n int)
//
// scaleRowsAVX512 with 256-bit registers (F16C widens d), for CPUs
// without AVX-512.
TEXT ·scaleRowsAVX2(SB), NOSPLIT, $0-32
	MOVQ      dst+0(FP), DI
	MOVQ      d+8(FP), SI
	MOVQ      a+16(FP), R8
	MOVQ      n+24(FP), CX
	TESTQ     CX, CX
	JZ        sr2done
	VCVTPH2PS (SI), Y0
	VCVTPH2PS 16(SI), Y1
	VCVTPH2PS 32(SI), Y2
	VCVTPH2PS 48(SI), Y3
	VCVTPH2PS 64(SI), Y4
	VCVTPH2PS 80(SI), Y5
	VCVTPH2PS 96(SI), Y6
	VCVTPH2PS 112(SI), Y7

sr2loop:
	SCALE8(0, Y0)
	SCALE8(8, Y1)
	SCALE8(16, Y2)
	SCALE8(24, Y3)
	SCALE8(32, Y4)
	SCALE8(40, Y5)
	SCALE8(48, Y6)
	SCALE8(56, Y7)
	ADDQ $64, R8
	ADDQ $256, DI
	DECQ CX
	JNZ  sr2loop

sr2done:
	VZEROUPPER
	RET
