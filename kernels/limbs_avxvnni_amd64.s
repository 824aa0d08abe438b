//go:build amd64 && !purego

#include "textflag.h"
#include "limbs_amd64.h"
#include "limbs_avx2_amd64.h"

// The AVX-VNNI kernels: the AVX2 kernels (limbs_avx2_amd64.h) with each
// limb's VPMADDUBSW, its int16 adds and its widening by VPMADDWD replaced
// by one VPDPBUSD on 256-bit vectors, as Intel's client cores since Alder
// Lake, its E-core Xeons and Zen 5 run it without AVX-512. VPDPBUSD adds
// the byte products into int32 without saturating, so the sums start at
// the records' corrections (INIT2W) and need no widening (FIN2W), 8-bit
// integers take the byte kernels' path (no words), and the sums are the
// same integers as every other kernel's, so the bits are the same
// (TestLimbKernels). Each takes
//
//	func(y *float32, q *byte, rec *byte, s, o *float32, acc *float32, groups, half int)
//
// or the factor kernels' arguments (limbs_avx2_amd64.h), with the AVX2
// kernels' registers.

// VPDPBUSDY(rm, v, acc) is VPDPBUSD Yrm, Yv, Yacc in its VEX form (AVX-VNNI:
// acc += the int32 sums of four u8(Yv)·s8(Yrm) products), which Go's
// assembler does not write: it encodes VPDPBUSD only as AVX-512 (EVEX),
// which these CPUs lack. C4, then R̄X̄B̄ and map 0F38, W0 v̄v̄v̄v̄ L1 pp 66,
// opcode 50, ModRM with acc in reg and rm in r/m (registers by number).
#define VPDPBUSDY(rm, v, acc) \
	BYTE $0xC4; BYTE $(0xE2 ^ (((acc)>>3)<<7) ^ (((rm)>>3)<<5)); BYTE $(((15-(v))<<3)|5); \
	BYTE $0x50; BYTE $(0xC0|(((acc)&7)<<3)|((rm)&7))

// DOT2V adds the integers in Y9 (half 0) and Y10 (half 1) times the limbs
// in Y6-Y8 to the int32 sums Y0-Y5.
#define DOT2V \
	VPDPBUSDY(6, 9, 0); VPDPBUSDY(7, 9, 1); VPDPBUSDY(8, 9, 2); \
	VPDPBUSDY(6, 10, 3); VPDPBUSDY(7, 10, 4); VPDPBUSDY(8, 10, 5)
#define USEV(lo, at) LIMBS2(lo); DOT2V
#define OCT4V(o) OCTLOAD2(o*256); LO2; LIMBS2(8*o); DOT2V; HI2; LIMBS2(8*o+4); DOT2V
#define OCT5V(o) OCT5(o, USEV)
#define OCT5RV(o) OCT5R(o, USEV)
#define OCT6AV(o) OCT6A(o, USEV)
#define OCT6BV(o) OCT6B(o, USEV)
#define FIN2WH(off) FIN2WS(off, SCH, 128)

// The 8-bit kernels (a Q8_0 slab, or a slab's integers unpacked once for
// its rows: limbCols) take two strips a pass, 32 columns: a strip's six
// sums took eight VPDPBUSD each a group, one after another, so a strip
// at a time waited on VPDPBUSD's latency (6 chains, ~1.2 a cycle on Zen
// 5 where it issues 2); two strips keep 12 chains going. Y0-Y5 hold
// strip A's sums (as above), Y6-Y11 strip B's, Y12-Y14 a quad's limbs
// broadcast, Y15 its integers, 32 bytes at a time; at a group's end
// Y12-Y15 are the joining's temporaries. acc is the two strips' 32 float
// sums. R15 counts the pairs, R10 is the pair's byte offset (128).
#define ARGSX MOVQ half+56(FP), BX; XORQ R10, R10; MOVQ $2, R15
#define STRIPX(SOFF) \
	MOVQ q+8(FP), SI; ADDQ R10, SI; MOVQ rec+16(FP), DX; \
	MOVQ s+24(FP), R8; SOFF; MOVQ o+32(FP), R9; TESTQ R9, R9; JZ 2(PC); ADDQ R10, R9; \
	MOVQ groups+48(FP), CX; MOVQ acc+40(FP), DI; \
	VPXOR Y12, Y12, Y12; VMOVUPS Y12, (DI); VMOVUPS Y12, 32(DI); VMOVUPS Y12, 64(DI); VMOVUPS Y12, 96(DI)
// INITX starts every sum at the record's corrections at off.
#define INITX(off) \
	VPBROADCASTD off(DX), Y0; VPBROADCASTD off+4(DX), Y1; VPBROADCASTD off+8(DX), Y2; \
	VMOVDQU Y0, Y3; VMOVDQU Y1, Y4; VMOVDQU Y2, Y5; VMOVDQU Y0, Y6; VMOVDQU Y1, Y7; \
	VMOVDQU Y2, Y8; VMOVDQU Y0, Y9; VMOVDQU Y1, Y10; VMOVDQU Y2, Y11
#define DOT3X(v, ah, am, al) VPDPBUSDY(12, v, ah); VPDPBUSDY(13, v, am); VPDPBUSDY(14, v, al)
// QUADX adds quad at's products (both strips, 128 bytes); QUADXPF also
// asks for its two lines 8 KB on (a slab streamed from memory).
#define QUADX(at, lo) \
	VPBROADCASTD lo(DX), Y12; VPBROADCASTD lo+32(DX), Y13; VPBROADCASTD lo+64(DX), Y14; \
	VMOVDQU at(SI), Y15; DOT3X(15, 0, 1, 2); VMOVDQU at+32(SI), Y15; DOT3X(15, 3, 4, 5); \
	VMOVDQU at+64(SI), Y15; DOT3X(15, 6, 7, 8); VMOVDQU at+96(SI), Y15; DOT3X(15, 9, 10, 11)
#define QUADXPF(at, lo) PF(at); PF(at+64); QUADX(at, lo)
#define OCTXPF(o) QUADXPF(512*o, 8*o); QUADXPF(512*o+256, 8*o+4)
#define OCTX(o) QUADX(512*o, 8*o); QUADX(512*o+256, 8*o+4)
// JOINX is JOIN2 for eight columns (h: 0-3, each 8 columns of the pair)
// with Y12 and Y13 as its temporaries; SCXF and SCXH scale Y12 by a
// float32 row's or stored float16 scales (Y13 free).
#define SCXF(h) VMULPS h*32(R8), Y12, Y12
#define SCXH(h) VCVTPH2PS h*16(R8), Y13; VMULPS Y13, Y12, Y12
#define JOINX(h, ah, am, al, SC) \
	VCVTDQ2PS al, al; VCVTDQ2PS am, am; VCVTDQ2PS ah, ah; \
	VBROADCASTSS ·limbC256(SB), Y12; VFMADD213PS al, Y12, am; \
	VBROADCASTSS ·limbC65536(SB), Y12; VFMADD213PS am, Y12, ah; \
	VBROADCASTSS 120(DX), Y12; SC(h); \
	VMOVUPS h*32(DI), Y13; VFMADD231PS Y12, ah, Y13; VMOVUPS Y13, h*32(DI)
#define OFFSX(h) VMOVUPS h*32(DI), Y13; VFMADD231PS h*32(R9), Y12, Y13; VMOVUPS Y13, h*32(DI)
#define FINXS(off, SC, sstep) \
	JOINX(0, Y0, Y1, Y2, SC); JOINX(1, Y3, Y4, Y5, SC); JOINX(2, Y6, Y7, Y8, SC); JOINX(3, Y9, Y10, Y11, SC); \
	ADDQ $sstep, R8; TESTQ R9, R9; JZ 15(PC); \
	VBROADCASTSS off(DX), Y12; OFFSX(0); OFFSX(1); OFFSX(2); OFFSX(3); ADDQ $256, R9
#define FINX(off) FINXS(off, SCXF, 256)
#define FINXH(off) FINXS(off, SCXH, 128)
#define STRIPENDX(strip) \
	MOVQ y+0(FP), AX; ADDQ R10, AX; \
	VMOVUPS (DI), Y12; VADDPS (AX), Y12, Y12; VMOVUPS Y12, (AX); \
	VMOVUPS 32(DI), Y12; VADDPS 32(AX), Y12, Y12; VMOVUPS Y12, 32(AX); \
	VMOVUPS 64(DI), Y12; VADDPS 64(AX), Y12, Y12; VMOVUPS Y12, 64(AX); \
	VMOVUPS 96(DI), Y12; VADDPS 96(AX), Y12, Y12; VMOVUPS Y12, 96(AX); \
	ADDQ $128, R10; DECQ R15; JNZ strip; \
	VZEROUPPER; RET
#define GROUPSX(strip, group, whole, next, SOFF, FINM, OCT) \
strip: \
	STRIPX(SOFF); \
	LIMBGROUPS(group, whole, next, NOHIGH, INITX, FINM, NOHIGH, OCT, OCT, NOHIGH, OCT, OCT, 2048, STEP1); \
	STRIPENDX(strip)

// func limbsQ4AVXVNNI(y *float32, q *byte, rec *byte, s, o *float32, acc *float32, groups, half int)
TEXT ·limbsQ4AVXVNNI(SB), NOSPLIT, $0-64
	ARGS2
	GROUPS2(q4vstrip, q4vgroup, q4vwhole, q4vnext, SOFFF, INIT2W, FIN2W, OCT4V, OCT4V, NOHIGH, OCT4V, OCT4V, 1024)

// func limbsQ5AVXVNNI(y *float32, q *byte, rec *byte, s, o *float32, acc *float32, groups, half int)
TEXT ·limbsQ5AVXVNNI(SB), NOSPLIT, $0-64
	ARGS2
	GROUPS2(q5vstrip, q5vgroup, q5vwhole, q5vnext, SOFFF, INIT2W, FIN2W, OCT5V, OCT5V, NOHIGH, OCT5RV, OCT5RV, 1280)

// func limbsQ6AVXVNNI(y *float32, q *byte, rec *byte, s, o *float32, acc *float32, groups, half int)
TEXT ·limbsQ6AVXVNNI(SB), NOSPLIT, $0-64
	ARGS2
	GROUPS2(q6vstrip, q6vgroup, q6vwhole, q6vnext, SOFFF, INIT2W, FIN2W, OCT6AV, OCT6BV, NOHIGH, OCT6AV, OCT6BV, 1536)

// func limbsQ8AVXVNNI(y *float32, q *byte, rec *byte, s, o *float32, acc *float32, groups, half int)
TEXT ·limbsQ8AVXVNNI(SB), NOSPLIT, $0-64
	ARGSX
	GROUPSX(q8vstrip, q8vgroup, q8vwhole, q8vnext, SOFFF, FINX, OCTXPF)

// func limbsU8AVXVNNI(y *float32, q *byte, rec *byte, s, o *float32, acc *float32, groups, half int)
TEXT ·limbsU8AVXVNNI(SB), NOSPLIT, $0-64
	ARGSX
	GROUPSX(u8vstrip, u8vgroup, u8vwhole, u8vnext, SOFFF, FINX, OCTX)

// func limbsQ4HAVXVNNI(y *float32, q *byte, rec *byte, s *uint16, o *float32, acc *float32, groups, half int)
TEXT ·limbsQ4HAVXVNNI(SB), NOSPLIT, $0-64
	ARGS2
	GROUPS2(q4hvstrip, q4hvgroup, q4hvwhole, q4hvnext, SOFFH, INIT2W, FIN2WH, OCT4V, OCT4V, NOHIGH, OCT4V, OCT4V, 1024)

// func limbsQ5HAVXVNNI(y *float32, q *byte, rec *byte, s *uint16, o *float32, acc *float32, groups, half int)
TEXT ·limbsQ5HAVXVNNI(SB), NOSPLIT, $0-64
	ARGS2
	GROUPS2(q5hvstrip, q5hvgroup, q5hvwhole, q5hvnext, SOFFH, INIT2W, FIN2WH, OCT5V, OCT5V, NOHIGH, OCT5RV, OCT5RV, 1280)

// func limbsQ8HAVXVNNI(y *float32, q *byte, rec *byte, s *uint16, o *float32, acc *float32, groups, half int)
TEXT ·limbsQ8HAVXVNNI(SB), NOSPLIT, $0-64
	ARGSX
	GROUPSX(q8hvstrip, q8hvgroup, q8hvwhole, q8hvnext, SOFFH, FINXH, OCTXPF)

// func limbsQ4FAVXVNNI(y *float32, q *byte, rec *byte, a, b *int8, d, dm *uint16, acc *float32, groups, half, per int)
TEXT ·limbsQ4FAVXVNNI(SB), NOSPLIT, $0-88
	ARGSF2
	GROUPSF2(q4fvstrip, q4fvgroup, q4fvwhole, q4fvnext, INIT2W, FINWF, OCT4V, OCT4V, NOHIGH, OCT4V, OCT4V, 1024)

// func limbsQ5FAVXVNNI(y *float32, q *byte, rec *byte, a, b *int8, d, dm *uint16, acc *float32, groups, half, per int)
TEXT ·limbsQ5FAVXVNNI(SB), NOSPLIT, $0-88
	ARGSF2
	GROUPSF2(q5fvstrip, q5fvgroup, q5fvwhole, q5fvnext, INIT2W, FINWF, OCT5V, OCT5V, NOHIGH, OCT5RV, OCT5RV, 1280)

// func limbsQ6FAVXVNNI(y *float32, q *byte, rec *byte, a, b *int8, d, dm *uint16, acc *float32, groups, half, per int)
TEXT ·limbsQ6FAVXVNNI(SB), NOSPLIT, $0-88
	ARGSF2
	GROUPSF2(q6fvstrip, q6fvgroup, q6fvwhole, q6fvnext, INIT2W, FINWF, OCT6AV, OCT6BV, NOHIGH, OCT6AV, OCT6BV, 1536)
