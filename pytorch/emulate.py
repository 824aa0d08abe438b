"""Engine numerics for dump_references.py --emulate: an engine's documented
approximations applied exactly inside the PyTorch forward (gpt2_torch.GPT2's
numerics hook), so that a lossy engine is proved against a reference of what
it computes, at the default tolerances, and what the approximations cost is
measured against the plain set instead of being fitted into a tolerance.

Profiles (docs/gguf.md, "llama.cpp's derived profile"):

  llamacpp-cpu      llama.cpp's CPU backend with an F32 KV cache and flash
                    attention off: ggml's GELU through its float16 table.
  llamacpp-cpu-f16kv
                    the same with llama.cpp's default F16 KV cache (flash
                    attention still off): K and V stored as float16, and the
                    other operand of each attention matmul converted to
                    float16 as ggml's mul_mat does for an F16 first operand.
  f16-kv            llorch-check's own float16 KV cache (serve
                    --kv-cache-dtype f16): K and V rounded to float16 when
                    the cache stores them, widened exactly when it is read;
                    q, the scores, the softmax, the GELU and every product
                    and sum stay float32 (float64 in the twin).

Which profiles a family's forward applies is the family's to say (its
EMULATE, families.py): the llama.cpp profiles are GPT-2's (ggml's GELU
table); f16-kv applies to GPT-2 and to the Llama family.

Each llama.cpp step cites the ggml source it follows (llama.cpp as node-llama-cpp
3.22.1 bundles it, release v0.5.0).
"""

import math

import numpy as np
import torch

import families
from gpt2_torch import gelu_new


def to_f16(x):
    """x rounded to float16, nearest even, in x's dtype. numpy rounds float64
    to float16 directly (torch would go through float32 first: two
    roundings); float32 to float16 is F16C's _cvtss_sh(x, 0), ggml's
    GGML_CPU_FP32_TO_FP16 on x86."""
    return torch.from_numpy(x.detach().numpy().astype(np.float16)).to(x.dtype)


# ggml-cpu/vec.h: GELU_COEF_A, SQRT_2_OVER_PI, as float32.
_GELU_COEF_A = np.float32(0.044715)
_SQRT_2_OVER_PI = np.float32(0.79788456080286535587989211986876)


def ggml_gelu_table():
    """ggml_table_gelu_f16 (ggml-cpu/ggml-cpu.c, ggml_cpu_init): for every
    float16 bit pattern h, GGML_CPU_FP32_TO_FP16(ggml_gelu_f32(h)), where
    ggml_gelu_f32 (ggml-cpu/vec.h) is
        0.5f*x*(1.0f + tanhf(SQRT_2_OVER_PI*x*(1.0f + GELU_COEF_A*x*x)))
    in float32, as the x86-64 libraries with FMA (haswell and later
    variants) compile it: 1.0f + (GELU_COEF_A*x)*x contracted into one
    fused multiply-add, and glibc's tanhf, correctly rounded here as
    float64 tanh rounded to float32. Evaluated with numpy's float32 tanh
    and no contraction, 234 entries of the range ggml looks up differ (all
    at x < -1.8, where 1 + tanh cancels); as written, none does: drift.sh
    compares the whole table with the one llama.cpp's library holds
    (ggml gelu-table)."""
    with np.errstate(all="ignore"):  # NaN and Inf patterns, never looked up
        x = np.arange(1 << 16, dtype=np.uint16).view(np.float16).astype(np.float32)
        # fma(a, x, 1): the product of two float32 values is exact in float64.
        fma = ((_GELU_COEF_A * x).astype(np.float64) * x + 1.0).astype(np.float32)
        inner = _SQRT_2_OVER_PI * x * fma
        t = np.tanh(inner.astype(np.float64)).astype(np.float32)
        y = np.float32(0.5) * x * (np.float32(1) + t)
        return y.astype(np.float16)


class LlamaCppCPU:
    """ggml's CPU numerics where they are not float32 arithmetic.

    gelu: ggml_vec_gelu_f32 under GGML_GELU_FP16 (ggml-cpu/vec.h, defined
    there): x <= -10 gives 0, x >= 10 gives x, otherwise x is rounded to
    float16 and the table's float16 value for it is returned, widened.

    With f16_kv (llama.cpp's default cache type): the K and V the cache
    stores are float16 (src/llama-kv-cache.cpp, ggml_set_rows into an F16
    tensor), and with flash attention off the attention's two matmuls are
    ggml_mul_mat(k, q) and ggml_mul_mat(v, kq_soft_max) with an F16 first
    operand (src/llama-graph.cpp, build_attn_mha): ggml-cpu converts the
    second operand to the first's vec_dot_type, F16, before the dot
    products (ggml-cpu/ggml-cpu.c, ggml_compute_forward_mul_mat), so q and
    the softmax are rounded to float16 too. Products of float16 values are
    exact in float32; the sums stay float32."""

    # ggml's GELU table is GPT-2's activation and Gemma's GeGLU's; llama.cpp's
    # Llama-family graph (SiLU, its RoPE and RMSNorm kernels) is not emulated.
    only_because = "it emulates llama.cpp's GELU (ggml's float16 table): GPT-2's and Gemma's graphs"

    def __init__(self, f16_kv=False):
        self.f16_kv = f16_kv
        self.table = torch.from_numpy(ggml_gelu_table().astype(np.float64))

    def gelu(self, x):
        h = x.detach().numpy().astype(np.float16).view(np.uint16).astype(np.int64)
        y = self.table[torch.from_numpy(h)].to(x.dtype)
        y = torch.where(x <= -10.0, torch.zeros_like(x), y)
        return torch.where(x >= 10.0, x, y)

    def cache(self, t):
        return to_f16(t) if self.f16_kv else t

    def kq_operand(self, q):
        return to_f16(q) if self.f16_kv else q

    def kqv_operand(self, p):
        return to_f16(p) if self.f16_kv else p


class F16KV:
    """llorch-check's float16 KV cache (serve --kv-cache-dtype f16): the K
    and V the cache stores are rounded to float16, nearest even (to_f16,
    as for llama.cpp's F16 cache), when written, and widened exactly when
    read, so every attention over the cache (the prefill's too) uses the
    rounded values. Nothing else changes: q and the softmax probabilities
    enter the matmuls unrounded, the scores, products and sums stay float32
    (float64 in the twin, which rounds the same K and V directly from
    float64), and the GELU is the plain one. GPT-2 and the Llama family
    (there the cache holds k after RoPE and v, grouped: Hkv heads, before
    GQA repeats them)."""

    gelu = staticmethod(gelu_new)  # gpt2_torch's own: this profile leaves the GELU alone

    def cache(self, t):
        return to_f16(t)

    def kq_operand(self, q):
        return q

    def kqv_operand(self, p):
        return p


PROFILES = {
    "llamacpp-cpu": lambda: LlamaCppCPU(f16_kv=False),
    "llamacpp-cpu-f16kv": lambda: LlamaCppCPU(f16_kv=True),
    "f16-kv": F16KV,
}

# What each profile says it applies, for the manifest.
DESCRIPTIONS = {
    "llamacpp-cpu": "llama.cpp CPU, F32 KV cache, flash attention off: GELU through ggml's float16 table, "
                    "x rounded to float16, |x| >= 10 passed through or zeroed",
    "llamacpp-cpu-f16kv": "llama.cpp CPU, F16 KV cache, flash attention off: GELU through ggml's float16 table; "
                          "K, V stored as float16; q and the softmax rounded to float16 for the attention matmuls",
    "f16-kv": "llorch-check's float16 KV cache (llorch-check serve --kv-cache-dtype f16): K and V stored as float16 "
              "(nearest even) and widened exactly when read; q, the scores, the softmax and all arithmetic float32",
}


def profile(name):
    """The numerics object of a profile, or None for plain PyTorch."""
    if name in (None, "none"):
        return None
    return PROFILES[name]()


def unsupported(name, model_type):
    """Why profile name cannot emulate a model of model_type (a family's
    EMULATE does not list it), or None."""
    if name in (None, "none"):
        return None
    applied = families.family(model_type).EMULATE
    if name in applied:
        return None
    p = PROFILES[name]()
    usable = [n for n in PROFILES if n in applied]
    return (f"--emulate {name}: not implemented for model_type {model_type!r}: {p.only_because}; "
            f"the profiles for {model_type!r} are {', '.join(usable) or 'none'}")


assert math.isclose(float(_SQRT_2_OVER_PI), math.sqrt(2 / math.pi), rel_tol=1e-7)
