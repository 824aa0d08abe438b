package loader

import (
	"strconv"
	"strings"

	"github.com/llorch/llorch-check/safetensors"
)

// firstLayers is f without the tensors of blocks n and above (n > 0).
func firstLayers(f *safetensors.File, n int) *safetensors.File {
	return f.Filter(func(t safetensors.Tensor) bool {
		l, ok := hfLayer(t.Name)
		return !ok || l < n
	})
}

// hfLayer is the block index in an HF tensor name: GPT-2's
// "[transformer.]h.L.…", the Llama family's "[model.]layers.L.…".
func hfLayer(name string) (int, bool) {
	parts := strings.Split(name, ".")
	for i := 0; i+2 < len(parts); i++ {
		if parts[i] != "h" && parts[i] != "layers" {
			continue
		}
		if l, err := strconv.Atoi(parts[i+1]); err == nil && l >= 0 {
			return l, true
		}
	}
	return 0, false
}
