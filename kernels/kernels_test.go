package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/llorch/llorch-check/internal/ggmlnum"
	"github.com/stretchr/testify/require"
)

func randSlice(r *rand.Rand, n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(r.NormFloat64())
	}
	return s
}

// closeTo allows for the kernels' different summation order (and FMA):
// float32 rounding of a k-term sum of unit-scale products.
func closeTo(t *testing.T, got float32, want float64, k int, what string) {
	t.Helper()
	tol := 1e-5 * math.Sqrt(float64(k)) * max(1, math.Abs(want))
	if math.Abs(float64(got)-want) > tol {
		t.Fatalf("%s: got %g, want %g (tol %g)", what, got, want, tol)
	}
}

// TestMatmulAcc checks dst += x·w against a float64 triple loop on sizes
// that are not multiples of the kernels' 16 columns, 4 rows or 8-row
// blocks, plus GPT-2-like ones, with strides that differ from the widths.
func TestMatmulAcc(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, s := range [][3]int{{1, 1, 1}, {1, 3, 17}, {2, 5, 33}, {3, 7, 15}, {1, 64, 16}, {9, 13, 47},
		{17, 67, 129}, {1, 768, 2304}, {8, 768, 768}, {5, 130, 300}, {13, 258, 531}} {
		M, K, N := s[0], s[1], s[2]
		t.Run(fmt.Sprintf("%dx%dx%d", M, K, N), func(t *testing.T) {
			x, w, dst := randSlice(r, M*K), randSlice(r, K*N), randSlice(r, M*N)
			want := make([]float64, M*N)
			for i := 0; i < M; i++ {
				for j := 0; j < N; j++ {
					acc := float64(dst[i*N+j])
					for k := 0; k < K; k++ {
						acc += float64(x[i*K+k]) * float64(w[k*N+j])
					}
					want[i*N+j] = acc
				}
			}
			MatMulAcc(dst, x, Float32(w), M, K, N)
			for i := range want {
				closeTo(t, dst[i], want[i], K, fmt.Sprintf("element %d", i))
			}
		})
	}
}

// TestMatMulBias: dst = bias + x·w is MatMulAcc's bits on dst set to the
// bias in every row (zeros for none), whatever dst held, for each weight
// kind and for products run on one core and shared out.
func TestMatMulBias(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, s := range [][3]int{{1, 5, 33}, {3, 64, 100}, {128, 96, 384}, {8, 768, 768}} {
		M, K, N := s[0], s[1], s[2]
		vals := randSlice(r, K*N)
		f16, err := ToFloat16(vals)
		require.NoError(t, err)
		slabs, err := Slabbed(Float32(vals), K, N)
		require.NoError(t, err)
		bf16, _ := halfMatrixOf(r, bfloat16, K*N)
		weights := map[string]Matrix{"float32": Float32(vals), "float16": Float16(f16), "bfloat16": bf16, "slabs": slabs}
		if K%32 == 0 {
			weights["quantised"] = randomQuant(r, N, K, 32, true, fourBits).matrix(t, false)
		}
		for name, w := range weights {
			x, bias := randSlice(r, M*K), randSlice(r, N)
			for _, b := range [][]float32{bias, nil} {
				want := make([]float32, M*N)
				for i := 0; b != nil && i < M; i++ {
					copy(want[i*N:(i+1)*N], b)
				}
				MatMulAcc(want, x, w, M, K, N)
				got := randSlice(r, M*N)
				MatMulBias(got, x, w, b, M, K, N)
				require.Equal(t, want, got, "%s %dx%dx%d bias %t", name, M, K, N, b != nil)
			}
		}
	}
}

// TestAxpyPanelStrides runs the panel kernel on a sub-block of larger
// matrices and checks that nothing outside the block is written.
func TestAxpyPanelStrides(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	const ldy, ldx, ldw = 53, 41, 61
	for _, s := range [][3]int{{3, 35, 21}, {1, 16, 4}, {8, 48, 40}, {2, 17, 5}} {
		n, m, k := s[0+1], s[0], s[2]
		y, x, w := randSlice(r, m*ldy+7), randSlice(r, m*ldx), randSlice(r, k*ldw)
		y0 := append([]float32(nil), y...)
		axpyPanel(y, ldy, x, ldx, w, ldw, n, m, k)
		for i := 0; i < m; i++ {
			for j := 0; j < ldy && i*ldy+j < len(y); j++ {
				want := float64(y0[i*ldy+j])
				if j < n {
					for kk := 0; kk < k; kk++ {
						want += float64(x[i*ldx+kk]) * float64(w[kk*ldw+j])
					}
				}
				closeTo(t, y[i*ldy+j], want, k, fmt.Sprintf("m=%d n=%d k=%d y[%d,%d]", m, n, k, i, j))
			}
		}
		for j := m * ldy; j < len(y); j++ {
			if y[j] != y0[j] {
				t.Fatalf("wrote past the panel at %d", j)
			}
		}
	}
}

// TestDotPanel checks the LM head kernel, including column edges and an
// output stride.
func TestDotPanel(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{1, 5, 16, 31, 33, 768, 771} {
		for _, m := range []int{1, 3, 8} {
			ldh, ldw, ldo := n+3, n+5, 9
			h, w := randSlice(r, m*ldh), randSlice(r, 4*ldw)
			out := make([]float32, m*ldo)
			dotPanel(h, ldh, m, w, ldw, n, out, ldo)
			for i := 0; i < m; i++ {
				for rr := 0; rr < 4; rr++ {
					var want float64
					for j := 0; j < n; j++ {
						want += float64(h[i*ldh+j]) * float64(w[rr*ldw+j])
					}
					closeTo(t, out[i*ldo+rr], want, n, fmt.Sprintf("n=%d m=%d out[%d,%d]", n, m, i, rr))
				}
			}
		}
	}
}

// TestMatMulTOddRows covers the vocabulary edge (V not a multiple of 4)
// through the parallel path.
func TestMatMulTOddRows(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	const V, C, R = 4099, 40, 3
	wte := randSlice(r, V*C)
	x := randSlice(r, R*C)
	logits := make([]float32, R*V)
	MatMulT(logits, x, Float32(wte), R, C, V)
	for i := 0; i < R; i++ {
		for v := 0; v < V; v++ {
			var want float64
			for c := 0; c < C; c++ {
				want += float64(x[i*C+c]) * float64(wte[v*C+c])
			}
			closeTo(t, logits[i*V+v], want, C, fmt.Sprintf("logit [%d,%d]", i, v))
		}
	}
}

func BenchmarkMatmulDecode(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	const K, N = 768, 3072
	x, w, dst := randSlice(r, K), randSlice(r, K*N), make([]float32, N)
	for b.Loop() {
		MatMulAcc(dst, x, Float32(w), 1, K, N)
	}
	b.ReportMetric(float64(K*N*4)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
}

func BenchmarkMatmulPrefill(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	const M, K, N = 128, 768, 3072
	x, w, dst := randSlice(r, M*K), randSlice(r, K*N), make([]float32, M*N)
	for b.Loop() {
		MatMulAcc(dst, x, Float32(w), M, K, N)
	}
	b.ReportMetric(2*float64(M*K*N)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}

// TestMatmulBlockedSummation: sums of 3072 products are added in chains of
// kSum from zero, as BLAS does, not in one chain. On positive terms a
// single float32 chain drifts far more; the kernels must stay well below
// it on every path (panel for M = 1, tiles and edges for M = 6).
func TestMatmulBlockedSummation(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	const K, N = 3072, 100
	w := make([]float32, K*N)
	for i := range w {
		w[i] = 1 + r.Float32()
	}
	for _, M := range []int{1, 6} {
		x := make([]float32, M*K)
		for i := range x {
			x[i] = 1 + r.Float32()/8
		}
		got := make([]float32, M*N)
		MatMulAcc(got, x, Float32(w), M, K, N)
		var worst, chainWorst float64
		for i := range M {
			for j := range N {
				var exact float64
				var chain float32
				for k := range K {
					exact += float64(x[i*K+k]) * float64(w[k*N+j])
					chain += x[i*K+k] * w[k*N+j]
				}
				worst = max(worst, math.Abs(float64(got[i*N+j])-exact))
				chainWorst = max(chainWorst, math.Abs(float64(chain)-exact))
			}
		}
		require.Less(t, 4*worst, chainWorst, "M=%d: error %g against one chain's %g", M, worst, chainWorst)
	}
}

// TestAttentionKernels checks Scores and WeightedSum against float64
// loops, for head sizes on and off the vector width and key counts on and
// off the 4-key blocks.
func TestAttentionKernels(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 32))
	for _, D := range []int{8, 64, 72} {
		for _, n := range []int{1, 3, 4, 7, 64, 130} {
			q, k, v := randSlice(r, D), randSlice(r, n*D), randSlice(r, n*D)
			p := randSlice(r, n)
			sc, out := make([]float32, n), make([]float32, D)
			Scores(sc, q, k, D, n)
			WeightedSum(out, p, v, D, n)
			for s := range n {
				var want float64
				for d := range D {
					want += float64(q[d]) * float64(k[s*D+d])
				}
				require.InDelta(t, want, sc[s], 1e-5, "D=%d n=%d score %d", D, n, s)
			}
			for d := range D {
				var want float64
				for s := range n {
					want += float64(p[s]) * float64(v[s*D+d])
				}
				require.InDelta(t, want, out[d], 1e-4, "D=%d n=%d out %d", D, n, d)
			}
		}
	}
}

// TestAttentionKernelsBlocked: keys and values held in blocks of a
// multiple of 4 positions, scored and summed block after block, give the
// bits of one contiguous piece (the paged KV cache relies on it).
func TestAttentionKernelsBlocked(t *testing.T) {
	r := rand.New(rand.NewPCG(33, 34))
	for _, D := range []int{8, 64, 72} {
		for _, B := range []int{4, 16} {
			for _, n := range []int{1, 3, 4, 7, 16, 17, 64, 130} {
				q, k, v := randSlice(r, D), randSlice(r, n*D), randSlice(r, n*D)
				p := randSlice(r, n)
				sc, out := make([]float32, n), make([]float32, D)
				Scores(sc, q, k, D, n)
				WeightedSum(out, p, v, D, n)
				bsc, bout := make([]float32, n), make([]float32, D)
				for s := 0; s < n; s += B {
					nb := min(B, n-s)
					Scores(bsc[s:], q, slices.Clone(k[s*D:(s+nb)*D]), D, nb)
					AddWeightedSum(bout, p[s:], slices.Clone(v[s*D:(s+nb)*D]), D, nb)
				}
				require.Equal(t, sc, bsc, "D=%d B=%d n=%d scores", D, B, n)
				require.Equal(t, out, bout, "D=%d B=%d n=%d weighted sum", D, B, n)
			}
		}
	}
}

// TestAttentionRows: ScoresRows and AddWeightedSumRows give each query
// the bits Scores and AddWeightedSum give it alone, for causal counts
// (a chunk's queries against a block: counts at or below zero, ramps
// crossing the 4-key groups, capped at the block) and a flat count (no
// mask).
func TestAttentionRows(t *testing.T) {
	r := rand.New(rand.NewPCG(35, 36))
	for _, D := range []int{8, 64, 72} {
		for _, c := range []struct{ T, first, cap int }{
			{1, 1, 16}, {5, -2, 16}, {13, 1, 16}, {20, 3, 16}, {40, -30, 16}, {9, 7, 7}, {6, 16, 16}, {33, 1, 64},
		} {
			S := c.cap
			n := make([]int, c.T)
			for i := range n {
				n[i] = min(c.first+i, c.cap)
			}
			ldq, lds, ldo := D+3, S+1, D+5
			q, k, v := randSlice(r, c.T*ldq), randSlice(r, S*D), randSlice(r, S*D)
			p := randSlice(r, c.T*lds)
			out0 := randSlice(r, c.T*ldo)
			sc := make([]float32, c.T*lds)
			out := slices.Clone(out0)
			ScoresRows(sc, lds, q, ldq, k, D, n)
			AddWeightedSumRows(out, ldo, p, lds, v, D, n)
			for i, ni := range n {
				if ni <= 0 {
					continue
				}
				want := make([]float32, ni)
				Scores(want, q[i*ldq:], k, D, ni)
				wantOut := slices.Clone(out0[i*ldo : i*ldo+D])
				AddWeightedSum(wantOut, p[i*lds:], v, D, ni)
				for s := range ni {
					require.Equal(t, math.Float32bits(want[s]), math.Float32bits(sc[i*lds+s]), "D=%d %+v query %d score %d", D, c, i, s)
				}
				for d := range D {
					require.Equal(t, math.Float32bits(wantOut[d]), math.Float32bits(out[i*ldo+d]), "D=%d %+v query %d out %d", D, c, i, d)
				}
			}
			for i := range out0 { // outside each row's D values nothing moves
				if i%ldo >= D {
					require.Equal(t, out0[i], out[i], "D=%d %+v: out[%d] outside the rows", D, c, i)
				}
			}
		}
	}
}

func TestWiden(t *testing.T) {
	for _, n := range []int{0, 1, 7, 8, 33} {
		src := make([]uint16, n)
		for i := range src {
			src[i] = uint16(0x3c00 + 37*i) // 1.0 and on
		}
		dst := make([]float32, n)
		Widen(dst, src)
		for i, h := range src {
			require.Equal(t, ggmlnum.Float16To32(h), dst[i], "n=%d element %d", n, i)
		}
	}
}

// TestMatMulRowsIndependent: a row's product has the same bits whatever
// rows share the call (decode, prefill, a chunk of one, the suffix of a
// reused prefix), for every weight layout and for widths whose tile edge
// is narrower than the 16-column kernel (64×128: an 8-column edge).
func TestMatMulRowsIndependent(t *testing.T) {
	r := rand.New(rand.NewPCG(35, 36))
	for _, sh := range [][2]int{{64, 128}, {64, 200}, {64, 256}, {128, 64}, {64, 96}, {70, 136}} {
		K, N := sh[0], sh[1]
		w := randSlice(r, K*N)
		h, err := ToFloat16(w)
		require.NoError(t, err)
		slabbed, err := Slabbed(Float32(w), K, N)
		require.NoError(t, err)
		bf16, _ := halfMatrixOf(r, bfloat16, K*N)
		for name, m := range map[string]Matrix{"f32": Float32(w), "f16": Float16(h), "bf16": bf16, "slabbed": slabbed} {
			x := randSlice(r, 50*K)
			all := make([]float32, 50*N)
			MatMulAcc(all, x, m, 50, K, N)
			for _, T := range []int{1, 2, 3, 4, 6, 9, 10} {
				part := make([]float32, T*N)
				MatMulAcc(part, x[(50-T)*K:], m, T, K, N)
				require.Equal(t, all[(50-T)*N:], part, "%s %dx%d, last %d rows alone", name, K, N, T)
			}
		}
	}
}
