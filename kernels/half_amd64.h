// Widening 16-bit float weights to float32 as they are loaded, one
// register at a time: the instruction the float16 and bfloat16 twins of
// the panel, slab and widening kernels (panels_amd64.s, slabs_amd64.s,
// float16_amd64.s) differ by. CVTF16 and CVTBF16 (m, r) set the float32
// register r (Y or Z) to the 16-bit values at m, half r's bytes, exactly:
// float16 by F16C's VCVTPH2PS; bfloat16, a float32's top half, by a zero
// extension to 32 bits and a shift of 16 (AVX2; to Z, AVX-512BW). Not
// AVX512_BF16's VDPBF16PS: its pairwise products are not the float32
// kernels' FMAs in their order, and would change the bits.
#define CVTF16(m, r) VCVTPH2PS m, r
#define CVTBF16(m, r) VPMOVZXWD m, r; VPSLLD $16, r, r
