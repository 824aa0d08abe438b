//go:build amd64 && !purego

#include "textflag.h"

// The constants the AVX2 limb kernels share (limbs_avx2_amd64.s,
// limbs_avx2w_amd64.s, limbsplit_amd64.s), once.

// limbBit4, limbBits45: the higher bits' masks of 5- and 6-bit integers,
// in every byte.
DATA ·limbBit4+0(SB)/8, $0x1010101010101010
DATA ·limbBit4+8(SB)/8, $0x1010101010101010
DATA ·limbBit4+16(SB)/8, $0x1010101010101010
DATA ·limbBit4+24(SB)/8, $0x1010101010101010
GLOBL ·limbBit4(SB), RODATA|NOPTR, $32
DATA ·limbBits45+0(SB)/8, $0x3030303030303030
DATA ·limbBits45+8(SB)/8, $0x3030303030303030
DATA ·limbBits45+16(SB)/8, $0x3030303030303030
DATA ·limbBits45+24(SB)/8, $0x3030303030303030
GLOBL ·limbBits45(SB), RODATA|NOPTR, $32

// limbWordOnes: 1 in every int16, what VPMADDWD widens pair sums by.
DATA ·limbWordOnes+0(SB)/8, $0x0001000100010001
DATA ·limbWordOnes+8(SB)/8, $0x0001000100010001
DATA ·limbWordOnes+16(SB)/8, $0x0001000100010001
DATA ·limbWordOnes+24(SB)/8, $0x0001000100010001
GLOBL ·limbWordOnes(SB), RODATA|NOPTR, $32

// limbC256, limbC65536: the joins' float32 256.0 and 65536.0.
DATA ·limbC256+0(SB)/4, $0x43800000
GLOBL ·limbC256(SB), RODATA|NOPTR, $4
DATA ·limbC65536+0(SB)/4, $0x47800000
GLOBL ·limbC65536(SB), RODATA|NOPTR, $4

// limbAbs: a float32's magnitude bits. limbOrder: the dword order
// 0,4,1,5,2,6,3,7 that puts a pack's 128-bit lanes back in order.
DATA ·limbAbs+0(SB)/4, $0x7fffffff
GLOBL ·limbAbs(SB), RODATA|NOPTR, $4
DATA ·limbOrder+0(SB)/8, $0x0000000400000000
DATA ·limbOrder+8(SB)/8, $0x0000000500000001
DATA ·limbOrder+16(SB)/8, $0x0000000600000002
DATA ·limbOrder+24(SB)/8, $0x0000000700000003
GLOBL ·limbOrder(SB), RODATA|NOPTR, $32
