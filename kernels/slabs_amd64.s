//go:build amd64 && !purego

#include "textflag.h"
#include "half_amd64.h"
#include "slabs_amd64.h"

// Slab kernels: y += x·w on one whole 64-column slab streamed from k
// weight rows, float32, float16 or bfloat16 (axpySlabKernel,
// axpySlab16Kernel). Dispatch in kernels_amd64.go. Here the kernels that
// take y a row at a time (float32; bfloat16 on AVX2); the float16 ones,
// and bfloat16's on AVX-512, take four rows at a time
// (slabs_rows4_amd64.s).

// AXPYSLAB is the body of axpySlabAVX2 and axpySlabBF16AVX2, written
// once (the four-row kernels take the rows they leave with the same
// loop): y[i,0:64] += Σ_{k'<k} x[i,k']·w[k',0:64]
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

// func axpySlabAVX2(y *float32, ldyb int, x *float32, ldxb int, w *float32, m, k int)
TEXT ·axpySlabAVX2(SB), NOSPLIT, $0-56
	AXPYSLAB(BCASTY, SLABROW32, 256, SLABLOAD32, SLABSTORE32)

// func axpySlabBF16AVX2(y *float32, ldyb int, x *float32, ldxb int, w *uint16, m, k int)
//
// The columns even and odd apart (SLABROWBF16); Y3 is its mask.
TEXT ·axpySlabBF16AVX2(SB), NOSPLIT, $0-56
	VPCMPEQD Y3, Y3, Y3
	VPSLLD   $16, Y3, Y3
	AXPYSLAB(BCASTY, SLABROWBF16, 128, SLABLOADBF16, SLABSTOREBF16)
