#!/usr/bin/env python3
"""Write a Llama-family benchmark model with seeded random float32 weights
(HF layout) in the shape of a model people run:

  smollm-135m   llama: hidden 576, 30 layers, 9 heads / 3 KV heads
                (head_dim 64), intermediate 1536, vocab 49152, tied
  qwen2.5-0.5b  qwen2: hidden 896, 24 layers, 14 heads / 2 KV heads
                (head_dim 64), intermediate 4864, vocab 151936, tied,
                q/k/v biases, rope_theta 1e6

The benchmark needs the shapes and sane magnitudes only: matrices N(0,
0.02), the residual projections (o_proj, down_proj) scaled by 1/sqrt(2L),
unit RMSNorm weights, biases N(0, 0.02). The vocabulary is synthetic
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
}


def weights(rng, cfg):
    C, I, L, V = cfg["hidden_size"], cfg["intermediate_size"], cfg["num_hidden_layers"], cfg["vocab_size"]
    H, K = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    D = C // H
    n = lambda *shape, s=0.02: (s * rng.standard_normal(shape, dtype=np.float32)).astype(np.float32)
    res = 0.02 / np.sqrt(2 * L)
    w = {"model.embed_tokens.weight": n(V, C), "model.norm.weight": np.ones(C, np.float32)}
    for i in range(L):
        p = f"model.layers.{i}."
        w.update({
            p + "input_layernorm.weight": np.ones(C, np.float32),
            p + "post_attention_layernorm.weight": np.ones(C, np.float32),
            p + "self_attn.q_proj.weight": n(H * D, C), p + "self_attn.k_proj.weight": n(K * D, C),
            p + "self_attn.v_proj.weight": n(K * D, C), p + "self_attn.o_proj.weight": n(C, H * D, s=res),
            p + "mlp.gate_proj.weight": n(I, C), p + "mlp.up_proj.weight": n(I, C),
            p + "mlp.down_proj.weight": n(C, I, s=res),
        })
        if cfg["model_type"] == "qwen2":
            w.update({p + "self_attn.q_proj.bias": n(H * D), p + "self_attn.k_proj.bias": n(K * D),
                      p + "self_attn.v_proj.bias": n(K * D)})
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
    ap.add_argument("--dtype", choices=("f32", "f16"), default="f32",
                    help="f16 stores the weight matrices (embedding and projections) as float16, "
                         "rounded from the same seeded values")
    a = ap.parse_args()
    cfg = dict(SHAPES[a.shape], bos_token_id=1, eos_token_id=2, hidden_act="silu",
               torch_dtype={"f32": "float32", "f16": "float16"}[a.dtype])
    os.makedirs(a.out, exist_ok=True)
    w = weights(np.random.default_rng(a.seed), cfg)
    if a.dtype == "f16":
        w = {k: v.astype("<f2") if v.ndim == 2 else v for k, v in w.items()}
    write_safetensors(os.path.join(a.out, "model.safetensors"), w)
    write_vocab_gguf(os.path.join(a.out, "tokenizer.gguf"), cfg["vocab_size"])
    # config.json last: its presence marks a complete model for the scripts.
    with open(os.path.join(a.out, "config.json"), "w", encoding="utf-8") as f:
        f.write(json.dumps(cfg, indent=2, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
