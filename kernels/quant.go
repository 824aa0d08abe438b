package kernels

import (
	"fmt"
	"sync"

	"github.com/llorch/llorch-check/internal/ggmlnum"
)

// quant is a quantised matrix held at about its file's size: one small
// integer per weight, stored [K][N] (the reduction dimension outermost, as
// HF's Conv1D holds float weights), and the file's own scale factors: per
// column a float16 d (and dm, for the types with offsets) for every
// super-block of rows and, for ggml's K types, a small integer a (and b)
// for every group of rows. A weight's value is ggml's: the group's scale
// d·a rounded to float32, times the integer, rounded, plus the offset
// dm·b, rounded (ggmlnum.Scale, ggmlnum.GroupValue). The kernels form those
// floats from the factors a band at a time and use each weight as the
// float32 kernels use a loaded one, so a quantised matrix gives the bits
// of float32 weights holding its values while a decode step streams the
// file's bytes, not four times as many.
//
// The columns are cut into slabs of slab columns, each stored whole, so a
// goroutine working on a few columns streams contiguous memory: with
// plain [K][N] rows, a 128-column share of a decode step read 128-byte
// runs a row apart and the prefetchers never caught up.
//
// Integers of 8 bits are int8 (q). Narrower ones are packed: q4 holds
// each one's low 4 bits, two to a byte (byte b of a slab row holds column
// b in its low nibble and column b+32 in its high one, so that a 256-bit
// load covers a 64-column row), and for 5 and 6 bits qh holds the bits
// above (hbits of them: byte c%w of a row, w = slab·hbits/8, holds column
// c at bit hbits·(c/w)). Stored integers are q − min.
type quant struct {
	q          []int8   // [N/slab][K][slab], the last slab padded; nil if packed
	q4         []byte   // [N/slab][K][slab/2]
	qh         []byte   // [N/slab][K][slab·hbits/8]; nil for 4 bits
	hbits      int      // bits above the nibble: 0, 1 or 2
	min        int8     // the smallest integer, which a stored 0 stands for
	d, dm      []uint16 // [N/slab][K/super][slab]; dm nil without offsets
	a, b       []int8   // [N/slab][K/group][slab]; nil unless factored, b nil without offsets
	g          ggmlnum.Groups
	k, n       int
	transposed bool // the matrix is the transpose of the storage: [N][K]
}

// newQuant is Quantized's matrix (which see).
func newQuant(rows, cols int, g ggmlnum.Groups, transposed bool, decodeRow func(r int, q []int8, f ggmlnum.Factors) error) (*quant, error) {
	switch {
	case g.Size <= 0 || g.Size%4 != 0 || g.Super < g.Size || g.Super%g.Size != 0 || cols%g.Super != 0:
		return nil, fmt.Errorf("kernels: groups of %d in blocks of %d do not divide rows of %d into multiples of 4", g.Size, g.Super, cols)
	case !g.Factored && g.Super != g.Size:
		return nil, fmt.Errorf("kernels: unfactored groups of %d in blocks of %d", g.Size, g.Super)
	case g.Bits < 4 || g.Bits > 8 || g.Bits == 7 || g.Min < -128 || g.Min+1<<g.Bits > 128:
		return nil, fmt.Errorf("kernels: integers of %d bits from %d are not held (4, 5, 6 or 8 bits within int8)", g.Bits, g.Min)
	}
	K, N := cols, rows
	np := (N + slab - 1) / slab * slab
	w := &quant{g: g, k: K, n: N, transposed: transposed, min: int8(g.Min)}
	if g.Bits == 8 {
		w.q = make([]int8, K*np)
	} else {
		w.q4 = make([]byte, K*np/2)
		if w.hbits = g.Bits - 4; w.hbits > 0 {
			w.qh = make([]byte, K*np*w.hbits/8)
		}
	}
	B, G := K/g.Super, K/g.Size
	w.d = make([]uint16, B*np)
	if g.Offset {
		w.dm = make([]uint16, B*np)
	}
	if g.Factored {
		w.a = make([]int8, G*np)
		if g.Offset {
			w.b = make([]int8, G*np)
		}
	}
	// A slab's rows are decoded together and written out column by
	// column, so the transpose writes runs of slab bytes.
	q := make([]int8, slab*K)
	f := ggmlnum.Factors{D: make([]uint16, slab*B), DM: make([]uint16, slab*B), A: make([]int8, slab*G), B: make([]int8, slab*G)}
	for r0 := 0; r0 < N; r0 += slab {
		nr := min(slab, N-r0)
		for i := range nr {
			fi := ggmlnum.Factors{D: f.D[i*B : (i+1)*B]}
			if g.Offset {
				fi.DM = f.DM[i*B : (i+1)*B]
			}
			if g.Factored {
				fi.A = f.A[i*G : (i+1)*G]
				if g.Offset {
					fi.B = f.B[i*G : (i+1)*G]
				}
			}
			if err := decodeRow(r0+i, q[i*K:(i+1)*K], fi); err != nil {
				return nil, err
			}
		}
		if err := w.storeIntegers(q, r0, nr); err != nil {
			return nil, err
		}
		for i := range nr {
			for b := range B {
				w.d[w.blockIndex(b*g.Super, r0+i)] = f.D[i*B+b]
				if g.Offset {
					w.dm[w.blockIndex(b*g.Super, r0+i)] = f.DM[i*B+b]
				}
			}
			if !g.Factored {
				continue
			}
			for gi := range G {
				w.a[w.groupIndex(gi*g.Size, r0+i)] = f.A[i*G+gi]
				if g.Offset {
					w.b[w.groupIndex(gi*g.Size, r0+i)] = f.B[i*G+gi]
				}
			}
		}
	}
	return w, nil
}

func (w *quant) bytes() int64 {
	return int64(len(w.q)+len(w.q4)+len(w.qh)+len(w.a)+len(w.b)) + 2*int64(len(w.d)+len(w.dm))
}

// rowStart is the index, in units of a row's bytes, of storage row k of
// column j's slab: rows of a slab are one row's bytes apart.
func (w *quant) rowStart(k, j int) int { return j/slab*w.k + k }

// hWidth is the bytes of qh a row takes.
func (w *quant) hWidth() int { return slab * w.hbits / 8 }

// storeIntegers writes the integers of the nr file rows from r0 (a slab's
// first column), q holding them row after row, into the slab's storage
// rows, checking each against the type's range. Each storage row is
// gathered whole (u, stored integers, q − min) and then packed with
// constant shifts: element by element through the packed layout's
// divisions, this was most of a quantised model's load.
func (w *quant) storeIntegers(q []int8, r0, nr int) error {
	K, hw := w.k, w.hWidth()
	var u [slab]byte
	for k := range K {
		var any byte
		clear(u[nr:]) // the last slab's padding
		for i := range nr {
			u[i] = byte(q[i*K+k] - w.min)
			any |= u[i]
		}
		if any>>w.g.Bits != 0 && w.g.Bits < 8 {
			for i := range nr {
				if u[i]>>w.g.Bits != 0 {
					v := q[i*K+k]
					return fmt.Errorf("kernels: row %d element %d is %d, outside the %d..%d of %d bits", r0+i, k, v, w.min, int(w.min)+1<<w.g.Bits-1, w.g.Bits)
				}
			}
		}
		r := w.rowStart(k, r0)
		if w.q != nil {
			row := w.q[r*slab:][:nr]
			for i := range row {
				row[i] = int8(u[i]) + w.min
			}
			continue
		}
		q4 := w.q4[r*slab/2:][:slab/2]
		for b := range q4 {
			q4[b] = u[b]&0xf | u[b+slab/2]<<4
		}
		switch w.hbits {
		case 1:
			qh := w.qh[r*hw:][:slab/8]
			for b := range qh {
				var h byte
				for l := range 8 {
					h |= u[b+8*l] >> 4 << l
				}
				qh[b] = h
			}
		case 2:
			qh := w.qh[r*hw:][:slab/4]
			for b := range qh {
				qh[b] = u[b]>>4 | u[b+16]>>4<<2 | u[b+32]>>4<<4 | u[b+48]>>4<<6
			}
		}
	}
	return nil
}

// integer is the integer at storage row k, column j.
func (w *quant) integer(k, j int) int8 {
	r, c := w.rowStart(k, j), j%slab
	if w.q != nil {
		return w.q[r*slab+c]
	}
	hw := w.hWidth()
	return int8(packed(w.q4[r*slab/2:], w.qh[r*hw:], w.hbits, c)) + w.min
}

// blockIndex is the index in d and dm of storage row k's block, column j.
func (w *quant) blockIndex(k, j int) int {
	return (j/slab*(w.k/w.g.Super)+k/w.g.Super)*slab + j%slab
}

// groupIndex is the index in a and b of storage row k's group, column j.
func (w *quant) groupIndex(k, j int) int {
	return (j/slab*(w.k/w.g.Size)+k/w.g.Size)*slab + j%slab
}

// scale is the float32 scale and offset of storage row k's group, column j.
func (w *quant) scale(k, j int) (s, o float32) {
	var a, b int8
	if w.g.Factored {
		a = w.a[w.groupIndex(k, j)]
		if w.b != nil {
			b = w.b[w.groupIndex(k, j)]
		}
	}
	s = ggmlnum.Scale(w.d[w.blockIndex(k, j)], a, w.g.Factored)
	if w.dm != nil {
		o = ggmlnum.Scale(w.dm[w.blockIndex(k, j)], b, w.g.Factored)
	}
	return s, o
}

// value is the weight at storage row k, column j.
func (w *quant) value(k, j int) float32 {
	s, o := w.scale(k, j)
	return ggmlnum.GroupValue(w.integer(k, j), s, o, w.dm != nil)
}

// float32s is the matrix's values in its own layout.
func (w *quant) float32s() []float32 {
	out := make([]float32, w.k*w.n)
	if !w.transposed {
		w.dequant(out, 0, 0, w.k, w.n)
		return out
	}
	for k := range w.k {
		for j := range w.n {
			out[j*w.k+k] = w.value(k, j)
		}
	}
	return out
}

// row is row r of the matrix in its own layout.
func (w *quant) row(dst []float32, r, cols int) []float32 {
	dst = dst[:cols]
	if !w.transposed {
		w.dequant(dst, r, 0, 1, cols)
		return dst
	}
	for k := range dst {
		dst[k] = w.value(k, r)
	}
	return dst
}

// band is storage rows k0..k0+k of one slab as the kernels read them:
// integers as int8 rows (slab apart) or nibble rows (slab/2 apart, each
// + min), and the float32 scale and offset rows (slab apart) of the
// groups from k0's on, first rows of which come before k0.
type band struct {
	q     []int8
	q4    []byte
	s, o  []float32 // o nil without offsets
	min   int8
	group int
	first int
	// Packed integers (5 and 6 bits; 4 where there are no nibble
	// kernels) stay packed, nibbles lo and hbits more bits each in hi,
	// until a kernel that cannot read them asks (unpack): decode's fused
	// kernel unpacks a group at a time as it goes.
	packed bool
	lo, hi []byte
	hbits  int
	buf    *bandBuf
}

// unpack forms the int8 rows of packed integers in the band's scratch.
func (b *band) unpack() {
	if b.q != nil || !b.packed {
		return
	}
	k := len(b.lo) / (slab / 2)
	if cap(b.buf.q) < k*slab {
		b.buf.q = make([]int8, k*slab)
	}
	b.q = b.buf.q[:k*slab]
	unpackRows(b.q, b.lo, b.hi, b.hbits, b.min, k)
}

// bandBuf is a band's scratch: integers unpacked from 5 and 6 bits,
// and the scales and offsets formed from the factors.
type bandBuf struct {
	q    []int8
	s, o []float32
}

var bandBufs = sync.Pool{New: func() any { return new(bandBuf) }}

// band returns storage rows k0..k0+k of the slab at column j0 (a slab
// boundary), in buf's scratch where it must be formed.
func (w *quant) band(k0, j0, k int, buf *bandBuf) band {
	g0, g1 := k0/w.g.Size, (k0+k-1)/w.g.Size+1
	bl := band{min: w.min, group: w.g.Size, first: k0 - g0*w.g.Size}
	if n := (g1 - g0) * slab; cap(buf.s) < n {
		buf.s, buf.o = make([]float32, n), make([]float32, n)
	}
	bl.s = buf.s[:(g1-g0)*slab]
	if w.dm != nil {
		bl.o = buf.o[:(g1-g0)*slab]
	}
	w.formScales(bl.s, bl.o, g0, g1, j0)
	r := w.rowStart(k0, j0)
	switch {
	case w.q != nil:
		bl.q = w.q[r*slab : (r+k)*slab]
	case w.hbits == 0 && nibbleKernels:
		bl.q4 = w.q4[r*slab/2 : (r+k)*slab/2]
	default:
		hw := w.hWidth()
		bl.packed, bl.lo, bl.hbits, bl.buf = true, w.q4[r*slab/2:(r+k)*slab/2], w.hbits, buf
		if hw > 0 {
			bl.hi = w.qh[r*hw : (r+k)*hw]
		}
	}
	return bl
}

// formScales writes the scales (and offsets) of groups g0..g1 of the slab
// at column j0 into s (and o), one row of slab per group.
func (w *quant) formScales(s, o []float32, g0, g1, j0 int) {
	per := w.g.Super / w.g.Size
	for g := g0; g < g1; {
		n := min(g1-g, per-g%per) // groups left in g's block
		if !w.g.Factored {
			n = g1 - g // each group its own block, their rows consecutive
		}
		at, d := w.groupIndex(g*w.g.Size, j0), w.blockIndex(g*w.g.Size, j0)
		dst := s[(g-g0)*slab : (g-g0+n)*slab]
		switch {
		case !w.g.Factored: // a block is a group: its d rows, widened
			widenBlock(dst, w.d[d:], slab, n, slab)
		default:
			scaleRows(dst, w.d[d:d+slab], w.a[at:at+n*slab], n)
		}
		if o != nil {
			dst := o[(g-g0)*slab : (g-g0+n)*slab]
			if !w.g.Factored {
				widenBlock(dst, w.dm[d:], slab, n, slab)
			} else {
				scaleRows(dst, w.dm[d:d+slab], w.b[at:at+n*slab], n)
			}
		}
		g += n
	}
}

// dequantGeneric: dst[r*ldd+j] = the weight at band row r0+r, column c+j,
// for r < rows, j < n, through the reference body a group at a time.
func (b *band) dequantGeneric(dst []float32, ldd, r0, c, rows, n int) {
	b.unpack()
	b.pieces(r0, rows, func(rp, r, kk int) {
		s, o := b.scaleRow(rp, 0)
		if b.q != nil {
			dequantGeneric(dst[r*ldd:], ldd, b.q[rp*slab:], nil, 0, s, o, c, kk, n)
			return
		}
		dequantGeneric(dst[r*ldd:], ldd, nil, b.q4[rp*slab/2:], b.min, s, o, c, kk, n)
	})
}

// pieces calls f for each run of rows r0..r0+k of the band that lies in
// one group: its first row, its offset r within the run, and its length.
func (b *band) pieces(r0, k int, f func(rp, r, kk int)) {
	for r := 0; r < k; {
		kk := min(k-r, b.group-(b.first+r0+r)%b.group)
		f(r0+r, r, kk)
		r += kk
	}
}

// scaleRow returns the scale and offset rows of band row r's group from
// column c (o nil without offsets).
func (b *band) scaleRow(r, c int) (s, o []float32) {
	g := (b.first+r)/b.group*slab + c
	if b.o != nil {
		o = b.o[g:]
	}
	return b.s[g:], o
}

// dequant writes storage rows k0..k0+rows, columns j0..j0+n into dst,
// stride n, for the tile kernel.
func (w *quant) dequant(dst []float32, k0, j0, rows, n int) {
	buf := bandBufs.Get().(*bandBuf)
	defer bandBufs.Put(buf)
	for c := 0; c < n; {
		jc := j0 + c
		nn := min(n-c, slab-jc%slab)
		bl := w.band(k0, jc-jc%slab, rows, buf)
		bl.pieces(0, rows, func(rp, r, kk int) {
			bl.dequantPiece(dst[r*n+c:], n, rp, jc%slab, kk, nn)
		})
		c += nn
	}
}

// matmulPanel is matmulCols' panel path on a quantised matrix, one slab
// at a time: each slab's rows stream from memory as one contiguous run
// (the column-chunk order interleaved three slabs a kBlock at a time).
// Per element the sums are those of matmulCols: each kSum-deep block
// summed from zero in k order, then added to dst.
func (w *quant) matmulPanel(dst, x []float32, M, K, N, j0, j1 int) {
	acc := getScratch(M * slab)
	defer scratch.Put(acc)
	buf := bandBufs.Get().(*bandBuf)
	defer bandBufs.Put(buf)
	for c0 := j0; c0 < j1; {
		c := c0 % slab
		nn := min(j1-c0, slab-c)
		a := (*acc)[:M*nn]
		for k0 := 0; k0 < K; k0 += kSum {
			clear(a)
			kk := min(kSum, K-k0)
			bl := w.band(k0, c0-c, kk, buf)
			if nn < slab || !bl.axpySlab(a, nn, x[k0:], K, M, kk) {
				bl.pieces(0, kk, func(rp, r, kr int) {
					bl.axpyPiece(a, nn, x[k0+r:], K, rp, c, nn, M, kr)
				})
			}
			addRows(dst[c0:], N, a, nn, M)
		}
		c0 += nn
	}
}

// axpyPiece is axpyPanel on band rows r0..r0+k (one group), columns
// c..c+n of its slab: the assembly takes 16-column multiples of 4 rows
// (axpyPieceKernel; AVX-512 a whole strip of nibbles, axpyPiece4), the
// rest goes through float32 scratch.
func (b *band) axpyPiece(y []float32, ldy int, x []float32, ldx int, r0, c, n, m, k int) {
	b.unpack()
	if b.q4 != nil {
		b.axpyPiece4(y, ldy, x, ldx, r0, c, n, m, k)
		return
	}
	s, o := b.scaleRow(r0, c)
	n16, k4 := axpyPieceKernel(y, ldy, x, ldx, b.q[r0*slab+c:], s, o, n, m, k)
	if k4 < k && n16 > 0 {
		b.axpyPieceWidened(y, ldy, x[k4:], ldx, r0+k4, c, n16, m, k-k4)
	}
	if n16 < n {
		b.axpyPieceWidened(y[n16:], ldy, x, ldx, r0, c+n16, n-n16, m, k)
	}
}

// axpyPiece4 is axpyPiece on nibbles.
func (b *band) axpyPiece4(y []float32, ldy int, x []float32, ldx int, r0, c, n, m, k int) {
	s, o := b.scaleRow(r0, 0)
	nv := axpyPiece4Kernel(y, ldy, x, ldx, b.q4[r0*slab/2:], s, o, b.min, c, n, m, k)
	if nv < n {
		b.axpyPieceWidened(y[nv:], ldy, x, ldx, r0, c+nv, n-nv, m, k)
	}
}

// dequantPiece: dst[r*ldd+j] = the weight at band row r0+r, column c+j,
// for r < rows (one group), j < n: the assembly's columns
// (dequantPieceKernel, dequantPiece4Kernel), then the rest in Go.
func (b *band) dequantPiece(dst []float32, ldd, r0, c, rows, n int) {
	b.unpack()
	var nv int
	if b.q4 != nil {
		s, o := b.scaleRow(r0, 0)
		nv = dequantPiece4Kernel(dst, ldd, b.q4[r0*slab/2:], s, o, b.min, c, rows, n)
	} else {
		s, o := b.scaleRow(r0, c)
		nv = dequantPieceKernel(dst, ldd, b.q[r0*slab+c:], s, o, rows, n)
	}
	if nv < n {
		b.dequantGeneric(dst[nv:], ldd, r0, c+nv, rows, n-nv)
	}
}

// axpySlab is axpyPanel on the band's full slab strip through all its
// k rows, whole groups, in one kernel call; it reports false, doing
// nothing, where there is no such kernel.
func (b *band) axpySlab(y []float32, ldy int, x []float32, ldx int, m, k int) bool {
	if !slabKernels || m == 0 || k == 0 || b.first != 0 || k%b.group != 0 {
		return false
	}
	switch {
	case b.q4 != nil:
		axpySlabQ4Kernel(y, ldy, x, ldx, b.q4, b.s, b.o, b.min, b.group, m, k)
	case b.q == nil && m < 4 && fusedUnpack:
		if len(b.buf.q) < b.group*slab {
			b.buf.q = make([]int8, max(b.group, kSum)*slab)
		}
		axpySlabQHKernel(y, ldy, x, ldx, b.lo, b.hi, b.s, b.o, b.buf.q, b.hbits, b.min, b.group, m, k)
	default:
		b.unpack()
		axpySlabQKernel(y, ldy, x, ldx, b.q, b.s, b.o, b.group, m, k) // four rows share each weight formed
	}
	return true
}

// axpyPieceWidened is axpyPiece through float32 scratch: the pure-Go
// build's, and the assembly's column edges, which then get the float32
// kernels' bits.
func (b *band) axpyPieceWidened(y []float32, ldy int, x []float32, ldx int, r0, c, n, m, k int) {
	if n == 0 || m == 0 || k == 0 {
		return
	}
	buf := getScratch(k * n)
	defer scratch.Put(buf)
	b.dequantGeneric(*buf, n, r0, c, k, n)
	axpyPanel(y, ldy, x, ldx, *buf, n, n, m, k)
}
