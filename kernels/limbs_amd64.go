//go:build amd64 && !purego

package kernels

import "golang.org/x/sys/cpu"

// Limb products (limbs_amd64.s, limbs_rows2_amd64.s; limbs_avx2_amd64.s,
// limbs_avx2w_amd64.s; limbs_avxvnni_amd64.s): AVX-512 with VNNI, else
// AVX2, with AVX-VNNI where the CPU has it (limbs_avxvnni_amd64.go).

// useVNNI: the limb kernels with VPDPBUSD on 512-bit vectors.
var useVNNI = useAVX512BW && cpu.X86.HasAVX512VNNI

//go:noescape
func limbsQ4AVX512(y *float32, q *byte, rec *byte, s, o *float32, groups, half int)

//go:noescape
func limbsQ5AVX512(y *float32, q *byte, rec *byte, s, o *float32, groups, half int)

//go:noescape
func limbsQ6AVX512(y *float32, q *byte, rec *byte, s, o *float32, groups, half int)

//go:noescape
func limbsQ8AVX512(y *float32, q *byte, rec *byte, s, o *float32, groups, half int)

//go:noescape
func limbsQ8HAVX512(y *float32, q *byte, rec *byte, s *uint16, o *float32, groups, half int)

//go:noescape
func limbsQ4FAVX512(y *float32, q *byte, rec *byte, a, b *int8, d, dm *uint16, groups, half, per int)

//go:noescape
func limbsQ5FAVX512(y *float32, q *byte, rec *byte, a, b *int8, d, dm *uint16, groups, half, per int)

//go:noescape
func limbsQ6FAVX512(y *float32, q *byte, rec *byte, a, b *int8, d, dm *uint16, groups, half, per int)

//go:noescape
func limbsQ4HAVX512(y *float32, q *byte, rec *byte, s *uint16, o *float32, groups, half int)

//go:noescape
func limbsQ5HAVX512(y *float32, q *byte, rec *byte, s *uint16, o *float32, groups, half int)

//go:noescape
func limbsQ4AVX2(y *float32, q *byte, rec *byte, s, o *float32, acc *float32, groups, half int)

//go:noescape
func limbsQ5AVX2(y *float32, q *byte, rec *byte, s, o *float32, acc *float32, groups, half int)

//go:noescape
func limbsQ6AVX2(y *float32, q *byte, rec *byte, s, o *float32, acc *float32, groups, half int)

//go:noescape
func limbsQ8AVX2(y *float32, q *byte, rec *byte, s, o *float32, acc *float32, groups, half int)

//go:noescape
func limbsQ4FAVX2(y *float32, q *byte, rec *byte, a, b *int8, d, dm *uint16, acc *float32, groups, half, per int)

//go:noescape
func limbsQ5FAVX2(y *float32, q *byte, rec *byte, a, b *int8, d, dm *uint16, acc *float32, groups, half, per int)

//go:noescape
func limbsQ6FAVX2(y *float32, q *byte, rec *byte, a, b *int8, d, dm *uint16, acc *float32, groups, half, per int)

//go:noescape
func limbsQ4HAVX2(y *float32, q *byte, rec *byte, s *uint16, o *float32, acc *float32, groups, half int)

//go:noescape
func limbsQ5HAVX2(y *float32, q *byte, rec *byte, s *uint16, o *float32, acc *float32, groups, half int)

//go:noescape
func limbsQ8HAVX2(y *float32, q *byte, rec *byte, s *uint16, o *float32, acc *float32, groups, half int)

//go:noescape
func limbsQ4R2AVX512(y0, y1 *float32, q *byte, rec0, rec1 *byte, s, o *float32, groups, half int)

//go:noescape
func limbsQ5R2AVX512(y0, y1 *float32, q *byte, rec0, rec1 *byte, s, o *float32, groups, half int)

//go:noescape
func limbsQ6R2AVX512(y0, y1 *float32, q *byte, rec0, rec1 *byte, s, o *float32, groups, half int)

//go:noescape
func limbsQ8R2AVX512(y0, y1 *float32, q *byte, rec0, rec1 *byte, s, o *float32, groups, half int)

//go:noescape
func limbsQ8R2AVX2(y0, y1 *float32, q *byte, rec0, rec1 *byte, s, o *float32, acc *float32, groups, half int)

//go:noescape
func limbsU5AVX2(y *float32, q *byte, rec *byte, s, o *float32, acc *float32, groups, half int)

//go:noescape
func limbsU6AVX2(y *float32, q *byte, rec *byte, s, o *float32, acc *float32, groups, half int)

//go:noescape
func unpackQ5AVX2(dst, q *byte, groups int)

//go:noescape
func unpackQ6AVX2(dst, q *byte, groups int)

//go:noescape
func unpackQ4AVX2(dst, q *byte, groups int)

//go:noescape
func splitLimbsAVX2(rec *byte, x *float32, groups, min, half int) int

// splitLimbsKernel writes the records of x's leading activation groups
// (limbsplit_amd64.s), stopping before the first group of zeros,
// infinities or NaN, and says how many it wrote; splitLimbs does the
// rest.
func splitLimbsKernel(rec []byte, x []float32, min int8, size int) int {
	groups := len(x) / limbRows
	if !useAVX2 || groups == 0 {
		return 0
	}
	_ = rec[groups*limbRecord-1]
	half := 0
	if size == 16 {
		half = 1
	}
	return splitLimbsAVX2(&rec[0], &x[0], groups, int(min), half)
}

// The kernels of each integer width, by bits − 4 (4, 5, 6 and 8 bits).
var (
	limbKernelsAVX512 = [...]func(y *float32, q *byte, rec *byte, s, o *float32, groups, half int){limbsQ4AVX512, limbsQ5AVX512, limbsQ6AVX512, nil, limbsQ8AVX512}
	limbKernelsH      = [...]func(y *float32, q *byte, rec *byte, s *uint16, o *float32, groups, half int){limbsQ4HAVX512, limbsQ5HAVX512, nil, nil, limbsQ8HAVX512}
	limbKernelsF      = [...]func(y *float32, q *byte, rec *byte, a, b *int8, d, dm *uint16, groups, half, per int){limbsQ4FAVX512, limbsQ5FAVX512, limbsQ6FAVX512}
	limbKernelsRows2  = [...]func(y0, y1 *float32, q *byte, rec0, rec1 *byte, s, o *float32, groups, half int){limbsQ4R2AVX512, limbsQ5R2AVX512, limbsQ6R2AVX512, nil, limbsQ8R2AVX512}
)

// limbSlabStored is limbSlab on one row for a Q8_0, Q4_0 or Q5_0 slab
// (groups of 32, a float16 scale each, no offsets) on AVX-512 VNNI or
// AVX2, the kernel widening the stored scales as it joins each group: a
// formed scale row (formScales) cost 9% of a
// Gemma-3-1B Q8_0 batch-1 step, its first read of the scales stalling
// outside the kernel's prefetched stream (notes 43, 46). A k-quant's slab
// (Q4_K, Q5_K, Q6_K) goes to the kernels that form each group's scales
// from its factors (notes 45). The same values, so the same bits. It says
// false, having done nothing, for any other slab or CPU.
func limbSlabStored(w *quant, y []float32, rec []byte, j0 int) bool {
	if useAVX2 && w.g.Factored && w.bits < 8 {
		limbSlabFactored(w, y, rec, j0)
		return true
	}
	avx2 := !useVNNI && useAVX2 && w.bits != 6 // limbKernelHAVX2's widths
	if w.g.Factored || w.dm != nil || w.g.Size != limbRows || !avx2 && (!useVNNI || limbKernelsH[w.bits-4] == nil) {
		return false
	}
	blocks, groups, _ := slabOperands(w, j0, rec)
	d := w.d[w.blockIndex(0, j0):][:groups*slab]
	_ = y[slab-1]
	if avx2 {
		var acc [slab]float32
		limbKernelHAVX2(w.bits, &y[0], &blocks[0], &rec[0], &d[0], &acc[0], groups)
		return true
	}
	limbKernelsH[w.bits-4](&y[0], &blocks[0], &rec[0], &d[0], nil, groups, 0)
	return true
}

// limbSlabFactored is limbSlabStored for a k-quant's slab.
func limbSlabFactored(w *quant, y []float32, rec []byte, j0 int) {
	blocks, groups, half := slabOperands(w, j0, rec)
	at, d := w.groupIndex(0, j0), w.blockIndex(0, j0)
	G, B := w.k/w.g.Size, w.k/w.g.Super
	_, _, _ = y[slab-1], w.a[at+G*slab-1], w.d[d+B*slab-1]
	var b *int8
	var dm *uint16
	if w.b != nil {
		_, _ = w.b[at+G*slab-1], w.dm[d+B*slab-1]
		b, dm = &w.b[at], &w.dm[d]
	}
	if !useVNNI {
		var acc [slab]float32
		limbKernelFAVX2(w.bits, &y[0], &blocks[0], &rec[0], &w.a[at], b, &w.d[d], dm, &acc[0], groups, half, w.g.Super/w.g.Size)
		return
	}
	limbKernelsF[w.bits-4](&y[0], &blocks[0], &rec[0], &w.a[at], b, &w.d[d], dm, groups, half, w.g.Super/w.g.Size)
}

// limbOperands checks the operands every limb kernel reads (the records
// of each row, the scale and offset rows) and returns the slab's blocks
// at column j0, the activation groups and the kernels' half flag.
func limbOperands(w *quant, s, o []float32, j0 int, recs ...[]byte) (blocks []byte, groups, half int) {
	blocks, groups, half = slabOperands(w, j0, recs...)
	_ = s[w.k/w.g.Size*slab-1]
	if o != nil {
		_ = o[w.k/w.g.Size*slab-1]
	}
	return blocks, groups, half
}

// slabOperands is limbOperands without the scale rows (for the kernels
// that read the stored factors).
func slabOperands(w *quant, j0 int, recs ...[]byte) (blocks []byte, groups, half int) {
	groups = w.k / limbRows
	blocks = w.slabBlocks(j0, groups)
	if w.g.Size == 16 {
		half = 1
	}
	for _, rec := range recs {
		_ = rec[groups*limbRecord-1]
	}
	return blocks, groups, half
}

// slabBlocks is the integer blocks of the slab at column j0, groups
// activation groups deep.
func (w *quant) slabBlocks(j0, groups int) []byte {
	return w.ints[w.blockAt(0, j0):][:groups*w.blockBytes()]
}

// at is &o[i], or nil for no offsets (the kernels' signal).
func at(o []float32, i int) *float32 {
	if o == nil {
		return nil
	}
	return &o[i]
}

// limbSlab2 is limbSlab on two rows (y0 and rec0, y1 and rec1): with
// VNNI one pass of the kernel for two rows over each half of the slab;
// with AVX2 alone, the 8-bit word kernel on both rows, and the byte
// kernels a row at a time (AVX2's 16 registers hold one row's sums of a
// strip; limbCols unpacks a 5- or 6-bit slab once for its rows instead,
// notes 46); with AVX-VNNI every width a row at a time (its 8-bit kernel
// is a byte kernel, notes 47).
func limbSlab2(w *quant, y0, y1 []float32, rec0, rec1 []byte, s, o []float32, j0 int) {
	if !useVNNI && (!useAVX2 || w.bits != 8 || useAVXVNNI) {
		limbSlab(w, y0, rec0, s, o, j0)
		limbSlab(w, y1, rec1, s, o, j0)
		return
	}
	blocks, groups, half := limbOperands(w, s, o, j0, rec0, rec1)
	_, _ = y0[slab-1], y1[slab-1]
	if !useVNNI { // AVX2, 8 bits: the word kernel on both rows
		var acc [2 * slab]float32
		limbsQ8R2AVX2(&y0[0], &y1[0], &blocks[0], &rec0[0], &rec1[0], &s[0], at(o, 0), &acc[0], groups, half)
		return
	}
	kern := limbKernelsRows2[w.bits-4]
	for p := 0; p < slab; p += slab / 2 { // strips 0 and 1, then 2 and 3
		// p columns in: floats of y, s and o; 4·p bytes of a block's
		// vectors (a strip's 16 columns are 64 bytes).
		kern(&y0[p], &y1[p], &blocks[4*p], &rec0[0], &rec1[0], &s[p], at(o, p), groups, half)
	}
}

// limbSlab is limbSlabGeneric.
func limbSlab(w *quant, y []float32, rec []byte, s, o []float32, j0 int) {
	if !useAVX2 {
		w.limbSlabGeneric(y, rec, s, o, j0)
		return
	}
	blocks, groups, half := limbOperands(w, s, o, j0, rec)
	_ = y[slab-1]
	if !useVNNI {
		var acc [slab]float32
		limbKernelAVX2(w.bits, &y[0], &blocks[0], &rec[0], &s[0], at(o, 0), &acc[0], groups, half)
		return
	}
	limbKernelsAVX512[w.bits-4](&y[0], &blocks[0], &rec[0], &s[0], at(o, 0), groups, half)
}

// unpackedGroup is the bytes of an activation group's integers unpacked
// for a slab (limbs_avx2_amd64.s's U8 layout, a Q8_0 block's).
const unpackedGroup = limbRows * slab

// unpackedBytes is the scratch limbCols needs to unpack each slab's
// integers once for its M rows, or 0 where it does not: on AVX2 without
// AVX-512 VNNI, for 5- and 6-bit integers (and 4-bit ones with AVX-VNNI)
// and three rows or more. There the byte kernels spend two fifths of
// their instructions unpacking a 6-bit slab's integers, again for every
// row; with two rows the unpacking and its extra pass over the bytes cost
// what they save. 4-bit integers (a quarter) gained too little at 8 rows
// and lost at 2 with AVX2 alone (notes 46); with AVX-VNNI the 8-bit
// kernel's two strips a pass make them gain 2-7% on Qwen3-30B-A3B's
// prefill (notes 47).
func (w *quant) unpackedBytes(M int) int {
	unpacked := w.bits == 5 || w.bits == 6 || w.bits == 4 && useAVXVNNI
	if useVNNI || !useAVX2 || M < 3 || !unpacked {
		return 0
	}
	return w.k / limbRows * unpackedGroup
}

// unpackSlab writes the slab at column j0's integers into ints, unpacked.
func (w *quant) unpackSlab(ints []byte, j0 int) {
	groups := w.k / limbRows
	blocks := w.slabBlocks(j0, groups)
	_ = ints[groups*unpackedGroup-1]
	switch w.bits {
	case 4:
		unpackQ4AVX2(&ints[0], &blocks[0], groups)
		return
	case 5:
		unpackQ5AVX2(&ints[0], &blocks[0], groups)
		return
	}
	unpackQ6AVX2(&ints[0], &blocks[0], groups)
}

// limbSlabUnpacked is limbSlab on the slab's unpacked integers.
func limbSlabUnpacked(w *quant, y []float32, ints, rec []byte, s, o []float32, j0 int) {
	_, groups, half := limbOperands(w, s, o, j0, rec)
	_, _ = y[slab-1], ints[groups*unpackedGroup-1]
	var acc [slab]float32
	if useAVXVNNI {
		limbsU8AVXVNNI(&y[0], &ints[0], &rec[0], &s[0], at(o, 0), &acc[0], groups, half)
		return
	}
	if w.bits == 5 {
		limbsU5AVX2(&y[0], &ints[0], &rec[0], &s[0], at(o, 0), &acc[0], groups, half)
		return
	}
	limbsU6AVX2(&y[0], &ints[0], &rec[0], &s[0], at(o, 0), &acc[0], groups, half)
}

// The AVX2 kernels take acc, scratch on their caller's stack, and are
// called directly, by width (and with AVX-VNNI, useAVXVNNI, its kernels):
// through a func value acc would escape to the heap, a kernel call's 256
// bytes of garbage (~130 MB over six Qwen3-30B-A3B prefills), which,
// where the weights' heap keeps collections away, is fresh memory to
// fault in (notes 46; TestLimbKernelsAVX2NoAllocs).

func limbKernelAVX2(bits int, y *float32, q, rec *byte, s, o, acc *float32, groups, half int) {
	switch {
	case bits == 4 && useAVXVNNI:
		limbsQ4AVXVNNI(y, q, rec, s, o, acc, groups, half)
	case bits == 4:
		limbsQ4AVX2(y, q, rec, s, o, acc, groups, half)
	case bits == 5 && useAVXVNNI:
		limbsQ5AVXVNNI(y, q, rec, s, o, acc, groups, half)
	case bits == 5:
		limbsQ5AVX2(y, q, rec, s, o, acc, groups, half)
	case bits == 6 && useAVXVNNI:
		limbsQ6AVXVNNI(y, q, rec, s, o, acc, groups, half)
	case bits == 6:
		limbsQ6AVX2(y, q, rec, s, o, acc, groups, half)
	case useAVXVNNI:
		limbsQ8AVXVNNI(y, q, rec, s, o, acc, groups, half)
	default:
		limbsQ8AVX2(y, q, rec, s, o, acc, groups, half)
	}
}

// limbKernelHAVX2 is for 4, 5 and 8 bits (Q4_0, Q5_0, Q8_0; no offsets).
func limbKernelHAVX2(bits int, y *float32, q, rec *byte, s *uint16, acc *float32, groups int) {
	switch {
	case bits == 4 && useAVXVNNI:
		limbsQ4HAVXVNNI(y, q, rec, s, nil, acc, groups, 0)
	case bits == 4:
		limbsQ4HAVX2(y, q, rec, s, nil, acc, groups, 0)
	case bits == 5 && useAVXVNNI:
		limbsQ5HAVXVNNI(y, q, rec, s, nil, acc, groups, 0)
	case bits == 5:
		limbsQ5HAVX2(y, q, rec, s, nil, acc, groups, 0)
	case useAVXVNNI:
		limbsQ8HAVXVNNI(y, q, rec, s, nil, acc, groups, 0)
	default:
		limbsQ8HAVX2(y, q, rec, s, nil, acc, groups, 0)
	}
}

// limbKernelFAVX2 is for 4, 5 and 6 bits (the k-quants).
func limbKernelFAVX2(bits int, y *float32, q, rec *byte, a, b *int8, d, dm *uint16, acc *float32, groups, half, per int) {
	switch {
	case bits == 4 && useAVXVNNI:
		limbsQ4FAVXVNNI(y, q, rec, a, b, d, dm, acc, groups, half, per)
	case bits == 4:
		limbsQ4FAVX2(y, q, rec, a, b, d, dm, acc, groups, half, per)
	case bits == 5 && useAVXVNNI:
		limbsQ5FAVXVNNI(y, q, rec, a, b, d, dm, acc, groups, half, per)
	case bits == 5:
		limbsQ5FAVX2(y, q, rec, a, b, d, dm, acc, groups, half, per)
	case useAVXVNNI:
		limbsQ6FAVXVNNI(y, q, rec, a, b, d, dm, acc, groups, half, per)
	default:
		limbsQ6FAVX2(y, q, rec, a, b, d, dm, acc, groups, half, per)
	}
}
