#!/usr/bin/env python3
"""What separates llama.cpp's GELU from an emulated reference set
(dump_references.py --emulate llamacpp-cpu) at one tensor: every element
outside the default tolerance must be a table flip, the neighbouring entry
of ggml's float16 GELU table, which happens when the float32 input lands on
the other side of a float16 rounding midpoint than PyTorch's did. The
reference's own float32 forward flips against its float64 twin in the same
way, which the second count shows.

Usage: flips.py SET DUMP CASE LAYER     (the gelu tensor of that case and layer)
Prints one line; exit 1 if an element differs by anything but a flip.
"""

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "pytorch"))
import emulate  # noqa: E402
import numpy as np  # noqa: E402

ATOL = RTOL = 1e-4  # checkpoint 6, docs/spec.md section 2


def entry(root, case, layer):
    with open(os.path.join(root, "manifest.json"), encoding="utf-8") as f:
        m = json.load(f)
    for t in m["tensors"]:
        if (t["case"], t["layer"], t["name"]) == (case, layer, "gelu"):
            return t
    raise SystemExit(f"flips.py: {root} has no gelu of case {case} layer {layer}")


def main(ref, dump, case, layer):
    layer = int(layer)
    t = entry(ref, case, layer)
    want = np.load(os.path.join(ref, t["file"])).ravel()
    truth = np.load(os.path.join(ref, t["file_f64"])).ravel()
    got = np.load(os.path.join(dump, entry(dump, case, layer)["file"])).ravel()
    # Neighbours in the table: for each entry value, the values of the
    # entries whose inputs are one float16 step away.
    table = emulate.ggml_gelu_table()
    bits = np.arange(1 << 16, dtype=np.uint16)
    x = bits.view(np.float16)
    ok = np.isfinite(x) & (np.abs(x.astype(np.float32)) < 10)
    neighbours = {}
    for h in bits[ok]:
        v = float(table[h])
        for d in (-1, 1):
            n = (int(h) + d) & 0xFFFF
            if ok[n]:
                neighbours.setdefault(v, set()).add(float(table[n]))
    out = np.abs(got.astype(np.float64) - want) > ATOL + RTOL * np.abs(want.astype(np.float64))
    idx = np.flatnonzero(out)
    flips = [i for i in idx if float(got[i]) in neighbours.get(float(want[i]), ())]
    own = np.abs(want.astype(np.float64) - truth) > ATOL + RTOL * np.abs(truth)
    worst = float(np.abs(got.astype(np.float64) - want)[idx].max()) if len(idx) else 0.0
    print(f"gelu, case {case}, layer {layer}: {len(idx)} of {got.size} elements outside the default tolerance, "
          f"{len(flips)} of them a flip to the neighbouring table entry (largest {worst:.3g}); "
          f"PyTorch's own float32 forward flips {int(own.sum())} against its float64 twin")
    return 0 if len(flips) == len(idx) else 1


if __name__ == "__main__":
    if len(sys.argv) != 5:
        print(__doc__.split("\n\n")[-1].strip().splitlines()[0], file=sys.stderr)
        sys.exit(2)
    sys.exit(main(*sys.argv[1:]))
