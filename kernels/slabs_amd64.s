//go:build amd64 && !purego

#include "textflag.h"
#include "unpack_amd64.h"

// Slab kernels: y += x·w on one whole 64-column slab streamed from k
// weight rows, float32 or float16 (axpySlabKernel, axpySlab16Kernel), and
// a quantised block's slab through all its groups in one call
// (axpySlabQ*Kernel). Dispatch in kernels_amd64.go.

// AXPYSLAB is the body of axpySlabAVX2 and axpySlabF16AVX2, written once:
// y[i,0:64] += Σ_{k'<k} x[i,k']·w[k',0:64] for i < m, w one full slab of
// float32 (rows of 256 contiguous bytes) or float16 weights (rows of 128,
// widened by VCVTPH2PS as they are loaded). The loops are turned round as
// in axpyPanelQAVX512: a row of y stays in Y4-Y11 while the k weight rows
// stream past it, one FMA per element per row in k order, so the bits are
// axpyPanelAVX2's either way. WROW is the FMAs of the weight row at R10
// times Y0; WSTEP its bytes.
#define AXPYSLAB(WROW, WSTEP) \
	MOVQ  y+0(FP), DI \
	MOVQ  x+16(FP), SI \
	MOVQ  m+40(FP), R13 \
	MOVQ  k+48(FP), AX \
	TESTQ R13, R13 \
	JZ    sdone \
	TESTQ AX, AX \
	JZ    sdone \
srow: \
	VMOVUPS (DI), Y4 \
	VMOVUPS 32(DI), Y5 \
	VMOVUPS 64(DI), Y6 \
	VMOVUPS 96(DI), Y7 \
	VMOVUPS 128(DI), Y8 \
	VMOVUPS 160(DI), Y9 \
	VMOVUPS 192(DI), Y10 \
	VMOVUPS 224(DI), Y11 \
	MOVQ    w+32(FP), R10 \
	MOVQ    SI, R11 \
	MOVQ    AX, R12 \
sk: \
	VBROADCASTSS (R11), Y0 \
	WROW \
	ADDQ         $WSTEP, R10 \
	ADDQ         $4, R11 \
	DECQ         R12 \
	JNZ          sk \
	VMOVUPS Y4, (DI) \
	VMOVUPS Y5, 32(DI) \
	VMOVUPS Y6, 64(DI) \
	VMOVUPS Y7, 96(DI) \
	VMOVUPS Y8, 128(DI) \
	VMOVUPS Y9, 160(DI) \
	VMOVUPS Y10, 192(DI) \
	VMOVUPS Y11, 224(DI) \
	ADDQ    ldyb+8(FP), DI \
	ADDQ    ldxb+24(FP), SI \
	DECQ    R13 \
	JNZ     srow \
sdone: \
	VZEROUPPER \
	RET

#define SLABROW32 \
	VFMADD231PS (R10), Y0, Y4 \
	VFMADD231PS 32(R10), Y0, Y5 \
	VFMADD231PS 64(R10), Y0, Y6 \
	VFMADD231PS 96(R10), Y0, Y7 \
	VFMADD231PS 128(R10), Y0, Y8 \
	VFMADD231PS 160(R10), Y0, Y9 \
	VFMADD231PS 192(R10), Y0, Y10 \
	VFMADD231PS 224(R10), Y0, Y11

#define SLABROW16 \
	VCVTPH2PS   (R10), Y12 \
	VCVTPH2PS   16(R10), Y13 \
	VCVTPH2PS   32(R10), Y14 \
	VCVTPH2PS   48(R10), Y15 \
	VFMADD231PS Y12, Y0, Y4 \
	VFMADD231PS Y13, Y0, Y5 \
	VFMADD231PS Y14, Y0, Y6 \
	VFMADD231PS Y15, Y0, Y7 \
	VCVTPH2PS   64(R10), Y12 \
	VCVTPH2PS   80(R10), Y13 \
	VCVTPH2PS   96(R10), Y14 \
	VCVTPH2PS   112(R10), Y15 \
	VFMADD231PS Y12, Y0, Y8 \
	VFMADD231PS Y13, Y0, Y9 \
	VFMADD231PS Y14, Y0, Y10 \
	VFMADD231PS Y15, Y0, Y11

// The slab kernels below run whole 64-column strips of a quantised slab
// through groups consecutive groups of rows: R8 (R9) points at a group's
// scale (offset) row, R14 counts the groups, R12 the group's rows, R10
// walks the integers and R11 (R15) the x rows. Rows of y stay in
// registers across the groups; every element still takes its products in
// k order, one FMA each, so the bits are axpyPanelQAVX512's.

// SLABSCALES loads one group's scales into s0–s3 and, when there are
// offsets (R9 not nil), its offsets into o0–o3.
#define SLABSCALES(s0, s1, s2, s3, o0, o1, o2, o3) \
	VMOVUPS (R8), s0; VMOVUPS 64(R8), s1; VMOVUPS 128(R8), s2; VMOVUPS 192(R8), s3; \
	TESTQ R9, R9; JZ 5(PC); \
	VMOVUPS (R9), o0; VMOVUPS 64(R9), o1; VMOVUPS 128(R9), o2; VMOVUPS 192(R9), o3

// NEXTGROUP moves to the next group's scale and offset rows (256 bytes
// on) and loops to label while groups remain.
#define NEXTGROUP(label) \
	ADDQ $256, R8; TESTQ R9, R9; JZ 2(PC); ADDQ $256, R9; \
	DECQ R14; JNZ label

// SLABOFFSETS adds the offsets o0–o3 to the weights w0–w3, if any.
#define SLABOFFSETS(w0, w1, w2, w3, o0, o1, o2, o3) \
	TESTQ R9, R9; JZ 5(PC); \
	VADDPS o0, w0, w0; VADDPS o1, w1, w1; VADDPS o2, w2, w2; VADDPS o3, w3, w3

// Q8ROW forms the weights of the int8 row at R10: w = float32(q)·s (+ o).
#define Q8ROW(w0, w1, w2, w3, s0, s1, s2, s3, o0, o1, o2, o3) \
	VPMOVSXBD (R10), w0; VPMOVSXBD 16(R10), w1; VPMOVSXBD 32(R10), w2; VPMOVSXBD 48(R10), w3; \
	VCVTDQ2PS w0, w0; VCVTDQ2PS w1, w1; VCVTDQ2PS w2, w2; VCVTDQ2PS w3, w3; \
	VMULPS s0, w0, w0; VMULPS s1, w1, w1; VMULPS s2, w2, w2; VMULPS s3, w3, w3; \
	SLABOFFSETS(w0, w1, w2, w3, o0, o1, o2, o3)

// Q4ROW forms the weights of the nibble row at R10 (column c in byte c's
// low nibble, c+32 in byte c's high one): w = float32(nibble + min)·s
// (+ o), float32(nibble + min) looked up in table (Q4TABLE) by VPERMPS,
// which reads an index's low 4 bits: one instruction where masking,
// adding min and converting took three, in a kernel bound by its vector
// instructions.
#define Q4ROW(w0, w1, w2, w3, s0, s1, s2, s3, o0, o1, o2, o3, table) \
	VPMOVZXBD (R10), w0; VPMOVZXBD 16(R10), w1; VPSRLD $4, w0, w2; VPSRLD $4, w1, w3; \
	VPERMPS table, w0, w0; VPERMPS table, w1, w1; VPERMPS table, w2, w2; VPERMPS table, w3, w3; \
	VMULPS s0, w0, w0; VMULPS s1, w1, w1; VMULPS s2, w2, w2; VMULPS s3, w3, w3; \
	SLABOFFSETS(w0, w1, w2, w3, o0, o1, o2, o3)

// Q4TABLE sets table to float32(min + i) in lane i, min in AX.
#define Q4TABLE(table) \
	VPBROADCASTD AX, table; VPADDD nibbleLanes<>(SB), table, table; VCVTDQ2PS table, table

DATA nibbleLanes<>+0(SB)/8, $0x0000000100000000
DATA nibbleLanes<>+8(SB)/8, $0x0000000300000002
DATA nibbleLanes<>+16(SB)/8, $0x0000000500000004
DATA nibbleLanes<>+24(SB)/8, $0x0000000700000006
DATA nibbleLanes<>+32(SB)/8, $0x0000000900000008
DATA nibbleLanes<>+40(SB)/8, $0x0000000b0000000a
DATA nibbleLanes<>+48(SB)/8, $0x0000000d0000000c
DATA nibbleLanes<>+56(SB)/8, $0x0000000f0000000e
GLOBL nibbleLanes<>(SB), RODATA|NOPTR, $64

// One row of y (a 64-column strip at DI) in Z4–Z7, and its FMAs with the
// weights in Z16–Z19 and x[k] from (R11).
#define Y1LOAD VMOVUPS (DI), Z4; VMOVUPS 64(DI), Z5; VMOVUPS 128(DI), Z6; VMOVUPS 192(DI), Z7
#define Y1STORE VMOVUPS Z4, (DI); VMOVUPS Z5, 64(DI); VMOVUPS Z6, 128(DI); VMOVUPS Z7, 192(DI)
#define FMA1ROW \
	VBROADCASTSS (R11), Z0; \
	VFMADD231PS Z16, Z0, Z4; VFMADD231PS Z17, Z0, Z5; VFMADD231PS Z18, Z0, Z6; VFMADD231PS Z19, Z0, Z7

// Four rows of y, one 64-column strip each, in Z4–Z19 (row r in
// Z(4+4r)..Z(7+4r)); rows 0 and 1 from DI, rows 2 and 3 from R13, DX
// apart.
#define Y4LOAD \
	VMOVUPS (DI), Z4; VMOVUPS 64(DI), Z5; VMOVUPS 128(DI), Z6; VMOVUPS 192(DI), Z7; \
	VMOVUPS (DI)(DX*1), Z8; VMOVUPS 64(DI)(DX*1), Z9; VMOVUPS 128(DI)(DX*1), Z10; VMOVUPS 192(DI)(DX*1), Z11; \
	VMOVUPS (R13), Z12; VMOVUPS 64(R13), Z13; VMOVUPS 128(R13), Z14; VMOVUPS 192(R13), Z15; \
	VMOVUPS (R13)(DX*1), Z16; VMOVUPS 64(R13)(DX*1), Z17; VMOVUPS 128(R13)(DX*1), Z18; VMOVUPS 192(R13)(DX*1), Z19

#define Y4STORE \
	VMOVUPS Z4, (DI); VMOVUPS Z5, 64(DI); VMOVUPS Z6, 128(DI); VMOVUPS Z7, 192(DI); \
	VMOVUPS Z8, (DI)(DX*1); VMOVUPS Z9, 64(DI)(DX*1); VMOVUPS Z10, 128(DI)(DX*1); VMOVUPS Z11, 192(DI)(DX*1); \
	VMOVUPS Z12, (R13); VMOVUPS Z13, 64(R13); VMOVUPS Z14, 128(R13); VMOVUPS Z15, 192(R13); \
	VMOVUPS Z16, (R13)(DX*1); VMOVUPS Z17, 64(R13)(DX*1); VMOVUPS Z18, 128(R13)(DX*1); VMOVUPS Z19, 192(R13)(DX*1)

// x[r,k] of the four rows (R11 and R15, BX apart) broadcast into Z0 in
// turn, each row's FMAs with the weights in Z20–Z23.
#define FMA4ROWS \
	VBROADCASTSS (R11), Z0; \
	VFMADD231PS Z20, Z0, Z4; VFMADD231PS Z21, Z0, Z5; VFMADD231PS Z22, Z0, Z6; VFMADD231PS Z23, Z0, Z7; \
	VBROADCASTSS (R11)(BX*1), Z0; \
	VFMADD231PS Z20, Z0, Z8; VFMADD231PS Z21, Z0, Z9; VFMADD231PS Z22, Z0, Z10; VFMADD231PS Z23, Z0, Z11; \
	VBROADCASTSS (R15), Z0; \
	VFMADD231PS Z20, Z0, Z12; VFMADD231PS Z21, Z0, Z13; VFMADD231PS Z22, Z0, Z14; VFMADD231PS Z23, Z0, Z15; \
	VBROADCASTSS (R15)(BX*1), Z0; \
	VFMADD231PS Z20, Z0, Z16; VFMADD231PS Z21, Z0, Z17; VFMADD231PS Z22, Z0, Z18; VFMADD231PS Z23, Z0, Z19

// The four-row kernels' registers: y in Z4–Z19, rows 2 and 3 at R13 = DI
// + 2·ldyb and R15 = x + 2·ldxb.
#define ROWS4SETUP \
	MOVQ y+0(FP), DI; MOVQ ldyb+8(FP), DX; LEAQ (DI)(DX*2), R13; \
	MOVQ x+16(FP), R11; MOVQ ldxb+24(FP), BX; LEAQ (R11)(BX*2), R15; \
	MOVQ q+32(FP), R10; MOVQ s+40(FP), R8; MOVQ o+48(FP), R9; \
	Y4LOAD

// SLABQ1 is the body of axpySlabQAVX512 and axpySlabQ4AVX512, written
// once for int8 and nibble integers: m rows of y, one at a time, through
// all the groups. SETUP is what the integers' form needs first (the
// nibbles' table), ROW forms a row's 64 weights from them into Z16-Z19,
// STEP is a row's bytes; M, GROUPS and GROUP the arguments m, groups and
// group, which stand at other offsets for the two.
#define SLABQ1(SETUP, ROW, STEP, M, GROUPS, GROUP) \
	MOVQ  y+0(FP), DI \
	MOVQ  x+16(FP), SI \
	SETUP \
	MOVQ  M, R13 \
	TESTQ R13, R13 \
	JZ    done \
row: \
	Y1LOAD \
	MOVQ q+32(FP), R10 \
	MOVQ SI, R11 \
	MOVQ s+40(FP), R8 \
	MOVQ o+48(FP), R9 \
	MOVQ GROUPS, R14 \
group: \
	SLABSCALES(Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15) \
	MOVQ GROUP, R12 \
k: \
	ROW \
	FMA1ROW \
	ADDQ $STEP, R10 \
	ADDQ $4, R11 \
	DECQ R12 \
	JNZ  k \
	NEXTGROUP(group) \
	Y1STORE \
	ADDQ ldyb+8(FP), DI \
	ADDQ ldxb+24(FP), SI \
	DECQ R13 \
	JNZ  row \
done: \
	VZEROUPPER \
	RET

// SLABQ4 is the body of axpySlabQRows4AVX512 and axpySlabQ4Rows4AVX512:
// exactly four rows of y at once, each weight formed once (into Z20-Z23)
// and used by the four rows (batched decode paid the integer conversion
// and scaling once per row). SETUP, ROW, STEP, GROUPS and GROUP as in
// SLABQ1.
#define SLABQ4(SETUP, ROW, STEP, GROUPS, GROUP) \
	ROWS4SETUP \
	SETUP \
	MOVQ GROUPS, R14 \
group: \
	SLABSCALES(Z24, Z25, Z26, Z27, Z28, Z29, Z30, Z31) \
	MOVQ GROUP, R12 \
k: \
	ROW \
	FMA4ROWS \
	ADDQ $STEP, R10 \
	ADDQ $4, R11 \
	ADDQ $4, R15 \
	DECQ R12 \
	JNZ  k \
	NEXTGROUP(group) \
	Y4STORE \
	VZEROUPPER \
	RET

// The integers' forms: int8 (no setup) and nibbles (Q4TABLE from min, in
// Z20 for one row, Z1 for four), each row's weights into the registers
// SLABQ1 and SLABQ4 use.
#define INT8SETUP
#define NIBBLESETUP1 MOVQ min+56(FP), AX; Q4TABLE(Z20)
#define NIBBLESETUP4 MOVQ min+56(FP), AX; Q4TABLE(Z1)
#define INT8ROW1 Q8ROW(Z16, Z17, Z18, Z19, Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15)
#define NIBBLEROW1 Q4ROW(Z16, Z17, Z18, Z19, Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15, Z20)
#define INT8ROW4 Q8ROW(Z20, Z21, Z22, Z23, Z24, Z25, Z26, Z27, Z28, Z29, Z30, Z31)
#define NIBBLEROW4 Q4ROW(Z20, Z21, Z22, Z23, Z24, Z25, Z26, Z27, Z28, Z29, Z30, Z31, Z1)

// func axpySlabAVX2(y *float32, ldyb int, x *float32, ldxb int, w *float32, m, k int)
TEXT ·axpySlabAVX2(SB), NOSPLIT, $0-56
	AXPYSLAB(SLABROW32, 256)

// func axpySlabF16AVX2(y *float32, ldyb int, x *float32, ldxb int, w *uint16, m, k int)
TEXT ·axpySlabF16AVX2(SB), NOSPLIT, $0-56
	AXPYSLAB(SLABROW16, 128)

// func axpySlabQAVX512(y *float32, ldyb int, x *float32, ldxb int, q *int8, s, o *float32, group, groups, m int)
//
// axpyPanelQAVX512 on a whole slab strip for m rows, through groups
// groups of group rows in one call: a call, and a store and load of y,
// per group cost as much as a Q6_K group's 16 rows.
TEXT ·axpySlabQAVX512(SB), NOSPLIT, $0-80
	SLABQ1(INT8SETUP, INT8ROW1, 64, m+72(FP), groups+64(FP), group+56(FP))

// func axpySlabQ4AVX512(y *float32, ldyb int, x *float32, ldxb int, q *byte, s, o *float32, min, group, groups, m int)
//
// axpySlabQAVX512 on nibbles (rows 32 bytes apart).
TEXT ·axpySlabQ4AVX512(SB), NOSPLIT, $0-88
	SLABQ1(NIBBLESETUP1, NIBBLEROW1, 32, m+80(FP), groups+72(FP), group+64(FP))

// func axpySlabQRows4AVX512(y *float32, ldyb int, x *float32, ldxb int, q *int8, s, o *float32, group, groups int)
//
// axpySlabQAVX512 for exactly four rows of y at once.
TEXT ·axpySlabQRows4AVX512(SB), NOSPLIT, $0-72
	SLABQ4(INT8SETUP, INT8ROW4, 64, groups+64(FP), group+56(FP))

// func axpySlabQ4Rows4AVX512(y *float32, ldyb int, x *float32, ldxb int, q *byte, s, o *float32, min, group, groups int)
//
// axpySlabQRows4AVX512 on nibbles (rows 32 bytes apart); Z1 holds the
// nibbles' values.
TEXT ·axpySlabQ4Rows4AVX512(SB), NOSPLIT, $0-80
	SLABQ4(NIBBLESETUP4, NIBBLEROW4, 32, groups+72(FP), group+64(FP))

// func axpySlabQHAVX512(y, x *float32, lo, hi *byte, s, o *float32, buf *int8, hbits, min, group, groups int)
//
// axpySlabQAVX512 for one row of y on packed 5-bit (hbits 1) or 6-bit
// (hbits 2) integers: each group's rows are unpacked into buf (group rows
// of 64 bytes, in L1) just before their FMAs, as unpackRows{1,2}AVX512
// unpacks them, so the stream of packed integers overlaps the arithmetic
// instead of coming before it. The same integers and float operations,
// so the same bits.
TEXT ·axpySlabQHAVX512(SB), NOSPLIT, $0-88
	MOVQ         y+0(FP), DI
	Y1LOAD
	MOVQ         x+8(FP), R11
	MOVQ         lo+16(FP), SI
	MOVQ         hi+24(FP), BX
	MOVQ         s+32(FP), R8
	MOVQ         o+40(FP), R9
	MOVQ         min+64(FP), AX
	VPBROADCASTB AX, Z20
	MOVL         $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z21
	MOVQ         hbits+56(FP), DX
	CMPQ         DX, $2
	JEQ          qhtwo
	MOVL         $0x10101010, AX
	VPBROADCASTD AX, Z22
	VMOVDQU64    unpackShift1<>(SB), Z23
	JMP          qhgroups

qhtwo:
	MOVL         $0x30303030, AX
	VPBROADCASTD AX, Z22
	VMOVDQU64    unpackShift2<>(SB), Z23

qhgroups:
	MOVQ groups+80(FP), R14

qhgroup:
	SLABSCALES(Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15)
	MOVQ buf+48(FP), R10
	MOVQ group+72(FP), CX

qhunpack:
	UNPACKNIBBLES
	CMPQ         DX, $2
	JNE          qhone
	VBROADCASTI32X4 (BX), Z1
	ADDQ         $16, BX
	JMP          qhhigh

qhone:
	VPBROADCASTQ (BX), Z1
	ADDQ         $8, BX

qhhigh:
	UNPACKHIGH(R10)
	ADDQ $32, SI
	ADDQ $64, R10
	DECQ CX
	JNZ  qhunpack

	MOVQ buf+48(FP), R10
	MOVQ group+72(FP), R12

qhk:
	Q8ROW(Z16, Z17, Z18, Z19, Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15)
	FMA1ROW
	ADDQ $64, R10
	ADDQ $4, R11
	DECQ R12
	JNZ  qhk
	NEXTGROUP(qhgroup)

	Y1STORE
	VZEROUPPER
	RET
