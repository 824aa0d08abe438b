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

TEXT ·geluAVX2(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), DI
	MOVQ n+8(FP), CX
	XORQ AX, AX
	EXPCONSTS

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
	INRANGE(gdone)                       // |a| > 700 or NaN (NLE_US): stop

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
	EXPCONSTS

eblock:
	CMPQ      AX, CX
	JGE       edone
	VCVTPS2PD (SI)(AX*4), Y1
	VSUBPD    Y10, Y1, Y1                // a
	INRANGE(edone)
	EXPPD
	VMOVUPD   Y1, (DI)(AX*8)
	ADDQ      $4, AX
	JMP       eblock

edone:
	MOVQ AX, ret+32(FP)
	VZEROUPPER
	RET
