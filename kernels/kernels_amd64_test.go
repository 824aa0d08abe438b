//go:build amd64 && !purego

package kernels

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"golang.org/x/sys/cpu"
)

// TestScaleRowsAVX2: the 256-bit scale kernel gives the generic bits.
func TestScaleRowsAVX2(t *testing.T) {
	if !useF16C {
		t.Skip("no AVX2 and F16C on this CPU")
	}
	r := rand.New(rand.NewPCG(9, 10))
	d, a := make([]uint16, slab), make([]int8, 7*slab)
	for i := range d {
		d[i] = uint16(r.IntN(1 << 16))
	}
	d[0], d[1] = 0x0001, 0x7c00 // a subnormal, infinity
	for i := range a {
		a[i] = int8(r.IntN(256) - 128)
	}
	got, want := make([]float32, 7*slab), make([]float32, 7*slab)
	scaleRowsAVX2(&got[0], &d[0], &a[0], 7)
	scaleRowsGeneric(want, d, a, 7)
	for i := range got {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) && !(math.IsNaN(float64(got[i])) && math.IsNaN(float64(want[i]))) {
			t.Fatalf("scale %d: %g, want %g", i, got[i], want[i])
		}
	}
}

// TestLimbKernels: the AVX2, VNNI and AMX limb kernels give
// limbSlabGeneric's bits on every type, groups of 16 and 32, with and without offsets, ragged
// slabs, and activations that test the split: a group of zeros, one with
// a NaN, one with an infinity, tiny (subnormal) and huge ones.
func TestLimbKernels(t *testing.T) {
	kerns := limbKernelSets(t)
	r := rand.New(rand.NewPCG(19, 20))
	for _, s := range quantShapes {
		for _, c := range typeCases {
			n := randomQuant(r, s.N, s.K, s.group, c.offset, c.bits)
			x := randSlice(r, s.M*s.K)
			for i, scale := range []float32{0, 1e-41, 1e-30, 1e30} {
				if g := 32 * (i + 1); g+32 <= len(x) {
					for k := g; k < g+32; k++ {
						x[k] *= scale
					}
				}
			}
			if len(x) >= 256 {
				x[170], x[230] = float32(math.NaN()), float32(math.Inf(-1))
			}
			checkLimbKernels(t, kerns, n, x, s.M, randSlice(r, s.M*s.N), fmt.Sprintf("%+v offset=%t bits=%d", s, c.offset, c.bits.Bits))
		}
	}
}

// TestLimbKernelsExtremes: the limb sums at their largest. Every integer
// is its type's largest (u = 2^bits − 1) and every activation of a group
// is the same, so every product has one sign: groups whose limbs m and l
// are all −128 (h −32), all 127 (h 32), and h all ±64 (m and l 0). The
// AVX2 byte kernels add pair sums in int16 for as many quads as cannot
// overflow (limbs_avx2_amd64.s); one quad more would wrap here. One row
// takes the stored-scale and factor kernels (and the byte ones on the
// ragged slab), two the byte kernels, three the unpacked ones.
func TestLimbKernelsExtremes(t *testing.T) {
	for M := 1; M <= 3; M++ {
		limbKernelsExtremes(t, M)
	}
}

func limbKernelsExtremes(t *testing.T, M int) {
	kerns := limbKernelSets(t)
	const K, N = 256, 80
	// x̃ = h·65536 + m·256 + l at shift 20: each a group's largest, in
	// [2^21, 2^22) before rounding (the last rounds up to 2^22).
	groups := []float32{-2130048, 2129791, -4194303.75, 4194303.75}
	x := make([]float32, M*K)
	for i := range x {
		x[i] = groups[(i/limbRows)%len(groups)] / (1 << 20)
	}
	r := rand.New(rand.NewPCG(23, 24))
	for _, c := range typeCases {
		for _, group := range []int{16, 32} {
			n := randomQuant(r, N, K, group, c.offset, c.bits)
			for i := range n.q {
				n.q[i] = int8(1<<c.bits.Bits - 1 + c.bits.Min)
			}
			checkLimbKernels(t, kerns, n, x, M, make([]float32, M*N), fmt.Sprintf("M=%d group=%d offset=%t bits=%d", M, group, c.offset, c.bits.Bits))
		}
	}
}

type limbKernelSet struct {
	name                     string
	avx2, avxvnni, vnni, amx bool
}

// limbKernelSets: the limb kernels this CPU runs.
func limbKernelSets(t *testing.T) []limbKernelSet {
	var kerns []limbKernelSet
	if useAVX2 {
		kerns = append(kerns, limbKernelSet{"AVX2", true, false, false, false})
	}
	if useAVX2 && cpu.X86.HasAVXVNNI {
		kerns = append(kerns, limbKernelSet{"AVX-VNNI", true, true, false, false})
	}
	if useVNNI {
		kerns = append(kerns, limbKernelSet{"AVX-512 VNNI", true, false, true, false})
	}
	if useAMX {
		kerns = append(kerns, limbKernelSet{"AMX", true, false, true, true})
	}
	if len(kerns) == 0 {
		t.Skip("no AVX2 on this CPU")
	}
	return kerns
}

// checkLimbKernels: x·n added to dst0 by each kernel set has the
// generic code's bits.
func checkLimbKernels(t *testing.T, kerns []limbKernelSet, n nativeQuant, x []float32, M int, dst0 []float32, what string) {
	t.Helper()
	w := n.matrix(t, false)
	K, N := n.cols, n.rows
	want := slicesClone(dst0)
	avx2, avxvnni, vnni, amx := useAVX2, useAVXVNNI, useVNNI, useAMX
	defer func() { useAVX2, useAVXVNNI, useVNNI, useAMX = avx2, avxvnni, vnni, amx }()
	useAVX2, useAVXVNNI, useVNNI, useAMX = false, false, false, false
	MatMulAcc(want, x, w, M, K, N)
	for _, k := range kerns {
		useAVX2, useAVXVNNI, useVNNI, useAMX = k.avx2, k.avxvnni, k.vnni, k.amx
		dst := slicesClone(dst0)
		MatMulAcc(dst, x, w, M, K, N)
		for i := range want {
			if math.Float32bits(want[i]) != math.Float32bits(dst[i]) && !(math.IsNaN(float64(want[i])) && math.IsNaN(float64(dst[i]))) {
				t.Fatalf("%s: %s [%d]: %g, want %g", k.name, what, i, dst[i], want[i])
			}
		}
	}
}

func slicesClone(s []float32) []float32 { return append([]float32(nil), s...) }

// TestSplitLimbs: the assembly split writes splitGroup's records byte for
// byte (ties rounded to even, subnormals beside large values, every
// weight group size and min) and stops before each group of zeros,
// infinities or NaN, which splitLimbs leaves to splitGroup.
func TestSplitLimbs(t *testing.T) {
	if !useAVX2 {
		t.Skip("no AVX2 on this CPU")
	}
	r := rand.New(rand.NewPCG(21, 22))
	const groups = 12
	x := make([]float32, groups*limbRows)
	for i := range x {
		x[i] = float32(r.NormFloat64()) * float32(math.Pow(2, float64(r.IntN(60)-30)))
	}
	for i := range limbRows { // ties: 2^21 sets the scale to 1, so halves are ties
		x[limbRows+i] = float32(i%9) - 4.5
	}
	x[limbRows] = 1 << 21
	x[2*limbRows], x[2*limbRows+1] = 1e30, 1e-45 // a subnormal beside a huge value
	x[3*limbRows] = -3e38
	for i := 4 * limbRows; i < 5*limbRows; i++ {
		x[i] = 1e-42 // subnormals only
	}
	special := map[int]float32{6: 0, 8: float32(math.NaN()), 10: float32(math.Inf(1))}
	for g, v := range special {
		for i := g * limbRows; i < (g+1)*limbRows; i++ {
			x[i] = 0
		}
		x[g*limbRows+5] = v
	}
	for _, size := range []int{16, 32} {
		for _, min := range []int8{-128, -32, -16, -8, 0} {
			want := make([]byte, groups*limbRecord)
			for g := range groups {
				splitGroup(want[g*limbRecord:(g+1)*limbRecord], x[g*limbRows:(g+1)*limbRows], min, size)
			}
			got := make([]byte, groups*limbRecord)
			for a := 0; a < groups; a++ {
				n := splitLimbsKernel(got[a*limbRecord:], x[a*limbRows:], min, size)
				for g := a; g < a+n; g++ {
					if !bytes.Equal(got[g*limbRecord:(g+1)*limbRecord], want[g*limbRecord:(g+1)*limbRecord]) {
						t.Fatalf("size %d, min %d, group %d: record\n%v\nwant\n%v", size, min, g, got[g*limbRecord:(g+1)*limbRecord], want[g*limbRecord:(g+1)*limbRecord])
					}
				}
				a += n
				if _, ok := special[a]; a < groups && !ok {
					t.Fatalf("size %d, min %d: the kernel stopped at group %d, which is not special", size, min, a)
				}
			}
			split := make([]byte, groups*limbRecord)
			splitLimbs(split, x, min, size)
			if !bytes.Equal(split, want) {
				t.Fatalf("size %d, min %d: splitLimbs differs from splitGroup", size, min)
			}
		}
	}
}

// FuzzSplitLimbs: for any 32 float32 bit patterns (NaN payloads, negative
// zeros, subnormals beside anything), any min and either weight group
// size, the assembly split writes splitGroup's record or hands the group
// back (zeros, infinities, NaN).
func FuzzSplitLimbs(f *testing.F) {
	if !useAVX2 {
		f.Skip("no AVX2 on this CPU")
	}
	seed := make([]byte, 4*limbRows+2)
	for i := range limbRows {
		binary.LittleEndian.PutUint32(seed[4*i:], math.Float32bits(float32(i)-15.5))
	}
	f.Add(seed)
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 4*limbRows+2 {
			return
		}
		x := make([]float32, limbRows)
		for i := range x {
			x[i] = math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:]))
		}
		min, size := -int8(data[4*limbRows]&0x80), 32 // 0 or -128, as the types' mins go
		if data[4*limbRows]&1 == 1 {
			min = -int8(data[4*limbRows] & 0x3f)
		}
		if data[4*limbRows+1]&1 == 1 {
			size = 16
		}
		want, got := make([]byte, limbRecord), make([]byte, limbRecord)
		splitGroup(want, x, min, size)
		if splitLimbsKernel(got, x, min, size) == 1 && !bytes.Equal(got, want) {
			t.Fatalf("x %v, min %d, size %d: record\n%v\nwant\n%v", x, min, size, got, want)
		}
	})
}

// TestLimbKernelsAVX2NoAllocs: a slab's product on the AVX2 kernels
// allocates nothing. Their scratch (acc) lives on the caller's stack;
// called through a func value it escaped to the heap, 256 bytes a call,
// which slowed a Qwen3-30B-A3B prefill loaded from its GGUF file by a
// third (fresh memory to fault in; notes 46).
func TestLimbKernelsAVX2NoAllocs(t *testing.T) {
	if !useAVX2 {
		t.Skip("no AVX2 on this CPU")
	}
	avxvnni, vnni, amx := useAVXVNNI, useVNNI, useAMX
	useVNNI, useAMX = false, false
	defer func() { useAVXVNNI, useVNNI, useAMX = avxvnni, vnni, amx }()
	for _, useAVXVNNI = range []bool{false, cpu.X86.HasAVXVNNI} {
		limbKernelsNoAllocs(t)
	}
}

func limbKernelsNoAllocs(t *testing.T) {
	r := rand.New(rand.NewPCG(25, 26))
	const K = 256
	for _, c := range typeCases {
		group := 32
		if c.bits.Bits == 6 {
			group = 16 // Q6_K's
		}
		w := randomQuant(r, slab, K, group, c.offset, c.bits).matrix(t, false).q
		G := K / w.g.Size
		s, o := make([]float32, G*slab), make([]float32, G*slab)
		if w.dm == nil {
			o = nil
		}
		w.formScales(s, o, 0, G, 0)
		rec := make([]byte, K/limbRows*limbRecord)
		splitLimbs(rec, randSlice(r, K), w.min, w.g.Size)
		y := make([]float32, slab)
		ints := make([]byte, w.unpackedBytes(3))
		for name, f := range map[string]func(){
			"limbSlab":       func() { limbSlab(w, y, rec, s, o, 0) },
			"limbSlabStored": func() { limbSlabStored(w, y, rec, 0) },
			"limbSlabUnpacked": func() {
				if len(ints) > 0 {
					w.unpackSlab(ints, 0)
					limbSlabUnpacked(w, y, ints, rec, s, o, 0)
				}
			},
		} {
			if a := testing.AllocsPerRun(10, f); a != 0 {
				t.Errorf("%s, %d bits, offsets %t, AVX-VNNI %t: %v allocations a call", name, c.bits.Bits, c.offset, useAVXVNNI, a)
			}
		}
	}
}
