#!/usr/bin/env python3
"""Prints llamacpp.sh's tables: per model and GGUF format, llorch-check's
best figures next to llama.cpp's best over its thread settings, and the
ratios (above 1: llorch-check is better); when the run has more than
GPT-2, one summary table of ratios per model (rows: formats); then issue
#14's targets, each as llorch-check's figure over llama.cpp's, or its peak
RSS over the file and the KV cache it holds.

Usage: table_llamacpp.py WORK GGUF NAME=FORMAT,FORMAT... ...
(WORK holds NAME-FORMAT.{go,peer}_{load,N}.json, GGUF the NAME-FORMAT.gguf
files.)"""

import glob
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "pytorch"))
from gguf_io import read_gguf  # noqa: E402
from table import bandwidth_line, read_bandwidth  # noqa: E402

RATES = (("prefill 128 tokens (tokens/s)", "prefill_tps", "prefill 128"),
         ("decode 64 tokens, batch 1 (tokens/s)", "decode1_tps", "decode batch 1"),
         ("decode, 4 sequences (aggregate tokens/s)", "decode4_tps", "4 sequences"),
         ("decode, 8 sequences (aggregate tokens/s)", "decode8_tps", "8 sequences"))


def load(path):
    with open(path) as f:
        return json.load(f)


def best(paths):
    b = {}
    for p in map(load, paths):
        for k, v in p.items():
            if k.endswith("_tps") and (k not in b or v > b[k][0]):
                b[k] = (v, p["impl"])
    return b


def print_table(rows, indent="  ", ruled=True):
    w = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for i, r in enumerate(rows):
        print(indent + "  ".join(c.ljust(w[j]) if j == 0 else c.rjust(w[j]) for j, c in enumerate(r)))
        if i == 0 and ruled:
            print(indent + "  ".join("-" * x for x in w))


def step_bytes(path):
    """The bytes of the file's tensors one llama.cpp decode step reads:
    all but the embedding tables it takes a row of (token_embd when the
    file has an output.weight, position_embd), a mixture of experts'
    expert tensors (*_exps) at the share of experts a token uses. Returns
    them, those of the tensors other than experts, and the share (1
    without experts)."""
    kv, tensors, _ = read_gguf(path)
    arch = kv.get("general.architecture", "")
    used = kv.get(f"{arch}.expert_used_count", 1) / kv.get(f"{arch}.expert_count", 1)
    skip = {"position_embd.weight"} | ({"token_embd.weight"} if "output.weight" in tensors else set())
    sizes = [(len(b), "_exps." in n) for n, (_, _, b) in tensors.items() if n not in skip]
    return sum(n * (used if e else 1) for n, e in sizes), sum(n for n, e in sizes if not e), used


def report(work, gguf, name, f, prefix, targets):
    """Prints one model and format's table, appends its targets and
    returns its ratios by summary column."""
    path = os.path.join(gguf, f"{name}-{f}.gguf")
    stem = os.path.join(work, f"{name}-{f}")
    go, peer = best(glob.glob(f"{stem}.go_[0-9]*.json")), best(glob.glob(f"{stem}.peer_[0-9]*.json"))
    gl, pl = load(f"{stem}.go_load.json"), load(f"{stem}.peer_load.json")
    peer_rss = pl["peak_rss"]
    rows = [("figure", "llorch-check", "llama.cpp", "ratio")]
    ratios = {}
    for label, k, short in RATES:
        r = go[k][0] / peer[k][0]
        ratios[short] = r
        rows.append((label, f"{go[k][0]:.1f}", f"{peer[k][0]:.1f}", f"{r:.2f}x"))
        if k in ("prefill_tps", "decode1_tps", "decode8_tps"):
            targets.append((f"{prefix}{f} {label.split(' (')[0]} >= 1.0x llama.cpp's", r, r >= 1.0))
    first = f"{stem}.go_load_first.json"
    if os.path.exists(first):
        fl = load(first)
        rows.append(("model load, first (s, lower is better)", f"{fl['load_s']:.2f}", f"{pl['load_s']:.2f}",
                     f"{pl['load_s'] / fl['load_s']:.2f}x"))
    cached = "read from" in gl.get("weights_cache", "")
    rows.append(("model load" + (", weights cached" if cached else "") + " (s, lower is better)",
                 f"{gl['load_s']:.2f}", f"{pl['load_s']:.2f}", f"{pl['load_s'] / gl['load_s']:.2f}x"))
    r = pl["load_s"] / gl["load_s"]
    targets.append((f"{prefix}{f} model load{' (weights cached)' if cached else ''} within 2x of llama.cpp's", r, r >= 0.5))
    rows.append(("peak RSS (MB, lower is better)", f"{gl['peak_rss'] / 1e6:.0f}", f"{peer_rss / 1e6:.0f}",
                 f"{peer_rss / gl['peak_rss']:.2f}x"))
    ratios["peak RSS"] = peer_rss / gl["peak_rss"]
    r = gl["peak_rss"] / peer_rss
    targets.append((f"{prefix}{f} peak RSS <= 1.1x llama.cpp's", r, r <= 1.1))
    bound = os.path.getsize(path) + gl["kv_bytes"]
    r = gl["peak_rss"] / bound
    targets.append((f"{prefix}{f} peak RSS <= 1.1x (file + KV cache in use, {bound / 1e6:.0f} MB)", r, r <= 1.1))
    print()
    print(f"{prefix}{f}: {path} ({os.path.getsize(path) / 1e6:.0f} MB)")
    print(f"  llorch-check: {go['prefill_tps'][1]}")
    print("  llama.cpp: " + pl["impl"].rsplit(",", 1)[0] + "; best thread count per figure: " +
          ", ".join(f"{k[:-4]} {v[1].rsplit(', ', 1)[1].split()[0]}" for k, v in sorted(peer.items())))
    print_table(rows)
    # Each decode's weight bandwidth: the bytes a step reads (llorch-check's
    # as it holds them, llama.cpp's the file's) times its rate.
    # A mixture of experts' step reads the chosen experts only, and
    # gobench's decode_bytes counts every expert as we hold them (a
    # quantised file's in its type, an F16 file's as float16): ours
    # counts the rest as the file stores it (we hold it so) and what is
    # left at the share a token uses.
    bw = read_bandwidth(work)
    step, rest, used = step_bytes(path)
    ours = gobytes(stem)
    if used < 1:
        print(f"  (a step's bytes count the experts' tensors at the {used:.4g} of them a token uses)")
        ours = rest + used * (ours - rest)
    print("  " + bandwidth_line("llorch-check decode batch 1", go["decode1_tps"][0] * ours, bw))
    print("  " + bandwidth_line("llama.cpp decode batch 1", peer["decode1_tps"][0] * step, bw))
    return f"{f.upper()} ({os.path.getsize(path) / 1e6:.0f} MB)", ratios


def gobytes(stem):
    """gobench's decode_bytes for the model and format of stem."""
    return load(glob.glob(f"{stem}.go_[0-9]*.json")[0])["decode_bytes"]


def main():
    work, gguf, specs = sys.argv[1], sys.argv[2], [s.split("=", 1) for s in sys.argv[3:]]
    models = [(name, fs.split(",")) for name, fs in specs]
    multi = [name for name, _ in models] != ["gpt2"]
    print("\n".join(open(os.path.join(work, "load.txt")).read().split("\n")).strip())
    print("ratio: llorch-check/llama.cpp for rates, llama.cpp/llorch-check for time and memory (above 1: llorch-check is better)")
    targets, summaries = [], []
    for name, formats in models:
        prefix = f"{name} " if multi else ""
        summaries.append((name, [report(work, gguf, name, f, prefix, targets) for f in formats]))
    if multi:
        for name, rows in summaries:
            cols = [short for _, _, short in RATES] + ["peak RSS"]
            print()
            print(f"{name}: llorch-check/llama.cpp (peak RSS: llama.cpp/llorch-check), above 1 favours llorch-check")
            print_table([[""] + cols] + [[label] + [f"{r[c]:.2f}x" for c in cols] for label, r in rows], ruled=False)
    print()
    for name, v, ok in targets:
        print(f"target {name}: {v:.2f}x {'MET' if ok else 'NOT MET'}")
    missed = [f"{name} ({v:.2f}x)" for name, v, ok in targets if not ok]
    print(f"{len(targets) - len(missed)} of {len(targets)} targets met" + (f"; not met: {'; '.join(missed)}" if missed else ""))


if __name__ == "__main__":
    main()
