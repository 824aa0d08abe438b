#!/usr/bin/env python3
"""Write a Llama-family benchmark model with seeded random float32 weights
(HF layout) in the shape of a model people run:

  smollm-135m   llama: hidden 576, 30 layers, 9 heads / 3 KV heads
                (head_dim 64), intermediate 1536, vocab 49152, tied
  qwen2.5-0.5b  qwen2: hidden 896, 24 layers, 14 heads / 2 KV heads
                (head_dim 64), intermediate 4864, vocab 151936, tied,
                q/k/v biases, rope_theta 1e6
  gemma3-1b     gemma3_text: hidden 1152, 26 layers, 4 heads / 1 KV head
                (head_dim 256), intermediate 6912, vocab 262144, tied,
                GeGLU, four norms a block and q/k norms, a 512-token
                window on all but every 6th layer, rope_theta 1e6 (local
                1e4)
  qwen3-30b-a3b-2l
                qwen3_moe: Qwen3-30B-A3B's layers, two of its 48: hidden
                2048, 32 heads / 4 KV heads (head_dim 128), q/k norms, 128
                experts of width 768, 8 a token, renormalised, vocab
                151936, untied; float16 by default (as float32 its 1.9B
                weights would take 7.5 GB on disk and in this script)

The benchmark needs the shapes and sane magnitudes only: matrices N(0,
0.02), the residual projections (o_proj, down_proj) scaled by 1/sqrt(2L),
unit RMSNorm weights (Gemma's N(0, 0.02): it stores w and multiplies by
1 + w), biases N(0, 0.02). The vocabulary is synthetic
(tokenizer.gguf: llama.cpp's SentencePiece "llama" model with the 256 byte
tokens and numbered pieces), enough for llama.cpp to load the converted
files; benchmarks feed token ids. Written once into an ignored cache
directory, never committed. Needs numpy only.
"""

import argparse
import json
import os
import struct
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from make_model import write_safetensors  # noqa: E402

SHAPES = {
    "smollm-135m": {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 576,
                    "num_hidden_layers": 30, "num_attention_heads": 9, "num_key_value_heads": 3,
                    "intermediate_size": 1536, "vocab_size": 49152, "max_position_embeddings": 2048,
                    "rope_theta": 10000.0, "rms_norm_eps": 1e-5, "tie_word_embeddings": True},
    "qwen2.5-0.5b": {"model_type": "qwen2", "architectures": ["Qwen2ForCausalLM"], "hidden_size": 896,
                     "num_hidden_layers": 24, "num_attention_heads": 14, "num_key_value_heads": 2,
                     "intermediate_size": 4864, "vocab_size": 151936, "max_position_embeddings": 32768,
                     "rope_theta": 1000000.0, "rms_norm_eps": 1e-6, "tie_word_embeddings": True},
    # Gemma-3-1B's config.json, its ids aside (the synthetic vocabulary's
    # <s> and </s> are 1 and 2, as for the others).
    "gemma3-1b": {"model_type": "gemma3_text", "architectures": ["Gemma3ForCausalLM"], "hidden_size": 1152,
                  "num_hidden_layers": 26, "num_attention_heads": 4, "num_key_value_heads": 1, "head_dim": 256,
                  "intermediate_size": 6912, "vocab_size": 262144, "max_position_embeddings": 32768,
                  "rope_theta": 1000000.0, "rope_local_base_freq": 10000.0, "rope_scaling": None,
                  "rms_norm_eps": 1e-6, "tie_word_embeddings": True, "hidden_activation": "gelu_pytorch_tanh",
                  "hidden_act": "gelu_pytorch_tanh", "query_pre_attn_scalar": 256, "sliding_window": 512,
                  "sliding_window_pattern": 6, "final_logit_softcapping": None, "attn_logit_softcapping": None,
                  "layer_types": ["full_attention" if (i + 1) % 6 == 0 else "sliding_attention"
                                  for i in range(26)]},
    # Qwen3-30B-A3B's config.json with 2 of its 48 layers.
    "qwen3-30b-a3b-2l": {"model_type": "qwen3_moe", "architectures": ["Qwen3MoeForCausalLM"], "hidden_size": 2048,
                         "num_hidden_layers": 2, "num_attention_heads": 32, "num_key_value_heads": 4,
                         "head_dim": 128, "intermediate_size": 6144, "moe_intermediate_size": 768,
                         "num_experts": 128, "num_experts_per_tok": 8, "norm_topk_prob": True,
                         "decoder_sparse_step": 1, "mlp_only_layers": [], "vocab_size": 151936,
                         "max_position_embeddings": 40960, "max_window_layers": 2, "use_sliding_window": False,
                         "sliding_window": None, "attention_bias": False, "rope_theta": 1000000.0,
                         "rope_scaling": None, "rms_norm_eps": 1e-6, "tie_word_embeddings": False},
}
# The shapes written as float16 unless --dtype says otherwise.
F16_SHAPES = {"qwen3-30b-a3b-2l"}


def weights(rng, cfg, cast):
    """The seeded weights, each passed through cast as it is drawn: the
    float16 shapes never hold all their weights as float32 at once."""
    C, I, L, V = cfg["hidden_size"], cfg["intermediate_size"], cfg["num_hidden_layers"], cfg["vocab_size"]
    H, K = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    D = cfg.get("head_dim", C // H)
    mt = cfg["model_type"]
    n = lambda *shape, s=0.02: cast((s * rng.standard_normal(shape, dtype=np.float32)).astype(np.float32))
    res = 0.02 / np.sqrt(2 * L)
    # Gemma multiplies by 1 + w: its norms are near 0, the others' are 1.
    norm = (lambda m: n(m)) if mt == "gemma3_text" else (lambda m: np.ones(m, np.float32))
    w = {"model.embed_tokens.weight": n(V, C), "model.norm.weight": norm(C)}
    for i in range(L):
        p = f"model.layers.{i}."
        w.update({
            p + "input_layernorm.weight": norm(C),
            p + "post_attention_layernorm.weight": norm(C),
            p + "self_attn.q_proj.weight": n(H * D, C), p + "self_attn.k_proj.weight": n(K * D, C),
            p + "self_attn.v_proj.weight": n(K * D, C), p + "self_attn.o_proj.weight": n(C, H * D, s=res),
        })
        if mt == "qwen3_moe":
            E, Im = cfg["num_experts"], cfg["moe_intermediate_size"]
            w[p + "mlp.gate.weight"] = n(E, C)
            for e in range(E):
                q = f"{p}mlp.experts.{e}."
                w.update({q + "gate_proj.weight": n(Im, C), q + "up_proj.weight": n(Im, C),
                          q + "down_proj.weight": n(C, Im, s=res)})
        else:
            w.update({p + "mlp.gate_proj.weight": n(I, C), p + "mlp.up_proj.weight": n(I, C),
                      p + "mlp.down_proj.weight": n(C, I, s=res)})
        if mt == "qwen2":
            w.update({p + "self_attn.q_proj.bias": n(H * D), p + "self_attn.k_proj.bias": n(K * D),
                      p + "self_attn.v_proj.bias": n(K * D)})
        if mt in ("gemma3_text", "qwen3_moe"):
            w.update({p + "self_attn.q_norm.weight": norm(D), p + "self_attn.k_norm.weight": norm(D)})
        if mt == "gemma3_text":
            w.update({p + "pre_feedforward_layernorm.weight": norm(C),
                      p + "post_feedforward_layernorm.weight": norm(C)})
    if not cfg["tie_word_embeddings"]:
        w["lm_head.weight"] = n(V, C)
    return w


def gguf_string(s):
    b = s.encode()
    return struct.pack("<Q", len(b)) + b


def write_vocab_gguf(path, V):
    """A vocabulary-only GGUF: tokenizer.ggml.model "llama", <unk> <s> </s>,
    the 256 byte tokens, then numbered pieces."""
    tokens = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)]
    tokens += [f"\u2581t{i}" for i in range(V - len(tokens))]
    types = [2, 3, 3] + [6] * 256 + [1] * (V - 259)  # unknown, control, byte, normal
    kv = [("general.architecture", 8, gguf_string("llama")),
          ("tokenizer.ggml.model", 8, gguf_string("llama")),
          ("tokenizer.ggml.tokens", 9, struct.pack("<IQ", 8, V) + b"".join(gguf_string(t) for t in tokens)),
          ("tokenizer.ggml.scores", 9, struct.pack("<IQ", 6, V) + np.arange(0, -V, -1, dtype="<f4").tobytes()),
          ("tokenizer.ggml.token_type", 9, struct.pack("<IQ", 5, V) + np.array(types, "<i4").tobytes()),
          ("tokenizer.ggml.bos_token_id", 4, struct.pack("<I", 1)),
          ("tokenizer.ggml.eos_token_id", 4, struct.pack("<I", 2)),
          ("tokenizer.ggml.unknown_token_id", 4, struct.pack("<I", 0))]
    with open(path + ".tmp", "wb") as f:
        f.write(b"GGUF" + struct.pack("<IQQ", 3, 0, len(kv)))
        for key, vtype, val in kv:
            f.write(gguf_string(key) + struct.pack("<I", vtype) + val)
    os.replace(path + ".tmp", path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shape", required=True, choices=sorted(SHAPES))
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=135)
    ap.add_argument("--dtype", choices=("f32", "f16"),
                    help="f16 stores the weight matrices (embedding and projections) as float16, "
                         "rounded from the same seeded values (default: f16 for "
                         + ", ".join(sorted(F16_SHAPES)) + ", else f32)")
    a = ap.parse_args()
    dtype = a.dtype or ("f16" if a.shape in F16_SHAPES else "f32")
    cfg = {"hidden_act": "silu", **SHAPES[a.shape], "bos_token_id": 1, "eos_token_id": 2,
           "torch_dtype": {"f32": "float32", "f16": "float16"}[dtype]}
    os.makedirs(a.out, exist_ok=True)
    cast = (lambda v: v.astype("<f2") if v.ndim == 2 else v) if dtype == "f16" else (lambda v: v)
    w = weights(np.random.default_rng(a.seed), cfg, cast)
    write_safetensors(os.path.join(a.out, "model.safetensors"), w)
    write_vocab_gguf(os.path.join(a.out, "tokenizer.gguf"), cfg["vocab_size"])
    # config.json last: its presence marks a complete model for the scripts.
    with open(os.path.join(a.out, "config.json"), "w", encoding="utf-8") as f:
        f.write(json.dumps(cfg, indent=2, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
