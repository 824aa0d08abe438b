package kernels

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestNoLegacySSE: no kernel runs a legacy (non-VEX) SSE instruction.
// After AVX code has left the upper halves of the vector registers in
// use, each one stalls the core: one MOVQ into an X register in the
// split's loop made it 17x slower on an Emerald Rapids Xeon (notes 41).
// VMOVQ and the other VEX forms do the same work without the stall.
func TestNoLegacySSE(t *testing.T) {
	files, err := filepath.Glob("*.[sh]")
	if err != nil || len(files) == 0 {
		t.Fatalf("no assembly found: %v", err)
	}
	xmm := regexp.MustCompile(`\bX([0-9]|1[0-5])\b`)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for n, line := range strings.Split(string(b), "\n") {
			code, _, _ := strings.Cut(line, "//")
			for _, ins := range strings.Split(code, ";") {
				fields := strings.Fields(strings.TrimSuffix(strings.TrimSpace(ins), `\`))
				if len(fields) == 0 || strings.HasPrefix(fields[0], "V") || strings.HasPrefix(fields[0], "#") ||
					strings.Contains(fields[0], "(") || !xmm.MatchString(ins) {
					continue
				}
				t.Errorf("%s:%d: %q is a legacy SSE instruction; use its VEX form (V%s)", f, n+1, strings.TrimSpace(ins), fields[0])
			}
		}
	}
}
