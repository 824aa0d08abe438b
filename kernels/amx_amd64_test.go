//go:build amd64 && !purego

package kernels

import (
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"sync"
	"testing"

	"golang.org/x/sys/cpu"
)

// TestAMXGranted: on a CPU with AMX int8 and Linux, the tiles are asked
// for and granted, so the Q8_0 products take them (a failed grant would
// leave the VNNI kernels running, correct but silently slower).
func TestAMXGranted(t *testing.T) {
	if !useVNNI || !cpu.X86.HasAMXTile || !cpu.X86.HasAMXInt8 || runtime.GOOS != "linux" {
		t.Skip("no AMX int8 on this CPU")
	}
	if os.Getenv("LLORCH_KERNELS") != "" {
		t.Skip("LLORCH_KERNELS chooses the kernels")
	}
	if !useAMX {
		t.Fatal("the CPU has AMX int8 but the kernels do not use it: arch_prctl(ARCH_REQ_XCOMP_PERM) refused?")
	}
}

// TestAMXUnderSignals: the tile state is the thread's, saved and restored
// by the kernel around signal handlers; products on every core while the
// CPU profiler's signals and the scheduler's preemptions land keep the
// bits of a quiet run.
func TestAMXUnderSignals(t *testing.T) {
	if !useAMX {
		t.Skip("no AMX tiles")
	}
	r := rand.New(rand.NewPCG(41, 42))
	const M, K, N = 32, 512, 256
	w := randomQuant(r, N, K, 32, false, eightBits).matrix(t, false)
	x := randSlice(r, M*K)
	want := make([]float32, M*N)
	MatMulAcc(want, x, w, M, K, N)

	f, err := os.CreateTemp(t.TempDir(), "cpu")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := pprof.StartCPUProfile(f); err != nil {
		t.Skip("a CPU profile is already running")
	}
	defer pprof.StopCPUProfile()
	var wg sync.WaitGroup
	for g := range 2 * runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for range 1000 {
				got := make([]float32, M*N)
				MatMulAcc(got, x, w, M, K, N)
				if !slices.Equal(got, want) {
					t.Errorf("goroutine %d: the bits changed under signals", g)
					return
				}
			}
		})
	}
	wg.Wait()
}
