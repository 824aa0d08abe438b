package kernels

import (
	"encoding/binary"
	"fmt"
	"sync"
	"unsafe"

	"github.com/llorch/llorch-check/internal/ggmlnum"
	"github.com/llorch/llorch-check/internal/pages"
)

// quant is a quantised matrix held at about its file's size: one small
// integer per weight, stored [K][N] (the reduction dimension outermost, as
// HF's Conv1D holds float weights), and the file's own scale factors: per
// column a float16 d (and dm, for the types with offsets) for every
// super-block of rows and, for ggml's K types, a small integer a (and b)
// for every group of rows. A weight's value is ggml's: the group's scale
// s = d·a rounded to float32 times the integer, plus the offset o = dm·b
// (ggmlnum.Scale, ggmlnum.GroupValue). Products with it are limb products
// (limbs.go): each group's integers meet the activations' integer limbs in
// exact integer sums, which are then scaled in float32.
//
// The columns are cut into slabs of slab (64) columns and the rows into
// blocks of 32, and each slab's blocks are stored one after another, so a
// goroutine working on a few columns streams contiguous memory. Within a
// block the stored integers u = q − min (unsigned) are laid out for
// VPDPBUSD, which multiplies four unsigned bytes of a 32-bit lane by four
// signed ones and adds the four products to the lane: the block's 64
// columns are four strips of 16, one 64-byte vector each, and lane j of a
// strip's vector holds column j's integers of four consecutive rows. For
// 8 bits that is eight quads of rows ([quad][strip][lane][row], 2048
// bytes). Narrower integers are nibbles and higher bits: the nibbles of
// eight rows share a strip's vector, rows r..r+3 in the low nibbles and
// r+4..r+7 in the high ones ([oct][strip][lane][row], 1024 bytes), and
// the bits above (hbits of 1 or 2) are in a plane a vector per strip in
// which byte b of lane j holds, hbits each, column j's rows b, b+4, b+8,
// ... from the lowest bits up: the 32 rows for 5 bits (256 bytes, before
// the nibbles), 16 rows in each of two planes for 6 bits (each before
// its 16 rows' nibbles), so that a kernel reads a block in address order
// (the prefetchers lost a third of the 6-bit rate to the jumps when the
// planes followed the nibbles). A shift and a mask put any quad's high
// bits beside its nibbles (limbs_amd64.s).
type quant struct {
	ints       []byte   // [N/slab][K/32][blockBytes], the last slab padded with zeros
	bits       int      // 4, 5, 6 or 8
	min        int8     // the smallest integer, which a stored 0 stands for
	d, dm      []uint16 // [N/slab][K/super][slab]; dm nil without offsets
	a, b       []int8   // [N/slab][K/group][slab]; nil unless factored, b nil without offsets
	g          ggmlnum.Groups
	k, n       int
	transposed bool // the matrix is the transpose of the storage: [N][K]
}

// limbRows is the rows of a block: the activations' groups (limbs.go).
const limbRows = 32

// newQuant is Quantized's matrix (which see).
func newQuant(rows, cols int, g ggmlnum.Groups, transposed bool, decodeRow func(r int, q []int8, f ggmlnum.Factors) error) (*quant, error) {
	switch {
	case g.Size != 16 && g.Size != 32 || g.Super < g.Size || g.Super%g.Size != 0 || cols%g.Super != 0 || cols%limbRows != 0:
		return nil, fmt.Errorf("kernels: groups of %d in blocks of %d do not divide rows of %d into blocks of 32 (groups of 16 or 32, as ggml's types)", g.Size, g.Super, cols)
	case !g.Factored && g.Super != g.Size:
		return nil, fmt.Errorf("kernels: unfactored groups of %d in blocks of %d", g.Size, g.Super)
	case g.Bits < 4 || g.Bits > 8 || g.Bits == 7 || g.Min < -128 || g.Min+1<<g.Bits > 128:
		return nil, fmt.Errorf("kernels: integers of %d bits from %d are not held (4, 5, 6 or 8 bits within int8)", g.Bits, g.Min)
	}
	K, N := cols, rows
	np := (N + slab - 1) / slab * slab
	w := &quant{g: g, k: K, n: N, transposed: transposed, bits: g.Bits, min: int8(g.Min)}
	w.ints = pages.Make[byte](K*np*g.Bits/8 + 2048)[:K*np*g.Bits/8] // capacity: any block as a [2048]byte (storeIntegers)
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
	// A slab's rows are decoded together (in file order: decodeRow may
	// give pages back behind it) and then stored by a second goroutine
	// while the next slab decodes: the two halves of a quantised load
	// overlap on two cores.
	free, full, done := make(chan *slabRows, 2), make(chan *slabRows), make(chan error, 1)
	for range 2 {
		sr := slabRowsPool.Get().(*slabRows)
		defer slabRowsPool.Put(sr)
		sr.size(K, B, G)
		free <- sr
	}
	go func() {
		var err error
		for sr := range full {
			if err == nil {
				err = w.storeSlab(sr.q, sr.f, sr.r0, sr.nr)
			}
			free <- sr
		}
		done <- err
	}()
	decode := func(sr *slabRows) error {
		for i := range sr.nr {
			fi := ggmlnum.Factors{D: sr.f.D[i*B : (i+1)*B]}
			if g.Offset {
				fi.DM = sr.f.DM[i*B : (i+1)*B]
			}
			if g.Factored {
				fi.A = sr.f.A[i*G : (i+1)*G]
				if g.Offset {
					fi.B = sr.f.B[i*G : (i+1)*G]
				}
			}
			if err := decodeRow(sr.r0+i, sr.q[i*K:(i+1)*K], fi); err != nil {
				return err
			}
		}
		return nil
	}
	var err error
	for r0 := 0; r0 < N && err == nil; r0 += slab {
		sr := <-free
		sr.r0, sr.nr = r0, min(slab, N-r0)
		if err = decode(sr); err == nil {
			full <- sr
		}
	}
	close(full)
	if serr := <-done; err == nil {
		err = serr
	}
	if err != nil {
		return nil, err
	}
	return w, nil
}

func (w *quant) bytes() int64 {
	return int64(len(w.ints)+len(w.a)+len(w.b)) + 2*int64(len(w.d)+len(w.dm))
}

// blockBytes is the bytes of one block: 32 rows of a slab.
func (w *quant) blockBytes() int { return limbRows * slab * w.bits / 8 }

// block is the storage of the block of rows k0..k0+31 of the slab at
// column j0.
func (w *quant) block(k0, j0 int) []byte {
	at := w.blockAt(k0, j0)
	return w.ints[at : at+w.blockBytes()]
}

// blockAt is the offset in ints of the block of rows k0..k0+31 of the
// slab at column j0.
func (w *quant) blockAt(k0, j0 int) int {
	return (j0/slab*(w.k/limbRows) + k0/limbRows) * w.blockBytes()
}

// place says where the stored integer of row r, column c of a block lies:
// the byte of its 8 bits or its nibble (high says which nibble) and, for
// 5 and 6 bits, the byte of its higher bits and their shift there.
func (w *quant) place(r, c int) (at int, high bool, hat, hshift int) {
	lane := c/16*64 + c%16*4
	if w.bits == 8 {
		return r/4*256 + lane + r%4, false, 0, 0
	}
	at, high = r/8*256+lane+r%4, r%8 >= 4
	switch w.bits {
	case 5: // the plane, then the nibbles
		hat, hshift, at = lane+r%4, r/4, at+256
	case 6: // each half's plane, then its nibbles
		half := r / 16 * 768
		hat, hshift, at = half+lane+r%4, 2*(r%16/4), half+256+r%16/8*256+lane+r%4
	}
	return at, high, hat, hshift
}

// slabRows is a slab's file rows as newQuant decodes them: their
// integers and factors, and where they are.
type slabRows struct {
	q      []int8
	f      ggmlnum.Factors
	r0, nr int
}

// slabRowsPool keeps the decoding buffers from one matrix to the next: a
// model's hundreds of matrices each made their own, and the garbage,
// collected late, was a megabyte or two of a small model's peak RSS.
var slabRowsPool = sync.Pool{New: func() any { return new(slabRows) }}

// size makes the buffers hold a slab of rows of K integers, B blocks and
// G groups.
func (sr *slabRows) size(K, B, G int) {
	if cap(sr.q) < slab*K {
		sr.q = make([]int8, slab*K)
	}
	if cap(sr.f.D) < slab*B {
		sr.f.D, sr.f.DM = make([]uint16, slab*B), make([]uint16, slab*B)
	}
	if cap(sr.f.A) < slab*G {
		sr.f.A, sr.f.B = make([]int8, slab*G), make([]int8, slab*G)
	}
	sr.q, sr.f.D, sr.f.DM = sr.q[:slab*K], sr.f.D[:slab*B], sr.f.DM[:slab*B]
	sr.f.A, sr.f.B = sr.f.A[:slab*G], sr.f.B[:slab*G]
}

// storeSlab stores the nr file rows from r0 (a slab's first column):
// their integers q, row after row, and their factors f (each row's
// blocks', then groups', as decodeRow wrote them).
func (w *quant) storeSlab(q []int8, f ggmlnum.Factors, r0, nr int) error {
	if err := w.storeIntegers(q, r0, nr); err != nil {
		return err
	}
	g := w.g
	B, G := w.k/g.Super, w.k/g.Size
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
	return nil
}

// storeIntegers writes the integers of the nr file rows from r0 (a slab's
// first column), q holding them row after row, into the slab's blocks,
// checking each against the type's range. A file row is a column of the
// blocks: its 32 integers of a block are four words of 8 bytes, which
// pack into the block's lanes with shifts and masks (place says the same
// one element at a time, for reading; packed element by element, the
// integers were 60% of a quantised model's load).
func (w *quant) storeIntegers(q []int8, r0, nr int) error {
	K := w.k
	raw := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(q))), len(q))
	const ones = 0x0101010101010101
	sub := uint64(byte(-w.min)) * ones // adding it bytewise subtracts min
	over := uint64(0xff<<w.bits&0xff) * ones
	var u [4]uint64
	for k0 := 0; k0 < K; k0 += limbRows {
		at := w.blockAt(k0, r0)
		blk := (*[2048]byte)(w.ints[at : at+2048]) // the largest block's size (8 bits), within ints' capacity
		for i := range nr {
			lane := i/16*64 + i%16*4
			var bad uint64
			for j := range u {
				v := binary.LittleEndian.Uint64(raw[i*K+k0+8*j:])
				u[j] = (v&^(0x80*ones) + sub&^(0x80*ones)) ^ (v^sub)&(0x80*ones) // bytewise v + sub, no carries
				bad |= u[j] & over
			}
			if bad != 0 {
				return w.outOfRange(q[i*K+k0:i*K+k0+limbRows], r0+i, k0)
			}
			switch w.bits {
			case 8:
				for j, v := range u {
					put32(blk, 2*j*256+lane, uint32(v))
					put32(blk, (2*j+1)*256+lane, uint32(v>>32))
				}
			case 4:
				packNibbles(blk, lane, u[:])
			case 5:
				var h uint64
				for j, v := range u {
					e := v >> 4 & ones
					h |= e&0xffffffff<<(2*j) | e>>32<<(2*j+1)
				}
				put32(blk, lane, uint32(h))
				packNibbles(blk, 256+lane, u[:])
			case 6:
				for half := range 2 {
					e0, e1 := u[2*half]>>4&(3*ones), u[2*half+1]>>4&(3*ones)
					h := e0&0xffffffff | e0>>32<<2 | e1&0xffffffff<<4 | e1>>32<<6
					put32(blk, half*768+lane, uint32(h))
					packNibbles(blk, half*768+256+lane, u[2*half:2*half+2])
				}
			}
		}
	}
	return nil
}

// put32 stores v at blk[at:at+4], little-endian (at+4 <= the block's
// size, which the callers' offsets keep).
func put32(blk *[2048]byte, at int, v uint32) {
	binary.LittleEndian.PutUint32(blk[at&2047:], v)
}

// packNibbles writes the octs of one column's rows (8 a word of u) from
// byte at of blk, the first of its lane: oct o's rows 8o..8o+3 in the low
// nibbles, 8o+4..8o+7 in the high ones, octs 256 bytes apart.
func packNibbles(blk *[2048]byte, at int, u []uint64) {
	const low = 0x0f0f0f0f
	for o, v := range u {
		put32(blk, at+o*256, uint32(v)&low|uint32(v>>32)&low<<4)
	}
}

// outOfRange is the error for the first of a block's integers (of file
// row, from element k0) outside the type's range.
func (w *quant) outOfRange(q []int8, row, k0 int) error {
	for r, v := range q {
		if byte(v-w.min)>>w.bits != 0 {
			return fmt.Errorf("kernels: row %d element %d is %d, outside the %d..%d of %d bits", row, k0+r, v, w.min, int(w.min)+1<<w.bits-1, w.bits)
		}
	}
	return nil
}

// integer is the integer at storage row k, column j.
func (w *quant) integer(k, j int) int8 {
	blk := w.block(k/limbRows*limbRows, j/slab*slab)
	at, high, hat, hshift := w.place(k%limbRows, j%slab)
	u := blk[at]
	switch {
	case w.bits == 8:
		return int8(u + byte(w.min))
	case high:
		u >>= 4
	default:
		u &= 0xf
	}
	if w.bits > 4 {
		u |= blk[hat] >> hshift & (1<<(w.bits-4) - 1) << 4
	}
	return int8(u) + w.min
}

// unpackBlock writes a block's integers, row by row.
func (w *quant) unpackBlock(q *[limbRows][slab]int8, blk []byte) {
	for r := range limbRows {
		at0, high, hat0, hshift := w.place(r, 0)
		for c := range slab {
			lane := c/16*64 + c%16*4 // place's offset of column c over column 0's
			u := blk[at0+lane]
			switch {
			case w.bits == 8:
				q[r][c] = int8(u + byte(w.min))
				continue
			case high:
				u >>= 4
			default:
				u &= 0xf
			}
			if w.bits > 4 {
				u |= blk[hat0+lane] >> hshift & (1<<(w.bits-4) - 1) << 4
			}
			q[r][c] = int8(u) + w.min
		}
	}
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
	for k := range w.k {
		for j := range w.n {
			if w.transposed {
				out[j*w.k+k] = w.value(k, j)
			} else {
				out[k*w.n+j] = w.value(k, j)
			}
		}
	}
	return out
}

// row is row r of the matrix in its own layout. A transposed matrix's
// row is a storage column, its groups runs of g.Size along it: each
// group's scale is formed once (an embedding row a token).
func (w *quant) row(dst []float32, r, cols int) []float32 {
	dst = dst[:cols]
	if !w.transposed {
		for i := range dst {
			dst[i] = w.value(r, i)
		}
		return dst
	}
	var s, o float32
	for i := range dst {
		if i%w.g.Size == 0 {
			s, o = w.scale(i, r)
		}
		dst[i] = ggmlnum.GroupValue(w.integer(i, r), s, o, w.dm != nil)
	}
	return dst
}

// prefetchScales asks for the factors formScales reads for the slab at
// column j0, if there is one: they lie apart from the slab's integers,
// outside the kernels' prefetched stream, and formScales' first reads
// of them stalled (scaleRows was 7% of a MoE Q4_K_M prefill, mostly
// waiting; notes 45).
func (w *quant) prefetchScales(j0 int) {
	if j0 >= w.n {
		return
	}
	i := j0 / slab
	B, G := w.k/w.g.Super, w.k/w.g.Size
	for _, f := range [...][]uint16{w.d, w.dm} {
		if f != nil {
			prefetchBytes((*byte)(unsafe.Pointer(&f[i*B*slab])), 2*B*slab)
		}
	}
	for _, f := range [...][]int8{w.a, w.b} {
		if f != nil {
			prefetchBytes((*byte)(unsafe.Pointer(&f[i*G*slab])), G*slab)
		}
	}
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
