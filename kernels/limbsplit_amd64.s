//go:build amd64 && !purego

#include "textflag.h"

// splitLimbsAVX2 is splitGroup (limbs.go) on consecutive activation
// groups, 256-bit: it writes the same 288 bytes a group, and stops before
// the first group whose largest magnitude is zero, infinite or NaN, which
// splitGroup takes, returning the groups written. In Go the split was a
// sixth of a quantised prefill and a twelfth of a decode step.
//
//	func splitLimbsAVX2(rec *byte, x *float32, groups, min, half int) int
//
// DI is the group's record, SI its values, CX the groups left, AX the
// groups written, R8 min, BX half; R12 the group's 2^-shift (bits), R13
// its exponent. Y13 holds the byte order's dword permutation, Y14 128 in
// every int32 lane.
// A group's values are Y0-Y3; each half of 16 (HALF) splits two of them
// into limbs l, m, h (Y4-Y9) and sums them into X10 (half 0) or X11:
// [Σx̃, Σh, Σm, Σl].

// LIMBSX splits the integers x into l, m and h exactly as splitGroup:
// l = int8(x), rest = (x − l) >> 8, m = int8(rest), h = (rest − m) >> 8.
#define LIMBSX(x, l, m, h) \
	VPSLLD $24, x, l; VPSRAD $24, l, l; VPSUBD l, x, h; VPSRAD $8, h, h; \
	VPSLLD $24, h, m; VPSRAD $24, m, m; VPSUBD m, h, h; VPSRAD $8, h, h

// BYTES16 packs the int32s of a and b (16 values) to bytes, in order, at
// off in the record.
#define BYTES16(a, b, off) \
	VPACKSSDW b, a, Y12; VPACKSSWB Y12, Y12, Y12; VPERMD Y12, Y13, Y12; VMOVDQU X12, off(DI)

// HALF splits half k's integers in a and b (values 16k..16k+15) and sums
// them into s.
#define HALF(k, a, b, s) \
	LIMBSX(a, Y4, Y6, Y8); LIMBSX(b, Y5, Y7, Y9); \
	VPADDD b, a, Y12; VPADDD Y9, Y8, Y15; VPHADDD Y15, Y12, Y12; \
	VPADDD Y7, Y6, Y15; VPADDD Y5, Y4, s; VPHADDD s, Y15, Y15; VPHADDD Y15, Y12, Y12; \
	VEXTRACTI128 $1, Y12, X15; VPADDD Y15, Y12, s; \
	VPACKSSDW Y9, Y8, Y12; VPERMQ $0xD8, Y12, Y15; VMOVDQU Y15, 160+32*k(DI); \
	VPACKSSWB Y12, Y12, Y12; VPERMD Y12, Y13, Y12; VMOVDQU X12, 16*k(DI); \
	BYTES16(Y6, Y7, 32+16*k); BYTES16(Y4, Y5, 64+16*k); \
	VPSLLD $8, Y6, Y6; VPADDD Y4, Y6, Y6; VPADDD Y14, Y6, Y6; \
	VPSLLD $8, Y7, Y7; VPADDD Y5, Y7, Y7; VPADDD Y14, Y7, Y7; \
	VPACKSSDW Y7, Y6, Y12; VPERMQ $0xD8, Y12, Y12; VMOVDQU Y12, 224+32*k(DI)

// func splitLimbsAVX2(rec *byte, x *float32, groups, min, half int) int
TEXT ·splitLimbsAVX2(SB), NOSPLIT, $0-48
	MOVQ rec+0(FP), DI; MOVQ x+8(FP), SI; MOVQ groups+16(FP), CX
	MOVQ min+24(FP), R8; MOVQ half+32(FP), BX; XORQ AX, AX
	VMOVDQU ·limbOrder(SB), Y13
	MOVL $128, R9; VMOVQ R9, X14; VPBROADCASTD X14, Y14

group:
	// The largest magnitude's bits, as splitGroup's big.
	VMOVUPS (SI), Y0; VMOVUPS 32(SI), Y1; VMOVUPS 64(SI), Y2; VMOVUPS 96(SI), Y3
	VPBROADCASTD ·limbAbs(SB), Y15
	VPAND Y15, Y0, Y4; VPAND Y15, Y1, Y5; VPMAXUD Y5, Y4, Y4
	VPAND Y15, Y2, Y5; VPMAXUD Y5, Y4, Y4; VPAND Y15, Y3, Y5; VPMAXUD Y5, Y4, Y4
	VEXTRACTI128 $1, Y4, X5; VPMAXUD X5, X4, X4
	VPSHUFD $0x4E, X4, X5; VPMAXUD X5, X4, X4; VPSHUFD $0xB1, X4, X5; VPMAXUD X5, X4, X4
	VMOVQ X4, R9
	TESTL R9, R9; JZ done
	CMPL R9, $0x7f800000; JAE done

	// e = max(big>>23 − 126, −104); the values times 2^(22−e), rounded
	// to integers (ties to even, as splitGroup's float32 round trip);
	// 2^(e−22) in R12.
	SHRL $23, R9; SUBL $126, R9; CMPL R9, $-104; JGE 2(PC); MOVL $-104, R9
	MOVL $149, R10; SUBL R9, R10; SHLL $23, R10; VMOVQ R10, X12; VPBROADCASTD X12, Y12
	LEAL 105(R9), R12; SHLL $23, R12
	VMULPS Y12, Y0, Y0; VCVTPS2DQ Y0, Y0; VMULPS Y12, Y1, Y1; VCVTPS2DQ Y1, Y1
	VMULPS Y12, Y2, Y2; VCVTPS2DQ Y2, Y2; VMULPS Y12, Y3, Y3; VCVTPS2DQ Y3, Y3

	HALF(0, Y0, Y1, Y10)
	HALF(1, Y2, Y3, Y11)

	// One weight group of 32: its sums in the first.
	TESTQ BX, BX; JNZ 3(PC); VPADDD X11, X10, X10; VPXOR X11, X11, X11

	// The corrections min·Σh, min·Σm, min·Σl of each weight group (the
	// second's store overwrites the first's spill, the scale the
	// second's), zeros to 160, the scale and the sums Σx̃·2^-shift.
	VMOVQ R8, X9; VPBROADCASTD X9, X9
	VPMULLD X9, X10, X4; VPSRLDQ $4, X4, X4; VMOVDQU X4, 96(DI)
	VPMULLD X9, X11, X5; VPSRLDQ $4, X5, X5; VMOVDQU X5, 108(DI)
	VPXOR X6, X6, X6; VMOVDQU X6, 132(DI); VMOVDQU X6, 144(DI)
	MOVL R12, 120(DI)
	LEAL -22(R9), R13; VCVTSI2SSL R13, X6, X6; VMOVSS X6, 132(DI) // −shift = e − 22
	VMOVQ R12, X7
	VCVTDQ2PS X10, X10; VMULSS X7, X10, X10; VMOVSS X10, 124(DI)
	VCVTDQ2PS X11, X11; VMULSS X7, X11, X11; VMOVSS X11, 128(DI)

	ADDQ $288, DI; ADDQ $128, SI; INCQ AX
	DECQ CX; JNZ group

done:
	MOVQ AX, ret+40(FP)
	VZEROUPPER
	RET
