// The loop over a row's activation groups that the limb kernels of
// limbs_amd64.s and limbs_avx2_amd64.s share: PRE starts a group, HIGH0
// and HIGH1 load the higher bits before octs 0 and 2 (if any), O0..O3 are
// the macros that add oct 0..3's products (for 8 bits, an "oct" is two
// quads), INITM starts the integer sums at a record's corrections and
// FINM adds a weight group's sums to acc; bytes is a block's size. With
// half set (BX), the first two octs are one weight group and the last
// two another. Record offsets (limbs.go): corrections 96 and 108, scale
// 120, sums 124 and 128; a record is 160 bytes.
#define LIMBGROUPS(group, whole, next, PRE, INITM, FINM, HIGH0, O0, O1, HIGH1, O2, O3, bytes) \
group: \
	PRE; HIGH0; INITM(96); O0(0); O1(1); HIGH1; \
	TESTQ BX, BX; JZ whole; \
	FINM(124); INITM(108); O2(2); O3(3); FINM(128); JMP next; \
whole: \
	O2(2); O3(3); FINM(124); \
next: \
	ADDQ $bytes, SI; ADDQ $160, DX; DECQ CX; JNZ group

#define NOHIGH
