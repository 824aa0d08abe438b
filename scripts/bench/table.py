#!/usr/bin/env python3
"""Prints run.sh's one table from the JSON lines it collected, and the targets of issue #7."""

import glob
import json
import os
import sys


def main():
    work, weights = sys.argv[1], sys.argv[2]
    rd = lambda name: json.load(open(os.path.join(work, name)))
    gl, pl = rd("go_load.json"), rd("py_load.json")
    load = open(os.path.join(work, "load.txt")).read().strip()
    gos = [json.load(open(f)) for f in sorted(glob.glob(os.path.join(work, "go_[0-9]*.json")))]
    peers = [json.load(open(f)) for f in sorted(glob.glob(os.path.join(work, "py_[0-9]*.json")))]

    def best_of(runs):
        b = {}  # figure -> (value, impl)
        for p in runs:
            for k, v in p.items():
                if k.endswith("_tps") and (k not in b or v > b[k][0]):
                    b[k] = (v, p["impl"])
        return b

    best = best_of(peers)
    g = {k: v for k, (v, _) in best_of(gos).items()}
    g["impl"] = gos[0]["impl"]
    size = os.path.getsize(weights)
    rows = [("figure", "Go", "PyTorch", "ratio")]

    def rate(label, key):
        go, py = g[key], best[key][0]
        rows.append((label, f"{go:.1f}", f"{py:.1f}", f"{go / py:.2f}x"))

    rate("prefill 128 tokens (tokens/s)", "prefill_tps")
    rate("decode 64 tokens, batch 1 (tokens/s)", "decode1_tps")
    for B in (4, 8):
        rate(f"decode, {B} concurrent sequences (aggregate tokens/s)", f"decode{B}_tps")
    rows.append(("model load (s, lower is better)", f"{gl['load_s']:.2f}", f"{pl['load_s']:.2f}",
                 f"{pl['load_s'] / gl['load_s']:.2f}x"))
    rows.append(("peak RSS (MB, lower is better)", f"{gl['peak_rss'] / 1e6:.0f}", f"{pl['peak_rss'] / 1e6:.0f}",
                 f"{pl['peak_rss'] / gl['peak_rss']:.2f}x"))
    w = [max(len(r[i]) for r in rows) for i in range(4)]
    print(f"model: {weights} ({size / 1e6:.0f} MB float32)")
    print(f"Go: {g['impl']}, best of {len(gos)} runs per figure")
    print("PyTorch: best of " + "; ".join(p["impl"] for p in peers) + " per figure")
    print(f"Go and PyTorch runs alternate; {load}")
    for k, (v, impl) in sorted(best.items()):
        print(f"  PyTorch best {k}: {impl}")
    print("ratio: Go/PyTorch for rates, PyTorch/Go for time and memory (above 1: Go is better)")
    for i, r in enumerate(rows):
        print("  ".join(c.ljust(w[j]) if j == 0 else c.rjust(w[j]) for j, c in enumerate(r)))
        if i == 0:
            print("  ".join("-" * x for x in w))
    targets = [
        ("decode batch 1 >= 2.0x PyTorch", g["decode1_tps"] / best["decode1_tps"][0], 2.0),
        ("prefill >= 1.0x PyTorch", g["prefill_tps"] / best["prefill_tps"][0], 1.0),
        ("decode 8 sequences >= 3x Go batch 1", g["decode8_tps"] / g["decode1_tps"], 3.0),
        ("peak RSS <= 1.25x weights file", size * 1.25 / gl["peak_rss"], 1.0),
    ]
    print()
    for name, v, want in targets:
        shown = f"{gl['peak_rss'] / size:.2f}x" if "RSS" in name else f"{v:.2f}x"
        print(f"target {name}: {shown} {'MET' if v >= want else 'NOT MET'}")


if __name__ == "__main__":
    main()
