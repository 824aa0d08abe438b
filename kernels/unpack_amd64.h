// The unpacking of 5- and 6-bit integers that quant_amd64.s and
// slabs_amd64.s share: word shift counts (file-local data, one copy in
// each) and the macros that use them.

// Word shift counts that bring a slab row's high bits to the bottom of
// each byte: with 2 bits, 128-bit lane L (columns 16L..16L+15) shifts by
// 2L; with 1 bit, 64-bit lane L (columns 8L..8L+7) by L.
DATA unpackShift2<>+0(SB)/8, $0x0000000000000000
DATA unpackShift2<>+8(SB)/8, $0x0000000000000000
DATA unpackShift2<>+16(SB)/8, $0x0002000200020002
DATA unpackShift2<>+24(SB)/8, $0x0002000200020002
DATA unpackShift2<>+32(SB)/8, $0x0004000400040004
DATA unpackShift2<>+40(SB)/8, $0x0004000400040004
DATA unpackShift2<>+48(SB)/8, $0x0006000600060006
DATA unpackShift2<>+56(SB)/8, $0x0006000600060006
GLOBL unpackShift2<>(SB), RODATA|NOPTR, $64

DATA unpackShift1<>+0(SB)/8, $0x0000000000000000
DATA unpackShift1<>+8(SB)/8, $0x0001000100010001
DATA unpackShift1<>+16(SB)/8, $0x0002000200020002
DATA unpackShift1<>+24(SB)/8, $0x0003000300030003
DATA unpackShift1<>+32(SB)/8, $0x0004000400040004
DATA unpackShift1<>+40(SB)/8, $0x0005000500050005
DATA unpackShift1<>+48(SB)/8, $0x0006000600060006
DATA unpackShift1<>+56(SB)/8, $0x0007000700070007
GLOBL unpackShift1<>(SB), RODATA|NOPTR, $64

// UNPACKNIBBLES forms row SI's 64 low nibbles in Z0, in column order:
// the 32 bytes' low nibbles (columns 0..31), then their high ones; Z21
// holds 0x0f in every byte.
#define UNPACKNIBBLES \
	VMOVDQU      (SI), Y0; \
	VPSRLW       $4, Y0, Y1; \
	VINSERTI64X4 $1, Y1, Z0, Z0; \
	VPANDQ       Z21, Z0, Z0

// UNPACKHIGH shifts the high-bit bytes in Z1 by the counts in Z23, moves
// them to bit 4, keeps the bits of mask Z22, ORs them into Z0 (ternary
// logic 0xf8: Z0 | (Z1 & Z22)), adds min (Z20) and stores the row at dst.
#define UNPACKHIGH(dst) \
	VPSRLVW    Z23, Z1, Z1; \
	VPSLLW     $4, Z1, Z1; \
	VPTERNLOGD $0xf8, Z22, Z1, Z0; \
	VPADDB     Z20, Z0, Z0; \
	VMOVDQU64  Z0, (dst)

// UNPACKSETUP loads the arguments of the unpack kernels: dst in DI, lo
// in SI, hi in R8, min in every byte of Z20, 0x0f of Z21, the high bits'
// mask of Z22, their shift counts in Z23, and k in CX, tested for zero.
#define UNPACKSETUP(mask, counts) \
	MOVQ dst+0(FP), DI; MOVQ lo+8(FP), SI; MOVQ hi+16(FP), R8; \
	MOVQ min+24(FP), AX; VPBROADCASTB AX, Z20; \
	MOVL $0x0f0f0f0f, AX; VPBROADCASTD AX, Z21; \
	MOVL mask, AX; VPBROADCASTD AX, Z22; \
	VMOVDQU64 counts, Z23; \
	MOVQ k+32(FP), CX; TESTQ CX, CX
