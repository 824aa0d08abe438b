//go:build amd64 && !purego

#include "textflag.h"
#include "limbs_amd64.h"
#include "limbs_avx2_amd64.h"

// The AVX2 kernels (limbs_avx2_amd64.h describes them and their pieces).

// func limbsQ4AVX2(y *float32, q *byte, rec *byte, s, o *float32, acc *float32, groups, half int)
TEXT ·limbsQ4AVX2(SB), NOSPLIT, $0-64
	ARGS2
	GROUPS2(q4strip, q4group, q4whole, q4next, SOFFF, INIT2, FIN2, OCT4AVX2, OCT4AVX2, NOHIGH, OCT4AVX2, OCT4AVX2, 1024)

// func limbsQ5AVX2(y *float32, q *byte, rec *byte, s, o *float32, acc *float32, groups, half int)
TEXT ·limbsQ5AVX2(SB), NOSPLIT, $0-64
	ARGS2
	GROUPS2(q5strip, q5group, q5whole, q5next, SOFFF, INIT5, FIN5, OCT5AVX2, OCT5AVX2, MID5, OCT5RAVX2, OCT5RAVX2, 1280)

// func limbsQ6AVX2(y *float32, q *byte, rec *byte, s, o *float32, acc *float32, groups, half int)
TEXT ·limbsQ6AVX2(SB), NOSPLIT, $0-64
	ARGS2
	GROUPS2(q6strip, q6group, q6whole, q6next, SOFFF, INIT2W, FIN2W, OCT6AAVX2, OCT6BAVX2, NOHIGH, OCT6AAVX2, OCT6BAVX2, 1536)

// func limbsQ4HAVX2(y *float32, q *byte, rec *byte, s *uint16, o *float32, acc *float32, groups, half int)
TEXT ·limbsQ4HAVX2(SB), NOSPLIT, $0-64
	ARGS2
	GROUPS2(q4hstrip, q4hgroup, q4hwhole, q4hnext, SOFFH, INIT2, FIN2H, OCT4AVX2, OCT4AVX2, NOHIGH, OCT4AVX2, OCT4AVX2, 1024)

// func limbsQ5HAVX2(y *float32, q *byte, rec *byte, s *uint16, o *float32, acc *float32, groups, half int)
TEXT ·limbsQ5HAVX2(SB), NOSPLIT, $0-64
	ARGS2
	GROUPS2(q5hstrip, q5hgroup, q5hwhole, q5hnext, SOFFH, INIT5, FIN5H, OCT5AVX2, OCT5AVX2, MID5, OCT5RAVX2, OCT5RAVX2, 1280)

// func limbsQ4FAVX2(y *float32, q *byte, rec *byte, a, b *int8, d, dm *uint16, acc *float32, groups, half, per int)
TEXT ·limbsQ4FAVX2(SB), NOSPLIT, $0-88
	ARGSF2
	GROUPSF2(q4fstrip, q4fgroup, q4fwhole, q4fnext, INIT2, FIN4F, OCT4AVX2, OCT4AVX2, NOHIGH, OCT4AVX2, OCT4AVX2, 1024)

// func limbsQ5FAVX2(y *float32, q *byte, rec *byte, a, b *int8, d, dm *uint16, acc *float32, groups, half, per int)
TEXT ·limbsQ5FAVX2(SB), NOSPLIT, $0-88
	ARGSF2
	GROUPSF2(q5fstrip, q5fgroup, q5fwhole, q5fnext, INIT5, FIN5F, OCT5AVX2, OCT5AVX2, MID5, OCT5RAVX2, OCT5RAVX2, 1280)

// func limbsQ6FAVX2(y *float32, q *byte, rec *byte, a, b *int8, d, dm *uint16, acc *float32, groups, half, per int)
TEXT ·limbsQ6FAVX2(SB), NOSPLIT, $0-88
	ARGSF2
	GROUPSF2(q6fstrip, q6fgroup, q6fwhole, q6fnext, INIT2W, FINWF, OCT6AAVX2, OCT6BAVX2, NOHIGH, OCT6AAVX2, OCT6BAVX2, 1536)

// func limbsU5AVX2(y *float32, q *byte, rec *byte, s, o *float32, acc *float32, groups, half int)
TEXT ·limbsU5AVX2(SB), NOSPLIT, $0-64
	ARGS2
	GROUPS2(u5strip, u5group, u5whole, u5next, SOFFF, INIT5, FIN5, OCTU5, OCTU5, MID5, OCTU5, OCTU5, 2048)

// func limbsU6AVX2(y *float32, q *byte, rec *byte, s, o *float32, acc *float32, groups, half int)
TEXT ·limbsU6AVX2(SB), NOSPLIT, $0-64
	ARGS2
	GROUPS2(u6strip, u6group, u6whole, u6next, SOFFF, INIT2W, FIN2W, OCTU6, OCTU6, NOHIGH, OCTU6, OCTU6, 2048)

// func unpackQ4AVX2(dst, q *byte, groups int)
TEXT ·unpackQ4AVX2(SB), NOSPLIT, $0-24
	UNPACK(x4strip, x4group, OCT4X, OCT4X, OCT4X, OCT4X, 1024)

// func unpackQ5AVX2(dst, q *byte, groups int)
TEXT ·unpackQ5AVX2(SB), NOSPLIT, $0-24
	UNPACK(x5strip, x5group, OCT5X, OCT5X, OCT5RX, OCT5RX, 1280)

// func unpackQ6AVX2(dst, q *byte, groups int)
TEXT ·unpackQ6AVX2(SB), NOSPLIT, $0-24
	UNPACK(x6strip, x6group, OCT6AX, OCT6BX, OCT6AX, OCT6BX, 1536)
