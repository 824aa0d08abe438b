package kernels

import (
	"math"
	"unsafe"

	"github.com/llorch/llorch-check/internal/keep"
)

// Limb products: x·W for a quantised W at float32-class accuracy with
// integer dot-product instructions (issue #27;
// scripts/bench/notes/16-limb-products.md).
//
// Each row of x is cut into groups of 32. A group is scaled by the power
// of two 2^shift that brings its largest magnitude into [2^21, 2^22) and
// rounded to integers x̃ (ties to even; that loses at most 2^-23 of the
// group's largest, about what float32 loses rounding it), and each x̃ is
// split exactly into three signed bytes, its limbs: x̃ = h·2^16 + m·2^8 + l.
// For each group of the matrix's rows (16 or 32, within one activation
// group) and each column, the limb sums H = Σ h·q, M = Σ m·q, L = Σ l·q
// over the group's integers q are exact (integers, and small: below 2^20),
// and the column's sum goes on in float32, every step fused:
//
//	t   = fma(H, 65536, fma(M, 256, L))      (each conversion exact)
//	acc = fma(t, s·2^-shift, acc)            (s·2^-shift exact)
//	acc = fma(Σx̃·2^-shift, o, acc)           (types with offsets)
//
// acc starts at 0 and, after the last group, is added to the output. A
// row's bits depend on nothing but that row, its column and the matrix,
// so a sequence gets the same bits alone, in a batch or in chunks, and
// every build computes them (the assembly with VPDPBUSD, this file with
// one int64 multiply-add a weight, packing the three limbs 21 bits apart).
//
// A group holding an infinity or NaN gets the scale NaN, so every output
// it enters is NaN; a group of zeros contributes nothing. The shift is at
// most 126 (2^-shift a normal float32), so a group whose largest is below
// 2^-104 is rounded more coarsely: such activations carry no signal.

// limbRecord is the bytes of one activation group of one row of x, as the
// kernels read it: the limbs h, m and l of its 32 values (int8 each, 32
// bytes apiece), then per weight group (the whole 32, or 16 and 16) the
// int32 corrections min·Σh, min·Σm, min·Σl (the assembly multiplies the
// stored integers u = q − min, so it starts its sums at these), the scale
// 2^-shift, the sums Σx̃·2^-shift and the scale's exponent −shift (float32,
// as VGETEXPPS gives it: the AMX kernel's joining scales by it, once a
// row where the others form it once a group); from 160 the limbs as int16
// for the AVX2 8-bit kernel, which multiplies words (VPMADDWD): h, then
// the low part p = 256·m + l offset by 128 so that it fits int16 (p lies
// in −32896..32639), 64 bytes each. Its sum of u·p, less 128·Σu, is
// exactly M·256 + L of the byte limbs, the sum the others round once.
const (
	limbRecord = 288
	recCorr0   = 96  // 3 int32: the first weight group's corrections
	recCorr1   = 108 // 3 int32: the second's (groups of 16)
	recScale   = 120 // float32 2^-shift, or NaN
	recSum0    = 124 // float32: the first weight group's Σx̃·2^-shift
	recSum1    = 128 // float32: the second's
	recExp     = 132 // float32 −shift, or NaN
	recH16     = 160 // 32 int16: h
	recP16     = 224 // 32 int16: 256·m + l + 128
)

// splitLimbs writes the records of one row x (a multiple of 32 values)
// for a matrix whose integers start at min, in weight groups of size.
func splitLimbs(rec []byte, x []float32, min int8, size int) {
	for a, n := 0, len(x)/limbRows; a < n; a++ {
		a += splitLimbsKernel(rec[a*limbRecord:], x[a*limbRows:], min, size)
		if a < n { // a group of zeros, infinities or NaN, or every group in pure Go
			splitGroup(rec[a*limbRecord:(a+1)*limbRecord], x[a*limbRows:(a+1)*limbRows], min, size)
		}
	}
}

func splitGroup(r []byte, xs []float32, min int8, size int) {
	r = r[:limbRecord]
	clear(r)
	for i := range limbRows { // the int16 low parts of zero limbs
		putI16(r, recP16+2*i, 128)
	}
	var big uint32
	for _, v := range xs {
		big = max(big, math.Float32bits(v)&0x7fffffff)
	}
	nan := float32(math.NaN())
	switch {
	case big >= 0x7f800000: // an infinity or NaN
		putF32(r, recScale, nan)
		putF32(r, recSum0, nan)
		putF32(r, recSum1, nan)
		putF32(r, recExp, nan)
		return
	case big == 0:
		putF32(r, recScale, 1)
		return // and the exponent 0
	}
	// big < 2^e, e = its biased exponent − 126; shift = 22 − e.
	e := max(int(big>>23)-126, -104)
	shift := 22 - e
	p := pow2(shift)
	const round = 1 << 23 * 1.5 // adding and subtracting it rounds |v| < 2^22 to an integer, ties to even
	var sums, hs, ms, ls [2]int32
	for half := range 2 { // the two halves of 16: weight groups of 16 take each its own sums
		for i := 16 * half; i < 16*half+16; i++ {
			t := float32(xs[i] * p) // exact: a power of two
			xi := int32(float32(t+round) - round)
			l := int8(xi)
			rest := (xi - int32(l)) >> 8
			m := int8(rest)
			h := int8((rest - int32(m)) >> 8)
			r[i], r[32+i], r[64+i] = byte(h), byte(m), byte(l)
			putI16(r, recH16+2*i, int16(h))
			putI16(r, recP16+2*i, int16(256*int32(m)+int32(l)+128))
			sums[half] += xi
			hs[half] += int32(h)
			ms[half] += int32(m)
			ls[half] += int32(l)
		}
	}
	if size != 16 { // one weight group of 32: its sums in the first
		sums[0], hs[0], ms[0], ls[0] = sums[0]+sums[1], hs[0]+hs[1], ms[0]+ms[1], ls[0]+ls[1]
		sums[1], hs[1], ms[1], ls[1] = 0, 0, 0, 0
	}
	inv := pow2(-shift)
	putF32(r, recScale, inv)
	putF32(r, recExp, float32(-shift))
	putF32(r, recSum0, float32(sums[0])*inv)
	putF32(r, recSum1, float32(sums[1])*inv)
	for g, at := range []int{recCorr0, recCorr1} {
		putI32(r, at, int32(min)*hs[g])
		putI32(r, at+4, int32(min)*ms[g])
		putI32(r, at+8, int32(min)*ls[g])
	}
}

// pow2 is 2^e as a float32, for -126 <= e <= 127.
func pow2(e int) float32 { return math.Float32frombits(uint32(e+127) << 23) }

func putF32(r []byte, at int, v float32) { putI32(r, at, int32(math.Float32bits(v))) }

func putI32(r []byte, at int, v int32) { *(*int32)(unsafe.Pointer(&r[at])) = v }

func putI16(r []byte, at int, v int16) { *(*int16)(unsafe.Pointer(&r[at])) = v }

func getF32(r []byte, at int) float32 { return *(*float32)(unsafe.Pointer(&r[at])) }

// recScratch holds rows of limb records: one buffer a call, and a pass's
// calls run one after another.
var recScratch keep.Buffer[byte]

// matmul is matmul (matmul.go) on the quantised matrix:
// x's rows are split into limbs once, then column chunks of whole slabs
// are shared out as the float kernels' are.
func (w *quant) matmul(dst, x []float32, M, K, N int, st start) {
	per := K / limbRows * limbRecord
	rp := recScratch.Get(M * per)
	defer recScratch.Put(rp)
	rec := *rp
	split := func(i0, i1 int) {
		for i := i0; i < i1; i++ {
			splitLimbs(rec[i*per:(i+1)*per], x[i*K:(i+1)*K], w.min, w.g.Size)
		}
	}
	// A prefill's rows are split over the cores (serial, it was a tenth
	// of a quantised prefill with the other core waiting); a decode
	// step's row or few are split here.
	const rowsPer = 8
	if M*K < ParallelMinWork/4 {
		split(0, M)
	} else {
		ParallelRange(M, rowsPer, split)
	}
	cols := func(j0, j1 int) {
		st.set(dst, M, N, j0, j1)
		w.limbCols(dst, rec, M, N, j0, j1)
	}
	if M*K*N < ParallelMinWork {
		cols(0, N)
		return
	}
	ParallelRange(N, colChunk, cols)
}

// limbCols adds the products of every row's records with columns j0..j1
// (j0 a slab's first) to dst, slab by slab: each slab's scales are formed
// once for all the rows.
func (w *quant) limbCols(dst []float32, rec []byte, M, N, j0, j1 int) {
	per := w.k / limbRows * limbRecord
	G := w.k / w.g.Size
	ub := w.unpackedBytes(M) // a multiple of 4
	buf := getScratch(2*G*slab + 2*slab + ub/4)
	defer scratch.Put(buf)
	s, o, tmp := (*buf)[:G*slab], (*buf)[G*slab:2*G*slab], (*buf)[2*G*slab:2*G*slab+2*slab]
	if w.dm == nil {
		o = nil
	}
	var ints []byte // each slab's integers unpacked once for all the rows
	if ub > 0 {
		ints = unsafe.Slice((*byte)(unsafe.Pointer(&(*buf)[2*G*slab+2*slab])), ub)
	}
	for c0 := j0; c0 < j1; c0 += slab {
		n := min(slab, j1-c0)
		if c0+slab < j1 {
			w.prefetchScales(c0 + slab)
		}
		if M == 1 && n == slab && limbSlabStored(w, dst[c0:], rec, c0) {
			continue
		}
		w.formScales(s, o, 0, G, c0)
		// Rows on the tiles where they take them, the rest two at a time
		// where there are two (the kernels load and split each weight
		// once for both), every way with the same bits.
		i := 0
		if n == slab {
			i = w.limbRowsAMX(dst, rec, M, N, s, c0)
		}
		if ints != nil {
			w.unpackSlab(ints, c0)
		}
		for i < M {
			rows := min(2, M-i)
			var y [2][]float32
			for r := range rows {
				y[r] = dst[(i+r)*N+c0:]
				if n < slab {
					y[r] = tmp[r*slab : (r+1)*slab]
					clear(y[r])
				}
			}
			switch {
			case ints != nil:
				for r := range rows {
					limbSlabUnpacked(w, y[r], ints, rec[(i+r)*per:(i+r+1)*per], s, o, c0)
				}
			case rows == 2:
				limbSlab2(w, y[0], y[1], rec[i*per:(i+1)*per], rec[(i+1)*per:(i+2)*per], s, o, c0)
			default:
				limbSlab(w, y[0], rec[i*per:(i+1)*per], s, o, c0)
			}
			for r := 0; n < slab && r < rows; r++ {
				Add(dst[(i+r)*N+c0:(i+r)*N+c0+n], y[r][:n])
			}
			i += rows
		}
	}
}
