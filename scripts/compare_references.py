#!/usr/bin/env python3
"""Compare two reference sets (references/FORMAT.md).

Manifests must be equal except `model.path` and `generator`: integers,
strings and booleans exactly, floats with rtol 1e-5. Every tensor file (and
float64 twin) must have the same dtype and shape and be allclose with
rtol 1e-5, atol 1e-7 (integers exactly).

Exit 0: equivalent; 1: differences (each printed); 2: unreadable input.
"""

import json
import math
import os
import sys

import numpy as np

RTOL, ATOL, FLOAT_RTOL = 1e-5, 1e-7, 1e-5
IGNORED = {("model", "path"), ("generator",)}


class BadInput(Exception):
    pass


def load_manifest(root):
    path = os.path.join(root, "manifest.json")
    try:
        with open(path, encoding="utf-8") as f:
            m = json.load(f)
    except OSError as e:
        raise BadInput(f"{path}: cannot read: {e.strerror}")
    except json.JSONDecodeError as e:
        raise BadInput(f"{path}: not valid JSON: {e}")
    if not isinstance(m, dict) or not isinstance(m.get("tensors"), list):
        raise BadInput(f"{path}: not a reference set manifest (no 'tensors' list)")
    return m


def diff_json(a, b, path, out):
    """Append a description of every difference between JSON values a and b."""
    where = "/".join(map(str, path)) or "(root)"
    if tuple(path) in IGNORED:
        return
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                out.append(f"manifest {where}/{k}: only in {'B' if k not in a else 'A'}")
            else:
                diff_json(a[k], b[k], path + [k], out)
    elif isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            out.append(f"manifest {where}: {len(a)} entries vs {len(b)}")
        for i, (x, y) in enumerate(zip(a, b)):
            diff_json(x, y, path + [i], out)
    elif isinstance(a, float) or isinstance(b, float):
        num = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (a, b))
        if not num or not math.isclose(a, b, rel_tol=FLOAT_RTOL, abs_tol=0.0):
            out.append(f"manifest {where}: {a!r} vs {b!r}")
    elif type(a) is not type(b) or a != b:
        out.append(f"manifest {where}: {a!r} vs {b!r}")


def safe_join(root, rel):
    parts = rel.split("/")
    if not rel or rel.startswith("/") or any(p in ("", ".", "..") for p in parts):
        raise BadInput(f"{root}/manifest.json: tensor file path {rel!r} leaves the set directory")
    return os.path.join(root, *parts)


def load_npy(root, rel):
    path = safe_join(root, rel)
    try:
        return np.load(path, allow_pickle=False)
    except (OSError, ValueError) as e:
        raise BadInput(f"{path}: cannot load .npy: {e}")


def diff_array(rel, a, b):
    if a.dtype != b.dtype or a.shape != b.shape:
        return f"{rel}: {a.dtype}{list(a.shape)} vs {b.dtype}{list(b.shape)}"
    if a.dtype.kind in "iub":
        bad = a != b
        if bad.any():
            i = np.unravel_index(int(np.argmax(bad)), a.shape)
            return f"{rel}: {int(bad.sum())} integers differ; first at {tuple(map(int, i))}: {a[i]} vs {b[i]}"
        return None
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    close = np.isclose(b64, a64, rtol=RTOL, atol=ATOL, equal_nan=True)
    if close.all():
        return None
    err = np.abs(a64 - b64)
    err[close] = 0
    i = np.unravel_index(int(np.nanargmax(err)), a.shape)
    return (f"{rel}: {int((~close).sum())} of {a.size} values outside rtol {RTOL} atol {ATOL}; "
            f"worst at {tuple(map(int, i))}: {a64[i]!r} vs {b64[i]!r} (abs err {err[i]:.3e})")


def compare(a_root, b_root):
    ma, mb = load_manifest(a_root), load_manifest(b_root)
    diffs = []
    diff_json(ma, mb, [], diffs)
    n = 0
    for ea, eb in zip(ma["tensors"], mb["tensors"]):
        for key in ("file", "file_f64"):
            rel = ea.get(key)
            if rel is None or rel != eb.get(key):
                continue  # a differing entry is already reported by the manifest comparison
            a, b = load_npy(a_root, rel), load_npy(b_root, rel)
            n += 1
            want = ea["dtype"] if key == "file" else "float64"
            if str(a.dtype) != want or list(a.shape) != ea["shape"]:
                diffs.append(f"{a_root}/{rel}: {a.dtype}{list(a.shape)}, manifest says {want}{ea['shape']}")
            d = diff_array(rel, a, b)
            if d:
                diffs.append(d)
    return n, diffs


def main(argv):
    if len(argv) != 2:
        print("usage: compare_references.py SET_A SET_B", file=sys.stderr)
        return 2
    try:
        n, diffs = compare(*argv)
    except BadInput as e:
        print(f"compare_references: error: {e}", file=sys.stderr)
        return 2
    for d in diffs:
        print("DIFFERENCE: " + d)
    print(f"{n} tensors compared, {len(diffs)} differences")
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
