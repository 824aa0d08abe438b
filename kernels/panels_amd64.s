//go:build amd64 && !purego

#include "textflag.h"

// Panel kernels: y += x·w on row-major float32 or float16 weights
// (axpyPanel, axpyPanel16), four weight rows' dot products with rows of h
// (dotPanel, dotPanel16), and Add. Dispatch in kernels_amd64.go, the
// pure-Go bodies in reference.go.

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
