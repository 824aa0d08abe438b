//go:build amd64 && !purego

#include "textflag.h"

// math.Exp four at a time (EXPPD) and its two users: GELU and a
// softmax's shifted exponentials (gelu, expShifted). Dispatch in
// kernels_amd64.go, the pure-Go bodies in reference.go.

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
// EXPTERM is one Horner step of EXPPD's polynomial in Y1 (sum in Y5):
// Y5 = Y5·Y1 + the coefficient at geludata<>+off.
#define EXPTERM(off) \
	VBROADCASTSD geludata<>+off(SB), Y4; \
	VFMADD213PD  Y4, Y1, Y5

// EXPSQUARE is one of EXPPD's four squarings, math.Exp's y·(y+2) step.
#define EXPSQUARE \
	VMULPD       Y5, Y1, Y1; \
	VADDPD       Y11, Y1, Y5

// EXPCONSTS loads EXPPD's constants and the range check's: Y15 |.| mask,
// Y14 700, X13 the exponent bias, Y12 1, Y11 2.
#define EXPCONSTS \
	VBROADCASTSD geludata<>+128(SB), Y15; \
	VBROADCASTSD geludata<>+16(SB), Y14; \
	VPBROADCASTD geludata<>+136(SB), X13; \
	VBROADCASTSD geludata<>+112(SB), Y12; \
	VBROADCASTSD geludata<>+120(SB), Y11

// INRANGE jumps to out unless every a in Y1 is within ±700 (not NaN).
#define INRANGE(out) \
	VANDPD    Y15, Y1, Y2; \
	VCMPPD    $6, Y14, Y2, Y2; \
	VMOVMSKPD Y2, BX; \
	TESTQ     BX, BX; \
	JNZ       out

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
	EXPTERM(64); \
	EXPTERM(72); \
	EXPTERM(80); \
	EXPTERM(88); \
	EXPTERM(96); \
	EXPTERM(104); \
	VFMADD213PD  Y12, Y1, Y5; \
	EXPSQUARE; \
	EXPSQUARE; \
	EXPSQUARE; \
	EXPSQUARE; \
	VFMADD213PD  Y12, Y5, Y1; \
	VPADDD       X13, X3, X3; \
	VPMOVZXDQ    X3, Y3; \
	VPSLLQ       $52, Y3, Y3; \
	VMULPD       Y3, Y1, Y1

// EXPPD2R is EXPPD on two vectors at once, A in a1 and B in a2 (scratch
// k1, i1/q1, p1 for A; k2, i2/q2, p2 for B; t shared; one, two and bias
// hold 1, 2 and the exponent bias; cvt is the float64-to-int32
// conversion's mnemonic for the width), each lane's operations those of
// EXPPD in its order, so its bits. Interleaved because one chain leaves
// the core idle: EXPPD is some twenty-five dependent operations, and the
// scheduler holds too few of them to overlap consecutive blocks on its
// own (scripts/bench/notes/20). Written once for 256- and 512-bit
// vectors: EXPPD2 and EXPPD2Z.
#define EXPTERM2R(off, t, a1, p1, a2, p2) \
	VBROADCASTSD geludata<>+off(SB), t; \
	VFMADD213PD  t, a1, p1; \
	VFMADD213PD  t, a2, p2

#define EXPSQUARE2R(a1, p1, a2, p2, two) \
	VMULPD       p1, a1, a1; \
	VMULPD       p2, a2, a2; \
	VADDPD       two, a1, p1; \
	VADDPD       two, a2, p2

#define EXPPD2R(cvt, a1, k1, i1, q1, p1, a2, k2, i2, q2, p2, t, one, two, bias) \
	VBROADCASTSD geludata<>+24(SB), k1; \
	VMULPD       a2, k1, k2; \
	VMULPD       a1, k1, k1; \
	cvt          k1, i1; \
	cvt          k2, i2; \
	VCVTDQ2PD    i1, k1; \
	VCVTDQ2PD    i2, k2; \
	VBROADCASTSD geludata<>+32(SB), t; \
	VFNMADD231PD t, k1, a1; \
	VFNMADD231PD t, k2, a2; \
	VBROADCASTSD geludata<>+40(SB), t; \
	VFNMADD231PD t, k1, a1; \
	VFNMADD231PD t, k2, a2; \
	VBROADCASTSD geludata<>+48(SB), t; \
	VMULPD       t, a1, a1; \
	VMULPD       t, a2, a2; \
	VBROADCASTSD geludata<>+56(SB), p1; \
	VMOVAPD      p1, p2; \
	EXPTERM2R(64, t, a1, p1, a2, p2); \
	EXPTERM2R(72, t, a1, p1, a2, p2); \
	EXPTERM2R(80, t, a1, p1, a2, p2); \
	EXPTERM2R(88, t, a1, p1, a2, p2); \
	EXPTERM2R(96, t, a1, p1, a2, p2); \
	EXPTERM2R(104, t, a1, p1, a2, p2); \
	VFMADD213PD  one, a1, p1; \
	VFMADD213PD  one, a2, p2; \
	EXPSQUARE2R(a1, p1, a2, p2, two); \
	EXPSQUARE2R(a1, p1, a2, p2, two); \
	EXPSQUARE2R(a1, p1, a2, p2, two); \
	EXPSQUARE2R(a1, p1, a2, p2, two); \
	VFMADD213PD  one, p1, a1; \
	VFMADD213PD  one, p2, a2; \
	VPADDD       bias, i1, i1; \
	VPADDD       bias, i2, i2; \
	VPMOVZXDQ    i1, q1; \
	VPMOVZXDQ    i2, q2; \
	VPSLLQ       $52, q1, q1; \
	VPSLLQ       $52, q2, q2; \
	VMULPD       q1, a1, a1; \
	VMULPD       q2, a2, a2

#define EXPPD2 EXPPD2R(VCVTPD2DQY, Y1, Y2, X3, Y3, Y5, Y7, Y8, X9, Y9, Y10, Y4, Y12, Y11, X13)

// INRANGE2 jumps to out unless every a in Y1 and Y7 is within ±700.
#define INRANGE2(out) \
	VANDPD    Y15, Y1, Y2; \
	VCMPPD    $6, Y14, Y2, Y2; \
	VANDPD    Y15, Y7, Y8; \
	VCMPPD    $6, Y14, Y8, Y8; \
	VORPD     Y8, Y2, Y2; \
	VMOVMSKPD Y2, BX; \
	TESTQ     BX, BX; \
	JNZ       out

// GELUA computes GELU's exponent a of the values f in fr into ar
// (scratch t), four or eight.
#define GELUA(fr, ar, t) \
	VBROADCASTSD geludata<>+0(SB), ar; \
	VMULPD    fr, ar, ar; \
	VMULPD    fr, ar, ar; \
	VMULPD    fr, ar, ar; \
	VADDPD    ar, fr, ar; \
	VBROADCASTSD geludata<>+8(SB), t; \
	VMULPD    ar, t, ar

// GELUOUTR stores f / (1 + e) of fr and er, rounded to float32 (cvt, the
// width's mnemonic) through xr, at off; one holds 1.
#define GELUOUTR(cvt, one, fr, er, xr, off) \
	VADDPD    one, er, er; \
	VDIVPD    er, fr, fr; \
	cvt       fr, xr; \
	VMOVUPS   xr, off(DI)(AX*4)
#define GELUOUT(fr, er, xr, off) GELUOUTR(VCVTPD2PSY, Y12, fr, er, xr, off)

// GELUPAIRS is the gelu loop over two vectors at a time (n values, the
// second vector half floats in) while n remain and their exponents are in
// range, else on to out: f in f0 and f1, a in a0 and a1 (scratch t0, t1),
// the float32 results through x0 and x1; INR, EXP and OUT the width's
// range check, exponential and store. EXPPAIRS is expShifted's, the
// arguments in a0 and a1 less sub, e^a stored at dst (the second vector
// dhalf bytes in).
#define GELUPAIRS(loop, out, n, half, f0, a0, t0, f1, a1, t1, x0, x1, INR, EXP, OUT) \
loop: \
	LEAQ n(AX), DX; CMPQ DX, CX; JGT out; \
	VCVTPS2PD (DI)(AX*4), f0; VCVTPS2PD half(DI)(AX*4), f1; \
	GELUA(f0, a0, t0); GELUA(f1, a1, t1); \
	INR(out); EXP; \
	OUT(f0, a0, x0, 0); OUT(f1, a1, x1, half); \
	ADDQ $n, AX; JMP loop

#define EXPPAIRS(loop, out, n, half, dhalf, a0, a1, sub, INR, EXP) \
loop: \
	LEAQ n(AX), DX; CMPQ DX, CX; JGT out; \
	VCVTPS2PD (SI)(AX*4), a0; VCVTPS2PD half(SI)(AX*4), a1; \
	VSUBPD sub, a0, a0; VSUBPD sub, a1, a1; \
	INR(out); EXP; \
	VMOVUPD a0, (DI)(AX*8); VMOVUPD a1, dhalf(DI)(AX*8); \
	ADDQ $n, AX; JMP loop

TEXT ·geluAVX2(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), DI
	MOVQ n+8(FP), CX
	XORQ AX, AX
	EXPCONSTS

	GELUPAIRS(gpair, gblock, 8, 16, Y0, Y1, Y2, Y6, Y7, Y8, X0, X6, INRANGE2, EXPPD2, GELUOUT) // eight values while eight remain and all are in range

gblock:                                  // four: the last, or a pair not all in range
	CMPQ AX, CX
	JGE  gdone
	VCVTPS2PD (DI)(AX*4), Y0             // f
	GELUA(Y0, Y1, Y2)                    // a = −√(8/π)·(f + 0.044715·f³)
	INRANGE(gdone)                       // |a| > 700 or NaN (NLE_US): stop
	EXPPD                                // e = math.Exp(a)
	GELUOUT(Y0, Y1, X0, 0)               // f / (1 + e)
	ADDQ $4, AX
	JMP  gpair

gdone:
	MOVQ AX, ret+16(FP)
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
	VCVTSS2SD    sub+16(FP), X6, X6
	VBROADCASTSD X6, Y6
	MOVQ         n+24(FP), CX
	XORQ         AX, AX
	EXPCONSTS

	EXPPAIRS(epair, eblock, 8, 16, 32, Y1, Y7, Y6, INRANGE2, EXPPD2)

eblock:
	CMPQ      AX, CX
	JGE       edone
	VCVTPS2PD (SI)(AX*4), Y1
	VSUBPD    Y6, Y1, Y1                 // a
	INRANGE(edone)
	EXPPD
	VMOVUPD   Y1, (DI)(AX*8)
	ADDQ      $4, AX
	JMP       epair

edone:
	MOVQ AX, ret+32(FP)
	VZEROUPPER
	RET

// The AVX-512 loops: EXPPD's operations on two vectors of eight lanes
// (Z1 and Z7, scratch as EXPPD2's in Z registers, the int32 k in Y3 and
// Y9), each lane's operations still EXPPD's in its order, so its bits. A
// 512-bit operation holds one scheduler entry for eight lanes where the
// 256-bit loops hold two, so twice the independent work is in flight for
// the same latency-bound chain (scripts/bench/notes/20). They stop at the
// first pair of vectors not wholly within ±700 and return how many values
// they did; the AVX2 loops go on from there.
#define EXPPD2Z EXPPD2R(VCVTPD2DQ, Z1, Z2, Y3, Z3, Z5, Z7, Z8, Y9, Z9, Z10, Z4, Z12, Z11, Y13)

// EXPCONSTSZ is EXPCONSTS in Z registers (Y13 the exponent bias).
#define EXPCONSTSZ \
	VPBROADCASTQ geludata<>+128(SB), Z15; \
	VBROADCASTSD geludata<>+16(SB), Z14; \
	VPBROADCASTD geludata<>+136(SB), Y13; \
	VBROADCASTSD geludata<>+112(SB), Z12; \
	VBROADCASTSD geludata<>+120(SB), Z11

// INRANGE2Z jumps to out unless every a in Z1 and Z7 is within ±700.
#define INRANGE2Z(out) \
	VPANDQ    Z15, Z1, Z2; \
	VCMPPD    $6, Z14, Z2, K1; \
	VPANDQ    Z15, Z7, Z8; \
	VCMPPD    $6, Z14, Z8, K2; \
	KORTESTW  K1, K2; \
	JNE       out

#define GELUOUTZ(fr, er, yr, off) GELUOUTR(VCVTPD2PS, Z12, fr, er, yr, off)

// func geluAVX512(x *float32, n int) int
TEXT ·geluAVX512(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), DI
	MOVQ n+8(FP), CX
	XORQ AX, AX
	EXPCONSTSZ

	GELUPAIRS(zgpair, zgdone, 16, 32, Z0, Z1, Z2, Z6, Z7, Z8, Y0, Y6, INRANGE2Z, EXPPD2Z, GELUOUTZ)

zgdone:
	MOVQ AX, ret+16(FP)
	VZEROUPPER
	RET

// func expShiftedAVX512(dst *float64, src *float32, sub float32, n int) int
TEXT ·expShiftedAVX512(SB), NOSPLIT, $0-40
	MOVQ         dst+0(FP), DI
	MOVQ         src+8(FP), SI
	VCVTSS2SD    sub+16(FP), X6, X6
	VBROADCASTSD X6, Z6
	MOVQ         n+24(FP), CX
	XORQ         AX, AX
	EXPCONSTSZ

	EXPPAIRS(zepair, zedone, 16, 32, 64, Z1, Z7, Z6, INRANGE2Z, EXPPD2Z)

zedone:
	MOVQ AX, ret+32(FP)
	VZEROUPPER
	RET
