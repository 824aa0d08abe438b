//go:build amd64 && !purego

#include "textflag.h"

// SCALEMAX is the loop: Y0 = x[i:i+8] op scale, stored back, its NaN
// lanes ORed into Y3, its maximum into Y2.
#define SCALEMAX(op, loop) \
loop: \
	VMOVUPS (DI), Y0; op Y1, Y0, Y0; VMOVUPS Y0, (DI); \
	VCMPPS $3, Y0, Y0, Y4; VORPS Y4, Y3, Y3; VMAXPS Y0, Y2, Y2; \
	ADDQ $32, DI; DECQ CX; JNZ loop

// func scaleMaxAVX2(x *float32, n int, mul int, scale float32, lo float32) (mx float32, nan bool)
//
// ScaleMax on n values (a multiple of 8): Y2 the running maximum, Y3 the
// running "any NaN" mask (VMAXPS drops a NaN operand; Go's max does not).
TEXT ·scaleMaxAVX2(SB), NOSPLIT, $0-37
	MOVQ x+0(FP), DI
	MOVQ n+8(FP), CX
	MOVQ mul+16(FP), BX
	VBROADCASTSS scale+24(FP), Y1
	VBROADCASTSS lo+28(FP), Y2
	VXORPS Y3, Y3, Y3
	SHRQ $3, CX
	JZ reduce
	TESTQ BX, BX
	JZ divloop

	SCALEMAX(VMULPS, mulloop)
	JMP reduce
	SCALEMAX(VDIVPS, divloop)

reduce:
	VEXTRACTF128 $1, Y2, X4
	VMAXPS X4, X2, X2
	VPERMILPS $0x4E, X2, X4
	VMAXPS X4, X2, X2
	VPERMILPS $0xB1, X2, X4
	VMAXPS X4, X2, X2
	VMOVSS X2, mx+32(FP)
	VMOVMSKPS Y3, AX
	TESTL AX, AX
	SETNE nan+36(FP)
	VZEROUPPER
	RET

// func narrowScaledAVX2(dst *float32, src *float64, m float64, n int)
//
// NarrowScaled on n values (a multiple of 4): one rounding of the
// product, one of the narrowing, as Go's float32(src[i]*m).
TEXT ·narrowScaledAVX2(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	VBROADCASTSD m+16(FP), Y1
	MOVQ n+24(FP), CX
	SHRQ $2, CX
	JZ narrowdone

narrowloop:
	VMULPD (SI), Y1, Y0
	VCVTPD2PSY Y0, X0
	VMOVUPS X0, (DI)
	ADDQ $32, SI
	ADDQ $16, DI
	DECQ CX
	JNZ narrowloop

narrowdone:
	VZEROUPPER
	RET
