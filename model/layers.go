package model

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/llorch/llorch-check/safetensors"
)

// truncateLayers makes c a model of its first n blocks (n = 0 keeps them
// all), then its final norm and head, as vLLM's num_hidden_layers
// override does: a check of a large model's first layers that loads
// only their weights.
func truncateLayers(c *Config, n int) error {
	switch {
	case n == 0:
		return nil
	case n < 0 || n > c.NLayer:
		return fmt.Errorf("--layers %d: want 1 to the model's %d layers", n, c.NLayer)
	}
	c.NLayer = n
	if c.Windows != nil {
		c.Windows = c.Windows[:n]
	}
	return nil
}

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
