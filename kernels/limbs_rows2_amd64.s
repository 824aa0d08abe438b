//go:build amd64 && !purego

#include "textflag.h"
#include "limbs_amd64.h"

// Two rows at once (prefill, batched decode): limbsQ*R2AVX512 are the
// kernels above on rows x0 and x1 and two of the slab's strips (which
// two is the caller's: q, s, o, y0 and y1 point at the first), each
// oct's integers loaded and split once for both rows; every row's
// operations are the one-row kernel's, in its order, so its bits are
// too. Each takes
//
//	func(y0, y1 *float32, q *byte, rec0, rec1 *byte, s, o *float32, groups, half int)
//
// Z0-Z5 are row 0's sums (strip 0, strip 1), Z6-Z11 row 1's; Z20, Z21
// row 0's acc, Z22, Z23 row 1's; DX and R13 the rows' records, Z29 and
// Z26 their scales' exponents, Z28 and Z25 their sums; R14 is y1.

#define ARGSR2(hmask) \
	MOVL $hmask, AX; VPBROADCASTD AX, Z24; \
	MOVQ y0+0(FP), DI; MOVQ y1+8(FP), R14; MOVQ q+16(FP), SI; MOVQ rec0+24(FP), DX; MOVQ rec1+32(FP), R13; \
	MOVQ s+40(FP), R8; MOVQ o+48(FP), R9; MOVQ groups+56(FP), CX; MOVQ half+64(FP), BX; \
	MOVL $0x0f0f0f0f, AX; VPBROADCASTD AX, Z15; \
	MOVL $0x41800000, AX; VPBROADCASTD AX, Z31; \
	VPXORD Z20, Z20, Z20; VPXORD Z21, Z21, Z21; VPXORD Z22, Z22, Z22; VPXORD Z23, Z23, Z23

#define INITR2(off) \
	VPBROADCASTD off(DX), Z0; VPBROADCASTD off+4(DX), Z1; VPBROADCASTD off+8(DX), Z2; \
	VMOVDQA64 Z0, Z3; VMOVDQA64 Z1, Z4; VMOVDQA64 Z2, Z5; \
	VPBROADCASTD off(R13), Z6; VPBROADCASTD off+4(R13), Z7; VPBROADCASTD off+8(R13), Z8; \
	VMOVDQA64 Z6, Z9; VMOVDQA64 Z7, Z10; VMOVDQA64 Z8, Z11

// Each limb broadcast is loaded once for both strips: the integers of
// both strips of an oct are held (Z13, Z14 strip 0's rows lo..lo+3 and
// lo+4..lo+7; Z18, Z19 strip 1's) and each of a row's limbs is broadcast
// into Z27, Z28 or Z30 and multiplied into both strips' sums. With the
// broadcasts in VPDPBUSD's memory operand a group made 96 broadcast loads
// for 96 products and the loads bound it on Zen 5 (notes 44); now it
// makes 48. The sums are int32 (VPDPBUSD wraps, so any order gives the
// same integers), so the bits do not change.
//
// QUADS2 adds rows lo..lo+3 of strip 0 (integers in wa) and strip 1 (wb)
// times the limbs of the records at rec.
#define QUADS2(rec, lo, wa, wb, ah, am, al, bh, bm, bl) \
	VPBROADCASTD lo(rec), Z27; VPDPBUSD Z27, wa, ah; VPDPBUSD Z27, wb, bh; \
	VPBROADCASTD lo+32(rec), Z28; VPDPBUSD Z28, wa, am; VPDPBUSD Z28, wb, bm; \
	VPBROADCASTD lo+64(rec), Z30; VPDPBUSD Z30, wa, al; VPDPBUSD Z30, wb, bl
#define ROWS2(lo, wa, wb) \
	QUADS2(DX, lo, wa, wb, Z0, Z1, Z2, Z3, Z4, Z5); QUADS2(R13, lo, wa, wb, Z6, Z7, Z8, Z9, Z10, Z11)
// STRIPS2 adds an oct's integers, held as above, to both rows' sums.
#define STRIPS2(lo) ROWS2(lo, Z13, Z18); ROWS2(lo+4, Z14, Z19)
#define OCT4R2(o) NIBR(o*256, Z13, Z14); NIBR(o*256+64, Z18, Z19); STRIPS2(8*o)
#define OCTHR2(o, at, sa, na, sb, nb) \
	NIBR(at, Z13, Z14); HB(sa, na, Z16, Z13); HB(sb, nb, Z16, Z14); \
	NIBR(at+64, Z18, Z19); HB(sa, na, Z17, Z18); HB(sb, nb, Z17, Z19); STRIPS2(8*o)
#define HIGHR2(off) PF(off); PF(off+64); VMOVDQU64 off(SI), Z16; VMOVDQU64 off+64(SI), Z17
#define HIGH5R2 HIGHR2(0)
#define HIGH6AR2 HIGHR2(0)
#define HIGH6BR2 HIGHR2(768)
#define OCT5R2(o) OCTHR2(o, 256+o*256, VPSLLW, 4-2*o, VPSLLW, 3-2*o)
#define OCT5RR2(o) OCTHR2(o, 256+o*256, VPSRLW, 2*o-4, VPSRLW, 2*o-3)
#define OCT6AR2(o) OCTHR2(o, o*384+256, VPSLLW, 4, VPSLLW, 2)
#define OCT6BR2(o) OCTHR2(o, o*384+128, VPSLLW, 0, VPSRLW, 2)
#define QUAD8R2(o, j) \
	PF(o*512+j*256); VMOVDQU64 o*512+j*256(SI), Z13; \
	PF(o*512+j*256+64); VMOVDQU64 o*512+j*256+64(SI), Z18; ROWS2(8*o+4*j, Z13, Z18)
#define OCT8R2(o) QUAD8R2(o, 0); QUAD8R2(o, 1)

#define SCALER2 VBROADCASTSS 120(DX), Z29; VBROADCASTSS 120(R13), Z26; VGETEXPPS Z29, Z29; VGETEXPPS Z26, Z26
#define FINR2(off) \
	JOINR(0, Z0, Z1, Z2, Z20, Z29); JOINR(1, Z3, Z4, Z5, Z21, Z29); \
	JOINR(0, Z6, Z7, Z8, Z22, Z26); JOINR(1, Z9, Z10, Z11, Z23, Z26); \
	ADDQ $256, R8; TESTQ R9, R9; JZ 8(PC); \
	VBROADCASTSS off(DX), Z28; VBROADCASTSS off(R13), Z25; \
	OFFSR(0, Z20, Z28); OFFSR(1, Z21, Z28); OFFSR(0, Z22, Z25); OFFSR(1, Z23, Z25); ADDQ $256, R9
#define STEPR2 ADDQ $288, DX; ADDQ $288, R13
#define DONER2 \
	VADDPS (DI), Z20, Z20; VADDPS 64(DI), Z21, Z21; VADDPS (R14), Z22, Z22; VADDPS 64(R14), Z23, Z23; \
	VMOVUPS Z20, (DI); VMOVUPS Z21, 64(DI); VMOVUPS Z22, (R14); VMOVUPS Z23, 64(R14); \
	VZEROUPPER; RET
#define GROUPSR2(group, whole, next, HIGH0, O0, O1, HIGH1, O2, O3, bytes) \
	LIMBGROUPS(group, whole, next, SCALER2, INITR2, FINR2, HIGH0, O0, O1, HIGH1, O2, O3, bytes, STEPR2); \
	DONER2

// func limbsQ4R2AVX512(y0, y1 *float32, q *byte, rec0, rec1 *byte, s, o *float32, groups, half int)
TEXT ·limbsQ4R2AVX512(SB), NOSPLIT, $0-72
	ARGSR2(0)
	GROUPSR2(q4group, q4whole, q4next, NOHIGH, OCT4R2, OCT4R2, NOHIGH, OCT4R2, OCT4R2, 1024)

// func limbsQ5R2AVX512(y0, y1 *float32, q *byte, rec0, rec1 *byte, s, o *float32, groups, half int)
TEXT ·limbsQ5R2AVX512(SB), NOSPLIT, $0-72
	ARGSR2(0x10101010)
	GROUPSR2(q5group, q5whole, q5next, HIGH5R2, OCT5R2, OCT5R2, NOHIGH, OCT5RR2, OCT5RR2, 1280)

// func limbsQ6R2AVX512(y0, y1 *float32, q *byte, rec0, rec1 *byte, s, o *float32, groups, half int)
TEXT ·limbsQ6R2AVX512(SB), NOSPLIT, $0-72
	ARGSR2(0x30303030)
	GROUPSR2(q6group, q6whole, q6next, HIGH6AR2, OCT6AR2, OCT6BR2, HIGH6BR2, OCT6AR2, OCT6BR2, 1536)

// func limbsQ8R2AVX512(y0, y1 *float32, q *byte, rec0, rec1 *byte, s, o *float32, groups, half int)
TEXT ·limbsQ8R2AVX512(SB), NOSPLIT, $0-72
	ARGSR2(0)
	GROUPSR2(q8group, q8whole, q8next, NOHIGH, OCT8R2, OCT8R2, NOHIGH, OCT8R2, OCT8R2, 2048)
