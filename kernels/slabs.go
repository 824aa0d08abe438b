package kernels

import "unsafe"

// slabs is a float32 or 16-bit float [K][N] matrix stored in slabs of slab
// columns, as quant stores its integers: [N/slab][K][slab], the last one
// as narrow as the columns left (no padding: small models stay their
// size). A decode step's share of columns is then one contiguous
// run of memory per slab; in the row-major layout it read 768-byte runs
// a matrix row (9–12 KB) apart.
type slabs struct {
	f32  []float32
	h16  []uint16 // 16-bit float bits, of format form
	form half
	k, n int
}

// newSlabs is the float32 or 16-bit float (h16 not nil, of format form)
// [K,N] row-major matrix in the slab layout (Slabbed), taking over its
// storage where N is a whole number of slabs.
func newSlabs(f32 []float32, h16 []uint16, form half, K, N int) *slabs {
	s := &slabs{k: K, n: N, form: form}
	if N%slab == 0 {
		// [K][N/slab][slab] to [N/slab][K][slab] is a transpose of
		// slab-wide blocks, done in place: no second copy of the model
		// while it loads.
		if h16 != nil {
			s.h16 = h16
			transposeBlocks(s.h16, K, N/slab, slab)
		} else {
			s.f32 = f32
			transposeBlocks(s.f32, K, N/slab, slab)
		}
		return s
	}
	if h16 != nil {
		s.h16 = make([]uint16, K*N)
	} else {
		s.f32 = make([]float32, K*N)
	}
	for j0 := 0; j0 < N; j0 += slab {
		for k := range K {
			if h16 != nil {
				copy(s.h16[s.index(k, j0):][:s.width(j0)], h16[k*N+j0:])
			} else {
				copy(s.f32[s.index(k, j0):][:s.width(j0)], f32[k*N+j0:])
			}
		}
	}
	return s
}

// transposeBlocks transposes, in place, the row-major [R][C] matrix of
// blocks of b elements held in a: block (r,c) moves to (c,r). It follows
// each cycle of the permutation i -> i·R mod (R·C−1) once, marking the
// blocks it has placed.
func transposeBlocks[T any](a []T, R, C, b int) {
	n := R * C
	if R == 1 || C == 1 {
		return
	}
	done := make([]bool, n)
	tmp, next := make([]T, b), make([]T, b)
	for start := 1; start < n-1; start++ {
		if done[start] {
			continue
		}
		copy(tmp, a[start*b:(start+1)*b])
		i := start
		for {
			j := i * R % (n - 1) // where the block at i goes
			copy(next, a[j*b:(j+1)*b])
			copy(a[j*b:(j+1)*b], tmp)
			done[j] = true
			tmp, next = next, tmp
			i = j
			if j == start {
				break
			}
		}
	}
}

// transposeSlabs turns the row-major [rows][cols] matrix in a into the
// slabs of its transpose, in place: rows j0..j0+n of a (one slab's
// columns of the transpose, contiguous) become that slab's [cols][n].
// Slabs are independent: they are shared out over the cores in eight
// runs, each with a slab of scratch from the kernels' pool (every float
// matrix of a load passes here, and scratch made per run was megabytes of
// garbage a layer that the load's peak RSS carried).
func transposeSlabs[T weight](a []T, rows, cols int) {
	slabs := (rows + slab - 1) / slab
	per := (slabs + 7) / 8
	ParallelFor((slabs+per-1)/per, func(c int) {
		buf := getScratch((slab*cols*int(unsafe.Sizeof(T(0))) + 3) / 4)
		defer scratch.Put(buf)
		tmp := unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(*buf))), slab*cols)
		for j0 := c * per * slab; j0 < min((c+1)*per*slab, rows); j0 += slab {
			n := min(slab, rows-j0)
			blk := a[j0*cols : (j0+n)*cols]
			copy(tmp, blk)
			panelOf(blk, n, cols, func(r int) []T { return tmp[r*cols:] })
		}
	})
}

// transposed is the [cols][rows] transpose of the row-major [rows][cols]
// matrix a, a copy.
func transposed[T weight](a []T, rows, cols int) []T {
	out := make([]T, len(a))
	for r := range rows {
		for c, v := range a[r*cols : (r+1)*cols] {
			out[c*rows+r] = v
		}
	}
	return out
}

// width is the width of column j's slab, its row stride.
func (s *slabs) width(j int) int { return min(slab, s.n-j/slab*slab) }

// index is the position of row k, column j in the storage.
func (s *slabs) index(k, j int) int { return j/slab*slab*s.k + k*s.width(j) + j%slab }

func (s *slabs) bytes() int64 { return 4*int64(len(s.f32)) + 2*int64(len(s.h16)) }

// float32s is the matrix's values, row-major.
func (s *slabs) float32s() []float32 {
	out := make([]float32, s.k*s.n)
	s.gather(out, 0, 0, s.k, s.n)
	return out
}

// halfBits is a 16-bit float matrix's bits, row-major, if its format
// is h; nil for float32 or the other format.
func (s *slabs) halfBits(h half) []uint16 {
	if s.h16 == nil || s.form != h {
		return nil
	}
	bits := make([]uint16, s.k*s.n)
	for k := range s.k {
		for j0 := 0; j0 < s.n; j0 += slab {
			copy(bits[k*s.n+j0:][:s.width(j0)], s.h16[s.index(k, j0):])
		}
	}
	return bits
}

// gather writes rows k0..k0+rows, columns j0..j0+n of the matrix into dst
// as float32, stride n, for the tile kernel.
func (s *slabs) gather(dst []float32, k0, j0, rows, n int) {
	for c := 0; c < n; {
		nn := min(n-c, slab-(j0+c)%slab)
		at, ld := s.index(k0, j0+c), s.width(j0+c)
		if s.h16 != nil {
			// All rows in one call: a row at a time was a call per 64
			// weights, a third of a Qwen3-MoE F16 prefill's gathering.
			s.form.widenTo(dst[c:], n, s.h16[at:], ld, rows, nn)
		} else {
			for r := range rows {
				copy(dst[r*n+c:][:nn], s.f32[at+r*ld:])
			}
		}
		c += nn
	}
}

// matmulPanel is matmulCols' panel path on slabs, one slab at a time: y
// += x·w for columns j0..j1 (j0 on a slab boundary), each kSum-deep block
// summed from zero in k order and then added to dst, as matmulCols sums.
func (s *slabs) matmulPanel(dst, x []float32, M, K, N, j0, j1 int) {
	acc := getScratch(M * slab)
	defer scratch.Put(acc)
	for c0 := j0; c0 < j1; c0 += slab {
		nn := min(j1-c0, slab)
		ld, a := s.width(c0), (*acc)[:M*nn]
		for k0 := 0; k0 < K; k0 += kSum {
			kk, at := min(kSum, K-k0), s.index(k0, c0)
			clear(a)
			switch {
			case nn == slab:
				s.axpySlab(a, nn, x[k0:], K, at, M, kk)
			case s.h16 != nil:
				axpyPanel16(s.form, a, nn, x[k0:], K, s.h16[at:], ld, nn, M, kk)
			default:
				axpyPanel(a, nn, x[k0:], K, s.f32[at:], ld, nn, M, kk)
			}
			addRows(dst[c0:], N, a, nn, M)
		}
	}
}

// axpySlab is axpyPanel on one full slab from storage index at, n = ldw
// = slab: y[i,0:64] += Σ x[i,k']·w[k',0:64] for i < m; through the panel
// kernels where there is no slab kernel.
func (s *slabs) axpySlab(y []float32, ldy int, x []float32, ldx int, at, m, k int) {
	if s.h16 != nil {
		if !axpySlab16Kernel(s.form, y, ldy, x, ldx, s.h16[at:], m, k) {
			axpyPanel16(s.form, y, ldy, x, ldx, s.h16[at:], slab, slab, m, k)
		}
		return
	}
	if !axpySlabKernel(y, ldy, x, ldx, s.f32[at:], m, k) {
		axpyPanel(y, ldy, x, ldx, s.f32[at:], slab, slab, m, k)
	}
}
