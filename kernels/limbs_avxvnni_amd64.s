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
// QUAD8V takes a quad of 8-bit integers from memory (a Q8_0 slab, asking
// for the line 8 KB on), OCTUV an unpacked group's from scratch.
#define QUAD8V(at, lo) PF(at); VMOVDQU at(SI), Y9; VMOVDQU at+32(SI), Y10; LIMBS2(lo); DOT2V
#define OCT8V(o) QUAD8V(512*o, 8*o); QUAD8V(512*o+256, 8*o+4)
#define OCTUV(o) OCTU(o, DOT2V)
#define FIN2WH(off) FIN2WS(off, SCH, 128)

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
	ARGS2
	GROUPS2(q8vstrip, q8vgroup, q8vwhole, q8vnext, SOFFF, INIT2W, FIN2W, OCT8V, OCT8V, NOHIGH, OCT8V, OCT8V, 2048)

// func limbsU8AVXVNNI(y *float32, q *byte, rec *byte, s, o *float32, acc *float32, groups, half int)
TEXT ·limbsU8AVXVNNI(SB), NOSPLIT, $0-64
	ARGS2
	GROUPS2(u8vstrip, u8vgroup, u8vwhole, u8vnext, SOFFF, INIT2W, FIN2W, OCTUV, OCTUV, NOHIGH, OCTUV, OCTUV, 2048)

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
	ARGS2
	GROUPS2(q8hvstrip, q8hvgroup, q8hvwhole, q8hvnext, SOFFH, INIT2W, FIN2WH, OCT8V, OCT8V, NOHIGH, OCT8V, OCT8V, 2048)

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
