//go:build amd64 && !purego

#include "textflag.h"
#include "half_amd64.h"

// Float16 and bfloat16 kernels: widening binary16 rows to float32
// (widenBlockTo), bfloat16 rows (widenBF16BlockTo), and narrowing float32 to
// binary16. Dispatch in kernels_amd64.go, the pure-Go bodies in
// reference.go.

// WIDEN is the body of widenF16AVX512, widenF16F16C, widenBF16AVX512 and
// widenBF16AVX2, written once for both register widths and both formats:
// dst[r,0:n] = float32(src[r,0:n]) for r < rows (strides in bytes; n a
// multiple of VL values, VL the bytes of 16-bit source one register
// widens: 32 for Z0:Z1, 16 for Y0:Y1). CVT (half_amd64.h) is exact:
// VCVTPH2PS subnormals and NaNs included, bfloat16 bit for bit. DX holds
// the bytes of src a row.
#define WIDEN(CVT, V0, V1, VL) \
	MOVQ dst+0(FP), DI \
	MOVQ src+16(FP), SI \
	MOVQ rows+32(FP), R8 \
	MOVQ n+40(FP), DX \
	SHLQ $1, DX \
	TESTQ R8, R8 \
	JZ   wdone \
	TESTQ DX, DX \
	JZ   wdone \
wrow: \
	XORQ CX, CX \
wloop: \
	CVT((SI)(CX*1), V0) \
	CVT(VL(SI)(CX*1), V1) \
	VMOVUPS   V0, (DI)(CX*2) \
	VMOVUPS   V1, 2*VL(DI)(CX*2) \
	ADDQ      $(2*VL), CX \
	CMPQ      CX, DX \
	JL        wloop \
	ADDQ ldsb+24(FP), SI \
	ADDQ lddb+8(FP), DI \
	DECQ R8 \
	JNZ  wrow \
wdone: \
	VZEROUPPER \
	RET

// func widenF16AVX512(dst *float32, lddb int, src *uint16, ldsb int, rows, n int)
TEXT ·widenF16AVX512(SB), NOSPLIT, $0-48
	WIDEN(CVTF16, Z0, Z1, 32)

// func widenF16F16C(dst *float32, lddb int, src *uint16, ldsb int, rows, n int)
TEXT ·widenF16F16C(SB), NOSPLIT, $0-48
	WIDEN(CVTF16, Y0, Y1, 16)

// func widenBF16AVX512(dst *float32, lddb int, src *uint16, ldsb int, rows, n int)
TEXT ·widenBF16AVX512(SB), NOSPLIT, $0-48
	WIDEN(CVTBF16, Z0, Z1, 32)

// func widenBF16AVX2(dst *float32, lddb int, src *uint16, ldsb int, rows, n int)
TEXT ·widenBF16AVX2(SB), NOSPLIT, $0-48
	WIDEN(CVTBF16, Y0, Y1, 16)

// func narrowF16C(dst *uint16, src *float32, n int)
//
// NarrowFloat16 on n values (a multiple of 8): VCVTPS2PH rounding to
// nearest even (immediate 0), which quiets a NaN and keeps its payload's
// top bits as ggmlnum.Float32To16 does.
TEXT ·narrowF16C(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $3, CX
	JZ   narrowf16done

narrowf16loop:
	VMOVUPS   (SI), Y0
	VCVTPS2PH $0, Y0, X0
	VMOVDQU   X0, (DI)
	ADDQ      $32, SI
	ADDQ      $16, DI
	DECQ      CX
	JNZ       narrowf16loop

narrowf16done:
	VZEROUPPER
	RET
