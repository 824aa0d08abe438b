package limbs

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/cpu"

	"github.com/llorch/llorch-check/gguf"
	"github.com/llorch/llorch-check/kernels"
)

func needVNNI(t testing.TB) {
	if !cpu.X86.HasAVX512VNNI || !cpu.X86.HasAVX512BW {
		t.Skip("the experiment's kernel needs AVX-512 VNNI (this CPU has none); nothing of the model uses it")
	}
}

func draw(K, N int) (*matrix, []float32) {
	r := rand.New(rand.NewPCG(1, 2))
	m := newMatrix(r, K, N)
	x := make([]float32, K)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	return m, x
}

func slabScales(m *matrix, a activations) (s, o [][]float32) {
	for n0 := 0; n0 < m.N; n0 += 64 {
		ss, oo := m.scales(a, n0)
		s, o = append(s, ss), append(o, oo)
	}
	return s, o
}

// TestLimbs: the assembly gives Go's bits, and its error against float64
// is of the present float32 arithmetic's size (logged, with the ratio).
func TestLimbs(t *testing.T) {
	needVNNI(t)
	for _, K := range []int{768, 3072} {
		m, x := draw(K, 1024)
		a := split(x)
		s, o := slabScales(m, a)
		asm, goRef, float := make([]float32, m.N), make([]float32, m.N), make([]float32, m.N)
		m.mulAsm(asm, a, s, o)
		m.mulGo(goRef, a)
		m.mulFloat(float, x)
		require.Equal(t, goRef, asm, "K=%d: the assembly and Go disagree", K)
		want := m.mulF64(x)
		var eLimbs, eFloat float64
		for n := range want {
			eLimbs = math.Max(eLimbs, math.Abs(float64(asm[n])-want[n]))
			eFloat = math.Max(eFloat, math.Abs(float64(float[n])-want[n]))
		}
		t.Logf("K=%d: max |error| against float64: limbs %.3g, float32 weights %.3g (%.2fx)", K, eLimbs, eFloat, eLimbs/eFloat)
		require.Less(t, eLimbs, 4*eFloat, "K=%d: the limbs are not float32-class", K)
	}
}

// Benchmarks on GPT-2's mlp.c_fc shape (768x3072): in cache on one core,
// and 16 of them (24 MB of 4-bit weights) streamed by GOMAXPROCS
// goroutines, next to kernels.MatMulAcc on a Q4_K matrix of that shape.
func BenchmarkLimbs(b *testing.B) {
	needVNNI(b)
	for _, copies := range []int{1, 16} {
		b.Run(fmt.Sprintf("copies=%d", copies), func(b *testing.B) {
			m, x := draw(768, 3072*copies)
			a := split(x)
			s, o := slabScales(m, a)
			y := make([]float32, m.N)
			threads := 1
			if copies > 1 {
				threads = runtime.GOMAXPROCS(0)
			}
			slabs, per := m.N/64, m.K/group*4*256
			chunk := (slabs + threads - 1) / threads // contiguous shares, as MatMulAcc streams
			// split stays out of the loop: vectorised, it is ~1 µs a row.
			for b.Loop() {
				var wg sync.WaitGroup
				for w := range threads {
					wg.Go(func() {
						for sl := w * chunk; sl < min((w+1)*chunk, slabs); sl++ {
							q4slab(&y[sl*64], &m.packed[sl*per], &a.limbs[0], &s[sl][0], &o[sl][0], &a.sum[0], m.K/group)
						}
					})
				}
				wg.Wait()
			}
			b.ReportMetric(float64(len(m.packed))*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
		})
	}
}

func BenchmarkMatMulAccQ4K(b *testing.B) {
	for _, copies := range []int{1, 16} {
		b.Run(fmt.Sprintf("copies=%d", copies), func(b *testing.B) {
			K, N := 768, 3072*copies
			r := rand.New(rand.NewPCG(1, 2))
			g := gguf.Groups{Size: 32, Offset: true, Bits: 4, Min: 0, Super: 256, Factored: true}
			w, err := kernels.Quantized(N, K, g, false, func(_ int, q []int8, f gguf.Factors) error {
				for i := range q {
					q[i] = int8(r.IntN(16))
				}
				for i := range f.D {
					f.D[i], f.DM[i] = 0x2000, 0x2400 // float16 scales
				}
				for i := range f.A {
					f.A[i], f.B[i] = int8(1+r.IntN(63)), int8(r.IntN(63))
				}
				return nil
			})
			require.NoError(b, err)
			x, y := make([]float32, K), make([]float32, N)
			for i := range x {
				x[i] = float32(r.NormFloat64())
			}
			if copies == 1 {
				old := runtime.GOMAXPROCS(1)
				defer runtime.GOMAXPROCS(old)
			}
			for b.Loop() {
				kernels.MatMulAcc(y, x, w, 1, K, N)
			}
			b.ReportMetric(float64(w.Bytes())*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
		})
	}
}
