//go:build llamacpp

package main

/*
#include <stdint.h>
#include <stdlib.h>

typedef struct { int32_t n_tokens; int32_t *token; float *embd; int32_t *pos; int32_t *n_seq_id; int32_t **seq_id; int8_t *logits; } llama_batch;
// The parameter structs are opaque past the fields set here (n_ctx,
// n_batch, n_ubatch, n_seq_max lead llama_context_params in every llama.h
// since 2024); returned and passed by value through memory, so a buffer
// larger than the struct is safe as the last argument.
typedef struct { char b[1024]; } model_params;
typedef struct { uint32_t n_ctx, n_batch, n_ubatch, n_seq_max; char rest[1008]; } context_params;

static void *model_load(void *defaults, void *load, const char *path) {
	model_params p = ((model_params (*)(void))defaults)();
	return ((void *(*)(const char *, model_params))load)(path, p);
}
static void *context_new(void *defaults, void *init, void *set_threads, void *model, uint32_t n_ctx, uint32_t n_batch, uint32_t n_seq, int32_t threads) {
	context_params p = ((context_params (*)(void))defaults)();
	p.n_ctx = n_ctx; p.n_batch = n_batch; p.n_ubatch = n_batch; p.n_seq_max = n_seq;
	void *ctx = ((void *(*)(void *, context_params))init)(model, p);
	if (ctx) ((void (*)(void *, int32_t, int32_t))set_threads)(ctx, threads, threads);
	return ctx;
}
static llama_batch batch_new(void *init, int32_t n) { return ((llama_batch (*)(int32_t, int32_t, int32_t))init)(n, 0, 1); }
static void batch_free(void *f, llama_batch b) { ((void (*)(llama_batch))f)(b); }
static void batch_set(llama_batch *b, int32_t i, int32_t tok, int32_t pos, int32_t seq, int8_t logits) {
	b->token[i] = tok; b->pos[i] = pos; b->n_seq_id[i] = 1; b->seq_id[i][0] = seq; b->logits[i] = logits;
}
static int32_t decode(void *f, void *ctx, llama_batch b) { return ((int32_t (*)(void *, llama_batch))f)(ctx, b); }
// argmax of row i's logits: the greedy choice a server makes per step.
static int32_t argmax(void *get, void *ctx, int32_t i, int32_t n_vocab) {
	const float *l = ((float *(*)(void *, int32_t))get)(ctx, i);
	int32_t best = 0;
	for (int32_t v = 1; v < n_vocab; v++) if (l[v] > l[best]) best = v;
	return best;
}
static void call1(void *f, void *a) { ((void (*)(void *))f)(a); }
// n_vocab is llama_vocab_n_tokens(llama_model_get_vocab(model)).
static int32_t n_vocab(void *get_vocab, void *n_tokens, void *model) {
	return ((int32_t (*)(void *))n_tokens)(((void *(*)(void *))get_vocab)(model));
}
static void clear(void *get_memory, void *memory_clear, void *ctx) {
	((void (*)(void *, _Bool))memory_clear)(((void *(*)(void *))get_memory)(ctx), 1);
}
static void load_backends(void *f, const char *dir) { ((void (*)(const char *))f)(dir); }
static void quiet_log(int level, const char *text, void *ud) { (void)level; (void)text; (void)ud; }
static void silence(void *log_set) { ((void (*)(void (*)(int, const char *, void *), void *))log_set)(quiet_log, 0); }
*/
import "C"

import (
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/llorch/llorch-check/internal/procstat"
)

// llama is the part of libllama's C API the benchmark calls.
type llama struct {
	modelDefaults, modelLoad, modelFree, ctxDefaults, ctxInit, setThreads, free unsafe.Pointer
	batchInit, batchFree, decode, logitsIth, getMemory, memoryClear             unsafe.Pointer
	model                                                                       unsafe.Pointer
}

func openLlama() (*llama, error) {
	ggml, err := open("libggml.v0.5.0.so", "ggml_backend_load_all_from_path", "ggml_log_set")
	if err != nil {
		return nil, err
	}
	C.silence(ggml[1])
	dir := C.CString(libDir())
	defer C.free(unsafe.Pointer(dir))
	C.load_backends(ggml[0], dir) // the CPU backend variant for this CPU
	s, err := open("libllama.v0.5.0.so", "llama_model_default_params", "llama_model_load_from_file", "llama_model_free",
		"llama_context_default_params", "llama_init_from_model", "llama_set_n_threads", "llama_free",
		"llama_batch_init", "llama_batch_free", "llama_decode", "llama_get_logits_ith", "llama_get_memory", "llama_memory_clear")
	if err != nil {
		return nil, err
	}
	logSet, err := open("libllama.v0.5.0.so", "llama_log_set")
	if err != nil {
		return nil, err
	}
	C.silence(logSet[0])
	return &llama{s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7], s[8], s[9], s[10], s[11], s[12], nil}, nil
}

// loadModel loads a GGUF file with llama.cpp's default model parameters.
func (l *llama) loadModel(path string) error {
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	l.model = C.model_load(l.modelDefaults, l.modelLoad, cpath)
	if l.model == nil {
		return fmt.Errorf("llama.cpp cannot load %s", path)
	}
	return nil
}

func (l *llama) freeContext(ctx unsafe.Pointer) { C.call1(l.free, ctx) }
func (l *llama) freeModel()                     { C.call1(l.modelFree, l.model) }

// vocabSize is the loaded model's vocabulary size, as llama.cpp read it.
func (l *llama) vocabSize() (int, error) {
	s, err := open("libllama.v0.5.0.so", "llama_model_get_vocab", "llama_vocab_n_tokens")
	if err != nil {
		return 0, err
	}
	n := int(C.n_vocab(s[0], s[1], l.model))
	if n <= 0 {
		return 0, fmt.Errorf("llama.cpp reads a vocabulary of %d tokens", n)
	}
	return n, nil
}

// benchToks is gobench's fixed arithmetic sequence of ids, modulo the
// vocabulary size (GPT-2's 50257, SmolLM's 49152, Qwen2.5's 151936).
func benchToks(n, seed, vocab int) []int32 {
	ids := make([]int32, n)
	for i := range ids {
		ids[i] = int32((seed*7919 + i*104729) % vocab)
	}
	return ids
}

// bench measures llama.cpp through its C API, natively, exactly as
// gobench measures llorch-check, and prints one JSON line of the same
// figures. No JavaScript binding sits in between: node-llama-cpp adds
// 2–9 ms per decode step on this machine, which would flatter us.
func bench(args []string) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	model := fs.String("model", "", "GGUF file")
	mode := fs.String("mode", "run", "load or run")
	threads := fs.Int("threads", 2, "llama.cpp threads")
	prefill := fs.Int("prefill", 128, "prefill tokens")
	prompt := fs.Int("prompt", 16, "prompt length before decoding")
	steps := fs.Int("steps", 64, "decode steps")
	batches := fs.String("batches", "4,8", "batch sizes for batched decode")
	if err := fs.Parse(args); err != nil {
		return err
	}
	l, err := openLlama()
	if err != nil {
		return err
	}
	baseline := procstat.PeakRSS()
	start := time.Now()
	if err := l.loadModel(*model); err != nil {
		return err
	}
	loadS := time.Since(start).Seconds()
	defer l.freeModel()
	vocab, err := l.vocabSize()
	if err != nil {
		return err
	}
	out := map[string]any{"impl": fmt.Sprintf("llama.cpp v0.5.0 C API (node-llama-cpp's prebuilt libraries, CPU backend %s), %d threads", cpuVariant(), *threads)}
	if *mode == "load" {
		if _, err := l.decodeRun(1, *prompt, 1, *threads, vocab); err != nil {
			return err
		}
		out["load_s"], out["peak_rss"], out["baseline_rss"] = loadS, procstat.PeakRSS(), baseline
		return emitJSON(out)
	}
	if _, err := l.decodeRun(1, *prompt, 2, *threads, vocab); err != nil { // warm-up
		return err
	}
	best := math.Inf(1)
	ctx := C.context_new(l.ctxDefaults, l.ctxInit, l.setThreads, l.model, C.uint32_t(*prefill+8), C.uint32_t(*prefill), 1, C.int32_t(*threads))
	if ctx == nil {
		return fmt.Errorf("llama_init_from_model failed")
	}
	b := C.batch_new(l.batchInit, C.int32_t(*prefill))
	for range 3 {
		C.clear(l.getMemory, l.memoryClear, ctx)
		ids := benchToks(*prefill, 0, vocab)
		b.n_tokens = C.int32_t(len(ids))
		for i, t := range ids {
			C.batch_set(&b, C.int32_t(i), C.int32_t(t), C.int32_t(i), 0, C.int8_t(boolInt(i == len(ids)-1)))
		}
		t := time.Now()
		if rc := C.decode(l.decode, ctx, b); rc != 0 {
			return fmt.Errorf("llama_decode: %d", rc)
		}
		C.argmax(l.logitsIth, ctx, -1, C.int32_t(vocab))
		best = min(best, time.Since(t).Seconds())
	}
	C.batch_free(l.batchFree, b)
	C.call1(l.free, ctx)
	out["prefill_tps"] = float64(*prefill) / best
	d1, err := l.decodeRun(1, *prompt, *steps, *threads, vocab)
	if err != nil {
		return err
	}
	d2, err := l.decodeRun(1, *prompt, *steps, *threads, vocab)
	if err != nil {
		return err
	}
	out["decode1_tps"] = float64(*steps) / min(d1, d2)
	for _, s := range strings.Split(*batches, ",") {
		B, err := strconv.Atoi(s)
		if err != nil {
			return err
		}
		d, err := l.decodeRun(B, *prompt, *steps, *threads, vocab)
		if err != nil {
			return err
		}
		out[fmt.Sprintf("decode%d_tps", B)] = float64(B**steps) / d
	}
	return emitJSON(out)
}

// decodeRun prefills B sequences with prompt tokens each, then times steps
// decode steps of one token per sequence in one batch, each followed by
// every sequence's greedy choice over the vocab logits.
func (l *llama) decodeRun(B, prompt, steps, threads, vocab int) (float64, error) {
	ctx := C.context_new(l.ctxDefaults, l.ctxInit, l.setThreads, l.model, C.uint32_t(B*(prompt+steps+8)), C.uint32_t(max(prompt, B)), C.uint32_t(B), C.int32_t(threads))
	if ctx == nil {
		return 0, fmt.Errorf("llama_init_from_model failed")
	}
	defer C.call1(l.free, ctx)
	b := C.batch_new(l.batchInit, C.int32_t(max(prompt, B)))
	defer C.batch_free(l.batchFree, b)
	for s := range B {
		ids := benchToks(prompt, 1+s, vocab)
		b.n_tokens = C.int32_t(len(ids))
		for i, t := range ids {
			C.batch_set(&b, C.int32_t(i), C.int32_t(t), C.int32_t(i), C.int32_t(s), C.int8_t(boolInt(i == len(ids)-1)))
		}
		if rc := C.decode(l.decode, ctx, b); rc != 0 {
			return 0, fmt.Errorf("llama_decode (prompt): %d", rc)
		}
	}
	next := make([][]int32, B)
	for s := range next {
		next[s] = benchToks(steps, 100+s, vocab)
	}
	start := time.Now()
	for step := range steps {
		b.n_tokens = C.int32_t(B)
		for s := range B {
			C.batch_set(&b, C.int32_t(s), C.int32_t(next[s][step]), C.int32_t(prompt+step), C.int32_t(s), 1)
		}
		if rc := C.decode(l.decode, ctx, b); rc != 0 {
			return 0, fmt.Errorf("llama_decode (step %d): %d", step, rc)
		}
		for s := range B {
			C.argmax(l.logitsIth, ctx, C.int32_t(s), C.int32_t(vocab))
		}
	}
	return time.Since(start).Seconds(), nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func emitJSON(v map[string]any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	fmt.Println(string(b))
	return nil
}

// cpuVariant names the CPU backend ggml loaded for this machine (the
// libggml-cpu-VARIANT.so its scoring picked from libDir: zen4, haswell,
// ...), read from the process's mappings, or "unknown".
func cpuVariant() string {
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return "unknown"
	}
	for _, line := range strings.Split(string(maps), "\n") {
		if i := strings.Index(line, "libggml-cpu-"); i >= 0 {
			return strings.TrimSuffix(line[i+len("libggml-cpu-"):], ".so")
		}
	}
	return "unknown"
}
