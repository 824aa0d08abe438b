// The loop over a row's activation groups that the limb kernels of
// limbs_amd64.s and limbs_avx2_amd64.s share: PRE starts a group, HIGH0
// and HIGH1 load the higher bits before octs 0 and 2 (if any), O0..O3 are
// the macros that add oct 0..3's products (for 8 bits, an "oct" is two
// quads), INITM starts the integer sums at a record's corrections and
// FINM adds a weight group's sums to acc; bytes is a block's size and
// STEP moves the record pointers to the next group's records. With
// half set (BX), the first two octs are one weight group and the last
// two another. Record offsets (limbs.go): corrections 96 and 108, scale
// 120, sums 124 and 128, the int16 limbs 160 and 224; a record is 288 bytes.
#define LIMBGROUPS(group, whole, next, PRE, INITM, FINM, HIGH0, O0, O1, HIGH1, O2, O3, bytes, STEP) \
group: \
	PRE; HIGH0; INITM(96); O0(0); O1(1); HIGH1; \
	TESTQ BX, BX; JZ whole; \
	FINM(124); INITM(108); O2(2); O3(3); FINM(128); JMP next; \
whole: \
	O2(2); O3(3); FINM(124); \
next: \
	ADDQ $bytes, SI; STEP; DECQ CX; JNZ group

#define NOHIGH
#define STEP1 ADDQ $288, DX

// The AVX-512 pieces of limbs_amd64.s and limbs_rows2_amd64.s: Z15 holds
// 0x0f in every byte, Z24 the mask of the higher bits, Z31 16.0.

// PF asks for the cache line 8 KB past a weight load at off(SI), four
// Q8_0 groups ahead: every line of a slab's blocks is loaded, so every
// line is asked for before it is needed. A batch-1 step streamed the
// weights at ~75% of the read bandwidth without it and its limb products
// waited on memory; with it Gemma-3-1B's Q8_0 step is 17-24% faster
// here (notes 41). The bits do not change.
#define PF(off) PREFETCHT0 off+8192(SI)

// QUAD adds the integers w of rows 4i..4i+3 (i = lo/4) times their limbs
// (QUADR: those of the records at rec).
#define QUADR(w, lo, rec, ah, am, al) \
	VPDPBUSD.BCST lo(rec), w, ah; VPDPBUSD.BCST lo+32(rec), w, am; VPDPBUSD.BCST lo+64(rec), w, al
#define QUAD(w, lo, ah, am, al) QUADR(w, lo, DX, ah, am, al)

// NIB loads an oct's strip and splits its nibbles: rows 8o..8o+3 in Z13,
// 8o+4..8o+7 in Z14 (NIBR: in lo and hi).
#define NIBR(off, lo, hi) \
	PF(off); VMOVDQU64 off(SI), Z12; VPANDD Z15, Z12, lo; VPSRLW $4, Z12, hi; VPANDD Z15, hi, hi
#define NIB(off) NIBR(off, Z13, Z14)

// HB puts the higher bits of h, shifted (the word shift moves no bit of
// one byte into the other's masked bits), beside the nibbles in dst.
#define HB(sh, n, h, dst) \
	sh $n, h, Z25; VPTERNLOGD $0xF8, Z24, Z25, dst

// JOIN joins a weight group's sums of strip c and adds them to acc y:
// t = 65536·H + (256·M + L), y = fma(t, s·2^-shift, y); OFFS adds
// y = fma(Σ, o, y). Only the last step multiplies: on Zen 4 multiplies
// and VPDPBUSD share two pipes (a multiply costs a VPDPBUSD there), while
// integer adds, shifts, conversions, float adds and VSCALEFPS run beside
// them, so each rounding step is one of those with limbs.go's bits:
// 256·M + L is exact in int32 (below 2^30) and converted with one
// rounding, as fma(M, 256, L) rounds once; H·2^16 is exact, so adding it
// rounds as fma(H, 65536, ·) does; and s·2^-shift is VSCALEFPS by the
// exponent in scale (SCALE's VGETEXPPS of 2^-shift), rounded as the
// product is (scripts/bench/notes/20-prefill-rest.md).
//
// JOINH is JOIN with the scales as a Q8_0 file stores them, float16 at
// R8 (32 bytes a strip), widened here: the same values, so the same bits.
#define JOINT(ah, am, al) \
	VPSLLD $8, am, am; VPADDD al, am, am; VCVTDQ2PS am, am; \
	VCVTDQ2PS ah, ah; VSCALEFPS Z31, ah, ah; VADDPS am, ah, ah
#define JOINR(c, ah, am, al, y, scale) \
	JOINT(ah, am, al); VMOVUPS c*64(R8), Z27; VSCALEFPS scale, Z27, Z27; VFMADD231PS Z27, ah, y
#define JOIN(c, ah, am, al, y) JOINR(c, ah, am, al, y, Z29)
#define JOINH(c, ah, am, al, y) \
	JOINT(ah, am, al); VCVTPH2PS c*32(R8), Z27; VSCALEFPS Z29, Z27, Z27; VFMADD231PS Z27, ah, y
#define OFFSR(c, y, sum) VFMADD231PS c*64(R9), sum, y
#define OFFS(c, y) OFFSR(c, y, Z28)
