#!/usr/bin/env python3
"""Write a GPT-2 124M-shaped model with seeded random float32 weights (HF layout).

The benchmark only needs the exact shapes and sane magnitudes (GPT-2's own
initialisation: N(0, 0.02), residual projections scaled by 1/sqrt(2L), unit
LayerNorms), so the forward pass neither overflows nor degenerates. The file
is written once into an ignored cache directory; it is never committed.
Self-contained (numpy only) so that it does not move with the PyTorch
reference (pytorch/).
"""

import argparse
import json
import os
import shutil

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
VOCAB_DIR = os.path.join(ROOT, "testdata", "gpt2-vocab")


def weights(rng, L, C, P, V):
    n = lambda *shape, s=0.02: (s * rng.standard_normal(shape, dtype=np.float32)).astype(np.float32)
    w = {"wte.weight": n(V, C), "wpe.weight": n(P, C, s=0.01),
         "ln_f.weight": np.ones(C, np.float32), "ln_f.bias": np.zeros(C, np.float32)}
    res = 0.02 / np.sqrt(2 * L)
    for i in range(L):
        p = f"h.{i}."
        w.update({
            p + "ln_1.weight": 1 + n(C), p + "ln_1.bias": n(C),
            p + "attn.c_attn.weight": n(C, 3 * C), p + "attn.c_attn.bias": n(3 * C),
            p + "attn.c_proj.weight": n(C, C, s=res), p + "attn.c_proj.bias": n(C),
            p + "ln_2.weight": 1 + n(C), p + "ln_2.bias": n(C),
            p + "mlp.c_fc.weight": n(C, 4 * C), p + "mlp.c_fc.bias": n(4 * C),
            p + "mlp.c_proj.weight": n(4 * C, C, s=res), p + "mlp.c_proj.bias": n(C),
        })
    return w


def write_safetensors(path, tensors):
    header, off = {}, 0
    for name in sorted(tensors):
        a = tensors[name]
        tag = {np.dtype("<f4"): "F32", np.dtype("<f2"): "F16"}[a.dtype]
        header[name] = {"dtype": tag, "shape": list(a.shape), "data_offsets": [off, off + a.nbytes]}
        off += a.nbytes
    header["__metadata__"] = {"format": "pt"}
    h = json.dumps(header, sort_keys=True, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(len(h).to_bytes(8, "little"))
        f.write(h)
        for name in sorted(tensors):
            f.write(np.ascontiguousarray(tensors[name]).tobytes())
    os.replace(tmp, path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=124)
    ap.add_argument("--n-layer", type=int, default=12)
    ap.add_argument("--n-head", type=int, default=12)
    ap.add_argument("--n-embd", type=int, default=768)
    ap.add_argument("--n-positions", type=int, default=1024)
    ap.add_argument("--dtype", choices=("f32", "f16"), default="f32",
                    help="f16 stores the weight matrices (wte and the Conv1D weights) as float16")
    a = ap.parse_args()
    L, H, C, P, V = a.n_layer, a.n_head, a.n_embd, a.n_positions, 50257
    os.makedirs(a.out, exist_ok=True)
    cfg = {
        "activation_function": "gelu_new", "architectures": ["GPT2LMHeadModel"], "attn_pdrop": 0.1,
        "bos_token_id": 50256, "embd_pdrop": 0.1, "eos_token_id": 50256, "initializer_range": 0.02,
        "layer_norm_epsilon": 1e-05, "model_type": "gpt2", "n_ctx": P, "n_embd": C, "n_head": H,
        "n_inner": None, "n_layer": L, "n_positions": P, "reorder_and_upcast_attn": False,
        "resid_pdrop": 0.1, "scale_attn_by_inverse_layer_idx": False, "scale_attn_weights": True,
        "use_cache": True, "vocab_size": V,
    }
    w = {k: v.astype("<f4") for k, v in weights(np.random.default_rng(a.seed), L, C, P, V).items()}
    if a.dtype == "f16":
        w = {k: v.astype("<f2") if v.ndim == 2 and k != "wpe.weight" else v for k, v in w.items()}
    write_safetensors(os.path.join(a.out, "model.safetensors"), w)
    for name in ("vocab.json", "merges.txt"):
        shutil.copyfile(os.path.join(VOCAB_DIR, name), os.path.join(a.out, name))
    # config.json last: its presence marks a complete model for the Makefile.
    with open(os.path.join(a.out, "config.json"), "w", encoding="utf-8") as f:
        f.write(json.dumps(cfg, indent=2, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
