#!/usr/bin/env python3
"""Prints run.sh's tables from the JSON lines it collected, and the targets of issue #7.

The first table is float32 on both sides (the targets are stated for it);
the second, when run.sh measured it, is 16-bit weights: Go holding float16
against PyTorch's bfloat16.
"""

import glob
import json
import os
import sys


def best_of(runs):
    b = {}  # figure -> (value, impl)
    for p in runs:
        for k, v in p.items():
            if k.endswith("_tps") and (k not in b or v > b[k][0]):
                b[k] = (v, p["impl"])
    return b


def runs(work, prefix):
    return [json.load(open(f)) for f in sorted(glob.glob(os.path.join(work, f"{prefix}_[0-9]*.json")))]


def table(work, go_prefix, py_prefix):
    """Returns (rows, go figures, PyTorch best figures, go load, py load), or None if not measured."""
    gos, peers = runs(work, go_prefix), runs(work, py_prefix)
    if not gos or not peers:
        return None
    rd = lambda name: json.load(open(os.path.join(work, name)))
    gl, pl = rd(f"{go_prefix}_load.json"), rd(f"{py_prefix}_load.json")
    best = best_of(peers)
    g = {k: v for k, (v, _) in best_of(gos).items()}
    g["impl"], g["runs"], g["peers"] = gos[0]["impl"], len(gos), peers
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
    return rows, g, best, gl


def show(title, t):
    rows, g, best, _ = t
    print()
    print(title)
    print(f"Go: {g['impl']}, best of {g['runs']} runs per figure")
    print("PyTorch: best of " + "; ".join(p["impl"] for p in g["peers"]) + " per figure")
    for k, (v, impl) in sorted(best.items()):
        print(f"  PyTorch best {k}: {impl}")
    w = [max(len(r[i]) for r in rows) for i in range(4)]
    for i, r in enumerate(rows):
        print("  ".join(c.ljust(w[j]) if j == 0 else c.rjust(w[j]) for j, c in enumerate(r)))
        if i == 0:
            print("  ".join("-" * x for x in w))


def read_bandwidth(work):
    """The best read bandwidth (bytes/s) of gobench -mode bandwidth's runs: {threads: rate}."""
    best = {}
    for f in glob.glob(os.path.join(work, "bandwidth_*.json")):
        for k, v in json.load(open(f)).items():
            if k.startswith("read_gbps_"):
                t = int(k[len("read_gbps_"):])
                best[t] = max(best.get(t, 0), v * 1e9)
    return best


def bandwidth_line(label, rate, bw):
    """A decode's weight bandwidth (bytes/s) next to the machine's best read bandwidth."""
    line = f"{label} streams {rate / 1e9:.1f} GB/s of weights"
    if bw:
        t = max(bw)
        line += f": {rate / bw[t] * 100:.0f}% of this machine's read bandwidth ({bw[t] / 1e9:.1f} GB/s, {t} threads"
        if 1 in bw and t != 1:
            line += f"; {bw[1] / 1e9:.1f} GB/s with 1"
        line += ")"
    return line


def main():
    work, weights = sys.argv[1], sys.argv[2]
    size = os.path.getsize(weights)
    print(f"model: {weights} ({size / 1e6:.0f} MB float32)")
    print("Go and PyTorch runs alternate; " + open(os.path.join(work, "load.txt")).read().strip())
    print("ratio: Go/PyTorch for rates, PyTorch/Go for time and memory (above 1: Go is better)")
    f32 = table(work, "go", "py")
    show("float32 weights, both sides", f32)
    half = table(work, "go16", "py16")
    if half:
        show("16-bit weights: Go float16 (float32 arithmetic), PyTorch bfloat16 (bfloat16 matmuls)", half)

    _, g, best, gl = f32
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
    # Decode streams every weight once per token: the bytes a step reads
    # (gobench's decode_bytes) times the rate is the bandwidth it reached,
    # next to what this machine can read at all (gobench -mode bandwidth).
    bw = read_bandwidth(work)
    print(bandwidth_line("Go float32 decode batch 1", g["decode1_tps"] * g["decode_bytes"], bw))
    print(bandwidth_line("PyTorch float32 decode batch 1", best["decode1_tps"][0] * g["decode_bytes"], bw))
    if half:
        _, h, hbest, hl = half
        print(f"Go float16 decode batch 1: {h['decode1_tps'] / best['decode1_tps'][0]:.2f}x PyTorch float32, "
              f"{h['decode1_tps'] / hbest['decode1_tps'][0]:.2f}x PyTorch bfloat16, "
              f"{h['decode1_tps'] / g['decode1_tps']:.2f}x Go float32")
        print(bandwidth_line("Go float16 decode batch 1", h["decode1_tps"] * h["decode_bytes"], bw))
        print(f"Go float16 peak RSS: {hl['peak_rss'] / size:.2f}x the float32 weights file")


if __name__ == "__main__":
    main()
