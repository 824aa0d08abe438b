//go:build amd64 && !purego

#include "textflag.h"
#include "half_amd64.h"

// Panel kernels: y += x·w on row-major float32, float16 or bfloat16
// weights (axpyPanel, axpyPanel16), four weight rows' dot products with
// rows of h (dotPanel, dotPanel16), and Add. Dispatch in
// kernels_amd64.go, the pure-Go bodies in reference.go.

// Each panel kernel is written once, as a macro, and expanded for float32
// weights and for float16 and bfloat16 ones, which are widened as they
// are loaded (half_amd64.h): the same FMAs into the same accumulators in
// the same order, so the three give the same bits. The arguments name
// what differs:
//   WSHIFT  log2 of a weight's bytes (2 or 1): n columns are n<<WSHIFT
//           bytes of a weight row
//   YSCALE  a float32's bytes per weight byte (1 or 2): the index scale of
//           y's (h's) rows against CX, which steps through w
//   WSTEP   a weight row's bytes per 16 columns (64 or 32)
//   AXPYW, DOTW2  the weights' loads and FMAs, below

// AXPYW32, AXPYW16 and AXPYWBF16 (rw, xr, t0, t1): y's 16 columns in
// Y4:Y5 += xr · weight row rw's, 16-bit weights widened by CVT (AXPYWH)
// through scratch t0:t1 first.
#define AXPYW32(rw, xr, t0, t1) \
	VFMADD231PS (rw)(CX*1), xr, Y4 \
	VFMADD231PS 32(rw)(CX*1), xr, Y5

#define AXPYWH(CVT, rw, xr, t0, t1) \
	CVT((rw)(CX*1), t0) \
	CVT(16(rw)(CX*1), t1) \
	VFMADD231PS t0, xr, Y4 \
	VFMADD231PS t1, xr, Y5

#define AXPYW16(rw, xr, t0, t1) AXPYWH(CVTF16, rw, xr, t0, t1)
#define AXPYWBF16(rw, xr, t0, t1) AXPYWH(CVTBF16, rw, xr, t0, t1)

// AXPYPANEL is axpyPanelAVX2's body. For each block of 4 weight rows
// kb..kb+3 (k a multiple of 4) and each of the m rows i of y and x
// (strides in bytes):
//   y[i,0:n] += x[i,kb]*w[kb,0:n] + x[i,kb+1]*w[kb+1,0:n] + ...   (n a multiple of 16)
// Each weight row is read contiguously (from memory for i = 0, then from
// L1 for the other rows), and y accumulates in k order, the same order for
// every m: batching never changes a sequence's result. BX walks y's row i,
// R12 x's row i from column kb; R8-R11 are the block's 4 weight rows.
#define AXPYPANEL(WSHIFT, YSCALE, WSTEP, AXPYW) \
	MOVQ y+0(FP), DI \
	MOVQ x+16(FP), SI \
	MOVQ w+32(FP), R8 \
	MOVQ n+48(FP), DX \
	SHLQ $WSHIFT, DX \
	JZ   done \
	MOVQ k+64(FP), AX \
	SHRQ $2, AX \
	JZ   done \
kblock: \
	MOVQ ldwb+40(FP), BX \
	LEAQ (R8)(BX*1), R9 \
	LEAQ (R8)(BX*2), R10 \
	LEAQ (R9)(BX*2), R11 \
	MOVQ DI, BX \
	MOVQ SI, R12 \
	MOVQ m+56(FP), R13 \
mrow: \
	VBROADCASTSS 0(R12), Y0 \
	VBROADCASTSS 4(R12), Y1 \
	VBROADCASTSS 8(R12), Y2 \
	VBROADCASTSS 12(R12), Y3 \
	XORQ         CX, CX \
loop16: \
	VMOVUPS (BX)(CX*YSCALE), Y4 \
	VMOVUPS 32(BX)(CX*YSCALE), Y5 \
	AXPYW(R8, Y0, Y6, Y7) \
	AXPYW(R9, Y1, Y8, Y9) \
	AXPYW(R10, Y2, Y6, Y7) \
	AXPYW(R11, Y3, Y8, Y9) \
	VMOVUPS Y4, (BX)(CX*YSCALE) \
	VMOVUPS Y5, 32(BX)(CX*YSCALE) \
	ADDQ    $WSTEP, CX \
	CMPQ    CX, DX \
	JL      loop16 \
	ADDQ ldyb+8(FP), BX \
	ADDQ ldxb+24(FP), R12 \
	DECQ R13 \
	JNZ  mrow \
	ADDQ $16, SI \
	MOVQ ldwb+40(FP), BX \
	SHLQ $2, BX \
	ADDQ BX, R8 \
	DECQ AX \
	JNZ  kblock \
done: \
	VZEROUPPER \
	RET

// DOTW32, DOTW16 and DOTWBF16 (ra, rb, a0, a1, b0, b1): the products of
// h's 16 columns in Y8:Y9 with weight rows ra and rb, added to a0:a1 and
// b0:b1; 16-bit weights widened by CVT (DOTWH) through Y10-Y13 first.
#define DOTW32(ra, rb, a0, a1, b0, b1) \
	VFMADD231PS (ra)(CX*1), Y8, a0 \
	VFMADD231PS 32(ra)(CX*1), Y9, a1 \
	VFMADD231PS (rb)(CX*1), Y8, b0 \
	VFMADD231PS 32(rb)(CX*1), Y9, b1

#define DOTWH(CVT, ra, rb, a0, a1, b0, b1) \
	CVT((ra)(CX*1), Y10) \
	CVT(16(ra)(CX*1), Y11) \
	CVT((rb)(CX*1), Y12) \
	CVT(16(rb)(CX*1), Y13) \
	VFMADD231PS Y10, Y8, a0 \
	VFMADD231PS Y11, Y9, a1 \
	VFMADD231PS Y12, Y8, b0 \
	VFMADD231PS Y13, Y9, b1

#define DOTW16(ra, rb, a0, a1, b0, b1) DOTWH(CVTF16, ra, rb, a0, a1, b0, b1)
#define DOTWBF16(ra, rb, a0, a1, b0, b1) DOTWH(CVTBF16, ra, rb, a0, a1, b0, b1)

// DOTPANEL is dotPanelAVX2's body: out[i*ldo + r] = h[i,0:n]·w[r,0:n] for
// the 4 weight rows r and the m rows i of h (strides in bytes; n a
// multiple of 16). The 4 rows of w (R8-R11) stream from memory for i = 0
// and come from L1 for the other rows. Two accumulators per row (even and
// odd 8-lane chunks) hide the FMA latency: row r's sum is in
// Y(2r)+Y(2r+1), and the end reduces the four to one XMM of four lanes,
// lane r = row r ([r0 r0 r1 r1 | r0 r0 r1 r1], [r2 r2 r3 r3 | ...], then
// [r0 r1 r2 r3 | r0 r1 r2 r3]).
#define DOTPANEL(WSHIFT, YSCALE, WSTEP, DOTW2) \
	MOVQ h+0(FP), SI \
	MOVQ w+24(FP), R8 \
	MOVQ ldwb+32(FP), BX \
	LEAQ (R8)(BX*1), R9 \
	LEAQ (R8)(BX*2), R10 \
	LEAQ (R9)(BX*2), R11 \
	MOVQ n+40(FP), DX \
	SHLQ $WSHIFT, DX \
	MOVQ out+48(FP), DI \
	MOVQ m+16(FP), R13 \
	TESTQ R13, R13 \
	JZ   dotdone \
	DOTROWS(YSCALE, WSTEP, DOTW2) \
dotdone: \
	VZEROUPPER \
	RET

// DOTROWS is the panel's loop over the m rows of h (R13 of them, the
// first at SI) against the 4 weight rows at R8-R11, n bytes of each (DX),
// into out at DI.
#define DOTROWS(YSCALE, WSTEP, DOTW2) \
dotrow: \
	VXORPS Y0, Y0, Y0 \
	VXORPS Y1, Y1, Y1 \
	VXORPS Y2, Y2, Y2 \
	VXORPS Y3, Y3, Y3 \
	VXORPS Y4, Y4, Y4 \
	VXORPS Y5, Y5, Y5 \
	VXORPS Y6, Y6, Y6 \
	VXORPS Y7, Y7, Y7 \
	XORQ   CX, CX \
	TESTQ  DX, DX \
	JZ     dotsum \
dotloop: \
	VMOVUPS (SI)(CX*YSCALE), Y8 \
	VMOVUPS 32(SI)(CX*YSCALE), Y9 \
	DOTW2(R8, R9, Y0, Y1, Y2, Y3) \
	DOTW2(R10, R11, Y4, Y5, Y6, Y7) \
	ADDQ    $WSTEP, CX \
	CMPQ    CX, DX \
	JL      dotloop \
dotsum: \
	VADDPS       Y1, Y0, Y0 \
	VADDPS       Y3, Y2, Y2 \
	VADDPS       Y5, Y4, Y4 \
	VADDPS       Y7, Y6, Y6 \
	VHADDPS      Y2, Y0, Y0 \
	VHADDPS      Y6, Y4, Y4 \
	VHADDPS      Y4, Y0, Y0 \
	VEXTRACTF128 $1, Y0, X1 \
	VADDPS       X1, X0, X0 \
	VMOVUPS      X0, (DI) \
	ADDQ ldhb+8(FP), SI \
	ADDQ ldob+56(FP), DI \
	DECQ R13 \
	JNZ  dotrow \

// func axpyPanelAVX2(y *float32, ldyb int, x *float32, ldxb int, w *float32, ldwb int, n, m, k int)
TEXT ·axpyPanelAVX2(SB), NOSPLIT, $0-72
	AXPYPANEL(2, 1, 64, AXPYW32)

// func axpyPanelF16AVX2(y *float32, ldyb int, x *float32, ldxb int, w *uint16, ldwb int, n, m, k int)
TEXT ·axpyPanelF16AVX2(SB), NOSPLIT, $0-72
	AXPYPANEL(1, 2, 32, AXPYW16)

// func axpyPanelBF16AVX2(y *float32, ldyb int, x *float32, ldxb int, w *uint16, ldwb int, n, m, k int)
TEXT ·axpyPanelBF16AVX2(SB), NOSPLIT, $0-72
	AXPYPANEL(1, 2, 32, AXPYWBF16)

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

// func addScaledVecAVX2(dst, src *float32, s float32, n int)
//
// dst[0:n] += src[0:n]·s, each product rounded before the sum (no FMA),
// n a multiple of 16.
TEXT ·addScaledVecAVX2(SB), NOSPLIT, $0-32
	MOVQ         dst+0(FP), DI
	MOVQ         src+8(FP), SI
	VBROADCASTSS s+16(FP), Y2
	MOVQ         n+24(FP), DX
	SHLQ         $2, DX
	XORQ         CX, CX
	TESTQ        DX, DX
	JZ           scaleddone

scaledloop:
	VMULPS  (SI)(CX*1), Y2, Y0
	VMULPS  32(SI)(CX*1), Y2, Y1
	VADDPS  (DI)(CX*1), Y0, Y0
	VADDPS  32(DI)(CX*1), Y1, Y1
	VMOVUPS Y0, (DI)(CX*1)
	VMOVUPS Y1, 32(DI)(CX*1)
	ADDQ    $64, CX
	CMPQ    CX, DX
	JL      scaledloop

scaleddone:
	VZEROUPPER
	RET

// func dotPanelAVX2(h *float32, ldhb int, m int, w *float32, ldwb int, n int, out *float32, ldob int)
TEXT ·dotPanelAVX2(SB), NOSPLIT, $0-64
	DOTPANEL(2, 1, 64, DOTW32)

// func dotPanelsAVX2(h *float32, ldhb int, m int, w *float32, ldwb int, n int, out *float32, ldob int, groups int)
//
// dotPanelAVX2 on groups consecutive groups of 4 weight rows, group g's
// rows 4g..4g+3 into out's columns 4g..4g+3: one call for a decode
// step's keys, where a call a group cost more than its 256
// multiply-adds. AX is the group's first weight row, R12 its out, R14
// the groups left.
TEXT ·dotPanelsAVX2(SB), NOSPLIT, $0-72
	MOVQ w+24(FP), AX
	MOVQ out+48(FP), R12
	MOVQ groups+64(FP), R14
	MOVQ ldwb+32(FP), BX
	MOVQ n+40(FP), DX
	SHLQ $2, DX
	TESTQ R14, R14
	JZ   dotdone
	CMPQ m+16(FP), $0
	JEQ  dotdone
group:
	MOVQ h+0(FP), SI
	MOVQ AX, R8
	LEAQ (R8)(BX*1), R9
	LEAQ (R8)(BX*2), R10
	LEAQ (R9)(BX*2), R11
	MOVQ R12, DI
	MOVQ m+16(FP), R13
	DOTROWS(1, 64, DOTW32)
	LEAQ (AX)(BX*4), AX
	ADDQ $16, R12
	DECQ R14
	JNZ  group
dotdone:
	VZEROUPPER
	RET

// func dotPanelF16AVX2(h *float32, ldhb int, m int, w *uint16, ldwb int, n int, out *float32, ldob int)
TEXT ·dotPanelF16AVX2(SB), NOSPLIT, $0-64
	DOTPANEL(1, 2, 32, DOTW16)

// func dotPanelBF16AVX2(h *float32, ldhb int, m int, w *uint16, ldwb int, n int, out *float32, ldob int)
TEXT ·dotPanelBF16AVX2(SB), NOSPLIT, $0-64
	DOTPANEL(1, 2, 32, DOTWBF16)
