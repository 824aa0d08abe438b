//go:build llamacpp

package main

/*
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// llama_context_params of llama.h (release v0.5.0, which package-lock
// pins) up to type_v, the last field set here; rest keeps the library's
// defaults. lc_params_ok checks the defaults this layout reads, so a
// library whose struct moved is refused instead of misconfigured.
typedef struct {
	uint32_t n_ctx, n_batch, n_ubatch, n_seq_max, n_rs_seq, n_outputs_max, n_outputs_max_per_seq;
	int32_t n_threads, n_threads_batch;
	int32_t ctx_type, rope_scaling_type, pooling_type, attention_type, flash_attn_type;
	float rope_freq_base, rope_freq_scale, yarn_ext_factor, yarn_attn_factor, yarn_beta_fast, yarn_beta_slow;
	uint32_t yarn_orig_ctx;
	float defrag_thold;
	void *cb_eval, *cb_eval_user_data;
	int32_t type_k, type_v;
	char rest[1024];
} lc_ctx_params;

// struct ggml_tensor of ggml.h (GGML_MAX_DIMS 4, GGML_MAX_OP_PARAMS 64,
// GGML_MAX_SRC 10, GGML_MAX_NAME 64).
typedef struct lc_tensor {
	int32_t type;
	void *buffer;
	int64_t ne[4];
	size_t nb[4];
	int32_t op;
	int32_t op_params[16];
	int32_t flags;
	struct lc_tensor *src[10];
	struct lc_tensor *view_src;
	size_t view_offs;
	void *data;
	char name[64];
	void *extra;
	char padding[8];
} lc_tensor;

// One tensor the graph callback copied: key is its name, or "src1:" and
// the name of its second operand for nodes llama.cpp leaves unnamed.
typedef struct { char key[80]; int32_t type; int64_t ne[4]; float *data; } lc_rec;

// lc_capture is the callback's state, allocated in C because llama.cpp
// holds it across llama_decode. names is a NUL-separated, double-NUL
// terminated list of the keys wanted.
typedef struct {
	const char *names;
	bool (*is_host)(void *buffer);
	lc_rec *recs;
	int n, cap;
} lc_capture;

static int lc_params_ok(void *defaults) {
	lc_ctx_params p = ((lc_ctx_params (*)(void))defaults)();
	return p.n_ctx == 512 && p.n_batch == 2048 && p.n_ubatch == 512 && p.n_seq_max == 1 &&
		p.flash_attn_type == -1 && p.yarn_ext_factor == -1.0f && p.defrag_thold == -1.0f &&
		p.cb_eval == NULL && p.cb_eval_user_data == NULL && p.type_k == 1 && p.type_v == 1;
}

static bool lc_listed(const char *names, const char *s) {
	for (const char *n = names; *n; n += strlen(n) + 1)
		if (strcmp(n, s) == 0) return true;
	return false;
}

// lc_key writes the key under which t is wanted into key, or returns false.
static bool lc_key(lc_capture *c, lc_tensor *t, char *key) {
	if (lc_listed(c->names, t->name)) {
		snprintf(key, 80, "%s", t->name);
		return true;
	}
	if (t->src[1] != NULL) {
		char k[80];
		snprintf(k, sizeof k, "src1:%s", t->src[1]->name);
		if (lc_listed(c->names, k)) {
			memcpy(key, k, sizeof k);
			return true;
		}
	}
	return false;
}

// lc_copy gathers a float32 tensor through its strides (views such as
// Qcur are not contiguous) into dst, ne[0] fastest.
static void lc_copy(lc_tensor *t, float *dst) {
	const char *base = t->data;
	for (int64_t i3 = 0; i3 < t->ne[3]; i3++)
	for (int64_t i2 = 0; i2 < t->ne[2]; i2++)
	for (int64_t i1 = 0; i1 < t->ne[1]; i1++)
	for (int64_t i0 = 0; i0 < t->ne[0]; i0++)
		*dst++ = *(const float *)(base + i0*t->nb[0] + i1*t->nb[1] + i2*t->nb[2] + i3*t->nb[3]);
}

// lc_eval is the ggml_backend_sched_eval_callback: asked first whether a
// node is wanted (the scheduler then computes up to it), then called with
// the node computed. The copy is taken at once because ggml-alloc reuses
// an intermediate's memory for later nodes.
static bool lc_eval(lc_tensor *t, bool ask, void *ud) {
	lc_capture *c = ud;
	char key[80];
	if (!lc_key(c, t, key)) return !ask;
	if (ask) return true;
	if (c->n == c->cap) {
		int cap = c->cap ? 2*c->cap : 64;
		lc_rec *r = realloc(c->recs, cap * sizeof *r);
		if (r == NULL) return false; // cancels the graph: llama_decode fails
		c->recs = r; c->cap = cap;
	}
	lc_rec *r = &c->recs[c->n++];
	memcpy(r->key, key, sizeof key);
	r->type = t->type;
	memcpy(r->ne, t->ne, sizeof r->ne);
	r->data = NULL;
	if (t->type == 0 && t->buffer != NULL && t->data != NULL && c->is_host(t->buffer)) {
		r->data = malloc(t->ne[0]*t->ne[1]*t->ne[2]*t->ne[3] * sizeof(float));
		if (r->data == NULL) return false;
		lc_copy(t, r->data);
	}
	return true;
}

static void lc_reset(lc_capture *c) {
	for (int i = 0; i < c->n; i++) free(c->recs[i].data);
	c->n = 0;
}

static void *lc_context(void *defaults, void *init, void *set_threads, void *model, uint32_t n_ctx, int32_t threads,
		int32_t flash_attn, int32_t kv_type, lc_capture *capture) {
	lc_ctx_params p = ((lc_ctx_params (*)(void))defaults)();
	p.n_ctx = n_ctx; p.n_batch = n_ctx; p.n_ubatch = n_ctx; p.n_seq_max = 1;
	p.n_threads = threads; p.n_threads_batch = threads;
	p.flash_attn_type = flash_attn;
	p.type_k = kv_type; p.type_v = kv_type;
	if (capture != NULL) { p.cb_eval = (void *)lc_eval; p.cb_eval_user_data = capture; }
	void *ctx = ((void *(*)(void *, lc_ctx_params))init)(model, p);
	if (ctx) ((void (*)(void *, int32_t, int32_t))set_threads)(ctx, threads, threads);
	return ctx;
}

typedef struct { int32_t n_tokens; int32_t *token; float *embd; int32_t *pos; int32_t *n_seq_id; int32_t **seq_id; int8_t *logits; } lc_batch;

// lc_decode runs n tokens from position pos in one batch, every one with
// logits when all is set, else only the last.
static int32_t lc_decode(void *binit, void *bfree, void *decode, void *ctx, const int32_t *tok, int32_t n, int32_t pos, bool all) {
	lc_batch b = ((lc_batch (*)(int32_t, int32_t, int32_t))binit)(n, 0, 1);
	b.n_tokens = n;
	for (int32_t i = 0; i < n; i++) {
		b.token[i] = tok[i]; b.pos[i] = pos + i; b.n_seq_id[i] = 1; b.seq_id[i][0] = 0;
		b.logits[i] = all || i == n - 1;
	}
	int32_t rc = ((int32_t (*)(void *, lc_batch))decode)(ctx, b);
	((void (*)(lc_batch))bfree)(b);
	return rc;
}

static const float *lc_logits(void *get, void *ctx, int32_t i) { return ((float *(*)(void *, int32_t))get)(ctx, i); }
static void *lc_ptr1(void *f, void *a) { return ((void *(*)(void *))f)(a); }
static int32_t lc_int1(void *f, void *a) { return ((int32_t (*)(void *))f)(a); }
static int32_t lc_piece(void *f, void *vocab, int32_t tok, char *buf, int32_t n) {
	return ((int32_t (*)(void *, int32_t, char *, int32_t, int32_t, bool))f)(vocab, tok, buf, n, 0, false);
}
static int32_t lc_meta(void *f, void *model, const char *key, char *buf, size_t n) {
	return ((int32_t (*)(void *, const char *, char *, size_t))f)(model, key, buf, n);
}
static void lc_clear(void *get_memory, void *memory_clear, void *ctx) {
	((void (*)(void *, bool))memory_clear)(((void *(*)(void *))get_memory)(ctx), true);
}
*/
import "C"

import (
	"flag"
	"fmt"
	"strings"
	"unsafe"
)

// engine is a GGUF model loaded by llama.cpp, with the C API calls the
// dump and the server make.
type engine struct {
	*llama
	vocab                                    unsafe.Pointer
	getVocab, nTokens, piece, meta, nCtxFrom unsafe.Pointer
	isHost                                   unsafe.Pointer
	nVocab, nCtxTrain                        int
}

func loadEngine(path string) (*engine, error) {
	l, err := openLlama()
	if err != nil {
		return nil, err
	}
	if C.lc_params_ok(l.ctxDefaults) == 0 {
		return nil, fmt.Errorf("libllama's llama_context_params defaults are not those of llama.h v0.5.0: its layout moved, refusing to configure it")
	}
	s, err := open("libllama.v0.5.0.so", "llama_model_get_vocab", "llama_vocab_n_tokens", "llama_token_to_piece",
		"llama_model_meta_val_str", "llama_model_n_ctx_train")
	if err != nil {
		return nil, err
	}
	h, err := open("libggml-base.so", "ggml_backend_buffer_is_host")
	if err != nil {
		return nil, err
	}
	e := &engine{llama: l, getVocab: s[0], nTokens: s[1], piece: s[2], meta: s[3], nCtxFrom: s[4], isHost: h[0]}
	if err := l.loadModel(path); err != nil {
		return nil, err
	}
	e.vocab = C.lc_ptr1(e.getVocab, e.model)
	e.nVocab = int(C.lc_int1(e.nTokens, e.vocab))
	e.nCtxTrain = int(C.lc_int1(e.nCtxFrom, e.model))
	return e, nil
}

// withContext loads model through openEngine and runs f with a llama
// context made with the options it parsed, freeing both after.
func withContext(openEngine func(string) (*engine, ctxOptions, error), model string, f func(e *engine, ctx unsafe.Pointer, o ctxOptions) error) error {
	e, o, err := openEngine(model)
	if err != nil {
		return err
	}
	defer e.freeModel()
	ctx, err := e.newContext(o, nil)
	if err != nil {
		return err
	}
	defer e.freeContext(ctx)
	return f(e, ctx, o)
}

// ctxOptions are the llama_context_params that decide llama.cpp's
// arithmetic besides the weights.
type ctxOptions struct {
	threads   int
	flashAttn int32 // LLAMA_FLASH_ATTN_TYPE_*: -1 auto, 0 off, 1 on
	kvType    int32 // GGML_TYPE_F32 (0) or GGML_TYPE_F16 (1, llama.cpp's default)
}

// flashAttnTypes are LLAMA_FLASH_ATTN_TYPE_*; kvTypes the ggml types of
// the KV cache (GGML_TYPE_F32 0, GGML_TYPE_F16 1).
var (
	flashAttnTypes = map[string]int32{"auto": -1, "off": 0, "on": 1}
	kvTypes        = map[string]int32{"f32": 0, "f16": 1}
)

// engineFlags registers the context flags dump and serve share and
// returns what parses them and loads the model with llama.cpp.
func engineFlags(fs *flag.FlagSet) func(model string) (*engine, ctxOptions, error) {
	threads := fs.Int("threads", 2, "llama.cpp threads")
	fa := fs.String("flash-attn", "auto", "llama.cpp flash attention: auto (its default, on for the CPU), on, off")
	kv := fs.String("kv", "f16", "KV cache type: f16 (llama.cpp's default) or f32")
	return func(model string) (*engine, ctxOptions, error) {
		o := ctxOptions{threads: *threads}
		var ok bool
		if o.flashAttn, ok = flashAttnTypes[*fa]; !ok {
			return nil, o, fmt.Errorf("-flash-attn %q: want auto, on or off", *fa)
		}
		if o.kvType, ok = kvTypes[*kv]; !ok {
			return nil, o, fmt.Errorf("-kv %q: want f16 or f32", *kv)
		}
		e, err := loadEngine(model)
		return e, o, err
	}
}

func keyOf(m map[string]int32, v int32) string {
	for k, x := range m {
		if x == v {
			return k
		}
	}
	return fmt.Sprint(v)
}

func (o ctxOptions) String() string {
	return fmt.Sprintf("KV cache %s, flash attention %s, %d threads",
		strings.ToUpper(keyOf(kvTypes, o.kvType)), keyOf(flashAttnTypes, o.flashAttn), o.threads)
}

// newContext makes a context of the model's full trained length, one
// batch wide, so a prompt is one llama_decode; capture may be nil.
func (e *engine) newContext(o ctxOptions, capture *C.lc_capture) (unsafe.Pointer, error) {
	ctx := C.lc_context(e.ctxDefaults, e.ctxInit, e.setThreads, e.model, C.uint32_t(e.nCtxTrain), C.int32_t(o.threads),
		C.int32_t(o.flashAttn), C.int32_t(o.kvType), capture)
	if ctx == nil {
		return nil, fmt.Errorf("llama_init_from_model failed (%s)", o)
	}
	return ctx, nil
}

// decode runs tokens from position pos; with all, every position keeps
// its logits, else only the last.
func (e *engine) decode(ctx unsafe.Pointer, tokens []int, pos int, all bool) error {
	if len(tokens) == 0 || pos+len(tokens) > e.nCtxTrain {
		return fmt.Errorf("%d tokens from position %d do not fit the context of %d", len(tokens), pos, e.nCtxTrain)
	}
	ids := make([]C.int32_t, len(tokens))
	for i, t := range tokens {
		if t < 0 || t >= e.nVocab {
			return fmt.Errorf("token %d at %d is outside the vocabulary of %d", t, i, e.nVocab)
		}
		ids[i] = C.int32_t(t)
	}
	if rc := C.lc_decode(e.batchInit, e.batchFree, e.llama.decode, ctx, &ids[0], C.int32_t(len(ids)), C.int32_t(pos), C.bool(all)); rc != 0 {
		return fmt.Errorf("llama_decode of %d tokens at position %d: %d", len(tokens), pos, rc)
	}
	return nil
}

// logits copies the logits of output row i (-1: the last).
func (e *engine) logits(ctx unsafe.Pointer, i int) ([]float32, error) {
	p := C.lc_logits(e.logitsIth, ctx, C.int32_t(i))
	if p == nil {
		return nil, fmt.Errorf("llama_get_logits_ith(%d): no logits", i)
	}
	return append([]float32(nil), unsafe.Slice((*float32)(unsafe.Pointer(p)), e.nVocab)...), nil
}

func (e *engine) clear(ctx unsafe.Pointer) { C.lc_clear(e.getMemory, e.memoryClear, ctx) }

// tokenPiece is llama.cpp's text of a token, as bytes (a GPT-2 token may
// be part of a UTF-8 sequence).
func (e *engine) tokenPiece(tok int) []byte {
	buf := make([]byte, 64)
	for {
		n := int(C.lc_piece(e.piece, e.vocab, C.int32_t(tok), (*C.char)(unsafe.Pointer(&buf[0])), C.int32_t(len(buf))))
		if n >= 0 {
			return buf[:n]
		}
		buf = make([]byte, -n)
	}
}

// metaString is a GGUF metadata value as llama.cpp read it.
func (e *engine) metaString(key string) (string, bool) {
	ck := C.CString(key)
	defer C.free(unsafe.Pointer(ck))
	buf := make([]byte, 256)
	n := int(C.lc_meta(e.meta, e.model, ck, (*C.char)(unsafe.Pointer(&buf[0])), C.size_t(len(buf))))
	if n < 0 || n >= len(buf) {
		return "", false
	}
	return string(buf[:n]), true
}

// capture is llama.cpp's graph callback state: the keys wanted and the
// tensors copied during the last llama_decode.
type capture struct{ c *C.lc_capture }

func newCapture(e *engine, keys []string) capture {
	c := (*C.lc_capture)(C.calloc(1, C.size_t(unsafe.Sizeof(C.lc_capture{}))))
	c.names = C.CString(strings.Join(keys, "\x00") + "\x00")
	c.is_host = (*[0]byte)(e.isHost)
	return capture{c}
}

func (c capture) free() {
	C.lc_reset(c.c)
	C.free(unsafe.Pointer(c.c.recs))
	C.free(unsafe.Pointer(c.c.names))
	C.free(unsafe.Pointer(c.c))
}

// captured is one tensor of the graph, ne[0] fastest.
type captured struct {
	ne   [4]int
	data []float32
}

// take returns what the last decode captured, by key (a key seen twice,
// such as Qcur named on a view and on its reshape, keeps every instance
// in graph order), and empties the capture.
func (c capture) take() (map[string][]captured, error) {
	out := map[string][]captured{}
	for _, r := range unsafe.Slice(c.c.recs, c.c.n) {
		key := C.GoString(&r.key[0])
		if r.data == nil {
			C.lc_reset(c.c)
			return nil, fmt.Errorf("graph tensor %s: type %d or not in host memory; only float32 on the CPU is read", key, r._type)
		}
		t := captured{ne: [4]int{int(r.ne[0]), int(r.ne[1]), int(r.ne[2]), int(r.ne[3])}}
		t.data = append([]float32(nil), unsafe.Slice((*float32)(unsafe.Pointer(r.data)), t.ne[0]*t.ne[1]*t.ne[2]*t.ne[3])...)
		out[key] = append(out[key], t)
	}
	C.lc_reset(c.c)
	return out, nil
}
