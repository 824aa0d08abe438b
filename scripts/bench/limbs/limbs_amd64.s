#include "textflag.h"

// func q4slab(y *float32, q *byte, limbs *int8, s, o, sum *float32, groups int)
//
// y[0:64] += x·W for one slab, group by group: Z0-Z11 hold the limb sums
// (strip c's high, middle and low in Z(3c)..Z(3c+2)), zeroed each group;
// each oct of 8 rows is four 64-byte strips, whose low and high nibbles
// meet the limbs of rows k..k+3 and k+4..k+7, broadcast from memory.
// At the group's end the sums are joined in float32, t = 65536·h + (256·m
// + l), and y += t·s, y += sum·o.
TEXT ·q4slab(SB), NOSPLIT, $0-56
	MOVQ y+0(FP), DI
	MOVQ q+8(FP), SI
	MOVQ limbs+16(FP), DX
	MOVQ s+24(FP), R8
	MOVQ o+32(FP), R9
	MOVQ sum+40(FP), R10
	MOVQ groups+48(FP), CX
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z15
	MOVL $0x43800000, AX // 256.0 in Z30
	VPBROADCASTD AX, Z30
	MOVL $0x47800000, AX // 65536.0 in Z31
	VPBROADCASTD AX, Z31
	VMOVUPS (DI), Z20
	VMOVUPS 64(DI), Z21
	VMOVUPS 128(DI), Z22
	VMOVUPS 192(DI), Z23

group:
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	MOVQ $4, BX
	MOVQ DX, R11

oct:
#define COL(off, ah, am, al) \
	VMOVDQU64 off(SI), Z12; VPANDD Z15, Z12, Z13; VPSRLW $4, Z12, Z14; VPANDD Z15, Z14, Z14; \
	VPDPBUSD.BCST (R11), Z13, ah; VPDPBUSD.BCST 32(R11), Z13, am; VPDPBUSD.BCST 64(R11), Z13, al; \
	VPDPBUSD.BCST 4(R11), Z14, ah; VPDPBUSD.BCST 36(R11), Z14, am; VPDPBUSD.BCST 68(R11), Z14, al
	COL(0, Z0, Z1, Z2)
	COL(64, Z3, Z4, Z5)
	COL(128, Z6, Z7, Z8)
	COL(192, Z9, Z10, Z11)
	ADDQ $256, SI
	ADDQ $8, R11
	DECQ BX
	JNZ oct

	VBROADCASTSS (R10), Z29
#define FIN(ah, am, al, y, off) \
	VCVTDQ2PS al, al; VCVTDQ2PS am, am; VCVTDQ2PS ah, ah; \
	VFMADD213PS al, Z30, am; VFMADD213PS am, Z31, ah; \
	VFMADD231PS off(R8), ah, y; VFMADD231PS off(R9), Z29, y
	FIN(Z0, Z1, Z2, Z20, 0)
	FIN(Z3, Z4, Z5, Z21, 64)
	FIN(Z6, Z7, Z8, Z22, 128)
	FIN(Z9, Z10, Z11, Z23, 192)
	ADDQ $96, DX
	ADDQ $256, R8
	ADDQ $256, R9
	ADDQ $4, R10
	DECQ CX
	JNZ group

	VMOVUPS Z20, (DI)
	VMOVUPS Z21, 64(DI)
	VMOVUPS Z22, 128(DI)
	VMOVUPS Z23, 192(DI)
	VZEROUPPER
	RET
