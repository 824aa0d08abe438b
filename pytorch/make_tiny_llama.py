#!/usr/bin/env python3
"""Write a tiny Llama-family model (HF layout) with numerics that give the
checks teeth, as make_tiny_model.py does for GPT-2.

  --arch llama    untied lm_head, rms_norm_eps 1e-5
  --arch llama3   llama with rope_scaling type llama3 (factor 8, low 1,
                  high 4, original_max_position_embeddings 64, so that every
                  regime of the rescaling is hit at a 128-token context),
                  tied lm_head (keeps the committed file at 4 MB)
  --arch qwen2    q/k/v biases, tied lm_head, rms_norm_eps 1e-6
  --arch qwen3    per-head q_norm/k_norm, head_dim 32 (hidden/heads = 16), untied
  --arch mistral  llama's weights (the same draws) with a sliding window of
                  24 keys, which the 63-token case passes; untied
  --arch phi3     fused qkv_proj and gate_up_proj, untied, rms_norm_eps 1e-5
  --arch phi3-longrope  phi3 (the same draws) with rope_scaling longrope and
                  a pretrained context of 32: the 63-token case runs on the
                  long factors, the 5-token one on the short
  --arch gemma    Gemma 1: Llama's block with (1+w) norms, GeGLU, the
                  embedding scaled by sqrt(hidden), attention scaled by
                  head_dim^-1/2, tied; no window, no soft-cap
  --arch gemma2   Gemma 2: four (1+w) norms a block, GeGLU, tied; layer 0
                  slides over 24 keys, layer 1 is global; attention
                  soft-cap 5 and final logit soft-cap 10 (Gemma 2 ships 50
                  and 30: scaled to the tiny scores and logits so that both
                  bite); query_pre_attn_scalar = head_dim (16), as the
                  Gemma models llama.cpp's layout can say
  --arch gemma3   Gemma 3: gemma2's block with q_norm/k_norm, no soft-caps,
                  6 layers with sliding_window_pattern 6 (layers 0-4 local,
                  5 global: llama.cpp's fixed pattern), global rope_theta
                  1e6 with rope_scaling linear factor 8, local
                  rope_local_base_freq 10000
  --arch qwen3_moe Qwen3-MoE: qwen3's attention (head_dim hidden/heads),
                  layer 0 sparse (4 experts of width 32, 2 a token,
                  norm_topk_prob false, its config class's default),
                  layer 1 dense (mlp_only_layers [1], intermediate 128); untied
  --arch mixtral  Mixtral: mistral's attention and window of 24, every
                  layer sparse (4 experts of intermediate 64, 2 a token,
                  always renormalised); untied

All: hidden 64, 2 layers (gemma3: 6), 4 query heads, 2 KV heads (GQA ratio 2),
intermediate 128, context 128, rope_theta 10000. Vocabulary: Llama 2's
SentencePiece (32000 tokens, llama.cpp's ggml-vocab-llama-spm.gguf) for
llama, llama3 and mistral; Phi-3's (32064, ggml-vocab-phi-3.gguf) for phi3. Qwen's
vocabulary is not available as GGUF here: qwen2/qwen3 take vocab_size 32000
and the Llama vocabulary's ids (bos 1, eos 2) for their weights' shapes.

Scales (C = hidden, layer i), drawn from np.random.default_rng(seed) in a
fixed order and stored as float16 (the norms too):
  embed    rows N(0, s²), s = 0.07·exp(0.2·N), 15% of rows 0.025·exp(0.2·N):
           mean squares ~6e-4, where rms_norm_eps 1e-5 vs 1e-6 moves
           attn_norm by ~1e-2.
  norms    exp(0.2·N); the final norm 4.5·exp(0.2·N), 0.1 on the outlier
           channels, so logits have a std of a few units.
  q, k     N(0, 0.22²) (Qwen3: q_norm/k_norm weights 2·exp(0.2·N)): scores
           with a std of a few units, so attention is peaked and RoPE's pair
           layout changes it at O(1).
  v        N(0, 0.15²); o_proj N(0, (0.06·(i+1))²).
  biases   Qwen2: q, v N(0, 0.1²), k N(0, 0.5²) (Qwen2's k biases are large).
  gate,up  N(0, 0.18²): pre-SiLU values within about [-5, 5].
  down     N(0, (0.05·(i+1))²), columns of three outlier channels 5x.
  lm_head  (untied) rows like embed's, drawn separately.
  router   (qwen3_moe, mixtral) N(0, 0.25²): router logits with a std of
           about 2, so two of four experts take most of the probability
           and the top-2 sum is 0.6-0.95: a missing renormalisation, or a
           softmax after the top-k, moves down by 5-40%.
  experts  gate, up as above; down N(0, (0.05·(i+1)·sqrt(I/Im))²), Im the
           expert's width, its outliers 5x as above.
Deterministic: the same arguments give the same bytes.

Other shapes (for tests of GQA ratios, head dims, tied and untied heads):
--layers, --heads, --kv-heads, --hidden, --intermediate, --context and
--tied/--untied override the arch's defaults; given no shape flag (or only
the defaults' values) the script writes exactly the files above. --head-dim
is Qwen3's, whose config sets head_dim apart from hidden/heads (default
2·hidden/heads: the 32 above); the other archs' is hidden/heads. Llama
3's original_max_position_embeddings is half the context. The scales keep
their purpose: each matrix's std is multiplied by sqrt(default fan-in /
fan-in) (q, k, v, gate, up: hidden; o_proj: heads·head_dim; down:
intermediate) and the final norm's 4.5 by sqrt(default hidden / hidden), so
projections, scores and logits keep the spreads above; every factor is 1 at
the default shape. An impossible shape (kv-heads not dividing heads, an odd
head_dim, which RoPE rotates in pairs, ...) is an error: exit 2.

Beside the weights: tokenizer.gguf, a relative link to the vocabulary GGUF
(the tokenizer llorch-check loads), and tokenizer_config.json with the
family's chat template (CHAT_TEMPLATES: an instruct model of the family, as
testdata/chat/SOURCE.md records) and the vocabulary's bos/eos tokens, as
Hugging Face's apply_chat_template reads them.
"""

import argparse
import collections
import json
import math
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from gguf_io import read_gguf  # noqa: E402
from safetensors_io import write_safetensors  # noqa: E402

ROOT = os.path.dirname(HERE)

VOCAB_DIR = {"llama": "llama-spm", "llama3": "llama-spm", "qwen2": "llama-spm", "qwen3": "llama-spm",
             "mistral": "llama-spm", "phi3": "phi-3", "phi3-longrope": "phi-3", "gemma": "llama-spm", "gemma2": "llama-spm",
             "gemma3": "llama-spm", "qwen3_moe": "llama-spm", "mixtral": "llama-spm"}
VOCAB_GGUF = {"llama": "ggml-vocab-llama-spm.gguf", "llama3": "ggml-vocab-llama-spm.gguf",
              "qwen2": "ggml-vocab-llama-spm.gguf", "qwen3": "ggml-vocab-llama-spm.gguf",
              "mistral": "ggml-vocab-llama-spm.gguf", "phi3": "ggml-vocab-phi-3.gguf",
              "phi3-longrope": "ggml-vocab-phi-3.gguf", "gemma": "ggml-vocab-llama-spm.gguf",
              "gemma2": "ggml-vocab-llama-spm.gguf",
              "gemma3": "ggml-vocab-llama-spm.gguf",
              "qwen3_moe": "ggml-vocab-llama-spm.gguf", "mixtral": "ggml-vocab-llama-spm.gguf"}
# Mistral's sliding window: shorter than the longer committed case (63
# tokens) and not a multiple of the KV cache's block, so that keys leave
# the window inside a block.
MISTRAL_WINDOW = 24
# Gemma's sliding layers' window, for the same reasons.
GEMMA_WINDOW = 24
ARCHS = tuple(VOCAB_GGUF)
OUTLIERS = (5, 23, 41)
L, H, HKV, C, I, P = 2, 4, 2, 64, 128, 128
SEED = 1234  # the committed models'
# The mixtures of experts' (qwen3_moe, mixtral): experts, chosen a token,
# Qwen3-MoE's expert width; Mixtral's is its intermediate size.
EXPERTS, TOP_K, MOE_I = 4, 2, 32

# A model's shape; default_shape(arch) is the committed models'.
Shape = collections.namedtuple("Shape", "layers heads kv_heads hidden head_dim intermediate context tied")


class ShapeError(ValueError):
    """A shape the arch cannot have; the message names the flag."""


def flag(field):
    return "--" + field.replace("_", "-")


def head_dim(arch):
    return 32 if arch == "qwen3" else C // H


def vocab_size(arch):
    return 32064 if arch.startswith("phi3") else 32000


def tied(arch):
    return arch in ("llama3", "qwen2", "gemma", "gemma2", "gemma3")


def gemma(arch):
    return arch in ("gemma", "gemma2", "gemma3")


def default_shape(arch):
    inter = 64 if arch == "mixtral" else I
    return Shape(6 if arch == "gemma3" else L, H, HKV, C, head_dim(arch), inter, P, tied(arch))


def sparse_layers(arch, layers):
    """The layers whose FFN is a mixture of experts: all but layer 1 of
    qwen3_moe (its mlp_only_layers: layer 0 sparse, layer 1 dense), every
    one of mixtral."""
    if arch == "qwen3_moe":
        return [i != 1 for i in range(layers)]
    return [arch == "mixtral"] * layers


def make_shape(arch, **given):
    """The arch's default shape with the given fields replaced (None keeps
    the default), checked. Qwen3's head_dim defaults to 2·hidden/heads; the
    other archs' is hidden/heads, which must divide."""
    unknown = sorted(set(given) - set(Shape._fields))
    if unknown:
        raise TypeError(f"make_shape: no field {unknown[0]!r}")
    given = {f: v for f, v in given.items() if v is not None}
    for f, v in given.items():
        if f == "tied":
            if not isinstance(v, bool):
                raise ShapeError(f"tied {v!r}: must be true or false (--tied or --untied)")
        elif not isinstance(v, int) or isinstance(v, bool) or v <= 0:
            raise ShapeError(f"{flag(f)} {v!r}: must be a positive integer")
    s = default_shape(arch)._replace(**given)
    if s.heads % s.kv_heads:
        raise ShapeError(f"--heads {s.heads} is not a multiple of --kv-heads {s.kv_heads}: "
                         f"each KV head serves heads/kv-heads query heads")
    if arch == "qwen3":
        if "head_dim" not in given:
            s = s._replace(head_dim=derived_head_dim(arch, s))
            if s.head_dim == 0:
                raise ShapeError(f"--heads {s.heads} is more than --hidden {s.hidden}: give --head-dim")
    elif s.hidden % s.heads:
        raise ShapeError(f"--hidden {s.hidden} is not a multiple of --heads {s.heads}: "
                         f"{arch}'s head_dim is hidden/heads")
    elif s.head_dim != derived_head_dim(arch, s) and "head_dim" in given:
        raise ShapeError(f"--head-dim {s.head_dim}: {arch}'s head_dim is hidden/heads = {s.hidden // s.heads}; "
                         f"only qwen3 sets it apart")
    else:
        s = s._replace(head_dim=derived_head_dim(arch, s))
    if s.head_dim % 2:
        what = "--head-dim" if "head_dim" in given else "head_dim (hidden/heads)"  # qwen3's 2·hidden/heads is even
        raise ShapeError(f"{what} {s.head_dim} is odd: RoPE rotates the head's dimensions in pairs")
    if arch == "llama3" and s.context < 2:
        raise ShapeError(f"--context {s.context}: llama3's rope scaling needs original_max_position_embeddings "
                         f"(context/2) of at least 1")
    return s


def derived_head_dim(arch, shape):
    """head_dim when --head-dim is not given: hidden/heads, twice that for
    Qwen3 (its default shape's 32)."""
    return (2 if arch == "qwen3" else 1) * (shape.hidden // shape.heads)


def shape_flags(arch, shape):
    """The flags that write shape: those of the fields that differ from the
    arch's defaults ("" for the default shape); --head-dim where it is not
    the one derived from hidden and heads."""
    out = []
    for f, v, d in zip(Shape._fields, shape, default_shape(arch)):
        if f == "head_dim":
            d = derived_head_dim(arch, shape)
        if v != d:
            out.append(("--tied" if v else "--untied") if f == "tied" else f"{flag(f)} {v}")
    return "".join(" " + x for x in out)


def config(arch, shape=None):
    s = shape or default_shape(arch)
    L, H, HKV, C, D, I, P = s.layers, s.heads, s.kv_heads, s.hidden, s.head_dim, s.intermediate, s.context
    V = vocab_size(arch)
    common = {"hidden_act": "silu", "hidden_size": C, "initializer_range": 0.02, "intermediate_size": I,
              "max_position_embeddings": P, "num_attention_heads": H, "num_hidden_layers": L,
              "num_key_value_heads": HKV, "rope_theta": 10000.0, "tie_word_embeddings": s.tied,
              "torch_dtype": "float16", "use_cache": True, "vocab_size": V, "attention_dropout": 0.0}
    if arch in ("llama", "llama3"):
        c = dict(common, architectures=["LlamaForCausalLM"], model_type="llama", attention_bias=False,
                 mlp_bias=False, bos_token_id=1, eos_token_id=2, head_dim=D, pretraining_tp=1,
                 rms_norm_eps=1e-5, rope_scaling=None)
        if arch == "llama3":
            c["rope_scaling"] = {"factor": 8.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                                 "original_max_position_embeddings": P // 2, "rope_type": "llama3"}
        return c
    if gemma(arch):
        g = dict(common, hidden_act="gelu_pytorch_tanh", hidden_activation="gelu_pytorch_tanh",
                 attention_bias=False, bos_token_id=1, eos_token_id=2, pad_token_id=0, head_dim=D,
                 rms_norm_eps=1e-6)
        if arch == "gemma":
            return dict(g, architectures=["GemmaForCausalLM"], model_type="gemma")
        g = dict(g, query_pre_attn_scalar=D, sliding_window=GEMMA_WINDOW)
        if arch == "gemma2":
            return dict(g, architectures=["Gemma2ForCausalLM"], model_type="gemma2",
                        attn_logit_softcapping=5.0, final_logit_softcapping=10.0)
        return dict(g, architectures=["Gemma3ForCausalLM"], model_type="gemma3_text", rope_theta=1000000.0,
                    rope_local_base_freq=10000.0, rope_scaling={"factor": 8.0, "rope_type": "linear"},
                    sliding_window_pattern=6, attn_logit_softcapping=None, final_logit_softcapping=None)
    if arch == "mistral":
        return dict(common, architectures=["MistralForCausalLM"], model_type="mistral", bos_token_id=1,
                    eos_token_id=2, head_dim=D, rms_norm_eps=1e-5, sliding_window=MISTRAL_WINDOW)
    if arch == "mixtral":
        return dict(common, architectures=["MixtralForCausalLM"], model_type="mixtral", bos_token_id=1,
                    eos_token_id=2, head_dim=D, rms_norm_eps=1e-5, sliding_window=MISTRAL_WINDOW,
                    num_local_experts=EXPERTS, num_experts_per_tok=TOP_K, router_jitter_noise=0.0)
    if arch == "qwen3_moe":
        return dict(common, architectures=["Qwen3MoeForCausalLM"], model_type="qwen3_moe", attention_bias=False,
                    bos_token_id=1, eos_token_id=2, head_dim=D, max_window_layers=L, rms_norm_eps=1e-6,
                    rope_scaling=None, sliding_window=None, use_sliding_window=False,
                    num_experts=EXPERTS, num_experts_per_tok=TOP_K, moe_intermediate_size=MOE_I,
                    norm_topk_prob=False, decoder_sparse_step=1,
                    mlp_only_layers=[i for i, sp in enumerate(sparse_layers(arch, L)) if not sp])
    if arch == "qwen2":
        return dict(common, architectures=["Qwen2ForCausalLM"], model_type="qwen2", bos_token_id=1,
                    eos_token_id=2, max_window_layers=L, rms_norm_eps=1e-6, rope_scaling=None,
                    sliding_window=None, use_sliding_window=False)
    if arch == "qwen3":
        return dict(common, architectures=["Qwen3ForCausalLM"], model_type="qwen3", attention_bias=False,
                    bos_token_id=1, eos_token_id=2, head_dim=D, max_window_layers=L, rms_norm_eps=1e-6,
                    rope_scaling=None, sliding_window=None, use_sliding_window=False)
    c = dict(common, architectures=["Phi3ForCausalLM"], model_type="phi3", bos_token_id=1,
             eos_token_id=32000, pad_token_id=32000, embd_pdrop=0.0, resid_pdrop=0.0,
             original_max_position_embeddings=P, partial_rotary_factor=1.0, rms_norm_eps=1e-5,
             rope_scaling=None, sliding_window=None)
    if arch == "phi3-longrope":
        # Phi-3-mini-128k's and Phi-3.5-mini's shape of it: a pretrained
        # context of a quarter of the context (4096 of 131072 there, 32 of
        # 128 here, so the 63-token case runs on the long factors and the
        # 5-token one on the short), factors per rotary pair near 1 (short)
        # and growing to tens (long), no explicit attention_factor.
        half = D // 2
        c["original_max_position_embeddings"] = P // 4
        c["rope_scaling"] = {"type": "longrope",
                             "short_factor": [round(1 + 0.05 * i, 2) for i in range(half)],
                             "long_factor": [round(1.5 ** i, 4) for i in range(half)]}
    return c


def make_weights(arch, seed, shape=None):
    s, d = shape or default_shape(arch), default_shape(arch)
    L, H, HKV, C, D, I = s.layers, s.heads, s.kv_heads, s.hidden, s.head_dim, s.intermediate
    V = vocab_size(arch)
    out = [c % C for c in OUTLIERS]
    # The default shape's spreads at this one (exactly 1 at the default).
    f_in = math.sqrt(d.hidden / C)
    f_o = math.sqrt(d.heads * d.head_dim / (H * D))
    f_down = math.sqrt(d.intermediate / I)
    rng = np.random.default_rng(seed)

    def rows(n):
        small = rng.random((n, 1)) < 0.15
        s = np.where(small, 0.025, 0.07) * np.exp(0.2 * rng.standard_normal((n, 1)))
        return rng.standard_normal((n, C)) * s

    # Gemma's norms hold w and multiply by 1 + w: stored as the others'
    # factor minus 1, so that they scale alike.
    off = 1.0 if gemma(arch) else 0.0
    w = {"model.embed_tokens.weight": rows(V)}
    for i in range(L):
        p = f"model.layers.{i}."
        w[p + "input_layernorm.weight"] = np.exp(0.2 * rng.standard_normal(C)) - off
        w[p + "post_attention_layernorm.weight"] = np.exp(0.2 * rng.standard_normal(C)) - off
        if arch in ("gemma2", "gemma3"):
            w[p + "pre_feedforward_layernorm.weight"] = np.exp(0.2 * rng.standard_normal(C)) - off
            w[p + "post_feedforward_layernorm.weight"] = np.exp(0.2 * rng.standard_normal(C)) - off
        q = 0.22 * f_in * rng.standard_normal((H * D, C))
        k = 0.22 * f_in * rng.standard_normal((HKV * D, C))
        v = 0.15 * f_in * rng.standard_normal((HKV * D, C))
        if arch.startswith("phi3"):
            w[p + "self_attn.qkv_proj.weight"] = np.concatenate([q, k, v])
        else:
            w[p + "self_attn.q_proj.weight"], w[p + "self_attn.k_proj.weight"] = q, k
            w[p + "self_attn.v_proj.weight"] = v
        if arch == "qwen2":
            w[p + "self_attn.q_proj.bias"] = 0.1 * rng.standard_normal(H * D)
            w[p + "self_attn.k_proj.bias"] = 0.5 * rng.standard_normal(HKV * D)
            w[p + "self_attn.v_proj.bias"] = 0.1 * rng.standard_normal(HKV * D)
        if arch in ("qwen3", "qwen3_moe", "gemma3"):
            # Gemma 3's q/k norms scale by exp(0.2·N) only: over its six
            # layers, scores peaked as Qwen3's make float32's own error
            # (PyTorch's as much as ours) grow past the tolerance.
            qk = 1.0 if arch == "gemma3" else 2.0
            w[p + "self_attn.q_norm.weight"] = qk * np.exp(0.2 * rng.standard_normal(D)) - off
            w[p + "self_attn.k_norm.weight"] = qk * np.exp(0.2 * rng.standard_normal(D)) - off
        # Gemma 2's and 3's o_proj and down_proj alternate between the first
        # two layers' spreads (their post-norms rescale each block's output).
        depth = (i % 2 + 1) if arch in ("gemma2", "gemma3") else (i + 1)
        w[p + "self_attn.o_proj.weight"] = 0.06 * depth * f_o * rng.standard_normal((C, H * D))
        if sparse_layers(arch, L)[i]:
            w.update(moe_weights(arch, rng, p, i, C, I, f_in, out))
            continue
        gate = 0.18 * f_in * rng.standard_normal((I, C))
        up = 0.18 * f_in * rng.standard_normal((I, C))
        if arch.startswith("phi3"):
            w[p + "mlp.gate_up_proj.weight"] = np.concatenate([gate, up])
        else:
            w[p + "mlp.gate_proj.weight"], w[p + "mlp.up_proj.weight"] = gate, up
        down = 0.05 * depth * f_down * rng.standard_normal((C, I))
        down[out, :] *= 5.0
        w[p + "mlp.down_proj.weight"] = down
    g = 4.5 * f_in * np.exp(0.2 * rng.standard_normal(C))
    g[out] = 0.1
    w["model.norm.weight"] = g - off
    if not s.tied:
        w["lm_head.weight"] = rows(V)
    return w


def moe_weights(arch, rng, p, i, C, I, f_in, out):
    """A sparse layer's router and experts (module docstring), HF's names."""
    inner = MOE_I if arch == "qwen3_moe" else I
    if arch == "qwen3_moe":
        names = ("mlp.gate", "mlp.experts.{}.gate_proj", "mlp.experts.{}.up_proj", "mlp.experts.{}.down_proj")
    else:
        names = ("block_sparse_moe.gate", "block_sparse_moe.experts.{}.w1", "block_sparse_moe.experts.{}.w3",
                 "block_sparse_moe.experts.{}.w2")
    w = {p + names[0] + ".weight": 0.25 * f_in * rng.standard_normal((EXPERTS, C))}
    for e in range(EXPERTS):
        w[p + names[1].format(e) + ".weight"] = 0.18 * f_in * rng.standard_normal((inner, C))
        w[p + names[2].format(e) + ".weight"] = 0.18 * f_in * rng.standard_normal((inner, C))
        down = 0.05 * (i + 1) * math.sqrt(I / inner) * rng.standard_normal((C, inner))
        down[out, :] *= 5.0
        w[p + names[3].format(e) + ".weight"] = down
    return w


README = """# {name}

A randomly initialised {model_type} model ({L} layers, {H} query heads, {HKV}
KV heads, hidden {C}, head_dim {D}, intermediate {I}, context {P}, vocab_size
{V}{tie}) for llorch-check's Llama-family tests. Not trained; its weight
scales make RMSNorm eps, the RoPE layout, GQA and the SwiGLU visible at the
test tolerances (pytorch/make_tiny_llama.py). Weights float16.

Vocabulary: {vocab}

Generated, do not edit:

    python3 pytorch/make_tiny_llama.py --arch {arch} --seed {seed}{flags} --out <dir>
"""


# Each family's chat template: a file of testdata/chat, or the
# chat_template of a tokenizer_config.json (Qwen3's).
CHAT_TEMPLATES = {
    "llama": "testdata/chat/mistral-7b-instruct-v0.2.jinja",  # Llama 2's [INST] format, same vocabulary
    "llama3": "testdata/chat/llama-3.1-8b-instruct.jinja",
    "qwen2": "testdata/chat/qwen2.5-7b-instruct.jinja",
    "qwen3": "testdata/tokenizer/qwen2/tokenizer_config.json",
    "mistral": "testdata/chat/mistral-7b-instruct-v0.2.jinja",
    "phi3": "testdata/chat/phi-3-mini.jinja",
    "phi3-longrope": "testdata/chat/phi-3-mini.jinja",
    # Gemma's own template comes with its tokenizer; these models have Llama 2's vocabulary.
    "gemma": "testdata/chat/mistral-7b-instruct-v0.2.jinja",
    "gemma2": "testdata/chat/mistral-7b-instruct-v0.2.jinja",
    "gemma3": "testdata/chat/mistral-7b-instruct-v0.2.jinja",
    "qwen3_moe": "testdata/tokenizer/qwen2/tokenizer_config.json",
    "mixtral": "testdata/chat/mistral-7b-instruct-v0.2.jinja",
}


def chat_template(arch):
    path = os.path.join(ROOT, CHAT_TEMPLATES[arch])
    with open(path, encoding="utf-8") as f:
        if path.endswith(".json"):
            return json.load(f)["chat_template"]
        return f.read()


def write_tokenizer(arch, out, cfg):
    """tokenizer.gguf (a relative link) and tokenizer_config.json."""
    vocab = os.path.join(ROOT, "testdata", "tokenizer", VOCAB_DIR[arch], VOCAB_GGUF[arch])
    link = os.path.join(out, "tokenizer.gguf")
    if os.path.lexists(link):
        os.remove(link)
    os.symlink(os.path.relpath(vocab, os.path.abspath(out)), link)
    kv, _, _ = read_gguf(vocab)
    tokens = kv["tokenizer.ggml.tokens"]
    doc = {"add_bos_token": bool(kv.get("tokenizer.ggml.add_bos_token", True)), "add_eos_token": False,
           "bos_token": tokens[cfg["bos_token_id"]], "eos_token": tokens[cfg["eos_token_id"]],
           "chat_template": chat_template(arch), "chat_template_source": CHAT_TEMPLATES[arch]}
    with open(os.path.join(out, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        f.write(json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n")


def write_model(arch, out, seed, shape=None):
    """Writes the model of arch (the default shape unless shape is given,
    a make_shape) into out."""
    shape = shape or default_shape(arch)
    cfg = config(arch, shape)
    w = make_weights(arch, seed, shape)
    os.makedirs(out, exist_ok=True)
    write_safetensors(os.path.join(out, "model.safetensors"),
                      {k: ("F16", v.astype("<f2")) for k, v in w.items()}, metadata={"format": "pt"})
    with open(os.path.join(out, "config.json"), "w", encoding="utf-8") as f:
        f.write(json.dumps(cfg, indent=2, sort_keys=True) + "\n")
    write_tokenizer(arch, out, cfg)
    vg = VOCAB_GGUF[arch]
    if arch in ("qwen2", "qwen3", "qwen3_moe"):
        vocab = (f"Qwen's is not available as GGUF here, so the ids are those of\n"
                 f"llama.cpp's {vg} (Llama 2 SentencePiece, 32000 tokens;\n"
                 f"bos 1, eos 2), which pytorch/gguf_write.py copies into a GGUF file.")
    else:
        vocab = (f"llama.cpp's {vg} ({cfg['vocab_size']} tokens, testdata/tokenizer),\n"
                 f"which pytorch/gguf_write.py copies into a GGUF file.")
    with open(os.path.join(out, "README.md"), "w", encoding="utf-8") as f:
        f.write(README.format(name=os.path.basename(os.path.normpath(out)), model_type=cfg["model_type"],
                              L=shape.layers, H=shape.heads, HKV=shape.kv_heads, C=shape.hidden,
                              D=shape.head_dim, I=shape.intermediate, P=shape.context, V=cfg["vocab_size"],
                              tie=", tied lm_head" if shape.tied else ", untied lm_head", vocab=vocab,
                              arch=arch, seed=seed, flags=shape_flags(arch, shape)))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--arch", required=True, choices=ARCHS)
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=SEED)
    g = ap.add_argument_group("shape", "each overrides the arch's default (module docstring); none: the committed models")
    g.add_argument("--layers", type=int, help=f"num_hidden_layers (default {L})")
    g.add_argument("--heads", type=int, help=f"num_attention_heads, query heads (default {H})")
    g.add_argument("--kv-heads", type=int, help=f"num_key_value_heads, dividing --heads (default {HKV})")
    g.add_argument("--hidden", type=int, help=f"hidden_size (default {C})")
    g.add_argument("--head-dim", type=int, help="head_dim, even: qwen3's is free (default 2·hidden/heads); "
                   "the other archs' is hidden/heads")
    g.add_argument("--intermediate", type=int, help=f"intermediate_size (default {I})")
    g.add_argument("--context", type=int, help=f"max_position_embeddings (default {P})")
    t = g.add_mutually_exclusive_group()
    t.add_argument("--tied", dest="tied", action="store_const", const=True,
                   help="lm_head is embed_tokens (the default for llama3 and qwen2)")
    t.add_argument("--untied", dest="tied", action="store_const", const=False,
                   help="a separate lm_head (the default for llama, qwen3 and phi3)")
    a = ap.parse_args(argv)
    try:
        shape = make_shape(a.arch, **{f: getattr(a, f) for f in Shape._fields})
    except ShapeError as e:
        ap.error(str(e))  # exit 2
    write_model(a.arch, a.out, a.seed, shape)


if __name__ == "__main__":
    main()
