//go:build amd64 && !purego

#include "textflag.h"

// The scales of quantised groups, formed from the file's factors
// (scaleRows; the limb kernels in limbs_amd64.s use them). Dispatch in
// kernels_amd64.go, the pure-Go body in reference.go.

// SCALEROWSARGS loads scaleRows' arguments (dst in DI, d in SI, a in R8,
// n in CX) and goes to done for n = 0.
#define SCALEROWSARGS(done) \
	MOVQ      dst+0(FP), DI \
	MOVQ      d+8(FP), SI \
	MOVQ      a+16(FP), R8 \
	MOVQ      n+24(FP), CX \
	TESTQ     CX, CX \
	JZ        done

// func scaleRowsAVX512(dst *float32, d *uint16, a *int8, n int)
//
// The scales of n groups of one slab from their block's float16 factors
// d (64 columns) and the groups' int8 factors a (rows of 64):
// dst[g,c] = float32(d[c])·float32(a[g,c]), one rounding, as ggml forms
// d·sc before scaling the integers (gguf.Scale).
TEXT ·scaleRowsAVX512(SB), NOSPLIT, $0-32
	SCALEROWSARGS(srdone)
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

// SCALE8 forms 8 scales: the int8 factors at off(R8), converted, times
// the widened block factors in dreg, stored at 4·off(DI).
#define SCALE8(off, dreg) \
	VPMOVSXBD off(R8), Y8; VCVTDQ2PS Y8, Y8; VMULPS dreg, Y8, Y8; VMOVUPS Y8, (4*off)(DI)

// func scaleRowsAVX2(dst *float32, d *uint16, a *int8, n int)
//
// scaleRowsAVX512 with 256-bit registers (F16C widens d), for CPUs
// without AVX-512.
TEXT ·scaleRowsAVX2(SB), NOSPLIT, $0-32
	SCALEROWSARGS(sr2done)
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

// func prefetchBytes(p *byte, n int)
//
// Asks for the cache lines of p[0:n] (n > 0).
TEXT ·prefetchBytes(SB), NOSPLIT, $0-16
	MOVQ p+0(FP), SI
	MOVQ n+8(FP), CX

pfloop:
	PREFETCHT0 (SI)
	ADDQ       $64, SI
	SUBQ       $64, CX
	JG         pfloop
	RET
