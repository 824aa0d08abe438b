package model

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/llorch/llorch-check/gguf"
)

// Load reads a model: an HF directory (dir/config.json and
// dir/model.safetensors) or a GGUF file in llama.cpp's gpt2 layout. Any
// regular file, or a missing path ending in .gguf, is taken for GGUF, so
// that the error names the file rather than a config.json beside it. Q8_0
// GGUF weights are dequantised on load.
func Load(path string) (*Model, error) {
	st, err := os.Stat(path)
	if (err == nil && st.Mode().IsRegular()) || (err != nil && strings.HasSuffix(path, ".gguf")) {
		return loadGGUF(path)
	}
	return loadHF(path)
}

// IsGGUF reports whether path is a regular file starting with the GGUF
// magic.
func IsGGUF(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return false
	}
	var magic [4]byte
	_, err = io.ReadFull(f, magic[:])
	return err == nil && string(magic[:]) == gguf.Magic
}

func loadHF(dir string) (*Model, error) {
	cfg, err := LoadConfig(filepath.Join(dir, "config.json"))
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "model.safetensors")
	data, unmap, err := mapFile(path)
	if err != nil {
		return nil, err
	}
	m, err := loadWeightsFrom(cfg, data, releasePages)
	if uerr := unmap(); uerr != nil && err == nil {
		err = fmt.Errorf("unmapping %s: %w", path, uerr)
	}
	if err != nil {
		return nil, fmt.Errorf("loading %s: %w", path, err)
	}
	m.Dir, m.WeightsPath, m.Format = dir, path, FormatHF
	return m, nil
}

type expectedTensor struct {
	shape []int
	dst   *[]float32
}

// loadWeights converts every parameter of a file image into fresh float32
// slices; nothing returned aliases data, so the caller may unmap it.
func loadWeights(cfg Config, data []byte) (*Model, error) {
	return loadWeightsFrom(cfg, data, nil)
}

// loadWeightsFrom is loadWeights for data that may be a file mapping:
// release, if not nil, is called on each converted range of data so that
// the mapping's pages leave the resident set as the copy grows (see
// convertTensor).
func loadWeightsFrom(cfg Config, data []byte, release func([]byte)) (*Model, error) {
	f, err := parseSafetensors(data)
	if err != nil {
		return nil, err
	}
	m := &Model{Config: cfg, h: make([]block, cfg.NLayer), faultLayer: -1}
	C, I := cfg.NEmbd, cfg.NInner
	want := map[string]expectedTensor{
		"wte.weight":  {[]int{cfg.VocabSize, C}, &m.wte},
		"wpe.weight":  {[]int{cfg.NPositions, C}, &m.wpe},
		"ln_f.weight": {[]int{C}, &m.lnfW},
		"ln_f.bias":   {[]int{C}, &m.lnfB},
	}
	order := []string{"wte.weight", "wpe.weight"}
	buffers := map[string]bool{}
	for i := range m.h {
		b := &m.h[i]
		p := fmt.Sprintf("h.%d.", i)
		for _, e := range []struct {
			name  string
			shape []int
			dst   *[]float32
		}{
			{"ln_1.weight", []int{C}, &b.ln1W},
			{"ln_1.bias", []int{C}, &b.ln1B},
			{"attn.c_attn.weight", []int{C, 3 * C}, &b.attnW},
			{"attn.c_attn.bias", []int{3 * C}, &b.attnB},
			{"attn.c_proj.weight", []int{C, C}, &b.projW},
			{"attn.c_proj.bias", []int{C}, &b.projB},
			{"ln_2.weight", []int{C}, &b.ln2W},
			{"ln_2.bias", []int{C}, &b.ln2B},
			{"mlp.c_fc.weight", []int{C, I}, &b.fcW},
			{"mlp.c_fc.bias", []int{I}, &b.fcB},
			{"mlp.c_proj.weight", []int{I, C}, &b.mlpW},
			{"mlp.c_proj.bias", []int{C}, &b.mlpB},
		} {
			want[p+e.name] = expectedTensor{e.shape, e.dst}
			order = append(order, p+e.name)
		}
		// The causal-mask buffers older exports save next to the weights.
		buffers[p+"attn.bias"] = true
		buffers[p+"attn.masked_bias"] = true
	}
	order = append(order, "ln_f.weight", "ln_f.bias")

	found := map[string]string{} // canonical name -> name in the file
	dtypes := map[string]bool{}
	var lmHead *tensorInfo
	for i := range f.tensors {
		t := f.tensors[i]
		name := strings.TrimPrefix(t.Name, "transformer.")
		if prev, dup := found[name]; dup {
			return nil, fmt.Errorf("tensors %q and %q are the same parameter", prev, t.Name)
		}
		found[name] = t.Name
		if buffers[name] {
			continue
		}
		if name == "lm_head.weight" {
			lmHead = &f.tensors[i]
			continue
		}
		e, ok := want[name]
		if !ok {
			return nil, fmt.Errorf("unexpected tensor %q", t.Name)
		}
		if !slices.Equal(t.Shape, e.shape) {
			return nil, fmt.Errorf("tensor %q: shape %v, expected %v", t.Name, t.Shape, e.shape)
		}
		*e.dst = convertTensor(f, t, release)
		dtypes[t.DType] = true
	}
	// Same spelling as the reference manifests: "F16", or "F16+F32" if mixed.
	m.WeightsDType = strings.Join(slices.Sorted(maps.Keys(dtypes)), "+")
	var missing []string
	for _, name := range order {
		if *want[name].dst == nil {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("missing tensor %q (%d missing in all)", missing[0], len(missing))
	}
	if lmHead != nil {
		if err := checkTied(f, *lmHead, m.wte, []int{cfg.VocabSize, C}); err != nil {
			return nil, err
		}
	}
	return m, nil
}

var errUntied = errors.New("lm_head.weight differs from wte.weight; only a tied LM head is supported")

// checkTied accepts an lm_head that is an exact copy of wte, comparing value
// by value straight from the file so the copy is never materialised.
func checkTied(f *safetensorsFile, t tensorInfo, wte []float32, shape []int) error {
	if !slices.Equal(t.Shape, shape) {
		return fmt.Errorf("tensor %q: shape %v, expected %v (tied to wte): %w", t.Name, t.Shape, shape, errUntied)
	}
	raw := f.raw(t)
	var buf [1024]float32
	for start := 0; start < len(wte); start += len(buf) {
		n := min(len(buf), len(wte)-start)
		size, _ := dtypeSize(t.DType)
		decodeInto(buf[:n], t.DType, raw[start*size:(start+n)*size])
		for i, v := range buf[:n] {
			if math.Float32bits(v) != math.Float32bits(wte[start+i]) {
				return fmt.Errorf("tensor %q: element %d is %g, wte has %g: %w", t.Name, start+i, v, wte[start+i], errUntied)
			}
		}
	}
	return nil
}
