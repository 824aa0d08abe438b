package kernels

import "fmt"

// quant is a quantised matrix as the kernels read it: one small integer per
// weight, stored [K][N] (the reduction dimension outermost, as HF's Conv1D
// holds float weights), and per column a float32 scale, and for the
// asymmetric types an offset, for every group of consecutive rows. A
// weight's value is ggml's: scale·q rounded to float32, then + offset
// rounded (gguf.GroupValue). The kernels form that value in a register
// and use it as the float32 kernels use a loaded weight, so a quantised
// matrix gives the bits of float32 weights holding its values while a
// decode step streams about a quarter of the bytes.
//
// The columns are cut into slabs of slab columns, each stored whole
// ([K][slab] integers, then its [K/group][slab] scales and offsets), so a
// goroutine working on a few columns streams contiguous memory: with
// plain [K][N] rows, a 128-column share of a decode step read 128-byte
// runs a row apart and the prefetchers never caught up.
//
// Integers of 4 bits or fewer are packed two to a byte (q4): byte b of a
// slab row holds column b in its low nibble and column b+32 in its high
// one, each as q − min, so that a 256-bit load covers a 64-column row.
type quant struct {
	q          []int8    // [N/slab][K][slab], the last slab padded; nil if q4
	q4         []byte    // [N/slab][K][slab/2] nibbles; nil if q
	min        int8      // the smallest integer, which a nibble of 0 stands for
	s, o       []float32 // [N/slab][K/group][slab]; o is nil without offsets
	group      int       // rows per scale: 32, or 16 for Q6_K
	k, n       int
	transposed bool // the matrix is the transpose of the storage: [N][K]
}

// Groups says how a quantised tensor's weights are formed: each Size
// consecutive elements of a row share a scale, and an offset if Offset;
// the integers lie in [Min, Min+2^Bits).
type Groups struct {
	Size   int
	Offset bool
	Bits   int
	Min    int
}

// slab is the column width of a quant slab: 64 bytes of integers a row.
const slab = 64

// Quantized builds a matrix from a quantised tensor as a file stores it:
// rows rows of cols elements, each run of group elements along a row
// sharing a scale (and an offset, if offset). decodeRow fills row r's
// integers (cols), scales and offsets (cols/group each; o is nil without
// offsets), as gguf.DecodeGroups does. The kernels keep the transpose,
// [cols][rows], so that the reduction runs along the file's rows:
// transposed false makes the matrix that transpose (a GGUF [out][in]
// weight becomes HF Conv1D's [in,out], read by MatMulAcc), true keeps the
// file's own layout (the token embedding [V][C], read by MatMulT and Row).
func Quantized(rows, cols int, g Groups, transposed bool, decodeRow func(r int, q []int8, s, o []float32) error) (Matrix, error) {
	group, offset := g.Size, g.Offset
	if group <= 0 || group%4 != 0 || cols%group != 0 {
		return Matrix{}, fmt.Errorf("kernels: groups of %d do not divide rows of %d into multiples of 4", group, cols)
	}
	if g.Bits < 1 || g.Bits > 8 || g.Min < -128 || g.Min+1<<g.Bits > 128 {
		return Matrix{}, fmt.Errorf("kernels: integers of %d bits from %d do not fit in int8", g.Bits, g.Min)
	}
	K, N, G := cols, rows, cols/group
	np := (N + slab - 1) / slab * slab
	w := &quant{s: make([]float32, G*np), group: group, k: K, n: N, transposed: transposed, min: int8(g.Min)}
	if g.Bits <= 4 {
		w.q4 = make([]byte, K*np/2)
	} else {
		w.q = make([]int8, K*np)
	}
	if offset {
		w.o = make([]float32, G*np)
	}
	// A slab's rows are decoded together and written out column by
	// column, so the transpose writes runs of slab bytes.
	q, s, o := make([]int8, slab*K), make([]float32, slab*G), make([]float32, slab*G)
	for r0 := 0; r0 < N; r0 += slab {
		nr := min(slab, N-r0)
		for i := range nr {
			var oi []float32
			if offset {
				oi = o[i*G : (i+1)*G]
			}
			if err := decodeRow(r0+i, q[i*K:(i+1)*K], s[i*G:(i+1)*G], oi); err != nil {
				return Matrix{}, err
			}
		}
		for k := range K {
			if w.q4 == nil {
				dst := w.q[w.qIndex(k, r0):][:nr]
				for i := range dst {
					dst[i] = q[i*K+k]
				}
				continue
			}
			row := w.q4[w.q4RowStart(k, r0):][:slab/2] // r0 starts a slab
			for i := range nr {
				v := q[i*K+k]
				if v < w.min || int(v-w.min) > 15 {
					return Matrix{}, fmt.Errorf("kernels: row %d element %d is %d, outside the %d..%d of 4 bits", r0+i, k, v, w.min, int(w.min)+15)
				}
				row[i%(slab/2)] |= byte(v-w.min) << (4 * (i / (slab / 2)))
			}
		}
		for g := range G {
			for i := range nr {
				w.s[w.sIndex(g*group, r0+i)] = s[i*G+g]
				if offset {
					w.o[w.sIndex(g*group, r0+i)] = o[i*G+g]
				}
			}
		}
	}
	return Matrix{q: w}, nil
}

func (w *quant) bytes() int64 { return int64(len(w.q)+len(w.q4)) + 4*int64(len(w.s)+len(w.o)) }

// qIndex is the index in q of storage row k, column j; rows of a slab are
// slab apart.
func (w *quant) qIndex(k, j int) int { return (j/slab*w.k+k)*slab + j%slab }

// q4Index is the byte of q4 holding storage row k, column j, and which
// nibble (0 low, 1 high).
func (w *quant) q4Index(k, j int) (int, int) {
	c := j % slab
	return w.q4RowStart(k, j) + c%(slab/2), c / (slab / 2)
}

// q4RowStart is where storage row k of column j's slab starts in q4.
func (w *quant) q4RowStart(k, j int) int { return (j/slab*w.k + k) * (slab / 2) }

// integer is the integer at storage row k, column j.
func (w *quant) integer(k, j int) int8 {
	if w.q4 == nil {
		return w.q[w.qIndex(k, j)]
	}
	b, hi := w.q4Index(k, j)
	return int8(w.q4[b]>>(4*hi)&0xf) + w.min
}

// sIndex is the index in s and o of the scale of storage row k, column j.
func (w *quant) sIndex(k, j int) int {
	return (j/slab*(w.k/w.group)+k/w.group)*slab + j%slab
}

// value is the weight at storage row k, column j.
func (w *quant) value(k, j int) float32 {
	g := w.sIndex(k, j)
	v := float32(float32(w.integer(k, j)) * w.s[g])
	if w.o != nil {
		v = float32(v + w.o[g])
	}
	return v
}

// dequantGeneric: dst[r*ldd+j] = the weight at storage row k0+r, column
// j0+j, for r < rows, j < n.
func (w *quant) dequantGeneric(dst []float32, ldd, k0, j0, rows, n int) {
	for r := range rows {
		d := dst[r*ldd : r*ldd+n]
		for j := range d {
			d[j] = w.value(k0+r, j0+j)
		}
	}
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

// pieces calls f for each piece of rows k0..k0+k and columns j0..j0+n
// that lies in one group and one slab: its first row and column, and
// their offsets r and c within the block.
func (w *quant) pieces(k0, j0, k, n int, f func(kp, jp, r, c, kk, nn int)) {
	for c := 0; c < n; {
		nn := min(n-c, slab-(j0+c)%slab)
		for r := 0; r < k; {
			kk := min(k-r, w.group-(k0+r)%w.group)
			f(k0+r, j0+c, r, c, kk, nn)
			r += kk
		}
		c += nn
	}
}

// dequant is dequantGeneric through the vector kernel where there is one.
func (w *quant) dequant(dst []float32, k0, j0, rows, n int) {
	w.pieces(k0, j0, rows, n, func(kp, jp, r, c, kk, nn int) {
		w.dequantPiece(dst[r*n+c:], n, kp, jp, kk, nn)
	})
}

// axpyPanel is axpyPanel on the weights at storage rows k0..k0+k and
// columns j0..j0+n: y[i,0:n] += Σ x[i,k']·w[k0+k',j0:j0+n] for i < m.
// Each column still sums its rows in k order, whatever the pieces.
func (w *quant) axpyPanel(y []float32, ldy int, x []float32, ldx int, k0, j0, n, m, k int) {
	w.pieces(k0, j0, k, n, func(kp, jp, r, c, kk, nn int) {
		w.axpyPiece(y[c:], ldy, x[r:], ldx, kp, jp, nn, m, kk)
	})
}

// matmulPanel is matmulCols' panel path on a quantised matrix, one slab
// at a time: each slab's rows stream from memory as one contiguous run
// (the column-chunk order interleaved three slabs a kBlock at a time).
// Per element the sums are those of matmulCols: each kSum-deep block
// summed from zero in k order, then added to dst.
func (w *quant) matmulPanel(dst, x []float32, M, K, N, j0, j1 int) {
	acc := getScratch(M * slab)
	defer scratch.Put(acc)
	for c0 := j0; c0 < j1; {
		nn := min(j1-c0, slab-c0%slab)
		a := (*acc)[:M*nn]
		for k0 := 0; k0 < K; k0 += kSum {
			clear(a)
			kk := min(kSum, K-k0)
			if nn < slab || !w.axpySlab(a, nn, x[k0:], K, k0, c0, M, kk) {
				w.axpyPanel(a, nn, x[k0:], K, k0, c0, nn, M, kk)
			}
			addRows(dst[c0:], N, a, nn, M)
		}
		c0 += nn
	}
}

// axpyPieceWidened is axpyPiece through float32 scratch: the pure-Go
// build's, and the assembly's column edges, which then get the float32
// kernels' bits.
func (w *quant) axpyPieceWidened(y []float32, ldy int, x []float32, ldx int, k0, j0, n, m, k int) {
	if n == 0 || m == 0 || k == 0 {
		return
	}
	buf := getScratch(k * n)
	defer scratch.Put(buf)
	w.dequantGeneric(*buf, n, k0, j0, k, n)
	axpyPanel(y, ldy, x, ldx, *buf, n, n, m, k)
}
