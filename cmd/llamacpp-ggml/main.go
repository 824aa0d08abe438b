//go:build llamacpp

// Command llamacpp-ggml drives llama.cpp's own libraries, as node-llama-cpp
// ships them prebuilt (make peer-llamacpp), for what llorch-check must match
// but does not write itself. The Makefile, the scripts and the docs build it
// as ggml (go build -tags llamacpp -o ggml ./cmd/llamacpp-ggml), the name its
// usage and errors give:
//
//	ggml vectors OUT_DIR           ggml's quantizer and dequantizer on seeded rows, per type
//	ggml quantize IN.gguf OUT.gguf FTYPE
//	                               llama.cpp's llama_model_quantize (FTYPE: Q4_K_M, Q4_0, ...)
//	ggml bench -model FILE.gguf    llama.cpp's speed and memory, as gobench measures ours
//	ggml dump -model FILE.gguf -baseline SET -out DIR
//	                               llama.cpp's activations through its graph callback, as a partial dump
//	ggml serve -model FILE.gguf -addr HOST:PORT
//	                               a minimal OpenAI /v1/completions over llama.cpp's logits, for probe
//	ggml gelu-table -model FILE.gguf -out FILE
//	                               the float16 GELU table of the CPU backend llama.cpp loads
//
// Built with -tags llamacpp and cgo; the libraries are opened at run time
// from e2e/llamacpp/node_modules (or $GGML_LIB_DIR), nothing links them.
package main

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>

typedef size_t (*quantize_chunk_fn)(int type, const float *src, void *dst, int64_t start, int64_t nrows, int64_t n_per_row, const float *imatrix);
typedef void (*dequantize_row_fn)(const void *x, float *y, int64_t k);
// llama_model_quantize_params: nthread and ftype lead it in every llama.h
// since 2023; the rest keeps the library's defaults. Returned through a
// hidden pointer, so a buffer larger than the struct is safe.
typedef struct { int32_t nthread; int32_t ftype; char rest[1016]; } quantize_params;
typedef quantize_params (*quantize_default_fn)(void);
typedef uint32_t (*model_quantize_fn)(const char *in, const char *out, const quantize_params *p);
typedef void (*backend_init_fn)(void);

static size_t quantize_chunk(void *f, int type, const float *src, void *dst, int64_t nrows, int64_t n) {
	return ((quantize_chunk_fn)f)(type, src, dst, 0, nrows, n, NULL);
}
static void dequantize_row(void *f, const void *x, float *y, int64_t k) { ((dequantize_row_fn)f)(x, y, k); }
static uint32_t model_quantize(void *init, void *defaults, void *quantize, const char *in, const char *out, int32_t ftype) {
	((backend_init_fn)init)();
	quantize_params p = ((quantize_default_fn)defaults)();
	p.ftype = ftype;
	p.nthread = 2;
	return ((model_quantize_fn)quantize)(in, out, &p);
}
*/
import "C"

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"unsafe"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "ggml:", err)
		os.Exit(2)
	}
}

func run(args []string) error {
	switch {
	case len(args) == 2 && args[0] == "vectors":
		return vectors(args[1])
	case len(args) == 4 && args[0] == "quantize":
		return quantize(args[1], args[2], args[3])
	case len(args) > 0 && args[0] == "bench":
		return bench(args[1:])
	case len(args) > 0 && args[0] == "dump":
		return dump(args[1:])
	case len(args) > 0 && args[0] == "serve":
		return serve(args[1:])
	case len(args) > 0 && args[0] == "gelu-table":
		return geluTable(args[1:])
	}
	return fmt.Errorf("usage (cmd/llamacpp-ggml, built as ggml by the Makefile: go build -tags llamacpp -o ggml ./cmd/llamacpp-ggml): ggml vectors OUT_DIR | ggml quantize IN.gguf OUT.gguf FTYPE | ggml bench -model FILE.gguf [-mode load|run] [-threads N] | ggml dump -model FILE.gguf -baseline SET -out DIR | ggml serve -model FILE.gguf [-addr HOST:PORT] | ggml gelu-table -model FILE.gguf -out FILE")
}

func libDir() string {
	if d := os.Getenv("GGML_LIB_DIR"); d != "" {
		return d
	}
	return filepath.Join("e2e", "llamacpp", "node_modules", "@node-llama-cpp", "linux-x64", "bins", "linux-x64")
}

// open dlopens a library of libDir and returns its symbols.
func open(lib string, names ...string) ([]unsafe.Pointer, error) {
	path := C.CString(filepath.Join(libDir(), lib))
	defer C.free(unsafe.Pointer(path))
	h := C.dlopen(path, C.RTLD_NOW|C.RTLD_GLOBAL)
	if h == nil {
		return nil, fmt.Errorf("dlopen %s: %s (make peer-llamacpp installs it)", lib, C.GoString(C.dlerror()))
	}
	var out []unsafe.Pointer
	for _, n := range names {
		cn := C.CString(n)
		p := C.dlsym(h, cn)
		C.free(unsafe.Pointer(cn))
		if p == nil {
			return nil, fmt.Errorf("%s has no symbol %s", lib, n)
		}
		out = append(out, p)
	}
	return out, nil
}

// quantTypes are the ggml types llorch-check reads: enum value, name,
// elements and bytes per block.
var quantTypes = []struct {
	typ         int
	name        string
	block, size int
}{
	{2, "q4_0", 32, 18}, {3, "q4_1", 32, 20}, {6, "q5_0", 32, 22}, {7, "q5_1", 32, 24},
	{8, "q8_0", 32, 34}, {12, "q4_K", 256, 144}, {13, "q5_K", 256, 176}, {14, "q6_K", 256, 210},
}

// vectors writes, per type, OUT_DIR/<type>.bin: rows×cols float32 input
// (seeded, with a spread of scales and an all-zero row), ggml's quantized
// blocks of it, and ggml's dequantization of those blocks, each preceded
// by its byte length (uint32, little-endian) after a header of rows, cols.
func vectors(out string) error {
	const rows, cols = 8, 512
	src := make([]float32, rows*cols)
	r := rand.New(rand.NewPCG(7, 13))
	for i := range rows - 1 {
		scale := math.Pow(10, float64(i)/2-2) // 0.01 .. 10
		for j := range cols {
			src[i*cols+j] = float32(r.NormFloat64() * scale)
		}
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	for _, q := range quantTypes {
		syms, err := open("libggml-base.so", "ggml_quantize_chunk", "dequantize_row_"+q.name)
		if err != nil {
			return err
		}
		blocks := make([]byte, rows*cols/q.block*q.size)
		n := C.quantize_chunk(syms[0], C.int(q.typ), (*C.float)(&src[0]), unsafe.Pointer(&blocks[0]), rows, cols)
		if int(n) != len(blocks) {
			return fmt.Errorf("%s: ggml_quantize_chunk wrote %d bytes, want %d", q.name, n, len(blocks))
		}
		deq := make([]float32, rows*cols)
		C.dequantize_row(syms[1], unsafe.Pointer(&blocks[0]), (*C.float)(&deq[0]), rows*cols)
		var b []byte
		b = binary.LittleEndian.AppendUint32(b, rows)
		b = binary.LittleEndian.AppendUint32(b, cols)
		for _, part := range [][]byte{f32bytes(src), blocks, f32bytes(deq)} {
			b = binary.LittleEndian.AppendUint32(b, uint32(len(part)))
			b = append(b, part...)
		}
		path := filepath.Join(out, strings.ToUpper(q.name[:1])+q.name[1:]+".bin")
		if err := os.WriteFile(path, b, 0o644); err != nil {
			return err
		}
		fmt.Printf("%s: %d×%d values, %d bytes of blocks\n", path, rows, cols, len(blocks))
	}
	return nil
}

func f32bytes(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

// llama_ftype values of llama.h.
var ftypes = map[string]int32{
	"Q4_0": 2, "Q4_1": 3, "Q8_0": 7, "Q5_0": 8, "Q5_1": 9,
	"Q4_K_S": 14, "Q4_K_M": 15, "Q5_K_S": 16, "Q5_K_M": 17, "Q6_K": 18,
}

func quantize(in, out, ftype string) error {
	ft, ok := ftypes[strings.ToUpper(ftype)]
	if !ok {
		return fmt.Errorf("ftype %q: want one of Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 Q4_K_S Q4_K_M Q5_K_S Q5_K_M Q6_K", ftype)
	}
	syms, err := open("libllama.v0.5.0.so", "llama_backend_init", "llama_model_quantize_default_params", "llama_model_quantize")
	if err != nil {
		return err
	}
	cin, cout := C.CString(in), C.CString(out)
	defer C.free(unsafe.Pointer(cin))
	defer C.free(unsafe.Pointer(cout))
	if rc := C.model_quantize(syms[0], syms[1], syms[2], cin, cout, C.int32_t(ft)); rc != 0 {
		return fmt.Errorf("llama_model_quantize %s -> %s (%s) failed: %d", in, out, ftype, rc)
	}
	return nil
}
