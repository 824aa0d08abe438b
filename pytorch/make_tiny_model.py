#!/usr/bin/env python3
"""Write the project's tiny GPT-2 (HF layout) with realistic-looking numerics.

A flat N(0, 0.02) model is useless as a test fixture: its logits are nearly
uniform (every top-p/min-p cut keeps everything), its attention is uniform
and LayerNorm eps never matters. The scales below are chosen so that the
traps of docs/spec.md section 1 are visible at the checkpoint tolerances;
run with --stats to see the measured effect on the default cases.

Scales (C = n_embd, layer i of L), all drawn from np.random.default_rng(seed)
in a fixed order and stored as --dtype (default f16):
  wte      N(0, s_v^2) per row, s_v = 0.07*exp(0.2*N(0,1)), but 15% of the
           rows 0.025*exp(0.2*N(0,1)): real GPT-2 rows have std ~0.1 and many
           have variance ~1e-3, where LayerNorm eps 1e-5 vs 1e-6 shows up in
           ln_1 (> 1e-3). A lognormal spread instead would make a few
           huge-norm rows win every softmax.
  wpe      0.01*N(0,1) + 0.02*sinusoids: small, smooth in position.
  ln_1/2   weight exp(0.2*N(0,1)), bias N(0, 0.05^2).
  c_attn   q,k columns N(0, 0.22^2), v columns N(0, 0.15^2), bias N(0, 0.1^2):
           scores with a std of a few units, so attention is peaked (median
           max weight ~0.4 with ~50 visible keys) but not one-hot.
  c_fc     N(0, 0.18^2), bias N(0, 0.1^2): pre-GELU values mostly within
           [-4, 4] (extremes ~7), where tanh-GELU and erf-GELU differ by up
           to 4.7e-4, far above the 1e-4 tolerance.
  c_proj   attn N(0, (0.06*(i+1))^2), mlp N(0, (0.05*(i+1))^2): the
           residual stream grows with depth; mlp.c_proj columns of three
           outlier channels are 5x larger ("massive activations").
  ln_f     weight 4.5*exp(0.2*N(0,1)), 0.1 on the outlier channels, so the
           last-position logits have a std of ~2.2: top-k 50, top-p 0.9
           (keeps ~300-1000 tokens) and min-p 0.05 (~10-30) all cut, and
           the top token has p ~0.1-0.25.
"""

import argparse
import json
import math
import os
import shutil
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from safetensors_io import float32_to_bf16_bits, write_safetensors  # noqa: E402

VOCAB_DIR = os.path.join(os.path.dirname(HERE), "testdata", "gpt2-vocab")
VOCAB_SIZE = 50257
OUTLIERS = (5, 23, 41)  # residual channels with large MLP writes (mod C)
# testdata/tiny-gpt2's arguments of write_model: the flags' defaults.
COMMITTED = dict(seed=1234, L=2, H=4, C=64, P=128, dtype="f16")


def make_weights(rng, L, H, C, P):
    V = VOCAB_SIZE
    w = {}
    small = rng.random((V, 1)) < 0.15
    s_v = np.where(small, 0.025, 0.07) * np.exp(0.2 * rng.standard_normal((V, 1)))
    w["wte.weight"] = rng.standard_normal((V, C)) * s_v
    pos = np.arange(P)[:, None]
    freq = np.exp(-np.log(100.0) * np.arange(C // 2) / (C // 2))
    sinus = np.concatenate([np.sin(pos * freq), np.cos(pos * freq)], axis=1)
    w["wpe.weight"] = 0.01 * rng.standard_normal((P, C)) + 0.02 * sinus
    out = [c % C for c in OUTLIERS]
    for i in range(L):
        p = f"h.{i}."
        for ln in ("ln_1", "ln_2"):
            w[p + ln + ".weight"] = np.exp(0.2 * rng.standard_normal(C))
            w[p + ln + ".bias"] = 0.05 * rng.standard_normal(C)
        qkv = rng.standard_normal((C, 3 * C))
        qkv[:, :2 * C] *= 0.22
        qkv[:, 2 * C:] *= 0.15
        w[p + "attn.c_attn.weight"] = qkv
        w[p + "attn.c_attn.bias"] = 0.1 * rng.standard_normal(3 * C)
        w[p + "attn.c_proj.weight"] = 0.06 * (i + 1) * rng.standard_normal((C, C))
        w[p + "attn.c_proj.bias"] = 0.02 * rng.standard_normal(C)
        w[p + "mlp.c_fc.weight"] = 0.18 * rng.standard_normal((C, 4 * C))
        w[p + "mlp.c_fc.bias"] = 0.1 * rng.standard_normal(4 * C)
        proj = 0.05 * (i + 1) * rng.standard_normal((4 * C, C))
        proj[:, out] *= 5.0
        w[p + "mlp.c_proj.weight"] = proj
        w[p + "mlp.c_proj.bias"] = 0.02 * rng.standard_normal(C)
    g = 4.5 * np.exp(0.2 * rng.standard_normal(C))
    g[out] = 0.1
    w["ln_f.weight"] = g
    w["ln_f.bias"] = 0.05 * rng.standard_normal(C)
    return w


def config(L, H, C, P):
    # What transformers' GPT2Config.to_json_file writes (sorted, indent 2),
    # minus version-specific keys.
    return {
        "activation_function": "gelu_new", "architectures": ["GPT2LMHeadModel"], "attn_pdrop": 0.1,
        "bos_token_id": 50256, "embd_pdrop": 0.1, "eos_token_id": 50256, "initializer_range": 0.02,
        "layer_norm_epsilon": 1e-05, "model_type": "gpt2", "n_ctx": P, "n_embd": C, "n_head": H,
        "n_inner": None, "n_layer": L, "n_positions": P, "reorder_and_upcast_attn": False,
        "resid_pdrop": 0.1, "scale_attn_by_inverse_layer_idx": False, "scale_attn_weights": True,
        "summary_activation": None, "summary_first_dropout": 0.1, "summary_proj_to_labels": True,
        "summary_type": "cls_index", "summary_use_proj": True, "use_cache": True, "vocab_size": VOCAB_SIZE,
    }


def storage(arr, dtype):
    if dtype == "f32":
        return "F32", arr.astype("<f4")
    if dtype == "f16":
        return "F16", arr.astype("<f2")
    return "BF16", float32_to_bf16_bits(arr.astype(np.float32))


README = """# tiny-gpt2

A randomly initialised GPT-2 ({L} layers, {H} heads, n_embd {C}, context {P},
the real 50257-token GPT-2 vocabulary) for llorch-check's tests. It is not
trained; its weight scales are chosen so that the known GPT-2 traps
(LayerNorm eps, tanh GELU, attention masking, sampling cuts) are visible at
the test tolerances. See pytorch/make_tiny_model.py for the scales.

Generated, do not edit:

    python3 pytorch/make_tiny_model.py --out <dir> --seed {seed} --n-layer {L} --n-head {H} --n-embd {C} --n-positions {P} --dtype {dtype}

`vocab.json` and `merges.txt` are GPT-2's BPE files, see
testdata/gpt2-vocab/SOURCE.md (MIT).
"""


def write_model(out, seed, L, H, C, P, dtype):
    rng = np.random.default_rng(seed)
    weights = make_weights(rng, L, H, C, P)
    os.makedirs(out, exist_ok=True)
    write_safetensors(os.path.join(out, "model.safetensors"),
                      {k: storage(v, dtype) for k, v in weights.items()}, metadata={"format": "pt"})
    with open(os.path.join(out, "config.json"), "w", encoding="utf-8") as f:
        f.write(json.dumps(config(L, H, C, P), indent=2, sort_keys=True) + "\n")
    for name in ("vocab.json", "merges.txt"):
        shutil.copyfile(os.path.join(VOCAB_DIR, name), os.path.join(out, name))
    with open(os.path.join(out, "README.md"), "w", encoding="utf-8") as f:
        f.write(README.format(L=L, H=H, C=C, P=P, seed=seed, dtype=dtype))


def stats(model_dir, cases_path):
    """Print the measured numerics the scales were tuned for."""
    import torch
    import torch.nn.functional as F
    import dump_references as dr

    torch.set_num_threads(1)
    model = dr.load_model(model_dir)
    m = dr.GPT2(model, torch.float32)
    tok = dr.GPT2Tokenizer.from_dir(model_dir)
    with open(cases_path, encoding="utf-8") as f:
        doc = json.load(f)
    cases = doc["cases"] if isinstance(doc, dict) else doc
    V = model["config"]["vocab_size"]
    for c in cases:
        toks = tok.encode(c["prompt"]) if "prompt" in c else c["tokens"]
        cap = {}
        with torch.no_grad():
            m.forward(toks, probe=lambda ck, l, n, t, rows=None: cap.__setitem__((l, n), t.clone()))
            last = cap[(None, "logits")][-1]
            p = torch.softmax(last, -1)
            kept = {sc["name"]: int((dr.process_logits(last, toks, sc) > 0).sum()) for sc in dr.SAMPLING}
            emb = cap[(None, "embeddings")]
            ln = lambda x, eps: F.layer_norm(x, (m.C,), m.p["h.0.ln_1.weight"], m.p["h.0.ln_1.bias"], eps)
            eps_diff = float((ln(emb, 1e-5) - ln(emb, 1e-6)).abs().max())
            rows_var = emb.var(-1, unbiased=False)
            att, sharp, maxw = 0, 0, []
            for l in range(m.cfg["n_layer"]):
                pr = cap[(l, "probs")]
                nvis = torch.arange(1, len(toks) + 1, dtype=torch.float32)
                ok = nvis >= 4
                att += int(ok.sum()) * m.H
                sharp += int(((pr.max(-1)[0] >= 3.0 / nvis) & ok).sum())
                maxw.append(pr.max(-1)[0][:, ok].flatten())
            pre_lo, pre_hi, gdiff = math.inf, -math.inf, 0.0
            for l in range(m.cfg["n_layer"]):
                x = m._conv1d(cap[(l, "ln_2")], f"h.{l}.mlp.c_fc")
                pre_lo, pre_hi = min(pre_lo, float(x.min())), max(pre_hi, float(x.max()))
                gdiff = max(gdiff, float((dr.gelu_new(x) - F.gelu(x)).abs().max()))
            resid = [cap[(None, "embeddings")]] + [cap[(l, "block_out")] for l in range(m.cfg["n_layer"])]
        print(f"case {c['id']}: T={len(toks)}")
        print(f"  last logits: std {float(last.std()):.2f}, top1 p={float(p.max()):.3f}, "
              f"kept of {V}: " + ", ".join(f"{k} {v}" for k, v in kept.items()))
        mw = torch.cat(maxw) if sum(len(x) for x in maxw) else torch.zeros(1)
        print(f"  attention: {sharp}/{att} rows (>=4 visible keys) with max weight >= 3/visible; "
              f"max weight quartiles {float(mw.quantile(0.25)):.2f}/{float(mw.median()):.2f}/{float(mw.quantile(0.75)):.2f}")
        print(f"  ln_1 layer 0, eps 1e-5 vs 1e-6: max |diff| {eps_diff:.2e}; "
              f"embedding row variance min {float(rows_var.min()):.1e} median {float(rows_var.median()):.1e}")
        print(f"  c_fc pre-GELU range [{pre_lo:.2f}, {pre_hi:.2f}], max |tanh-GELU - erf-GELU| {gdiff:.1e}")
        print("  residual channel std (min/median/max) per stage: " + "; ".join(
            f"{float(s.min()):.2f}/{float(s.median()):.2f}/{float(s.max()):.2f}"
            for s in (r.std(0, unbiased=False) for r in resid)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    c = COMMITTED
    ap.add_argument("--seed", type=int, default=c["seed"])
    ap.add_argument("--n-layer", type=int, default=c["L"])
    ap.add_argument("--n-head", type=int, default=c["H"])
    ap.add_argument("--n-embd", type=int, default=c["C"])
    ap.add_argument("--n-positions", type=int, default=c["P"])
    ap.add_argument("--dtype", choices=("f16", "f32", "bf16"), default=c["dtype"])
    ap.add_argument("--stats", metavar="CASES", nargs="?", const=os.path.join(os.path.dirname(HERE), "testdata", "cases.json"),
                    help="after writing, print measured numerics on a cases file (default testdata/cases.json)")
    a = ap.parse_args()
    if min(a.n_layer, a.n_head, a.n_embd, a.n_positions) <= 0 or a.n_embd % a.n_head:
        ap.error("dimensions must be positive and --n-head must divide --n-embd")  # exit 2
    write_model(a.out, a.seed, a.n_layer, a.n_head, a.n_embd, a.n_positions, a.dtype)
    if a.stats:
        stats(a.out, a.stats)


if __name__ == "__main__":
    main()
