package kernels

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/llorch/llorch-check/internal/ggmlnum"
	"github.com/stretchr/testify/require"
)

// nativeQuant is a quantised tensor as a file stores it: rows of cols
// integers and each row's factors.
type nativeQuant struct {
	rows, cols int
	g          ggmlnum.Groups
	q          []int8
	f          ggmlnum.Factors
}

// The integer ranges and factoring of the ggml types: Q8_0's 8 bits,
// Q4_0's 4 from -8, Q5_0's 5 from -16 (plain), Q4_K's 4 and Q5_K's 5
// from 0 with offsets, Q6_K's 6 from -32 (factored).
var (
	eightBits = ggmlnum.Groups{Bits: 8, Min: -128}
	q40Bits   = ggmlnum.Groups{Bits: 4, Min: -8}
	q50Bits   = ggmlnum.Groups{Bits: 5, Min: -16}
	fourBits  = ggmlnum.Groups{Bits: 4, Min: 0, Factored: true}
	fiveBits  = ggmlnum.Groups{Bits: 5, Min: 0, Factored: true}
	sixBits   = ggmlnum.Groups{Bits: 6, Min: -32, Factored: true}
)

// typeCases are the integer widths and factorings the tests run, with and
// without offsets.
var typeCases = []struct {
	offset bool
	bits   ggmlnum.Groups
}{{false, sixBits}, {true, sixBits}, {false, q40Bits}, {true, fourBits}, {true, fiveBits}, {false, q50Bits}, {true, eightBits}, {false, eightBits}}

// randomQuant draws integers in the range of bits, float16 factors and,
// for factored types, int8 group factors; a factored type's blocks are
// bits.Super or else the largest of 4, 2 or 1 groups that divides cols.
func randomQuant(r *rand.Rand, rows, cols, group int, offset bool, bits ggmlnum.Groups) nativeQuant {
	g := bits
	g.Size, g.Offset = group, offset
	if g.Super == 0 || !g.Factored {
		g.Super = group
	}
	if g.Factored && bits.Super == 0 {
		for _, per := range []int{4, 2} {
			if cols%(per*group) == 0 {
				g.Super = per * group
				break
			}
		}
	}
	n := nativeQuant{rows: rows, cols: cols, g: g, q: make([]int8, rows*cols)}
	for i := range n.q {
		n.q[i] = int8(r.IntN(1<<g.Bits) + g.Min)
	}
	half := func() uint16 { return ggmlnum.Float32To16(float32(r.NormFloat64() / 64)) }
	blocks, groups := rows*cols/g.Super, rows*cols/g.Size
	for range blocks {
		n.f.D = append(n.f.D, half())
		if offset {
			n.f.DM = append(n.f.DM, half())
		}
	}
	for i := 0; g.Factored && i < groups; i++ {
		n.f.A = append(n.f.A, int8(r.IntN(256)-128))
		if offset {
			n.f.B = append(n.f.B, int8(r.IntN(64)-63))
		}
	}
	return n
}

func (n nativeQuant) decodeRow(r int, q []int8, f ggmlnum.Factors) error {
	copy(q, n.q[r*n.cols:(r+1)*n.cols])
	b, g := n.cols/n.g.Super, n.cols/n.g.Size
	copy(f.D, n.f.D[r*b:(r+1)*b])
	if n.g.Offset {
		copy(f.DM, n.f.DM[r*b:(r+1)*b])
	}
	if n.g.Factored {
		copy(f.A, n.f.A[r*g:(r+1)*g])
		if n.g.Offset {
			copy(f.B, n.f.B[r*g:(r+1)*g])
		}
	}
	return nil
}

// value is element (r, c) of the native tensor, as ggml computes it.
func (n nativeQuant) value(r, c int) float32 {
	i := r*n.cols + c
	bl, g := i/n.g.Super, i/n.g.Size
	var a, b int8
	var o float32
	if n.g.Factored {
		a = n.f.A[g]
		if n.g.Offset {
			b = n.f.B[g]
		}
	}
	if n.g.Offset {
		o = ggmlnum.Scale(n.f.DM[bl], b, n.g.Factored)
	}
	return ggmlnum.GroupValue(n.q[i], ggmlnum.Scale(n.f.D[bl], a, n.g.Factored), o, n.g.Offset)
}

// transposed is the tensor's values as a float32 [cols][rows] matrix,
// formed without the kernels.
func (n nativeQuant) transposed() []float32 {
	out := make([]float32, n.rows*n.cols)
	for r := range n.rows {
		for c := range n.cols {
			out[c*n.rows+r] = n.value(r, c)
		}
	}
	return out
}

func (n nativeQuant) matrix(t testing.TB, transposed bool) Matrix {
	t.Helper()
	m, err := Quantized(n.rows, n.cols, n.g, transposed, n.decodeRow)
	require.NoError(t, err)
	return m
}

// TestQuantizedLayout: the matrix is the file's transpose, or with
// transposed its own layout, value for value, through Float32s and Row.
func TestQuantizedLayout(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for _, c := range typeCases {
		n := randomQuant(r, 101, 64, 16, c.offset, c.bits)
		kn, nk := n.matrix(t, false).Float32s(), n.matrix(t, true).Float32s()
		for row := range n.rows {
			for c := range n.cols {
				v := math.Float32bits(n.value(row, c))
				require.Equal(t, v, math.Float32bits(kn[c*n.rows+row]), "transpose (%d,%d)", row, c)
				require.Equal(t, v, math.Float32bits(nk[row*n.cols+c]), "own layout (%d,%d)", row, c)
			}
		}
		buf := make([]float32, n.cols)
		require.Equal(t, nk[5*n.cols:6*n.cols], n.matrix(t, true).Row(buf, 5, n.cols))
		require.Equal(t, kn[7*n.rows:8*n.rows], n.matrix(t, false).Row(make([]float32, n.rows), 7, n.rows))
		require.EqualValues(t, n.rows*n.cols, n.matrix(t, false).Len())
	}
	q8 := ggmlnum.Groups{Size: 32, Super: 32, Bits: 8, Min: -128}
	bad := errors.New("bad block")
	for _, c := range []struct {
		name string
		cols int
		g    ggmlnum.Groups
		want string
	}{
		{"groups that do not divide a row", 30, ggmlnum.Groups{Size: 16, Super: 16, Bits: 8, Min: -128}, "do not divide"},
		{"blocks that do not divide a row", 32, ggmlnum.Groups{Size: 16, Super: 48, Bits: 8, Min: -128, Factored: true}, "do not divide"},
		{"unfactored blocks of several groups", 64, ggmlnum.Groups{Size: 16, Super: 32, Bits: 8, Min: -128}, "unfactored"},
		{"integers beyond int8", 32, ggmlnum.Groups{Size: 32, Super: 32, Bits: 8, Min: -127}, "not held"},
		{"7-bit integers", 32, ggmlnum.Groups{Size: 32, Super: 32, Bits: 7, Min: -64}, "not held"},
	} {
		_, err := Quantized(4, c.cols, c.g, false, nil)
		require.ErrorContains(t, err, c.want, c.name)
	}
	_, err := Quantized(4, 32, q8, false, func(int, []int8, ggmlnum.Factors) error { return bad })
	require.ErrorIs(t, err, bad)
	wide := randomQuant(r, 4, 32, 32, false, sixBits)
	wide.g.Bits, wide.g.Min = 4, 0
	_, err = Quantized(4, 32, wide.g, false, wide.decodeRow)
	require.ErrorContains(t, err, "outside", "a block whose integers exceed the declared 4 bits")
}

// TestQuantBytes: a quantised matrix takes its file's bytes, give or take
// the last slab's padding: Q6_K's 6.5625 bits a weight as 6.5625 (6-bit
// integers, an int8 factor per 16, a float16 per 256), Q4_K's 4.5 as 4.625
// (its 6-bit group factors as int8), Q8_0's 8.5 as 8.5.
func TestQuantBytes(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, c := range []struct {
		g          ggmlnum.Groups
		group      int
		offset     bool
		bitsWeight float64
	}{{sixBits, 16, false, 6.5625}, {fourBits, 32, true, 4.625}, {fiveBits, 32, true, 5.625}, {eightBits, 32, false, 8.5}, {q40Bits, 32, false, 4.5}} {
		g := c.g
		g.Super = 256 // as the K types hold them; ignored for the others
		n := randomQuant(r, 128, 1024, c.group, c.offset, g)
		got := float64(n.matrix(t, false).Bytes()) * 8 / float64(n.rows*n.cols)
		require.InDelta(t, c.bitsWeight, got, 1e-9, "%+v", c.g)
	}
}

// TestScaleRows: the vector kernel that forms factored scales gives the
// generic code's bits.
func TestScaleRows(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	d, a := make([]uint16, slab), make([]int8, 9*slab)
	for i := range d {
		d[i] = ggmlnum.Float32To16(float32(r.NormFloat64()))
	}
	d[3], d[4] = 0x0001, 0x8400 // a subnormal, a negative normal
	for i := range a {
		a[i] = int8(r.IntN(256) - 128)
	}
	got, want := make([]float32, 9*slab), make([]float32, 9*slab)
	scaleRows(got, d, a, 9)
	scaleRowsGeneric(want, d, a, 9)
	require.Equal(t, want, got)
}

// quantShapes are the products the quantised tests run: decode, batches,
// prefill, ragged last slabs, several column chunks, groups of 16 and 32;
// for the AMX tiles (blocks of 16 rows) rows 16+16+5 and 16+2, the rest
// left to the VNNI kernels.
var quantShapes = []struct{ M, K, N, group int }{
	{1, 32, 17, 32}, {1, 768, 2304, 32}, {2, 320, 515, 16}, {3, 64, 64, 32}, {1, 64, 100, 32},
	{3, 96, 160, 16}, {4, 256, 200, 32}, {5, 128, 97, 16}, {8, 768, 768, 32}, {13, 288, 531, 32},
	{128, 96, 384, 16}, {37, 288, 192, 32}, {18, 64, 128, 32},
	// One row short enough to hold no NaN (TestLimbKernels puts one in
	// each row from 256 values on), over several blocks: a row's slab
	// kernels (limbSlabStored) move on to each block's factors.
	{1, 192, 128, 32}, {1, 192, 128, 16},
}

// TestQuantMatMulFloat32Class: a limb product's error against the float64
// product of the weights' values is float32's: its RMS over each type's
// outputs is within 1.5x of float32 weights holding the same values (the
// kernels' arithmetic before limbs), and every output is within the
// rounding bound of its terms: 2^-23 of each group's largest activation
// for the limbs' rounding, K float32 roundings of Σ|x·w| for the sums.
func TestQuantMatMulFloat32Class(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	const u = 1.0 / (1 << 24)
	for _, c := range typeCases {
		var errLimbs, errFloat float64
		for _, s := range quantShapes {
			n := randomQuant(r, s.N, s.K, s.group, c.offset, c.bits)
			x := randSlice(r, s.M*s.K)
			got, f32 := randSlice(r, s.M*s.N), make([]float32, s.M*s.N)
			copy(f32, got)
			want, bound := make([]float64, s.M*s.N), make([]float64, s.M*s.N)
			vals := n.transposed()
			big := make([]float64, s.M*s.K/32) // each group's largest |x|
			for i, v := range x {
				big[i/32] = math.Max(big[i/32], math.Abs(float64(v)))
			}
			for i := range s.M {
				for j := range s.N {
					acc, abs, lost := float64(got[i*s.N+j]), math.Abs(float64(got[i*s.N+j])), 0.0
					for k := range s.K {
						p := float64(x[i*s.K+k]) * float64(vals[k*s.N+j])
						acc += p
						abs += math.Abs(p)
						lost += big[(i*s.K+k)/32] * math.Abs(float64(vals[k*s.N+j]))
					}
					want[i*s.N+j], bound[i*s.N+j] = acc, 2*u*lost+float64(s.K)*u*abs
				}
			}
			MatMulAcc(got, x, n.matrix(t, false), s.M, s.K, s.N)
			MatMulAcc(f32, x, Float32(vals), s.M, s.K, s.N)
			for i := range want {
				if d := math.Abs(float64(got[i]) - want[i]); d > bound[i] {
					t.Fatalf("%+v offset=%t bits=%d [%d]: got %g, want %g, |error| %.3g beyond the bound %.3g", s, c.offset, c.bits.Bits, i, got[i], want[i], d, bound[i])
				}
				errLimbs += math.Pow(float64(got[i])-want[i], 2)
				errFloat += math.Pow(float64(f32[i])-want[i], 2)
			}
		}
		ratio := math.Sqrt(errLimbs / errFloat)
		t.Logf("offset=%t bits=%d: RMS error %.3gx float32 weights'", c.offset, c.bits.Bits, ratio)
		require.Less(t, ratio, 1.5, "offset=%t bits=%d", c.offset, c.bits.Bits)
	}
}

// TestQuantMatMulRowsIndependent: each row of a product gets the bits it
// gets alone, whatever the rows beside it, serial or parallel, and
// the overwrite (MatMulT's, MatMulBias's without a bias) is MatMulAcc's
// sum from zero.
func TestQuantMatMulRowsIndependent(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 18))
	for _, s := range quantShapes {
		for _, c := range typeCases {
			n := randomQuant(r, s.N, s.K, s.group, c.offset, c.bits)
			w := n.matrix(t, false)
			x, dst := randSlice(r, s.M*s.K), randSlice(r, s.M*s.N)
			all := slices.Clone(dst)
			MatMulAcc(all, x, w, s.M, s.K, s.N)
			for i := range s.M {
				one := slices.Clone(dst[i*s.N : (i+1)*s.N])
				MatMulAcc(one, x[i*s.K:(i+1)*s.K], w, 1, s.K, s.N)
				require.Equal(t, one, all[i*s.N:(i+1)*s.N], "%+v bits=%d row %d", s, c.bits.Bits, i)
			}
			zero, acc := randSlice(r, s.M*s.N), make([]float32, s.M*s.N)
			MatMulBias(zero, x, w, nil, s.M, s.K, s.N)
			MatMulAcc(acc, x, w, s.M, s.K, s.N)
			require.Equal(t, acc, zero)
		}
	}
}

// TestQuantMatMulTAllocs: the LM head's product on a quantised embedding
// allocates no more than MatMulAcc on the same integers in the other
// layout (it once copied the matrix to clear its transposed flag: one
// allocation a step). Counted without the race detector (make test's
// LLORCH_KERNELS=avx2 and generic steps), whose pools allocate at random.
func TestQuantMatMulTAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts under the race detector are its pools', not the code's; the steps without it count them")
	}
	r := rand.New(rand.NewPCG(17, 18))
	const V, C, R = 1037, 64, 1
	n := randomQuant(r, V, C, 32, true, fourBits)
	lm, c := n.matrix(t, true), n.matrix(t, false)
	x, dst := randSlice(r, R*C), make([]float32, R*V)
	t2 := testing.AllocsPerRun(20, func() { MatMulT(dst, x, lm, R, C, V) })
	acc := testing.AllocsPerRun(20, func() { MatMulAcc(dst, x, c, R, C, V) })
	require.LessOrEqual(t, t2, acc, "MatMulT allocates %v a call, MatMulAcc %v", t2, acc)
}

// TestQuantMatMulT: the LM head on a quantised embedding is x·Wᵀ, within
// float32 rounding of a float64 sum, overwriting what dst held.
func TestQuantMatMulT(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 16))
	const V, C = 1037, 64
	for _, R := range []int{1, 3, 8} {
		n := randomQuant(r, V, C, 32, true, fourBits)
		x, got := randSlice(r, R*C), randSlice(r, R*V)
		MatMulT(got, x, n.matrix(t, true), R, C, V)
		for i := range R {
			for v := range V {
				var want float64
				for c := range C {
					want += float64(x[i*C+c]) * float64(n.value(v, c))
				}
				closeTo(t, got[i*V+v], want, C, fmt.Sprintf("R=%d logit [%d,%d]", R, i, v))
			}
		}
	}
}

// BenchmarkMatmulDecodeQuant: a decode step's product with GPT-2's c_fc
// shape, every integer width (6 bits in Q6_K's groups of 16 too), and
// with a tenth of its columns, which stays in L2: the kernels' arithmetic
// apart from streaming memory.
func BenchmarkMatmulDecodeQuant(b *testing.B) {
	for _, N := range []int{3072, 320} {
		for _, c := range []struct {
			bits  ggmlnum.Groups
			group int
		}{{sixBits, 16}, {sixBits, 32}, {fiveBits, 32}, {fourBits, 32}, {eightBits, 32}, {q40Bits, 32}, {q50Bits, 32}} {
			name := fmt.Sprintf("N=%d/bits=%d/g%d", N, c.bits.Bits, c.group)
			if !c.bits.Factored && c.bits.Bits < 8 {
				name += "/unfactored" // Q4_0, Q5_0
			}
			b.Run(name, func(b *testing.B) {
				r := rand.New(rand.NewPCG(1, 1))
				const K = 768
				n := randomQuant(r, N, K, c.group, false, c.bits)
				w := n.matrix(b, false)
				x, dst := randSlice(r, K), make([]float32, N)
				for b.Loop() {
					MatMulAcc(dst, x, w, 1, K, N)
				}
				b.ReportMetric(float64(w.Bytes())*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
			})
		}
	}
}

// BenchmarkMatmulPrefillQuant: a 128-row product (a prefill's) with
// GPT-2's attention projection shape, every integer width (6 bits in
// Q6_K's groups of 16): the two-row limb kernels, the split and the
// formed scales, in multiply-adds a second.
func BenchmarkMatmulPrefillQuant(b *testing.B) {
	for _, c := range []struct {
		bits  ggmlnum.Groups
		group int
	}{{sixBits, 16}, {fiveBits, 32}, {fourBits, 32}, {eightBits, 32}} {
		b.Run(fmt.Sprintf("bits=%d/g%d", c.bits.Bits, c.group), func(b *testing.B) {
			r := rand.New(rand.NewPCG(1, 1))
			const M, K, N = 128, 768, 768
			n := randomQuant(r, N, K, c.group, false, c.bits)
			w := n.matrix(b, false)
			x, dst := randSlice(r, M*K), make([]float32, M*N)
			for b.Loop() {
				MatMulAcc(dst, x, w, M, K, N)
			}
			b.ReportMetric(float64(M*K*N)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GMAC/s")
		})
	}
}

// BenchmarkSplitLimbs: one row of Gemma-3-1B's FFN width cut into limb
// records, in bytes of activations a second. A legacy SSE MOVQ in its
// loop made it 17x slower on an Emerald Rapids Xeon (notes 41).
func BenchmarkSplitLimbs(b *testing.B) {
	const K = 6912
	x := make([]float32, K)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	rec := make([]byte, K/limbRows*limbRecord)
	b.SetBytes(4 * K)
	for b.Loop() {
		splitLimbs(rec, x, -128, 32)
	}
}
