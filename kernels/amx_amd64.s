//go:build amd64 && !purego

#include "textflag.h"

// Go's assembler has no AMX mnemonics, so the tile instructions are
// written as their bytes (VEX, map 0F38), each with fixed registers:
// LDTILECFG and the tile loads and stores address (AX) or (AX)(CX*1).
// TDPBSUD(d, a, b) is tmm d += tmm a (signed bytes) · tmm b (unsigned).
#define LDTILECFG_AX BYTE $0xC4; BYTE $0xE2; BYTE $0x78; BYTE $0x49; BYTE $0x00
#define TILERELEASE BYTE $0xC4; BYTE $0xE2; BYTE $0x78; BYTE $0x49; BYTE $0xC0
#define TILEZERO(t) BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x49; BYTE $(0xC0+8*t)
#define TILELOADD(t) BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x4B; BYTE $(0x04+8*t); BYTE $0x08
#define TILESTORED(t) BYTE $0xC4; BYTE $0xE2; BYTE $0x7A; BYTE $0x4B; BYTE $(0x04+8*t); BYTE $0x08
#define TDPBSUD(d, a, b) BYTE $0xC4; BYTE $0xE2; BYTE $(0x02+8*(15-b)); BYTE $0x5E; BYTE $(0xC0+8*d+a)

// JOINROW joins row t's sums of this group and strip (tiles 0-2 stored
// at BX: H, M, L, 1 KB apart) into acc with limbs_amd64.h's JOIN's
// roundings: the record's corrections (at r, the row's record; JOIN
// starts its sums at them) are added, t = 65536·H + (256·M + L) is one
// FMA (H·65536 is exact, so it rounds as JOIN's add) and
// acc = fma(t, s·2^-shift, acc), s·2^-shift by VSCALEFPS with the
// record's −shift (JOIN forms it from the scale, a VGETEXPPS a row and
// group). Of its ten vector operations four need port 0 on Intel's
// cores.
#define JOINROW(t, acc, r) \
	VMOVDQU32 t*64(BX), Z17; VPADDD.BCST 96(r), Z17, Z17; \
	VMOVDQU32 1024+t*64(BX), Z18; VPADDD.BCST 100(r), Z18, Z18; \
	VMOVDQU32 2048+t*64(BX), Z19; VPADDD.BCST 104(r), Z19, Z19; \
	VPSLLD $8, Z18, Z18; VPADDD Z19, Z18, Z18; VCVTDQ2PS Z18, Z18; \
	VCVTDQ2PS Z17, Z17; VFMADD231PS Z30, Z17, Z18; \
	VSCALEFPS.BCST 132(r), Z16, Z21; VFMADD231PS Z21, Z18, acc; \
	ADDQ R12, r

// OUT adds acc to a row of y (DI; R14 the rows' stride).
#define OUT(acc) VADDPS (DI), acc, acc; VMOVUPS acc, (DI); ADDQ R14, DI

// PFB asks for the strip's lines of the group 4 ahead (8 KB on): without
// it the tiles, which wait in order, waited on memory, and a batch of 16
// sequences was slower than on the VNNI kernels (notes 42).
#define PFB \
	PREFETCHT0 8192(SI); PREFETCHT0 8448(SI); PREFETCHT0 8704(SI); PREFETCHT0 8960(SI); \
	PREFETCHT0 9216(SI); PREFETCHT0 9472(SI); PREFETCHT0 9728(SI); PREFETCHT0 9984(SI)

// The tile steps of a group: its strip's integers at SI into tile 3, the
// rows' limbs h, m, l (the first row's record at R10) into tiles 4-6,
// their products into tiles 0-2 and those stored at buf, 1 KB apart.
#define LOADB PFB; MOVQ SI, AX; MOVQ $256, CX; TILELOADD(3)
#define LOADH MOVQ R10, AX; MOVQ R12, CX; TILELOADD(4)
#define LOADM ADDQ $32, AX; TILELOADD(5)
#define LOADL ADDQ $32, AX; TILELOADD(6)
#define PRODUCT(c, a) TILEZERO(c); TDPBSUD(c, a, 3)
#define STOREH(buf) MOVQ buf, AX; MOVQ $64, CX; TILESTORED(0)
#define STOREM ADDQ $1024, AX; TILESTORED(1)
#define STOREL ADDQ $1024, AX; TILESTORED(2)

// NEXT moves the tile steps to the next group's integers and limbs.
#define NEXT ADDQ $2048, SI; ADDQ $288, R10

// JOINED moves the joining to the next group: its sums' buffer, records
// and scales.
#define JOINED XCHGQ BX, R11; ADDQ $288, DX; ADDQ $256, R8

// func limbsQ8AMX(y *float32, ystride int, q *byte, rec *byte, recStride int, s *float32, cbuf *byte, cfg *byte, groups int)
//
// One strip (16 columns) of a slab for 16 rows: y, q and s point at the
// strip's first column, rec at the first row's records (recStride bytes a
// row), cbuf at 6 KB for two groups' stored sums, cfg at amxTiles. The
// tiles of group g are formed and stored while group g−1's are joined,
// their instructions between its rows', so that the tiles and the vector
// units work at once: one after the other, the joining waited for the
// tiles (which are not renamed, so a group's wait for the last's) and a
// strip took 1.4x as long (notes 42). Z0-Z15 are the rows' accs.
TEXT ·limbsQ8AMX(SB), NOSPLIT, $0-72
	MOVQ cfg+56(FP), AX
	LDTILECFG_AX
	MOVQ q+16(FP), SI; MOVQ rec+24(FP), DX; MOVQ recStride+32(FP), R12
	MOVQ s+40(FP), R8; MOVQ cbuf+48(FP), BX; MOVQ groups+64(FP), R9
	LEAQ 3072(BX), R11
	MOVL $0x47800000, AX; VPBROADCASTD AX, Z30 // 65536.0
	VPXORD Z0, Z0, Z0; VPXORD Z1, Z1, Z1; VPXORD Z2, Z2, Z2; VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4; VPXORD Z5, Z5, Z5; VPXORD Z6, Z6, Z6; VPXORD Z7, Z7, Z7
	VPXORD Z8, Z8, Z8; VPXORD Z9, Z9, Z9; VPXORD Z10, Z10, Z10; VPXORD Z11, Z11, Z11
	VPXORD Z12, Z12, Z12; VPXORD Z13, Z13, Z13; VPXORD Z14, Z14, Z14; VPXORD Z15, Z15, Z15
	MOVQ DX, R10
	LOADB; LOADH; LOADM; LOADL
	PRODUCT(0, 4); PRODUCT(1, 5); PRODUCT(2, 6)
	STOREH(BX); STOREM; STOREL
	DECQ R9; JZ last

group:
	NEXT
	VMOVUPS (R8), Z16; MOVQ DX, R13
	LOADB
	JOINROW(0, Z0, R13)
	LOADH
	JOINROW(1, Z1, R13)
	LOADM
	JOINROW(2, Z2, R13)
	LOADL
	JOINROW(3, Z3, R13)
	PRODUCT(0, 4)
	JOINROW(4, Z4, R13)
	PRODUCT(1, 5)
	JOINROW(5, Z5, R13)
	PRODUCT(2, 6)
	JOINROW(6, Z6, R13)
	JOINROW(7, Z7, R13)
	JOINROW(8, Z8, R13)
	STOREH(R11)
	JOINROW(9, Z9, R13)
	JOINROW(10, Z10, R13)
	STOREM
	JOINROW(11, Z11, R13)
	JOINROW(12, Z12, R13)
	STOREL
	JOINROW(13, Z13, R13)
	JOINROW(14, Z14, R13)
	JOINROW(15, Z15, R13)
	JOINED
	DECQ R9; JNZ group

last:
	VMOVUPS (R8), Z16; MOVQ DX, R13
	JOINROW(0, Z0, R13); JOINROW(1, Z1, R13); JOINROW(2, Z2, R13); JOINROW(3, Z3, R13)
	JOINROW(4, Z4, R13); JOINROW(5, Z5, R13); JOINROW(6, Z6, R13); JOINROW(7, Z7, R13)
	JOINROW(8, Z8, R13); JOINROW(9, Z9, R13); JOINROW(10, Z10, R13); JOINROW(11, Z11, R13)
	JOINROW(12, Z12, R13); JOINROW(13, Z13, R13); JOINROW(14, Z14, R13); JOINROW(15, Z15, R13)
	TILERELEASE
	MOVQ y+0(FP), DI; MOVQ ystride+8(FP), R14
	OUT(Z0); OUT(Z1); OUT(Z2); OUT(Z3); OUT(Z4); OUT(Z5); OUT(Z6); OUT(Z7)
	OUT(Z8); OUT(Z9); OUT(Z10); OUT(Z11); OUT(Z12); OUT(Z13); OUT(Z14); OUT(Z15)
	VZEROUPPER
	RET
