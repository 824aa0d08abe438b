//go:build amd64 && !purego

#include "textflag.h"
#include "unpack_amd64.h"

// Quantised kernels: y += x·w and dequantisation on a block of int8 or
// nibble integers with float32 scale and offset rows (axpyPieceKernel,
// dequantPieceKernel and their nibble twins), forming those rows from the
// file's factors (scaleRows) and unpacking 5- and 6-bit integers
// (unpackRows). Dispatch in kernels_amd64.go, the pure-Go bodies in
// reference.go.

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

// No offsets: nothing to load or add.
#define NOOFFSETLOAD
#define NOOFFSET(t0, t1)

#define QOFFSETLOAD \
	VMOVUPS (AX)(CX*4), Y12; \
	VMOVUPS 32(AX)(CX*4), Y13

// QROWS is axpyPanelQAVX2's loop over 16-column steps (labelled label) for
// one row of y and four rows of q, written once for the types without
// offsets and with them (OLOAD loads a step's offsets, OFFSET adds them).
#define QROWS(label, OLOAD, OFFSET) \
label: \
	VMOVUPS (DI)(CX*4), Y10 \
	VMOVUPS 32(DI)(CX*4), Y11 \
	OLOAD \
	VMOVUPS (BX)(CX*4), Y4 \
	VMOVUPS 32(BX)(CX*4), Y5 \
	QWEIGHTS(R8, Y6, Y7) \
	OFFSET(Y6, Y7) \
	QFMA(Y0, Y6, Y7) \
	QWEIGHTS(R9, Y8, Y9) \
	OFFSET(Y8, Y9) \
	QFMA(Y1, Y8, Y9) \
	QWEIGHTS(R10, Y6, Y7) \
	OFFSET(Y6, Y7) \
	QFMA(Y2, Y6, Y7) \
	QWEIGHTS(R11, Y8, Y9) \
	OFFSET(Y8, Y9) \
	QFMA(Y3, Y8, Y9) \
	VMOVUPS Y4, (BX)(CX*4) \
	VMOVUPS Y5, 32(BX)(CX*4) \
	ADDQ    $16, CX \
	CMPQ    CX, DX \
	JL      label

// SCALEROWSARGS loads scaleRows' arguments (dst in DI, d in SI, a in R8,
// n in CX) and goes to done for n = 0.
#define SCALEROWSARGS(done) \
	MOVQ      dst+0(FP), DI \
	MOVQ      d+8(FP), SI \
	MOVQ      a+16(FP), R8 \
	MOVQ      n+24(FP), CX \
	TESTQ     CX, CX \
	JZ        done

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

	QROWS(qloop, NOOFFSETLOAD, NOOFFSET)
	JMP     qnext

	QROWS(qloopo, QOFFSETLOAD, QOFFSET)

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

// The 512-bit kernels' k loop over one 64-column strip, written once for
// int8 and nibble rows and for the types without and with offsets:
// WEIGHTS forms the row at R10's 64 weights in Z16-Z19 (scales in
// Z8-Z11), OFFSETS adds the offsets in Z12-Z15 (or nothing), FMA64 adds
// them times x[k] (Z0) to the strip of y in Z4-Z7 in k order, and STEP is
// the distance to the next row.
// CVTSCALE64 converts the 64 integers in Z16-Z19 to float32 and scales
// them by Z8-Z11: both forms' last step.
#define CVTSCALE64 \
	VCVTDQ2PS Z16, Z16; \
	VCVTDQ2PS Z17, Z17; \
	VCVTDQ2PS Z18, Z18; \
	VCVTDQ2PS Z19, Z19; \
	VMULPS    Z8, Z16, Z16; \
	VMULPS    Z9, Z17, Z17; \
	VMULPS    Z10, Z18, Z18; \
	VMULPS    Z11, Z19, Z19

#define ZQWEIGHTS64 \
	VPMOVSXBD (R10), Z16; \
	VPMOVSXBD 16(R10), Z17; \
	VPMOVSXBD 32(R10), Z18; \
	VPMOVSXBD 48(R10), Z19; \
	CVTSCALE64

#define NOOFFSETS64

#define OFFSETS64 \
	VADDPS Z12, Z16, Z16; \
	VADDPS Z13, Z17, Z17; \
	VADDPS Z14, Z18, Z18; \
	VADDPS Z15, Z19, Z19

#define FMA64 \
	VFMADD231PS Z16, Z0, Z4; \
	VFMADD231PS Z17, Z0, Z5; \
	VFMADD231PS Z18, Z0, Z6; \
	VFMADD231PS Z19, Z0, Z7

#define ZKLOOP(label, WEIGHTS, OFFSETS, STEP) \
label: \
	VBROADCASTSS (R11), Z0 \
	WEIGHTS \
	OFFSETS \
	FMA64 \
	ADDQ         STEP, R10 \
	ADDQ         $4, R11 \
	DECQ         R12 \
	JNZ          label

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

	ZKLOOP(zk64, ZQWEIGHTS64, NOOFFSETS64, BX)
	JMP          zstore64

zk64o:
	VMOVUPS      (R9)(CX*4), Z12
	VMOVUPS      64(R9)(CX*4), Z13
	VMOVUPS      128(R9)(CX*4), Z14
	VMOVUPS      192(R9)(CX*4), Z15

	ZKLOOP(zk64oloop, ZQWEIGHTS64, OFFSETS64, BX)

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
	CVTSCALE64

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

	ZKLOOP(q4k64, Q4WEIGHTS64, NOOFFSETS64, $32)
	JMP          q4store64

	ZKLOOP(q4k64o, Q4WEIGHTS64, OFFSETS64, $32)

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

// UNPACKROWS is the body of unpackRows2AVX512 and unpackRows1AVX512:
// HIGH loads a row's high bits (histep bytes) into Z1 for UNPACKHIGH; mask
// and shifts as UNPACKSETUP takes them.
#define UNPACKROWS(mask, shifts, HIGH, histep) \
	UNPACKSETUP(mask, shifts) \
	JZ           done \
loop: \
	UNPACKNIBBLES \
	HIGH \
	UNPACKHIGH(DI) \
	ADDQ         $32, SI \
	ADDQ         $histep, R8 \
	ADDQ         $64, DI \
	DECQ         CX \
	JNZ          loop \
done: \
	VZEROUPPER \
	RET

#define HIGH2 VBROADCASTI32X4 (R8), Z1
#define HIGH1 VPBROADCASTQ (R8), Z1

// func unpackRows2AVX512(dst *int8, lo, hi *byte, min, k int)
//
// k slab rows of 6-bit integers to int8 rows (64 bytes apart): each
// column's nibble from lo (rows 32 bytes apart), its top two bits from hi
// (rows 16 bytes apart; byte c%16 holds column c at bit 2·(c/16)), + min.
TEXT ·unpackRows2AVX512(SB), NOSPLIT, $0-40
	UNPACKROWS($0x30303030, unpackShift2<>(SB), HIGH2, 16)

// func unpackRows1AVX512(dst *int8, lo, hi *byte, min, k int)
//
// unpackRows2AVX512 for 5-bit integers: one high bit each, hi rows 8
// bytes apart (byte c%8 holds column c at bit c/8).
TEXT ·unpackRows1AVX512(SB), NOSPLIT, $0-40
	UNPACKROWS($0x10101010, unpackShift1<>(SB), HIGH1, 8)

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
