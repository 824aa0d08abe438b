//go:build amd64 && !purego

#include "textflag.h"
#include "limbs_amd64.h"

// Limb kernels (limbs.go): y[0:64] += one row's limb product with one
// slab, AVX-512 with VNNI. Each takes
//
//	func(y *float32, q *byte, rec *byte, s, o *float32, groups, half int)
//
// q the slab's blocks, rec the row's records (limbRecord bytes an
// activation group), s and o the formed scale and offset rows (64 floats a
// weight group; o nil without offsets), groups the activation groups, half
// 1 for weight groups of 16. Z0-Z11 hold the limb sums of the four strips
// (strip c's high, middle and low in Z(3c)..Z(3c+2)), started at the
// record's corrections min·Σlimb, so that the stored u = q − min give the
// sums of q; Z20-Z23 the float32 sums acc; Z15 0x0f in every byte, Z24 the
// mask of the higher bits, Z31 16.0, Z29 the group's −shift (the
// exponent of its 2^-shift), Z28 its Σx̃·2^-shift.

#define ARGS(hmask) \
	MOVL $hmask, AX; VPBROADCASTD AX, Z24; \
	MOVQ y+0(FP), DI; MOVQ q+8(FP), SI; MOVQ rec+16(FP), DX; MOVQ s+24(FP), R8; \
	MOVQ o+32(FP), R9; MOVQ groups+40(FP), CX; MOVQ half+48(FP), BX; \
	MOVL $0x0f0f0f0f, AX; VPBROADCASTD AX, Z15; \
	MOVL $0x41800000, AX; VPBROADCASTD AX, Z31; \
	VPXORD Z20, Z20, Z20; VPXORD Z21, Z21, Z21; VPXORD Z22, Z22, Z22; VPXORD Z23, Z23, Z23

// INIT starts the twelve sums at the corrections at off in the record.
#define INIT(off) \
	VPBROADCASTD off(DX), Z0; VPBROADCASTD off+4(DX), Z1; VPBROADCASTD off+8(DX), Z2; \
	VMOVDQA64 Z0, Z3; VMOVDQA64 Z1, Z4; VMOVDQA64 Z2, Z5; \
	VMOVDQA64 Z0, Z6; VMOVDQA64 Z1, Z7; VMOVDQA64 Z2, Z8; \
	VMOVDQA64 Z0, Z9; VMOVDQA64 Z1, Z10; VMOVDQA64 Z2, Z11

// OCT4: oct o of a 4-bit block, all four strips.
#define STRIP4(o, c, ah, am, al) \
	NIB(o*256+c*64); QUAD(Z13, 8*o, ah, am, al); QUAD(Z14, 8*o+4, ah, am, al)
#define OCT4(o) \
	STRIP4(o, 0, Z0, Z1, Z2); STRIP4(o, 1, Z3, Z4, Z5); STRIP4(o, 2, Z6, Z7, Z8); STRIP4(o, 3, Z9, Z10, Z11)

// OCTH: oct o with higher bits from Z16-Z19, the low quad's shifted by
// (sa, na), the high quad's by (sb, nb).
#define STRIPH(o, at, c, h, sa, na, sb, nb, ah, am, al) \
	NIB(at+c*64); HB(sa, na, h, Z13); HB(sb, nb, h, Z14); \
	QUAD(Z13, 8*o, ah, am, al); QUAD(Z14, 8*o+4, ah, am, al)
#define OCTH(o, at, sa, na, sb, nb) \
	STRIPH(o, at, 0, Z16, sa, na, sb, nb, Z0, Z1, Z2); STRIPH(o, at, 1, Z17, sa, na, sb, nb, Z3, Z4, Z5); \
	STRIPH(o, at, 2, Z18, sa, na, sb, nb, Z6, Z7, Z8); STRIPH(o, at, 3, Z19, sa, na, sb, nb, Z9, Z10, Z11)

// HIGH loads the four strips' planes of higher bits at off.
#define HIGH(off) \
	PF(off); PF(off+64); PF(off+128); PF(off+192); \
	VMOVDQU64 off(SI), Z16; VMOVDQU64 off+64(SI), Z17; VMOVDQU64 off+128(SI), Z18; VMOVDQU64 off+192(SI), Z19

// Five bits: the plane (row 4i+b's fifth bit is bit i of byte b), then
// the octs' nibbles.
#define OCT5(o) OCTH(o, 256+o*256, VPSLLW, 4-2*o, VPSLLW, 3-2*o)
#define OCT5R(o) OCTH(o, 256+o*256, VPSRLW, 2*o-4, VPSRLW, 2*o-3)

// Six bits: half h's plane (row 16h+4i+b's two bits are bits 2i, 2i+1 of
// byte b), then its two octs' nibbles, 768 bytes a half.
#define OCT6A(o) OCTH(o, o*384+256, VPSLLW, 4, VPSLLW, 2)
#define OCT6B(o) OCTH(o, o*384+128, VPSLLW, 0, VPSRLW, 2)

// QUADS8: quad 2o+j of an 8-bit block, all four strips.
#define STRIP8(o, j, c, ah, am, al) PF(o*512+j*256+c*64); VMOVDQU64 o*512+j*256+c*64(SI), Z13; QUAD(Z13, 8*o+4*j, ah, am, al)
#define QUADS8(o, j) \
	STRIP8(o, j, 0, Z0, Z1, Z2); STRIP8(o, j, 1, Z3, Z4, Z5); STRIP8(o, j, 2, Z6, Z7, Z8); STRIP8(o, j, 3, Z9, Z10, Z11)

// FIN joins a weight group's sums and adds them to acc (JOIN, OFFS); the
// sum at off in the record.
#define FIN(off) \
	JOIN(0, Z0, Z1, Z2, Z20); JOIN(1, Z3, Z4, Z5, Z21); JOIN(2, Z6, Z7, Z8, Z22); JOIN(3, Z9, Z10, Z11, Z23); \
	ADDQ $256, R8; TESTQ R9, R9; JZ 7(PC); \
	VBROADCASTSS off(DX), Z28; OFFS(0, Z20); OFFS(1, Z21); OFFS(2, Z22); OFFS(3, Z23); ADDQ $256, R9

#define DONE \
	VADDPS (DI), Z20, Z20; VADDPS 64(DI), Z21, Z21; VADDPS 128(DI), Z22, Z22; VADDPS 192(DI), Z23, Z23; \
	VMOVUPS Z20, (DI); VMOVUPS Z21, 64(DI); VMOVUPS Z22, 128(DI); VMOVUPS Z23, 192(DI); \
	VZEROUPPER; RET

// GROUPS is a kernel's loop over the activation groups (LIMBGROUPS),
// then acc added to y.
#define SCALE512 VBROADCASTSS 120(DX), Z29; VGETEXPPS Z29, Z29
#define GROUPS(group, whole, next, HIGH0, O0, O1, HIGH1, O2, O3, bytes) \
	LIMBGROUPS(group, whole, next, SCALE512, INIT, FIN, HIGH0, O0, O1, HIGH1, O2, O3, bytes, STEP1); \
	DONE

#define HIGH5 HIGH(0)
#define HIGH6A HIGH(0)
#define HIGH6B HIGH(768)
#define OCT8(o) QUADS8(o, 0); QUADS8(o, 1)

// The kernels below (F) form each weight group's scales as they join it,
// from a k-quant's stored factors (Q4_K, Q5_K, Q6_K), for a row's product
// alone (decode): the group's int8 factors a (and b), rows of 64 at R8
// (R9), times the super-block's float16 d (and dm), rows of 64 at R10
// (R11), which move on every per weight groups (R12 counts down, AX
// holds per). One rounding, as formScales makes them, so the same bits.
// A formed scale row cost a quarter of a Qwen3-30B-A3B Q4_K_M batch-1
// step (its Q6_K LM head's), read back from memory it had just been
// written to (notes 45). Each takes
//
//	func(y *float32, q *byte, rec *byte, a, b *int8, d, dm *uint16, groups, half, per int)
//
// with b and dm nil without offsets.
#define ARGSF(hmask) \
	MOVL $hmask, AX; VPBROADCASTD AX, Z24; \
	MOVQ y+0(FP), DI; MOVQ q+8(FP), SI; MOVQ rec+16(FP), DX; \
	MOVQ a+24(FP), R8; MOVQ b+32(FP), R9; MOVQ d+40(FP), R10; MOVQ dm+48(FP), R11; \
	MOVQ groups+56(FP), CX; MOVQ half+64(FP), BX; MOVQ per+72(FP), R12; \
	MOVL $0x0f0f0f0f, AX; VPBROADCASTD AX, Z15; \
	MOVL $0x41800000, AX; VPBROADCASTD AX, Z31; MOVQ R12, AX; \
	VPXORD Z20, Z20, Z20; VPXORD Z21, Z21, Z21; VPXORD Z22, Z22, Z22; VPXORD Z23, Z23, Z23

// FACTT forms strip c's 16 scales (or offsets) in dst, tmp its scratch:
// the int8 factors at ra times the float16 factors at rd.
#define FACTT(ra, rd, c, dst, tmp) \
	VPMOVSXBD c*16(ra), dst; VCVTDQ2PS dst, dst; VCVTPH2PS c*32(rd), tmp; VMULPS tmp, dst, dst
// JOINF is JOIN with strip c's scales formed here.
#define JOINF(c, ah, am, al, y) \
	FACTT(R8, R10, c, Z27, Z30); JOINT(ah, am, al); VSCALEFPS Z29, Z27, Z27; VFMADD231PS Z27, ah, y
#define OFFSF(c, y) FACTT(R9, R11, c, Z27, Z30); VFMADD231PS Z27, Z28, y
// FINF is FIN with the factors formed here; the offsets' block is 22
// instructions, the factors' move 3.
#define FINF(off) \
	JOINF(0, Z0, Z1, Z2, Z20); JOINF(1, Z3, Z4, Z5, Z21); JOINF(2, Z6, Z7, Z8, Z22); JOINF(3, Z9, Z10, Z11, Z23); \
	ADDQ $64, R8; TESTQ R9, R9; JZ 23(PC); \
	VBROADCASTSS off(DX), Z28; OFFSF(0, Z20); OFFSF(1, Z21); OFFSF(2, Z22); OFFSF(3, Z23); ADDQ $64, R9; \
	DECQ R12; JNZ 4(PC); MOVQ AX, R12; ADDQ $128, R10; ADDQ $128, R11
#define GROUPSF(group, whole, next, HIGH0, O0, O1, HIGH1, O2, O3, bytes) \
	LIMBGROUPS(group, whole, next, SCALE512, INIT, FINF, HIGH0, O0, O1, HIGH1, O2, O3, bytes, STEP1); \
	DONE

// func limbsQ4AVX512(y *float32, q *byte, rec *byte, s, o *float32, groups, half int)
TEXT ·limbsQ4AVX512(SB), NOSPLIT, $0-56
	ARGS(0)
	GROUPS(q4group, q4whole, q4next, NOHIGH, OCT4, OCT4, NOHIGH, OCT4, OCT4, 1024)

// func limbsQ5AVX512(y *float32, q *byte, rec *byte, s, o *float32, groups, half int)
TEXT ·limbsQ5AVX512(SB), NOSPLIT, $0-56
	ARGS(0x10101010)
	GROUPS(q5group, q5whole, q5next, HIGH5, OCT5, OCT5, NOHIGH, OCT5R, OCT5R, 1280)

// func limbsQ6AVX512(y *float32, q *byte, rec *byte, s, o *float32, groups, half int)
TEXT ·limbsQ6AVX512(SB), NOSPLIT, $0-56
	ARGS(0x30303030)
	GROUPS(q6group, q6whole, q6next, HIGH6A, OCT6A, OCT6B, HIGH6B, OCT6A, OCT6B, 1536)

// func limbsQ8AVX512(y *float32, q *byte, rec *byte, s, o *float32, groups, half int)
TEXT ·limbsQ8AVX512(SB), NOSPLIT, $0-56
	ARGS(0)
	GROUPS(q8group, q8whole, q8next, NOHIGH, OCT8, OCT8, NOHIGH, OCT8, OCT8, 2048)

// FINH is FIN for limbsQ8HAVX512: the scales float16 (JOINH), no offsets.
#define FINH(off) \
	JOINH(0, Z0, Z1, Z2, Z20); JOINH(1, Z3, Z4, Z5, Z21); JOINH(2, Z6, Z7, Z8, Z22); JOINH(3, Z9, Z10, Z11, Z23); \
	ADDQ $128, R8

// func limbsQ8HAVX512(y *float32, q *byte, rec *byte, s *uint16, o *float32, groups, half int)
//
// limbsQ8AVX512 with s the slab's float16 scales as stored (Q8_0: no
// offsets, groups of 32; o and half unused), so that a row's product
// needs no formed scale row first (limbSlabStored).
TEXT ·limbsQ8HAVX512(SB), NOSPLIT, $0-56
	ARGS(0)
	LIMBGROUPS(q8hgroup, q8hwhole, q8hnext, SCALE512, INIT, FINH, NOHIGH, OCT8, OCT8, NOHIGH, OCT8, OCT8, 2048, STEP1)
	DONE

// func limbsQ4FAVX512(y *float32, q *byte, rec *byte, a, b *int8, d, dm *uint16, groups, half, per int)
TEXT ·limbsQ4FAVX512(SB), NOSPLIT, $0-80
	ARGSF(0)
	GROUPSF(q4fgroup, q4fwhole, q4fnext, NOHIGH, OCT4, OCT4, NOHIGH, OCT4, OCT4, 1024)

// func limbsQ5FAVX512(y *float32, q *byte, rec *byte, a, b *int8, d, dm *uint16, groups, half, per int)
TEXT ·limbsQ5FAVX512(SB), NOSPLIT, $0-80
	ARGSF(0x10101010)
	GROUPSF(q5fgroup, q5fwhole, q5fnext, HIGH5, OCT5, OCT5, NOHIGH, OCT5R, OCT5R, 1280)

// func limbsQ6FAVX512(y *float32, q *byte, rec *byte, a, b *int8, d, dm *uint16, groups, half, per int)
TEXT ·limbsQ6FAVX512(SB), NOSPLIT, $0-80
	ARGSF(0x30303030)
	GROUPSF(q6fgroup, q6fwhole, q6fnext, HIGH6A, OCT6A, OCT6B, HIGH6B, OCT6A, OCT6B, 1536)

// func limbsQ4HAVX512(y *float32, q *byte, rec *byte, s *uint16, o *float32, groups, half int)
//
// limbsQ8HAVX512 for Q4_0's slabs (float16 scales as stored, groups of
// 32, no offsets): Gemma 3's QAT files are Q4_0.
TEXT ·limbsQ4HAVX512(SB), NOSPLIT, $0-56
	ARGS(0)
	LIMBGROUPS(q4hgroup, q4hwhole, q4hnext, SCALE512, INIT, FINH, NOHIGH, OCT4, OCT4, NOHIGH, OCT4, OCT4, 1024, STEP1)
	DONE

// func limbsQ5HAVX512(y *float32, q *byte, rec *byte, s *uint16, o *float32, groups, half int)
//
// limbsQ8HAVX512 for Q5_0's slabs.
TEXT ·limbsQ5HAVX512(SB), NOSPLIT, $0-56
	ARGS(0x10101010)
	LIMBGROUPS(q5hgroup, q5hwhole, q5hnext, SCALE512, INIT, FINH, HIGH5, OCT5, OCT5, NOHIGH, OCT5R, OCT5R, 1280, STEP1)
	DONE
