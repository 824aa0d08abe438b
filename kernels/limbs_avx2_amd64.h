// The AVX2 kernels: the same products for CPUs without AVX-512 VNNI, one
// 16-column strip at a time (two 8-lane halves), VPMADDUBSW in place of
// VPDPBUSD: the byte products' pair sums fit int16 exactly for integers
// below 64 (2·63·128 < 2^15); 8-bit integers, which do not, are
// limbs_avx2w_amd64.s's, in words. The pair sums are added in int16
// (VPADDW) as long as no sum can leave it, then widened by VPMADDWD (by
// ones) into int32: a limb's pair sum is at most 2·u·128 in magnitude for
// integers u below 2^bits (2·u·64 for h, in −64..64), so the 4-bit
// kernel widens once a weight group (8 quads: 30720 < 2^15) and the 5-bit
// one widens m's and l's halfway (4 quads: 31744) into acc; one multiply a
// limb and quad where there were two, the same integers (notes 46). The
// 6-bit kernel widens every quad's: every 2 quads into acc measured level.
// Each takes
//
//	func(y *float32, q *byte, rec *byte, s, o *float32, acc *float32, groups, half int)
//
// acc 64 floats of scratch: the strip's 16 float sums, then the 5-bit
// kernel's int32 halves of m and l (64-191 bytes in). Y0-Y5 hold
// the limb sums (half 0's high, middle, low in Y0-Y2, half 1's in Y3-Y5),
// Y6-Y8 a quad's three limbs broadcast, Y9 and Y10 its integers, Y11 a
// product, Y12 ones (int16), Y13 0x0f in every byte, Y14 and Y15 a loaded
// oct. R15 counts the strips, R10 is the strip's byte offset (16 columns:
// 64 bytes of a vector and of a row of floats alike).

#define ARGS2 \
	MOVL $0x00010001, AX; VMOVQ AX, X12; VPBROADCASTD X12, Y12; \
	MOVL $0x0f0f0f0f, AX; VMOVQ AX, X13; VPBROADCASTD X13, Y13; \
	MOVQ half+56(FP), BX; XORQ R10, R10; MOVQ $4, R15

// STRIP2 sets up strip R10's pass: SI at its integers, DX at the records,
// R8 (R9) at its scales (offsets), CX the groups, acc zeroed. SOFF puts
// R8 at the strip: SOFFF in a float32 scale row, SOFFH in float16 scales
// as a Q4_0 or Q5_0 file stores them (the H kernels, which take no
// offsets: a row alone on such a slab reads them there, as limbsQ8HAVX2
// does, instead of a formed row).
#define SOFFF ADDQ R10, R8
#define SOFFH MOVQ R10, AX; SHRQ $1, AX; ADDQ AX, R8
#define STRIP2(SOFF) \
	MOVQ q+8(FP), SI; ADDQ R10, SI; MOVQ rec+16(FP), DX; \
	MOVQ s+24(FP), R8; SOFF; MOVQ o+32(FP), R9; TESTQ R9, R9; JZ 2(PC); ADDQ R10, R9; \
	MOVQ groups+48(FP), CX; MOVQ acc+40(FP), DI; \
	VPXOR Y6, Y6, Y6; VMOVUPS Y6, (DI); VMOVUPS Y6, 32(DI)

// INIT2 starts the 4-bit kernel's six int16 sums at zero (FIN2 adds the
// corrections at off in the record once they are widened); INIT2W starts
// the other kernels' int32 sums at the corrections.
#define INIT2(off) \
	VPXOR Y0, Y0, Y0; VPXOR Y1, Y1, Y1; VPXOR Y2, Y2, Y2; \
	VPXOR Y3, Y3, Y3; VPXOR Y4, Y4, Y4; VPXOR Y5, Y5, Y5
#define INIT5(off) \
	INIT2(off); VMOVDQU Y0, 64(DI); VMOVDQU Y0, 96(DI); VMOVDQU Y0, 128(DI); VMOVDQU Y0, 160(DI)
// MID5: the 5-bit kernel's sums of m and l, after 4 quads (4·2·31·128 =
// 31744), widened into acc, which FIN5 adds (INIT5 zeroes it for a
// weight group of 16, which has no MID5). h's, at most 2·31·64 a pair,
// take the whole group.
#define HALF2(a, at) VPMADDWD Y12, a, Y11; VMOVDQU Y11, at(DI); VPXOR a, a, a
#define MID5 HALF2(Y1, 64); HALF2(Y2, 96); HALF2(Y4, 128); HALF2(Y5, 160)
#define INIT2W(off) \
	VPBROADCASTD off(DX), Y0; VPBROADCASTD off+4(DX), Y1; VPBROADCASTD off+8(DX), Y2; \
	VMOVDQU Y0, Y3; VMOVDQU Y1, Y4; VMOVDQU Y2, Y5

// LIMBS2 broadcasts the limbs of rows 4i..4i+3 (lo = 4i).
#define LIMBS2(lo) VPBROADCASTD lo(DX), Y6; VPBROADCASTD lo+32(DX), Y7; VPBROADCASTD lo+64(DX), Y8

// DOT2 adds u·limb's pair sums for the integers in Y9 (half 0) and Y10
// (half 1) to the int16 sums, DOT2W widened (by ones) to the int32 ones.
#define DOT1(u, l, a) VPMADDUBSW l, u, Y11; VPADDW Y11, a, a
#define DOT2 \
	DOT1(Y9, Y6, Y0); DOT1(Y9, Y7, Y1); DOT1(Y9, Y8, Y2); \
	DOT1(Y10, Y6, Y3); DOT1(Y10, Y7, Y4); DOT1(Y10, Y8, Y5)
#define DOT1W(u, l, a) VPMADDUBSW l, u, Y11; VPMADDWD Y12, Y11, Y11; VPADDD Y11, a, a
#define DOT2W \
	DOT1W(Y9, Y6, Y0); DOT1W(Y9, Y7, Y1); DOT1W(Y9, Y8, Y2); \
	DOT1W(Y10, Y6, Y3); DOT1W(Y10, Y7, Y4); DOT1W(Y10, Y8, Y5)

// LO2, HI2: the low and high nibbles of the oct in Y14, Y15.
#define LO2 VPAND Y13, Y14, Y9; VPAND Y13, Y15, Y10
#define HI2 VPSRLW $4, Y14, Y9; VPAND Y13, Y9, Y9; VPSRLW $4, Y15, Y10; VPAND Y13, Y10, Y10

// OCTLOAD2 loads the strip's oct at off, asking for the line 8 KB on
// (PF, limbs_amd64.h) as the AVX-512 kernels do (notes 42).
#define OCTLOAD2(off) PF(off); VMOVDQU off(SI), Y14; VMOVDQU off+32(SI), Y15

// HB2 puts the higher bits of the plane at off (both halves), shifted and
// masked by hmask, beside the nibbles in Y9 and Y10.
#define HB2(off, sh, n, hmask) \
	PF(off); VMOVDQU off(SI), Y11; sh $n, Y11, Y11; VPAND hmask, Y11, Y11; VPOR Y11, Y9, Y9; \
	VMOVDQU off+32(SI), Y11; sh $n, Y11, Y11; VPAND hmask, Y11, Y11; VPOR Y11, Y10, Y10

// An oct's integers are unpacked into Y9 and Y10 a quad at a time, and
// USE(lo, at) takes each quad: lo is its limbs' offset in the records,
// at its offset in an unpacked group (U8, below). USE16 and USEW add its
// products (DOT2, DOT2W); STQ stores it unpacked.
#define USE16(lo, at) LIMBS2(lo); DOT2
#define USEW(lo, at) LIMBS2(lo); DOT2W
#define OCT4AVX2(o) OCTLOAD2(o*256); LO2; LIMBS2(8*o); DOT2; HI2; LIMBS2(8*o+4); DOT2
#define OCTHAVX2(o, at, plane, hmask, sa, na, sb, nb, USE) \
	OCTLOAD2(at); LO2; HB2(plane, sa, na, hmask); USE(8*o, 512*o); \
	HI2; HB2(plane, sb, nb, hmask); USE(8*o+4, 512*o+256)
#define OCT5(o, USE) OCTHAVX2(o, 256+o*256, 0, ·limbBit4(SB), VPSLLW, 4-2*o, VPSLLW, 3-2*o, USE)
#define OCT5R(o, USE) OCTHAVX2(o, 256+o*256, 0, ·limbBit4(SB), VPSRLW, 2*o-4, VPSRLW, 2*o-3, USE)
#define OCT6A(o, USE) OCTHAVX2(o, o*384+256, o*384, ·limbBits45(SB), VPSLLW, 4, VPSLLW, 2, USE)
#define OCT6B(o, USE) OCTHAVX2(o, o*384+128, o*384-384, ·limbBits45(SB), VPSLLW, 0, VPSRLW, 2, USE)
#define OCT5AVX2(o) OCT5(o, USE16)
#define OCT5RAVX2(o) OCT5R(o, USE16)
#define OCT6AAVX2(o) OCT6A(o, USEW)
#define OCT6BAVX2(o) OCT6B(o, USEW)

// U8: a slab's 5- or 6-bit integers unpacked once into bytes for all its
// rows (AVX2, three rows or more: limbCols, unpackedBytes), so each row's pass
// skips the nibble and higher-bit work, two fifths of the 6-bit kernel's
// instructions. An unpacked group is 8 quads of 256 bytes, each a strip
// after another (64 bytes: columns 0-7 of its four rows, then 8-15), as a
// Q8_0 block is laid out; the same integers, so the same bits.
#define STQ(lo, at) VMOVDQU Y9, at(R12); VMOVDQU Y10, at+32(R12)
#define OCTU(o, DOT) \
	VMOVDQU 512*o(SI), Y9; VMOVDQU 512*o+32(SI), Y10; LIMBS2(8*o); DOT; \
	VMOVDQU 512*o+256(SI), Y9; VMOVDQU 512*o+288(SI), Y10; LIMBS2(8*o+4); DOT
#define OCTU5(o) OCTU(o, DOT2)
#define OCTU6(o) OCTU(o, DOT2W)
#define OCT4X(o) OCTLOAD2(o*256); LO2; STQ(8*o, 512*o); HI2; STQ(8*o+4, 512*o+256)
#define OCT5X(o) OCT5(o, STQ)
#define OCT5RX(o) OCT5R(o, STQ)
#define OCT6AX(o) OCT6A(o, STQ)
#define OCT6BX(o) OCT6B(o, STQ)

// UNPACK writes the unpacked groups of q (bytes a group) at dst, strip by
// strip.
#define UNPACK(strip, group, O0, O1, O2, O3, bytes) \
	MOVL $0x0f0f0f0f, AX; VMOVQ AX, X13; VPBROADCASTD X13, Y13; XORQ R10, R10; \
strip: \
	MOVQ q+8(FP), SI; ADDQ R10, SI; MOVQ dst+0(FP), R12; ADDQ R10, R12; MOVQ groups+16(FP), CX; \
group: \
	O0(0); O1(1); O2(2); O3(3); \
	ADDQ $bytes, SI; ADDQ $2048, R12; DECQ CX; JNZ group; \
	ADDQ $64, R10; CMPQ R10, $256; JNE strip; \
	VZEROUPPER; RET

// FIN2W joins a weight group's sums (half h in Y(3h)..Y(3h+2)) and adds
// them to acc, as FIN; SC multiplies Y11 by half h's scales (SCF from a
// float32 row, SCH widening float16 ones: the same values, so the same
// bits) and sstep is a weight group's bytes of scales.
#define SCF(h) VMULPS h*32(R8), Y11, Y11
#define SCH(h) VCVTPH2PS h*16(R8), Y6; VMULPS Y6, Y11, Y11
#define JOIN2(h, ah, am, al, SC) \
	VCVTDQ2PS al, al; VCVTDQ2PS am, am; VCVTDQ2PS ah, ah; \
	VBROADCASTSS ·limbC256(SB), Y11; VFMADD213PS al, Y11, am; \
	VBROADCASTSS ·limbC65536(SB), Y11; VFMADD213PS am, Y11, ah; \
	VBROADCASTSS 120(DX), Y11; SC(h); \
	VMOVUPS h*32(DI), Y6; VFMADD231PS Y11, ah, Y6; VMOVUPS Y6, h*32(DI)
#define OFFS2(h) VMOVUPS h*32(DI), Y6; VFMADD231PS h*32(R9), Y11, Y6; VMOVUPS Y6, h*32(DI)
#define FIN2WS(off, SC, sstep) \
	JOIN2(0, Y0, Y1, Y2, SC); JOIN2(1, Y3, Y4, Y5, SC); \
	ADDQ $sstep, R8; TESTQ R9, R9; JZ 9(PC); \
	VBROADCASTSS off(DX), Y11; OFFS2(0); OFFS2(1); ADDQ $256, R9
#define FIN2W(off) FIN2WS(off, SCF, 256)
// FIN2 widens the int16 sums and adds the corrections (at 96 for the sums
// at 124, at 108 for those at 128: 3·off − 276) first; FIN5 also adds
// the 5-bit kernel's first half of m and l (MID5).
#define CORR2(c, a, b) VPBROADCASTD c(DX), Y11; VPADDD Y11, a, a; VPADDD Y11, b, b
#define WIDE2(off) \
	VPMADDWD Y12, Y0, Y0; VPMADDWD Y12, Y1, Y1; VPMADDWD Y12, Y2, Y2; \
	VPMADDWD Y12, Y3, Y3; VPMADDWD Y12, Y4, Y4; VPMADDWD Y12, Y5, Y5; \
	CORR2(3*off-276, Y0, Y3); CORR2(3*off-272, Y1, Y4); CORR2(3*off-268, Y2, Y5)
#define FIN2(off) WIDE2(off); FIN2W(off)
#define FIN2H(off) WIDE2(off); FIN2WS(off, SCH, 128)
#define ADD5 VPADDD 64(DI), Y1, Y1; VPADDD 96(DI), Y2, Y2; VPADDD 128(DI), Y4, Y4; VPADDD 160(DI), Y5, Y5
#define FIN5(off) WIDE2(off); ADD5; FIN2W(off)
#define FIN5H(off) WIDE2(off); ADD5; FIN2WS(off, SCH, 128)

// GROUPS2 is GROUPS for one strip, then (STRIPEND) the strip's acc added
// to y and the next strip.
#define STRIPEND(strip) \
	MOVQ y+0(FP), AX; ADDQ R10, AX; \
	VMOVUPS (DI), Y6; VADDPS (AX), Y6, Y6; VMOVUPS Y6, (AX); \
	VMOVUPS 32(DI), Y6; VADDPS 32(AX), Y6, Y6; VMOVUPS Y6, 32(AX); \
	ADDQ $64, R10; DECQ R15; JNZ strip; \
	VZEROUPPER; RET

#define GROUPS2(strip, group, whole, next, SOFF, INITM, FINM, O0, O1, MID, O2, O3, bytes) \
strip: \
	STRIP2(SOFF); \
	LIMBGROUPS(group, whole, next, NOHIGH, INITM, FINM, NOHIGH, O0, O1, MID, O2, O3, bytes, STEP1); \
	STRIPEND(strip)

// The factor kernels: a row alone on a k-quant's slab (Q4_K, Q5_K, Q6_K)
// forms each weight group's scales and offsets from the stored factors as
// it joins the group (the int8 group factors at R8 and R9, a row of 64 a
// weight group, times the float16 block factors at R11 and R13, a row of
// 64 a block of per weight groups, R14 counting them down), as the
// AVX-512 ones do (notes 45): each is the product formScales rounds once
// (exact: 8 bits times 11), so the bits are the same, without a scale
// row written and read back (scaleRowsAVX2, 8.6% of a Qwen3-30B-A3B
// Q4_K_M batch-1 step under LLORCH_KERNELS=avx2). Each takes
//
//	func(y *float32, q *byte, rec *byte, a, b *int8, d, dm *uint16, acc *float32, groups, half, per int)
#define ARGSF2 \
	MOVL $0x00010001, AX; VMOVQ AX, X12; VPBROADCASTD X12, Y12; \
	MOVL $0x0f0f0f0f, AX; VMOVQ AX, X13; VPBROADCASTD X13, Y13; \
	MOVQ half+72(FP), BX; XORQ R10, R10; MOVQ $4, R15

// STRIPF2 is STRIP2 for them: a strip is 16 bytes of a factor row and 32
// of a block factor row.
#define STRIPF2 \
	MOVQ q+8(FP), SI; ADDQ R10, SI; MOVQ rec+16(FP), DX; \
	MOVQ R10, AX; SHRQ $2, AX; MOVQ a+24(FP), R8; ADDQ AX, R8; \
	MOVQ b+32(FP), R9; TESTQ R9, R9; JZ 2(PC); ADDQ AX, R9; \
	SHLQ $1, AX; MOVQ d+40(FP), R11; ADDQ AX, R11; MOVQ dm+48(FP), R13; ADDQ AX, R13; \
	MOVQ per+80(FP), R14; MOVQ groups+64(FP), CX; MOVQ acc+56(FP), DI; \
	VPXOR Y6, Y6, Y6; VMOVUPS Y6, (DI); VMOVUPS Y6, 32(DI)

// FACT2 forms half h's 8 factors (int8 at ra times float16 at rd) in Y9.
#define FACT2(h, ra, rd) VPMOVSXBD h*8(ra), Y9; VCVTDQ2PS Y9, Y9; VCVTPH2PS h*16(rd), Y10; VMULPS Y10, Y9, Y9
#define SCA(h) FACT2(h, R8, R11); VMULPS Y9, Y11, Y11
#define OFFSA(h) FACT2(h, R9, R13); VMOVUPS h*32(DI), Y6; VFMADD231PS Y9, Y11, Y6; VMOVUPS Y6, h*32(DI)
// FINWF is FIN2W with the factors formed here: the offsets' block is 16
// instructions, the block factors' move 3.
#define FINWF(off) \
	JOIN2(0, Y0, Y1, Y2, SCA); JOIN2(1, Y3, Y4, Y5, SCA); \
	TESTQ R9, R9; JZ 17(PC); \
	VBROADCASTSS off(DX), Y11; OFFSA(0); OFFSA(1); ADDQ $64, R9; \
	ADDQ $64, R8; DECQ R14; JNZ 4(PC); MOVQ per+80(FP), R14; ADDQ $128, R11; ADDQ $128, R13
#define FIN4F(off) WIDE2(off); FINWF(off)
#define FIN5F(off) WIDE2(off); ADD5; FINWF(off)

#define GROUPSF2(strip, group, whole, next, INITM, FINM, O0, O1, MID, O2, O3, bytes) \
strip: \
	STRIPF2; \
	LIMBGROUPS(group, whole, next, NOHIGH, INITM, FINM, NOHIGH, O0, O1, MID, O2, O3, bytes, STEP1); \
	STRIPEND(strip)

