//go:build amd64 && !purego

#include "textflag.h"
#include "half_amd64.h"
#include "slabs_amd64.h"

// The 16-bit slab kernels that take y's rows four at a time
// (axpySlabF16AVX2, axpySlabF16AVX512, axpySlabBF16AVX512): each weight
// row is widened once for the four rows, where AXPYSLAB (slabs_amd64.s)
// widened it again for every row; the rows m leaves go one at a time
// through AXPYSLAB's loop, written out again. Every element of y still takes one FMA a
// weight row in k order, so the bits are the one-row kernels'.

// QUARTERF16 is columns yoff/4..yoff/4+15 of four rows of y (at DI, R8,
// R9, R14; x's at SI, +DX, +2DX, +3DX) in Y4-Y11, plus the products of
// every weight row's 16 float16 weights at woff (widened once, into
// Y12-Y13), for axpySlabF16AVX2; PFW is the weights' prefetch, asked by
// the first quarter only (the next three read the lines it brought).
#define QUARTERF16(yoff, woff, lbl, PFW) \
	VMOVUPS yoff(DI), Y4 \
	VMOVUPS yoff+32(DI), Y5 \
	VMOVUPS yoff(R8), Y6 \
	VMOVUPS yoff+32(R8), Y7 \
	VMOVUPS yoff(R9), Y8 \
	VMOVUPS yoff+32(R9), Y9 \
	VMOVUPS yoff(R14), Y10 \
	VMOVUPS yoff+32(R14), Y11 \
	MOVQ    w+32(FP), R10 \
	MOVQ    SI, R11 \
	LEAQ    (SI)(DX*1), CX \
	MOVQ    AX, R12 \
lbl: \
	PFW \
	VCVTPH2PS woff(R10), Y12 \
	VCVTPH2PS woff+16(R10), Y13 \
	VBROADCASTSS (R11), Y0 \
	VFMADD231PS Y12, Y0, Y4 \
	VFMADD231PS Y13, Y0, Y5 \
	VBROADCASTSS (CX), Y1 \
	VFMADD231PS Y12, Y1, Y6 \
	VFMADD231PS Y13, Y1, Y7 \
	VBROADCASTSS (R11)(DX*2), Y2 \
	VFMADD231PS Y12, Y2, Y8 \
	VFMADD231PS Y13, Y2, Y9 \
	VBROADCASTSS (CX)(DX*2), Y3 \
	VFMADD231PS Y12, Y3, Y10 \
	VFMADD231PS Y13, Y3, Y11 \
	ADDQ    $128, R10 \
	ADDQ    $4, R11 \
	ADDQ    $4, CX \
	DECQ    R12 \
	JNZ     lbl \
	VMOVUPS Y4, yoff(DI) \
	VMOVUPS Y5, yoff+32(DI) \
	VMOVUPS Y6, yoff(R8) \
	VMOVUPS Y7, yoff+32(R8) \
	VMOVUPS Y8, yoff(R9) \
	VMOVUPS Y9, yoff+32(R9) \
	VMOVUPS Y10, yoff(R14) \
	VMOVUPS Y11, yoff+32(R14)

#define NOPF

// func axpySlabF16AVX2(y *float32, ldyb int, x *float32, ldxb int, w *uint16, m, k int)
//
// y's rows four at a time as AXPYSLAB4H512 takes them, but in 16 ymm
// registers: four rows of 64 columns would need 32 for their sums, so the
// four rows take the slab a quarter (16 columns) at a time (QUARTERF16),
// each weight widened once for the four; the rows m leaves go one at a
// time through AXPYSLAB's loop. Same FMAs in the same order: same bits.
// Registers as AXPYSLAB4H512's, the sums in Y4-Y11, the widened weights
// in Y12-Y13, x in Y0-Y3.
TEXT ·axpySlabF16AVX2(SB), NOSPLIT, $0-56
	MOVQ  y+0(FP), DI
	MOVQ  ldyb+8(FP), BX
	MOVQ  x+16(FP), SI
	MOVQ  ldxb+24(FP), DX
	MOVQ  m+40(FP), R13
	MOVQ  k+48(FP), AX
	TESTQ AX, AX
	JZ    hdone
	CMPQ  R13, $4
	JLT   hrest

hrow4:
	LEAQ (DI)(BX*1), R8
	LEAQ (R8)(BX*1), R9
	LEAQ (R9)(BX*1), R14
	QUARTERF16(0, 0, hq0, SLABPF16)
	QUARTERF16(64, 32, hq1, NOPF)
	QUARTERF16(128, 64, hq2, NOPF)
	QUARTERF16(192, 96, hq3, NOPF)
	LEAQ (DI)(BX*4), DI
	LEAQ (SI)(DX*4), SI
	SUBQ $4, R13
	CMPQ R13, $4
	JGE  hrow4

hrest:
	TESTQ R13, R13
	JZ    hdone
	SLABLOAD32
	MOVQ  w+32(FP), R10
	MOVQ  SI, R11
	MOVQ  AX, R12

hk1:
	BCASTY
	SLABROWH(CVTF16)
	ADDQ $128, R10
	ADDQ $4, R11
	DECQ R12
	JNZ  hk1
	SLABSTORE32
	ADDQ BX, DI
	ADDQ DX, SI
	DECQ R13
	JMP  hrest

hdone:
	VZEROUPPER
	RET

// AXPYSLAB4H512 is the 512-bit 16-bit-weight slab kernel: y's rows four
// at a time (Z4-Z19), each weight row widened once (Z20-Z23) and
// multiplied with the four rows' x (Z0-Z3), then the rows m leaves one at
// a time as AXPYSLAB takes them. One row at a time widened each weight
// row once a row of y: the widening shares the FMAs' ports, and took as
// many of their cycles as the FMAs (notes 43). Each element of y still
// takes one FMA a weight row in k order, so the bits are AXPYSLAB's. BX
// and DX are y's and x's row strides; y's four rows are at DI, R8, R9,
// R14, x's at R11, CX, R11+2DX, CX+2DX.
#define AXPYSLAB4H512(CVT) \
	MOVQ  y+0(FP), DI \
	MOVQ  ldyb+8(FP), BX \
	MOVQ  x+16(FP), SI \
	MOVQ  ldxb+24(FP), DX \
	MOVQ  m+40(FP), R13 \
	MOVQ  k+48(FP), AX \
	TESTQ AX, AX \
	JZ    qdone \
	CMPQ  R13, $4 \
	JLT   qrest \
qrow4: \
	LEAQ    (DI)(BX*1), R8 \
	LEAQ    (R8)(BX*1), R9 \
	LEAQ    (R9)(BX*1), R14 \
	SLABLOAD4(DI, Z4, Z5, Z6, Z7) \
	SLABLOAD4(R8, Z8, Z9, Z10, Z11) \
	SLABLOAD4(R9, Z12, Z13, Z14, Z15) \
	SLABLOAD4(R14, Z16, Z17, Z18, Z19) \
	MOVQ    w+32(FP), R10 \
	MOVQ    SI, R11 \
	LEAQ    (SI)(DX*1), CX \
	MOVQ    AX, R12 \
qk4: \
	SLABPF16 \
	CVT((R10), Z20) \
	CVT(32(R10), Z21) \
	CVT(64(R10), Z22) \
	CVT(96(R10), Z23) \
	VBROADCASTSS (R11), Z0 \
	VBROADCASTSS (CX), Z1 \
	VBROADCASTSS (R11)(DX*2), Z2 \
	VBROADCASTSS (CX)(DX*2), Z3 \
	SLABFMA4(Z0, Z4, Z5, Z6, Z7) \
	SLABFMA4(Z1, Z8, Z9, Z10, Z11) \
	SLABFMA4(Z2, Z12, Z13, Z14, Z15) \
	SLABFMA4(Z3, Z16, Z17, Z18, Z19) \
	ADDQ    $128, R10 \
	ADDQ    $4, R11 \
	ADDQ    $4, CX \
	DECQ    R12 \
	JNZ     qk4 \
	SLABSTORE4(DI, Z4, Z5, Z6, Z7) \
	SLABSTORE4(R8, Z8, Z9, Z10, Z11) \
	SLABSTORE4(R9, Z12, Z13, Z14, Z15) \
	SLABSTORE4(R14, Z16, Z17, Z18, Z19) \
	LEAQ    (DI)(BX*4), DI \
	LEAQ    (SI)(DX*4), SI \
	SUBQ    $4, R13 \
	CMPQ    R13, $4 \
	JGE     qrow4 \
qrest: \
	TESTQ   R13, R13 \
	JZ      qdone \
	SLABLOAD512 \
	MOVQ    w+32(FP), R10 \
	MOVQ    SI, R11 \
	MOVQ    AX, R12 \
qk1: \
	BCASTZ \
	SLABROWH512(CVT) \
	ADDQ    $128, R10 \
	ADDQ    $4, R11 \
	DECQ    R12 \
	JNZ     qk1 \
	SLABSTORE512 \
	ADDQ    BX, DI \
	ADDQ    DX, SI \
	DECQ    R13 \
	JMP     qrest \
qdone: \
	VZEROUPPER \
	RET

// SLABLOAD4 and SLABSTORE4 move the 64 columns of y's row at p to and
// from a, b, c, d; SLABFMA4 adds the widened weight row (Z20-Z23) times
// x to them.
#define SLABLOAD4(p, a, b, c, d) \
	VMOVUPS (p), a \
	VMOVUPS 64(p), b \
	VMOVUPS 128(p), c \
	VMOVUPS 192(p), d

#define SLABSTORE4(p, a, b, c, d) \
	VMOVUPS a, (p) \
	VMOVUPS b, 64(p) \
	VMOVUPS c, 128(p) \
	VMOVUPS d, 192(p)

#define SLABFMA4(x, a, b, c, d) \
	VFMADD231PS Z20, x, a \
	VFMADD231PS Z21, x, b \
	VFMADD231PS Z22, x, c \
	VFMADD231PS Z23, x, d

// func axpySlabF16AVX512(y *float32, ldyb int, x *float32, ldxb int, w *uint16, m, k int)
TEXT ·axpySlabF16AVX512(SB), NOSPLIT, $0-56
	AXPYSLAB4H512(CVTF16)

// func axpySlabBF16AVX512(y *float32, ldyb int, x *float32, ldxb int, w *uint16, m, k int)
//
// AVX-512BW: VPMOVZXWD to a Z register.
TEXT ·axpySlabBF16AVX512(SB), NOSPLIT, $0-56
	AXPYSLAB4H512(CVTBF16)
