// The pieces the slab kernels share (slabs_amd64.s, one row of y at a
// time; slabs_rows4_amd64.s, four): a weight row's prefetch, x's
// broadcast, a row of y's 64 columns in registers, and a 16-bit weight
// row's FMAs with one row of y. Registers: R10 the weight row, R11 x,
// DI the row of y; Y0/Z0 x, Y4-Y11/Z4-Z7 y's columns.

// SLABPF16 and SLABPF32 ask for the weight row 8 KB ahead of the one at
// R10 (64 rows of 16-bit weights, 32 of float32): the rows stream from
// memory one after another, and a batch-1 step of float16 weights
// streamed ~65% of the read bandwidth without it, ~95% with it
// (Gemma-3-1B F16 8.2 -> 11.5 tokens/s here, notes 41). A prefetch never
// faults, so the last rows' ask past the slab's end is harmless.
#define SLABPF16 \
	PREFETCHT0 8192(R10) \
	PREFETCHT0 8256(R10)

#define SLABPF32 \
	PREFETCHT0 8192(R10) \
	PREFETCHT0 8256(R10) \
	PREFETCHT0 8320(R10) \
	PREFETCHT0 8384(R10)

// BCASTY and BCASTZ broadcast x[i,k'] to Y0 (the AVX2 rows) or Z0 (the
// 512-bit ones) for AXPYSLAB.
#define BCASTY VBROADCASTSS (R11), Y0
#define BCASTZ VBROADCASTSS (R11), Z0

// SLABLOAD512 and SLABSTORE512: y's 64 columns in Z4-Z7 as they lie.
#define SLABLOAD512 \
	VMOVUPS (DI), Z4 \
	VMOVUPS 64(DI), Z5 \
	VMOVUPS 128(DI), Z6 \
	VMOVUPS 192(DI), Z7

#define SLABSTORE512 \
	VMOVUPS Z4, (DI) \
	VMOVUPS Z5, 64(DI) \
	VMOVUPS Z6, 128(DI) \
	VMOVUPS Z7, 192(DI)

// SLABROWH512 is a 16-bit weight row's FMAs, widened by CVT (half_amd64.h)
// 16 columns a register: half the instructions of SLABROWH, whose
// widening kept a float16 batch-1 step at ~65% of the read bandwidth
// (notes 41), and for bfloat16 fewer than SLABROWBF16's even and odd
// columns. Each column still takes one FMA a row in k order, so the bits
// are the same.
#define SLABROWH512(CVT) \
	SLABPF16 \
	CVT((R10), Z12) \
	CVT(32(R10), Z13) \
	CVT(64(R10), Z14) \
	CVT(96(R10), Z15) \
	VFMADD231PS Z12, Z0, Z4 \
	VFMADD231PS Z13, Z0, Z5 \
	VFMADD231PS Z14, Z0, Z6 \
	VFMADD231PS Z15, Z0, Z7

// SLABLOAD32 and SLABSTORE32: y's 64 columns in Y4-Y11 as they lie.
#define SLABLOAD32 \
	VMOVUPS (DI), Y4 \
	VMOVUPS 32(DI), Y5 \
	VMOVUPS 64(DI), Y6 \
	VMOVUPS 96(DI), Y7 \
	VMOVUPS 128(DI), Y8 \
	VMOVUPS 160(DI), Y9 \
	VMOVUPS 192(DI), Y10 \
	VMOVUPS 224(DI), Y11

#define SLABSTORE32 \
	VMOVUPS Y4, (DI) \
	VMOVUPS Y5, 32(DI) \
	VMOVUPS Y6, 64(DI) \
	VMOVUPS Y7, 96(DI) \
	VMOVUPS Y8, 128(DI) \
	VMOVUPS Y9, 160(DI) \
	VMOVUPS Y10, 192(DI) \
	VMOVUPS Y11, 224(DI)

// SLABROWH is a 16-bit weight row's FMAs, widened by CVT (half_amd64.h)
// four registers at a time through Y12-Y15.
#define SLABROWH(CVT) \
	SLABPF16 \
	CVT((R10), Y12) \
	CVT(16(R10), Y13) \
	CVT(32(R10), Y14) \
	CVT(48(R10), Y15) \
	VFMADD231PS Y12, Y0, Y4 \
	VFMADD231PS Y13, Y0, Y5 \
	VFMADD231PS Y14, Y0, Y6 \
	VFMADD231PS Y15, Y0, Y7 \
	CVT(64(R10), Y12) \
	CVT(80(R10), Y13) \
	CVT(96(R10), Y14) \
	CVT(112(R10), Y15) \
	VFMADD231PS Y12, Y0, Y8 \
	VFMADD231PS Y13, Y0, Y9 \
	VFMADD231PS Y14, Y0, Y10 \
	VFMADD231PS Y15, Y0, Y11
