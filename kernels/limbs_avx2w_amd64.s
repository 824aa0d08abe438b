//go:build amd64 && !purego

#include "textflag.h"

// The AVX2 kernel for 8-bit integers, in words: VPMADDUBSW's int16 pair
// sums overflow for integers of 8 bits, so the byte kernels split them
// into two nibbles and multiply each limb twice; here the integers are
// widened to int16 (VPMOVZXBW) and multiplied by the records' int16 limbs
// (limbs.go) with VPMADDWD, whose pair sums are int32: two products a
// weight instead of six (h, and the low part p = 256·m + l offset by 128
// into int16), plus Σu, which the offset needs (Σ u·(p − 128) = Σ u·p −
// 128·Σu), from one VPMADDUBSW by ones. The sums are the byte kernels':
// H exactly, and 256·M + L as one exact integer, which VCVTDQ2PS rounds
// once as their fma(M, 256, L) does, so every bit is theirs. It takes
//
//	func(y *float32, q *byte, rec *byte, s, o *float32, acc *float32, groups, half int)
//
// acc 64 floats of scratch (the float32 sums). A group's block (2048
// bytes) is read in eight passes of 8 columns (32 bytes of each quad's
// 256) while it is in L1, so memory is streamed in address order. Per
// pass: Y0, Y1 the H sums of columns 0-3 and 4-7 (each column's in two
// neighbouring lanes: rows 0-1 and 2-3 of each quad), Y2, Y3 the low
// parts', Y4 Σu (int16 pair sums, a lane a column), Y5 and Y6 a quad's
// h and p broadcast, Y7 and Y8 its integers widened, Y9 its bytes, Y10 a
// product, Y15 ones (bytes). SI is the group's block, DX its record, R8
// (R9) its scale (offset) rows, CX the groups left; R10 is the pass's byte
// offset (8 columns are 32 bytes of a quad and of a row of floats alike),
// R11-R14 SI, R8, R9 and acc at it, R15 the passes left.

// QUADW adds quad j's products (rows 4j..4j+3).
#define QUADW(j) \
	VPBROADCASTQ 160+8*(j)(DX), Y5; VPBROADCASTQ 224+8*(j)(DX), Y6; \
	VPMOVZXBW (j)*256(R11), Y7; VPMOVZXBW (j)*256+16(R11), Y8; VMOVDQU (j)*256(R11), Y9; \
	VPMADDWD Y5, Y7, Y10; VPADDD Y10, Y0, Y0; VPMADDWD Y5, Y8, Y10; VPADDD Y10, Y1, Y1; \
	VPMADDWD Y6, Y7, Y10; VPADDD Y10, Y2, Y2; VPMADDWD Y6, Y8, Y10; VPADDD Y10, Y3, Y3; \
	VPMADDUBSW Y15, Y9, Y10; VPADDW Y10, Y4, Y4
#define QUADS4W(j) QUADW(j); QUADW(j+1); QUADW(j+2); QUADW(j+3)

// PAIRS adds each column's two lanes of a (columns 0-3) and b (4-7) into
// a, in column order.
#define PAIRS(a, b) VPHADDD b, a, a; VPERMQ $0xD8, a, a

// FINW ends a weight group: H and the low part's sum joined as the byte
// kernels join theirs, with the corrections at corr in the record (min·Σh,
// and 256·min·Σm + min·Σl for the low part), acc = fma(t, s·2^-shift, acc)
// and, with offsets, acc = fma(Σ, o, acc) (the sum at sum in the record);
// wg is the weight group's offset in the scale and offset rows. SCALE
// multiplies Y10 by the weight group's scales: SCALEF's float32 row, or
// SCALEH's float16 scales as a Q8_0 file stores them, widened here (the
// same values, so the same bits: limbsQ8HAVX2).
#define SCALEF(wg) VMULPS wg(R12), Y10, Y10
#define SCALEH(wg) VCVTPH2PS wg/2(R12), Y7; VMULPS Y7, Y10, Y10
#define FINW(corr, sum, wg) FINWS(corr, sum, wg, SCALEF)
#define FINWH(corr, sum, wg) FINWS(corr, sum, wg, SCALEH)
#define FINWS(corr, sum, wg, SCALE) \
	PAIRS(Y0, Y1); VPBROADCASTD corr(DX), Y10; VPADDD Y10, Y0, Y0; \
	PAIRS(Y2, Y3); VPMADDWD ·limbWordOnes(SB), Y4, Y4; VPSLLD $7, Y4, Y4; VPSUBD Y4, Y2, Y2; \
	MOVL corr+4(DX), AX; SHLL $8, AX; ADDL corr+8(DX), AX; VMOVQ AX, X10; VPBROADCASTD X10, Y10; VPADDD Y10, Y2, Y2; \
	VCVTDQ2PS Y2, Y2; VCVTDQ2PS Y0, Y0; \
	VBROADCASTSS ·limbC65536(SB), Y10; VFMADD213PS Y2, Y10, Y0; \
	VBROADCASTSS 120(DX), Y10; SCALE(wg); \
	VMOVUPS (R14), Y7; VFMADD231PS Y10, Y0, Y7; \
	TESTQ R9, R9; JZ 3(PC); \
	VBROADCASTSS sum(DX), Y10; VFMADD231PS wg(R13), Y10, Y7; \
	VMOVUPS Y7, (R14); \
	VPXOR Y0, Y0, Y0; VPXOR Y1, Y1, Y1; VPXOR Y2, Y2, Y2; VPXOR Y3, Y3, Y3; VPXOR Y4, Y4, Y4

// PFGROUP asks for the block 4 groups on (8 KB, its 32 lines), as the
// AVX-512 kernels ask line by line (limbs_amd64.h's PF; notes 42).
#define PF8(off) \
	PREFETCHT0 off+8192(SI); PREFETCHT0 off+8256(SI); PREFETCHT0 off+8320(SI); PREFETCHT0 off+8384(SI); \
	PREFETCHT0 off+8448(SI); PREFETCHT0 off+8512(SI); PREFETCHT0 off+8576(SI); PREFETCHT0 off+8640(SI)
#define PFGROUP PF8(0); PF8(512); PF8(1024); PF8(1536)

// GROUPSW is the loop over the activation groups, each group's block in
// eight passes of 8 columns (with half set the first four quads are one
// weight group and the last four another): QUADS adds four quads, FIN
// ends a weight group, AT sets the pass's other pointers, STEP moves the
// records to the next group's, sbytes is a weight group's bytes of scales
// (256 floats, or 128 for float16: then there are no offsets).
#define GROUPSW(QUADS, FIN, AT, STEP, sbytes) \
group: \
	PFGROUP; XORQ R10, R10; MOVQ $8, R15; \
pass: \
	LEAQ (SI)(R10*1), R11; LEAQ (R8)(R10*1), R12; LEAQ (R9)(R10*1), R13; AT; \
	QUADS(0); \
	TESTQ BX, BX; JZ whole; \
	FIN(96, 124, 0); QUADS(4); FIN(108, 128, 256); \
	JMP next; \
whole: \
	QUADS(4); FIN(96, 124, 0); \
next: \
	ADDQ $32, R10; DECQ R15; JNZ pass; \
	ADDQ $2048, SI; STEP; \
	MOVQ $sbytes, AX; TESTQ BX, BX; JZ 2(PC); ADDQ AX, AX; \
	ADDQ AX, R8; TESTQ R9, R9; JZ 2(PC); ADDQ AX, R9; \
	DECQ CX; JNZ group

#define ACCAT1 LEAQ (DI)(R10*1), R14
#define ACCAT1H ACCAT1; MOVQ R10, AX; SHRQ $1, AX; LEAQ (R8)(AX*1), R12
#define ACCAT2
#define STEPW1 ADDQ $288, DX
#define STEPW2 ADDQ $288, DX; ADDQ $288, R14
#define ADDACCW(off) VMOVUPS off(DI), Y7; VADDPS off(AX), Y7, Y7; VMOVUPS Y7, off(AX)

// func limbsQ8AVX2(y *float32, q *byte, rec *byte, s, o *float32, acc *float32, groups, half int)
TEXT ·limbsQ8AVX2(SB), NOSPLIT, $0-64
	MOVL $0x01010101, AX; VMOVQ AX, X15; VPBROADCASTD X15, Y15
	MOVQ q+8(FP), SI; MOVQ rec+16(FP), DX; MOVQ s+24(FP), R8; MOVQ o+32(FP), R9
	MOVQ acc+40(FP), DI; MOVQ groups+48(FP), CX; MOVQ half+56(FP), BX
	VPXOR Y0, Y0, Y0; VPXOR Y1, Y1, Y1; VPXOR Y2, Y2, Y2; VPXOR Y3, Y3, Y3; VPXOR Y4, Y4, Y4
	VMOVUPS Y0, (DI); VMOVUPS Y0, 32(DI); VMOVUPS Y0, 64(DI); VMOVUPS Y0, 96(DI)
	VMOVUPS Y0, 128(DI); VMOVUPS Y0, 160(DI); VMOVUPS Y0, 192(DI); VMOVUPS Y0, 224(DI)

	GROUPSW(QUADS4W, FINW, ACCAT1, STEPW1, 256)

	MOVQ y+0(FP), AX
	ADDACCW(0); ADDACCW(32); ADDACCW(64); ADDACCW(96); ADDACCW(128); ADDACCW(160); ADDACCW(192); ADDACCW(224)
	VZEROUPPER
	RET

// func limbsQ8HAVX2(y *float32, q *byte, rec *byte, s *uint16, o *float32, acc *float32, groups, half int)
//
// limbsQ8AVX2 reading the scales as stored (float16, o nil): a row alone
// on a Q8_0 slab, whose formed scale row (formScales) was a pass of its
// own before the product (notes 43's JOINH, notes 46).
TEXT ·limbsQ8HAVX2(SB), NOSPLIT, $0-64
	MOVL $0x01010101, AX; VMOVQ AX, X15; VPBROADCASTD X15, Y15
	MOVQ q+8(FP), SI; MOVQ rec+16(FP), DX; MOVQ s+24(FP), R8; XORQ R9, R9
	MOVQ acc+40(FP), DI; MOVQ groups+48(FP), CX; MOVQ half+56(FP), BX
	VPXOR Y0, Y0, Y0; VPXOR Y1, Y1, Y1; VPXOR Y2, Y2, Y2; VPXOR Y3, Y3, Y3; VPXOR Y4, Y4, Y4
	VMOVUPS Y0, (DI); VMOVUPS Y0, 32(DI); VMOVUPS Y0, 64(DI); VMOVUPS Y0, 96(DI)
	VMOVUPS Y0, 128(DI); VMOVUPS Y0, 160(DI); VMOVUPS Y0, 192(DI); VMOVUPS Y0, 224(DI)

	GROUPSW(QUADS4W, FINWH, ACCAT1H, STEPW1, 128)

	MOVQ y+0(FP), AX
	ADDACCW(0); ADDACCW(32); ADDACCW(64); ADDACCW(96); ADDACCW(128); ADDACCW(160); ADDACCW(192); ADDACCW(224)
	VZEROUPPER
	RET

// Two rows at once (prefill, batched decode): limbsQ8R2AVX2 is the kernel
// above on rows x0 and x1, each quad's integers widened and summed (Σu)
// once for both; every row's operations are the one-row kernel's, in its
// order, so its bits are too. It takes
//
//	func(y0, y1 *float32, q *byte, rec0, rec1 *byte, s, o *float32, acc *float32, groups, half int)
//
// acc 128 floats of scratch (row 0's 64, then row 1's). Per pass: Y0-Y3
// row 0's H and low-part sums (as Y0-Y3 above), Y4-Y7 row 1's, Y8 Σu,
// Y9 and Y10 the quad's integers widened, Y11 its bytes and then a
// product, Y12 and Y13 a row's h and p broadcast, Y14 a product, Y15
// ones (bytes). DX and R14 are the rows' records; acc is (DI)(R10*1) and
// 256(DI)(R10*1).

// ROWW adds a quad's products for the row whose records are at rec to
// its sums h0, h1, a0, a1.
#define ROWW(j, rec, h0, h1, a0, a1) \
	VPBROADCASTQ 160+8*(j)(rec), Y12; VPBROADCASTQ 224+8*(j)(rec), Y13; \
	VPMADDWD Y12, Y9, Y11; VPADDD Y11, h0, h0; VPMADDWD Y12, Y10, Y14; VPADDD Y14, h1, h1; \
	VPMADDWD Y13, Y9, Y11; VPADDD Y11, a0, a0; VPMADDWD Y13, Y10, Y14; VPADDD Y14, a1, a1
#define QUADW2(j) \
	VPMOVZXBW (j)*256(R11), Y9; VPMOVZXBW (j)*256+16(R11), Y10; VMOVDQU (j)*256(R11), Y11; \
	VPMADDUBSW Y15, Y11, Y11; VPADDW Y11, Y8, Y8; \
	ROWW(j, DX, Y0, Y1, Y2, Y3); ROWW(j, R14, Y4, Y5, Y6, Y7)
#define QUADS4W2(j) QUADW2(j); QUADW2(j+1); QUADW2(j+2); QUADW2(j+3)

// FINROW is FINW for one row: its records at rec, its sums h0, h1, a0,
// a1, its acc at accoff(DI)(R10*1), 128·Σu in Y8.
#define FINROW(rec, h0, h1, a0, a1, accoff, corr, sum, wg) \
	PAIRS(h0, h1); VPBROADCASTD corr(rec), Y12; VPADDD Y12, h0, h0; \
	PAIRS(a0, a1); VPSUBD Y8, a0, a0; \
	MOVL corr+4(rec), AX; SHLL $8, AX; ADDL corr+8(rec), AX; VMOVQ AX, X12; VPBROADCASTD X12, Y12; VPADDD Y12, a0, a0; \
	VCVTDQ2PS a0, a0; VCVTDQ2PS h0, h0; \
	VBROADCASTSS ·limbC65536(SB), Y12; VFMADD213PS a0, Y12, h0; \
	VBROADCASTSS 120(rec), Y12; VMULPS wg(R12), Y12, Y12; \
	VMOVUPS accoff(DI)(R10*1), Y13; VFMADD231PS Y12, h0, Y13; \
	TESTQ R9, R9; JZ 3(PC); \
	VBROADCASTSS sum(rec), Y12; VFMADD231PS wg(R13), Y12, Y13; \
	VMOVUPS Y13, accoff(DI)(R10*1); \
	VPXOR h0, h0, h0; VPXOR h1, h1, h1; VPXOR a0, a0, a0; VPXOR a1, a1, a1

#define FINW2(corr, sum, wg) \
	VPMADDWD ·limbWordOnes(SB), Y8, Y8; VPSLLD $7, Y8, Y8; \
	FINROW(DX, Y0, Y1, Y2, Y3, 0, corr, sum, wg); FINROW(R14, Y4, Y5, Y6, Y7, 256, corr, sum, wg); \
	VPXOR Y8, Y8, Y8

// func limbsQ8R2AVX2(y0, y1 *float32, q *byte, rec0, rec1 *byte, s, o *float32, acc *float32, groups, half int)
TEXT ·limbsQ8R2AVX2(SB), NOSPLIT, $0-80
	MOVL $0x01010101, AX; VMOVQ AX, X15; VPBROADCASTD X15, Y15
	MOVQ q+16(FP), SI; MOVQ rec0+24(FP), DX; MOVQ rec1+32(FP), R14; MOVQ s+40(FP), R8; MOVQ o+48(FP), R9
	MOVQ acc+56(FP), DI; MOVQ groups+64(FP), CX; MOVQ half+72(FP), BX
	VPXOR Y0, Y0, Y0; VPXOR Y1, Y1, Y1; VPXOR Y2, Y2, Y2; VPXOR Y3, Y3, Y3
	VPXOR Y4, Y4, Y4; VPXOR Y5, Y5, Y5; VPXOR Y6, Y6, Y6; VPXOR Y7, Y7, Y7; VPXOR Y8, Y8, Y8
	XORQ R10, R10

zero:
	VMOVUPS Y0, (DI)(R10*1); ADDQ $32, R10; CMPQ R10, $512; JNE zero

	GROUPSW(QUADS4W2, FINW2, ACCAT2, STEPW2, 256)

	// y0 += acc[0:64], y1 += acc[64:128].
	MOVQ y0+0(FP), AX
	ADDACCW(0); ADDACCW(32); ADDACCW(64); ADDACCW(96); ADDACCW(128); ADDACCW(160); ADDACCW(192); ADDACCW(224)
	MOVQ y1+8(FP), AX; SUBQ $256, AX
	ADDACCW(256); ADDACCW(288); ADDACCW(320); ADDACCW(352); ADDACCW(384); ADDACCW(416); ADDACCW(448); ADDACCW(480)
	VZEROUPPER
	RET
