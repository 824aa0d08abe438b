#!/usr/bin/env python3
"""Prints llamacpp.sh's tables: per GGUF format, llorch-check's best figures
next to llama.cpp's best over its thread settings, and the ratios
(above 1: llorch-check is better), then issue #14's targets, each as
llorch-check's figure over llama.cpp's, or its peak RSS over the file and
the KV cache it holds."""

import glob
import json
import os
import sys


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


def main():
    work, gguf, formats = sys.argv[1], sys.argv[2], sys.argv[3:]
    print("\n".join(open(os.path.join(work, "load.txt")).read().split("\n")).strip())
    print("ratio: llorch-check/llama.cpp for rates, llama.cpp/llorch-check for time and memory (above 1: llorch-check is better)")
    targets = []
    for f in formats:
        path = os.path.join(gguf, f"gpt2-{f}.gguf")
        go, peer = best(glob.glob(os.path.join(work, f"{f}.go_[0-9]*.json"))), \
            best(glob.glob(os.path.join(work, f"{f}.peer_[0-9]*.json")))
        gl, pl = load(os.path.join(work, f"{f}.go_load.json")), load(os.path.join(work, f"{f}.peer_load.json"))
        peer_rss = pl["peak_rss"]
        rows = [("figure", "llorch-check", "llama.cpp", "ratio")]
        for label, k in (("prefill 128 tokens (tokens/s)", "prefill_tps"),
                         ("decode 64 tokens, batch 1 (tokens/s)", "decode1_tps"),
                         ("decode, 4 sequences (aggregate tokens/s)", "decode4_tps"),
                         ("decode, 8 sequences (aggregate tokens/s)", "decode8_tps")):
            rows.append((label, f"{go[k][0]:.1f}", f"{peer[k][0]:.1f}", f"{go[k][0] / peer[k][0]:.2f}x"))
            if k in ("prefill_tps", "decode1_tps", "decode8_tps"):
                r = go[k][0] / peer[k][0]
                targets.append((f"{f} {label.split(' (')[0]} >= 1.0x llama.cpp's", r, r >= 1.0))
        rows.append(("model load (s, lower is better)", f"{gl['load_s']:.2f}", f"{pl['load_s']:.2f}",
                     f"{pl['load_s'] / gl['load_s']:.2f}x"))
        rows.append(("peak RSS (MB, lower is better)", f"{gl['peak_rss'] / 1e6:.0f}", f"{peer_rss / 1e6:.0f}",
                     f"{peer_rss / gl['peak_rss']:.2f}x"))
        r = gl["peak_rss"] / peer_rss
        targets.append((f"{f} peak RSS <= 1.1x llama.cpp's", r, r <= 1.1))
        bound = os.path.getsize(path) + gl["kv_bytes"]
        r = gl["peak_rss"] / bound
        targets.append((f"{f} peak RSS <= 1.1x (file + KV cache in use, {bound / 1e6:.0f} MB)", r, r <= 1.1))
        print()
        print(f"{f}: {path} ({os.path.getsize(path) / 1e6:.0f} MB)")
        print(f"  llorch-check: {go['prefill_tps'][1]}")
        print("  llama.cpp: " + pl["impl"].rsplit(",", 1)[0] + "; best thread count per figure: " +
              ", ".join(f"{k[:-4]} {v[1].rsplit(', ', 1)[1].split()[0]}" for k, v in sorted(peer.items())))
        w = [max(len(r[i]) for r in rows) for i in range(4)]
        for i, r in enumerate(rows):
            print("  " + "  ".join(c.ljust(w[j]) if j == 0 else c.rjust(w[j]) for j, c in enumerate(r)))
            if i == 0:
                print("  " + "  ".join("-" * x for x in w))
    print()
    for name, v, ok in targets:
        print(f"target {name}: {v:.2f}x {'MET' if ok else 'NOT MET'}")


if __name__ == "__main__":
    main()
