package loader

import (
	"os"

	"github.com/llorch/llorch-check/weights"
)

// HeldBytes estimates, from the weights file's headers alone, the memory
// a load with opt holds the weights in: a GGUF file's size (quantised
// types stay quantised), or an HF checkpoint's tensors at the width the
// loader keeps each dtype. serve sizes its KV cache by what is left; an
// 8B model's 16 GB must be known before it is loaded.
func HeldBytes(path string, opt Options) (int64, error) {
	if IsGGUF(path) {
		st, err := os.Stat(path)
		if err != nil {
			return 0, err
		}
		return st.Size(), nil
	}
	c, err := weights.MapCheckpoint(path)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	var n int64
	for _, t := range c.File.Tensors {
		n += int64(t.Numel()) * int64(heldWidth(t.DType, opt))
	}
	return n, nil
}

// heldWidth is the bytes an element of a stored dtype takes once loaded
// with opt (Options' rules: float16 and bfloat16 matrices kept as
// stored, or rounded to float16; everything else float32). Vectors
// (norms, biases) are float32 whatever the file stores, a rounding error
// of a few hundred KB here.
func heldWidth(dtype string, opt Options) int {
	switch {
	case opt.Float16:
		return 2
	case (dtype == "F16" || dtype == "BF16") && opt.AsStored:
		return 2
	}
	return 4
}
