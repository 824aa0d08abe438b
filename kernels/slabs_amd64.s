//go:build amd64 && !purego

#include "textflag.h"
#include "half_amd64.h"

// Slab kernels: y += x·w on one whole 64-column slab streamed from k
// weight rows, float32, float16 or bfloat16 (axpySlabKernel,
// axpySlab16Kernel). Dispatch in kernels_amd64.go.

// AXPYSLAB is the body of axpySlabAVX2, axpySlabF16AVX2 and
// axpySlabBF16AVX2 and their 512-bit twins, written once: y[i,0:64] += Σ_{k'<k} x[i,k']·w[k',0:64]
// for i < m, w one full slab of float32 (rows of 256 contiguous bytes) or
// 16-bit weights (rows of 128, widened as they are loaded). The loops are
// turned round: a row of y stays in Y4-Y11 while the k weight rows stream
// past it, one FMA per element per row in k order, so the bits are
// axpyPanelAVX2's either way. WROW is the FMAs of the weight row at R10
// times Y0; WSTEP its bytes. LOADY and STOREY move the row of y at DI
// into Y4-Y11 and back, in the order of the columns WROW's registers hold
// (SLABY32: as they lie; SLABYEO: even and odd columns apart).
#define AXPYSLAB(BCAST, WROW, WSTEP, LOADY, STOREY) \
	MOVQ  y+0(FP), DI \
	MOVQ  x+16(FP), SI \
	MOVQ  m+40(FP), R13 \
	MOVQ  k+48(FP), AX \
	TESTQ R13, R13 \
	JZ    sdone \
	TESTQ AX, AX \
	JZ    sdone \
srow: \
	LOADY \
	MOVQ    w+32(FP), R10 \
	MOVQ    SI, R11 \
	MOVQ    AX, R12 \
sk: \
	BCAST \
	WROW \
	ADDQ         $WSTEP, R10 \
	ADDQ         $4, R11 \
	DECQ         R12 \
	JNZ          sk \
	STOREY \
	ADDQ    ldyb+8(FP), DI \
	ADDQ    ldxb+24(FP), SI \
	DECQ    R13 \
	JNZ     srow \
sdone: \
	VZEROUPPER \
	RET

// SLABPF16 and SLABPF32 ask for the weight row 8 KB ahead of the one at
// R10 (64 rows of 16-bit weights, 32 of float32): the rows stream from
// memory one after another, and a batch-1 step of float16 weights
// streamed ~65% of the read bandwidth without it, ~95% with it
// (Gemma-3-1B F16 8.2 -> 11.5 tokens/s here, notes 41). A prefetch never
// faults, so the last rows' ask past the slab's end is harmless.
#define SLABPF16 \
	PREFETCHT0 8192(R10) \
	PREFETCHT0 8256(R10)

#define SLABPF32 \
	PREFETCHT0 8192(R10) \
	PREFETCHT0 8256(R10) \
	PREFETCHT0 8320(R10) \
	PREFETCHT0 8384(R10)

// BCASTY and BCASTZ broadcast x[i,k'] to Y0 (the AVX2 rows) or Z0 (the
// 512-bit ones) for AXPYSLAB.
#define BCASTY VBROADCASTSS (R11), Y0
#define BCASTZ VBROADCASTSS (R11), Z0

// SLABLOAD512 and SLABSTORE512: y's 64 columns in Z4-Z7 as they lie.
#define SLABLOAD512 \
	VMOVUPS (DI), Z4 \
	VMOVUPS 64(DI), Z5 \
	VMOVUPS 128(DI), Z6 \
	VMOVUPS 192(DI), Z7

#define SLABSTORE512 \
	VMOVUPS Z4, (DI) \
	VMOVUPS Z5, 64(DI) \
	VMOVUPS Z6, 128(DI) \
	VMOVUPS Z7, 192(DI)

// SLABROWH512 is a 16-bit weight row's FMAs, widened by CVT (half_amd64.h)
// 16 columns a register: half the instructions of SLABROWH, whose
// widening kept a float16 batch-1 step at ~65% of the read bandwidth
// (notes 41), and for bfloat16 fewer than SLABROWBF16's even and odd
// columns. Each column still takes one FMA a row in k order, so the bits
// are the same.
#define SLABROWH512(CVT) \
	SLABPF16 \
	CVT((R10), Z12) \
	CVT(32(R10), Z13) \
	CVT(64(R10), Z14) \
	CVT(96(R10), Z15) \
	VFMADD231PS Z12, Z0, Z4 \
	VFMADD231PS Z13, Z0, Z5 \
	VFMADD231PS Z14, Z0, Z6 \
	VFMADD231PS Z15, Z0, Z7

// SLABLOAD32 and SLABSTORE32: y's 64 columns in Y4-Y11 as they lie.
#define SLABLOAD32 \
	VMOVUPS (DI), Y4 \
	VMOVUPS 32(DI), Y5 \
	VMOVUPS 64(DI), Y6 \
	VMOVUPS 96(DI), Y7 \
	VMOVUPS 128(DI), Y8 \
	VMOVUPS 160(DI), Y9 \
	VMOVUPS 192(DI), Y10 \
	VMOVUPS 224(DI), Y11

#define SLABSTORE32 \
	VMOVUPS Y4, (DI) \
	VMOVUPS Y5, 32(DI) \
	VMOVUPS Y6, 64(DI) \
	VMOVUPS Y7, 96(DI) \
	VMOVUPS Y8, 128(DI) \
	VMOVUPS Y9, 160(DI) \
	VMOVUPS Y10, 192(DI) \
	VMOVUPS Y11, 224(DI)

// The bfloat16 slab holds y's columns even and odd apart: 32 bytes of
// bfloat16 weights are eight dwords, each an even column's bits in its
// low half and the next odd column's in its high half, so one shift left
// by 16 widens the eight even columns and one AND with 0xffff0000 the
// eight odd ones: two instructions for 16 weights, as VCVTPH2PS takes,
// where a zero extension and a shift (CVTBF16) take four. Group g of 16
// columns sums into Y(4+2g) (columns 16g, 16g+2, ..., 16g+14) and
// Y(5+2g) (16g+1, ..., 16g+15): every column still gets its FMAs in k
// order, so the bits are those of any other order of the registers.
// SLABLOADEO splits y's group at off into e (even columns) and o (odd)
// through Y12-Y13: VSHUFPS picks the evens (odds) of each 128-bit lane of
// the two halves, VPERMPD puts the lanes' pairs in order.
#define SLABLOADEO(off, e, o) \
	VMOVUPS off(DI), Y12 \
	VMOVUPS off+32(DI), Y13 \
	VSHUFPS $0x88, Y13, Y12, e \
	VSHUFPS $0xdd, Y13, Y12, o \
	VPERMPD $0xd8, e, e \
	VPERMPD $0xd8, o, o

// SLABSTOREEO interleaves e and o back into y's group at off, through
// Y12-Y15: VPERMPD undoes the pairs' order, VUNPCKLPS and VUNPCKHPS
// interleave each lane.
#define SLABSTOREEO(off, e, o) \
	VPERMPD   $0xd8, e, Y12 \
	VPERMPD   $0xd8, o, Y13 \
	VUNPCKLPS Y13, Y12, Y14 \
	VUNPCKHPS Y13, Y12, Y15 \
	VMOVUPS   Y14, off(DI) \
	VMOVUPS   Y15, off+32(DI)

#define SLABLOADBF16 \
	SLABLOADEO(0, Y4, Y5) \
	SLABLOADEO(64, Y6, Y7) \
	SLABLOADEO(128, Y8, Y9) \
	SLABLOADEO(192, Y10, Y11)

#define SLABSTOREBF16 \
	SLABSTOREEO(0, Y4, Y5) \
	SLABSTOREEO(64, Y6, Y7) \
	SLABSTOREEO(128, Y8, Y9) \
	SLABSTOREEO(192, Y10, Y11)

// SLABGROUPBF16 widens the 16 bfloat16 weights at off(R10), group g's,
// into Y12 (odd columns) and Y13 (even), and adds their products with Y0
// to e and o. Y3 holds 0xffff0000 in every dword.
#define SLABGROUPBF16(off, e, o) \
	VMOVDQU     off(R10), Y12 \
	VPSLLD      $16, Y12, Y13 \
	VPAND       Y3, Y12, Y12 \
	VFMADD231PS Y13, Y0, e \
	VFMADD231PS Y12, Y0, o

#define SLABROWBF16 \
	SLABPF16 \
	SLABGROUPBF16(0, Y4, Y5) \
	SLABGROUPBF16(32, Y6, Y7) \
	SLABGROUPBF16(64, Y8, Y9) \
	SLABGROUPBF16(96, Y10, Y11)

#define SLABROW32 \
	SLABPF32 \
	VFMADD231PS (R10), Y0, Y4 \
	VFMADD231PS 32(R10), Y0, Y5 \
	VFMADD231PS 64(R10), Y0, Y6 \
	VFMADD231PS 96(R10), Y0, Y7 \
	VFMADD231PS 128(R10), Y0, Y8 \
	VFMADD231PS 160(R10), Y0, Y9 \
	VFMADD231PS 192(R10), Y0, Y10 \
	VFMADD231PS 224(R10), Y0, Y11

// SLABROWH is a 16-bit weight row's FMAs, widened by CVT (half_amd64.h)
// four registers at a time through Y12-Y15.
#define SLABROWH(CVT) \
	SLABPF16 \
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
	AXPYSLAB(BCASTY, SLABROW32, 256, SLABLOAD32, SLABSTORE32)

// func axpySlabF16AVX2(y *float32, ldyb int, x *float32, ldxb int, w *uint16, m, k int)
TEXT ·axpySlabF16AVX2(SB), NOSPLIT, $0-56
	AXPYSLAB(BCASTY, SLABROWH(CVTF16), 128, SLABLOAD32, SLABSTORE32)

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

// func axpySlabBF16AVX2(y *float32, ldyb int, x *float32, ldxb int, w *uint16, m, k int)
//
// The columns even and odd apart (SLABROWBF16); Y3 is its mask.
TEXT ·axpySlabBF16AVX2(SB), NOSPLIT, $0-56
	VPCMPEQD Y3, Y3, Y3
	VPSLLD   $16, Y3, Y3
	AXPYSLAB(BCASTY, SLABROWBF16, 128, SLABLOADBF16, SLABSTOREBF16)
