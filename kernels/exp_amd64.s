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

// EXPPD2 is EXPPD on two vectors at once, A in Y1 and B in Y7 (scratch
// Y2, X3/Y3, Y5 for A; Y8, X9/Y9, Y10 for B; Y4 shared), each lane's
// operations those of EXPPD in its order, so its bits. Interleaved
// because one chain leaves the core idle: EXPPD is some twenty-five
// dependent operations, and the scheduler holds too few of them to
// overlap consecutive blocks on its own (scripts/bench/notes/20).
#define EXPTERM2(off) \
	VBROADCASTSD geludata<>+off(SB), Y4; \
	VFMADD213PD  Y4, Y1, Y5; \
	VFMADD213PD  Y4, Y7, Y10

#define EXPSQUARE2 \
	VMULPD       Y5, Y1, Y1; \
	VMULPD       Y10, Y7, Y7; \
	VADDPD       Y11, Y1, Y5; \
	VADDPD       Y11, Y7, Y10

#define EXPPD2 \
	VBROADCASTSD geludata<>+24(SB), Y2; \
	VMULPD       Y7, Y2, Y8; \
	VMULPD       Y1, Y2, Y2; \
	VCVTPD2DQY   Y2, X3; \
	VCVTPD2DQY   Y8, X9; \
	VCVTDQ2PD    X3, Y2; \
	VCVTDQ2PD    X9, Y8; \
	VBROADCASTSD geludata<>+32(SB), Y4; \
	VFNMADD231PD Y4, Y2, Y1; \
	VFNMADD231PD Y4, Y8, Y7; \
	VBROADCASTSD geludata<>+40(SB), Y4; \
	VFNMADD231PD Y4, Y2, Y1; \
	VFNMADD231PD Y4, Y8, Y7; \
	VBROADCASTSD geludata<>+48(SB), Y4; \
	VMULPD       Y4, Y1, Y1; \
	VMULPD       Y4, Y7, Y7; \
	VBROADCASTSD geludata<>+56(SB), Y5; \
	VMOVAPD      Y5, Y10; \
	EXPTERM2(64); \
	EXPTERM2(72); \
	EXPTERM2(80); \
	EXPTERM2(88); \
	EXPTERM2(96); \
	EXPTERM2(104); \
	VFMADD213PD  Y12, Y1, Y5; \
	VFMADD213PD  Y12, Y7, Y10; \
	EXPSQUARE2; \
	EXPSQUARE2; \
	EXPSQUARE2; \
	EXPSQUARE2; \
	VFMADD213PD  Y12, Y5, Y1; \
	VFMADD213PD  Y12, Y10, Y7; \
	VPADDD       X13, X3, X3; \
	VPADDD       X13, X9, X9; \
	VPMOVZXDQ    X3, Y3; \
	VPMOVZXDQ    X9, Y9; \
	VPSLLQ       $52, Y3, Y3; \
	VPSLLQ       $52, Y9, Y9; \
	VMULPD       Y3, Y1, Y1; \
	VMULPD       Y9, Y7, Y7

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

// GELUA computes GELU's exponent a of the four values f in fr into ar
// (scratch t).
#define GELUA(fr, ar, t) \
	VBROADCASTSD geludata<>+0(SB), ar; \
	VMULPD    fr, ar, ar; \
	VMULPD    fr, ar, ar; \
	VMULPD    fr, ar, ar; \
	VADDPD    ar, fr, ar; \
	VBROADCASTSD geludata<>+8(SB), t; \
	VMULPD    ar, t, ar

// GELUOUT stores f / (1 + e) of fr and er, rounded to float32, at off.
#define GELUOUT(fr, er, xr, off) \
	VADDPD    Y12, er, er; \
	VDIVPD    er, fr, fr; \
	VCVTPD2PSY fr, xr; \
	VMOVUPS   xr, off(DI)(AX*4)

TEXT ·geluAVX2(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), DI
	MOVQ n+8(FP), CX
	XORQ AX, AX
	EXPCONSTS

gpair:                                   // eight values while eight remain and all are in range
	LEAQ 8(AX), DX
	CMPQ DX, CX
	JGT  gblock
	VCVTPS2PD (DI)(AX*4), Y0
	VCVTPS2PD 16(DI)(AX*4), Y6
	GELUA(Y0, Y1, Y2)
	GELUA(Y6, Y7, Y8)
	INRANGE2(gblock)
	EXPPD2
	GELUOUT(Y0, Y1, X0, 0)
	GELUOUT(Y6, Y7, X6, 16)
	ADDQ $8, AX
	JMP  gpair

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

epair:
	LEAQ      8(AX), DX
	CMPQ      DX, CX
	JGT       eblock
	VCVTPS2PD (SI)(AX*4), Y1
	VCVTPS2PD 16(SI)(AX*4), Y7
	VSUBPD    Y6, Y1, Y1
	VSUBPD    Y6, Y7, Y7
	INRANGE2(eblock)
	EXPPD2
	VMOVUPD   Y1, (DI)(AX*8)
	VMOVUPD   Y7, 32(DI)(AX*8)
	ADDQ      $8, AX
	JMP       epair

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
