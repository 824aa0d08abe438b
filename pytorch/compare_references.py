#!/usr/bin/env python3
"""Compare two reference sets (references/FORMAT.md): the committed one (A)
and one regenerated from the same weights (B).

Which comparison applies depends on the arithmetic both sets record
(generator.arithmetic, written by pytorch/arithmetic.py):

exact     both record the same pinned arithmetic (BLAS kernel and threads,
          ATen CPU capability, torch, machine): every float32 tensor, every
          float64 twin and every manifest value must be bit-identical.
budget    B's machine could not reproduce A's arithmetic (another
          architecture, an OpenBLAS without that kernel, another torch).
          Float32 results may then differ in their last bits, so:
          - float64 twins must agree within TWIN_RTOL of each tensor's
            largest value: summation order moves float64 results by up to 2e-14
            of that (measured), while every change float32 can see moves
            them by more than float32's 6e-8 spacing;
          - each float32 tensor's largest error against its own float64
            twin (floored at float32's spacing at the tensor's scale) must
            be within BUDGET_RATIO of the other set's, both ways: two
            float32 computations of the same function are equally good
            approximations of it. Across OpenBLAS's Haswell, SkylakeX and
            Sandybridge kernels and ATen's avx2, avx512 and default paths
            the ratio reached 2.9 (sampling probabilities); 4 leaves room.
            A change smaller than 4x the float32 error of its tensor is not
            detected in this mode, and the report says so;
          - integers, token ids and strings exactly.

A corpus set (corpus.json, FORMAT.md "Corpus sets") is compared the same
way: bit for bit when the arithmetic matches; otherwise ids and targets
exactly, float64 arrays as twins, float32 log-probabilities within the
budget against their twins, top1 only where the float64 top two lie within
float32's error of each other, and kl_f32's root mean square within
BUDGET_RATIO (a divergence goes as the square of the error).

Exit 0: equivalent; 1: differences (each printed); 2: unreadable input.
"""

import hashlib

import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import arithmetic  # noqa: E402  first: it sets OpenBLAS's switches before numpy loads it

import numpy as np  # noqa: E402

TWIN_RTOL = 1e-10
BUDGET_RATIO = 4.0
F32_MAX = float(np.finfo(np.float32).max)
# Manifest fields that do not describe the arithmetic's result.
IGNORED = {("model", "path"), ("generator",)}
# A corpus set's arrays: float32 results with their float64 twins, and exact integers.
CORPUS_TWINS = {"logprobs.npy": "logprobs_f64.npy", "target_logprobs.npy": "target_logprobs_f64.npy"}
CORPUS_INTS = ("ids.npy", "targets.npy", "top1.npy")


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


def recorded_arithmetic(m):
    g = m.get("generator")
    return g.get("arithmetic") if isinstance(g, dict) else None


def diff_json(a, b, path, out, ignored=IGNORED):
    """Append a description of every difference between JSON values a and b;
    floats must be equal too (budget mode takes float results out first)."""
    where = "/".join(map(str, path)) or "(root)"
    if tuple(path) in ignored:
        return
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                out.append(f"manifest {where}/{k}: only in {'B' if k not in a else 'A'}")
            else:
                diff_json(a[k], b[k], path + [k], out, ignored)
    elif isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            out.append(f"manifest {where}: {len(a)} entries vs {len(b)}")
        for i, (x, y) in enumerate(zip(a, b)):
            diff_json(x, y, path + [i], out, ignored)
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


def float32_spacing(x):
    x = np.float32(min(abs(x), F32_MAX))
    return float(np.nextafter(x, np.float32(np.inf)) - x)


def max_error(x32, x64):
    """Largest |x32 - x64| over the values float32 can hold, floored at
    float32's spacing at the tensor's scale (a result cannot be judged more
    finely than that). Masked entries (finfo.min) are left out."""
    live = np.abs(x64) <= F32_MAX
    if not live.any():
        return 0.0
    x64 = x64[live]
    err = float(np.max(np.abs(x32[live].astype(np.float64) - x64)))
    return max(err, float32_spacing(float(np.max(np.abs(x64)))))


def shape_problem(rel, a, b):
    if a.dtype != b.dtype or a.shape != b.shape:
        return f"{rel}: {a.dtype}{list(a.shape)} vs {b.dtype}{list(b.shape)}"
    return None


def diff_exact(rel, a, b):
    if a.tobytes() == b.tobytes():
        return None
    u = f"u{a.dtype.itemsize}"
    bad = (a.reshape(-1).view(u) != b.reshape(-1).view(u)).reshape(a.shape)
    i = np.unravel_index(int(np.argmax(bad)), a.shape)
    return f"{rel}: {int(bad.sum())} of {a.size} values not bit-identical; first at {tuple(map(int, i))}: {a[i]!r} vs {b[i]!r}"


def diff_twin(rel, a64, b64):
    scale = float(np.max(np.abs(b64[np.abs(b64) <= F32_MAX]), initial=0.0))
    live = (np.abs(a64) <= F32_MAX) & (np.abs(b64) <= F32_MAX)
    if not np.array_equal(live, (np.abs(b64) <= F32_MAX)):
        return f"{rel}: masked entries differ"
    err = np.abs(a64 - b64)
    err[~live] = 0
    worst = float(np.max(err, initial=0.0))
    if worst <= TWIN_RTOL * scale and not np.isnan(worst):
        return None
    i = np.unravel_index(int(np.nanargmax(err)), a64.shape)
    return (f"{rel}: float64 twin differs by {worst:.3e}, more than {TWIN_RTOL:g} of its scale {scale:.3e}; "
            f"worst at {tuple(map(int, i))}: {a64[i]!r} vs {b64[i]!r}")


def diff_budget(rel, a32, a64, b32, b64):
    """Both float32 tensors must be about as far from their float64 twins."""
    if not np.array_equal(np.abs(a64) > F32_MAX, np.abs(b64) > F32_MAX) or \
            not np.array_equal(a32[np.abs(a64) > F32_MAX], b32[np.abs(b64) > F32_MAX]):
        return f"{rel}: masked entries differ"
    ea, eb = max_error(a32, a64), max_error(b32, b64)
    ratio = max(ea / eb, eb / ea) if ea > 0 and eb > 0 else (1.0 if ea == eb else math.inf)
    if ratio <= BUDGET_RATIO:
        return None
    return (f"{rel}: error against the float64 twin {ea:.3e} in A, {eb:.3e} in B: "
            f"{ratio:.1f}x apart, more than {BUDGET_RATIO:g}x")


def scalar_results(m):
    """The float results a manifest holds besides tensors: log-likelihoods."""
    out = []
    for i, p in enumerate(m.get("loglikelihood") or []):
        if isinstance(p, dict):
            out.append((f"loglikelihood/{i}", p.pop("ll", None), p.pop("ll_f64", None)))
    return out


def judge_arithmetic(ra, rb):
    """(exact, lines saying which comparison applies and why)."""
    exact = arithmetic.identity(ra) is not None and arithmetic.identity(ra) == arithmetic.identity(rb)
    about = [f"A: {arithmetic.describe(ra)}", f"B: {arithmetic.describe(rb)}"]
    if not exact:
        ia, ib = arithmetic.identity(ra) or {}, arithmetic.identity(rb) or {}
        changed = [f"{k} {ia.get(k)!r} vs {ib.get(k)!r}" for k in arithmetic.IDENTITY if ia.get(k) != ib.get(k)]
        if ra is None:
            why = "A records no arithmetic"
        elif isinstance(rb, dict) and not rb.get("pinned"):
            why = f"B was made with {arithmetic.MODE_VAR}=native"
        else:
            why = "this machine did not reproduce A's pinned settings"
        about.append(f"the arithmetic differs ({'; '.join(changed)}): {why}. Float32 results are compared "
                     f"within the error budget, not bit for bit; a change below it is not detected")
    else:
        about.append("the same pinned arithmetic: every tensor, twin and manifest value compared bit for bit")
    return exact, about


def compare(a_root, b_root):
    """Returns (mode, lines describing it, tensors compared, differences)."""
    if os.path.exists(os.path.join(a_root, "corpus.json")):
        return compare_corpus(a_root, b_root)
    ma, mb = load_manifest(a_root), load_manifest(b_root)
    exact, about = judge_arithmetic(recorded_arithmetic(ma), recorded_arithmetic(mb))
    diffs = []
    if not exact:
        for (where, la, la64), (_, lb, lb64) in zip(scalar_results(ma), scalar_results(mb)):
            if not all(isinstance(v, float) for v in (la, la64, lb, lb64)):
                diffs.append(f"manifest {where}: ll/ll_f64 missing or not numbers")
                continue
            d = diff_twin(where + "/ll_f64", np.array([la64]), np.array([lb64])) or diff_budget(
                where + "/ll", np.array([la]), np.array([la64]), np.array([lb]), np.array([lb64]))
            if d:
                diffs.append("manifest " + d)
    diff_json(ma, mb, [], diffs)
    n = 0
    for ea, eb in zip(ma["tensors"], mb["tensors"]):
        rel, rel64 = ea.get("file"), ea.get("file_f64")
        if rel is None or rel != eb.get("file") or rel64 != eb.get("file_f64"):
            continue  # a differing entry is already reported by the manifest comparison
        a, b = load_npy(a_root, rel), load_npy(b_root, rel)
        pair = [(rel, a, b)]
        if rel64 is not None:
            pair.append((rel64, load_npy(a_root, rel64), load_npy(b_root, rel64)))
        for r, x, y in pair:
            n += 1
            want = ea["dtype"] if r == rel else "float64"
            if str(x.dtype) != want or list(x.shape) != ea["shape"]:
                diffs.append(f"{a_root}/{r}: {x.dtype}{list(x.shape)}, manifest says {want}{ea['shape']}")
        d = shape_problem(rel, a, b) or (shape_problem(rel64, pair[1][1], pair[1][2]) if rel64 else None)
        if d:
            diffs.append(d)
        elif exact or a.dtype.kind != "f" or rel64 is None:
            diffs += [x for x in (diff_exact(r, x, y) for r, x, y in pair) if x]
        else:
            a64, b64 = pair[1][1], pair[1][2]
            diffs += [x for x in (diff_twin(rel64, a64, b64), diff_budget(rel, a, a64, b, b64)) if x]
    n += compare_pair_caches(ma, mb, a_root, b_root, exact, diffs)
    return ("exact" if exact else "budget"), about, n, diffs


def compare_pair_caches(ma, mb, a_root, b_root, exact, diffs):
    """An f16-kv set's log-likelihood pairs' KV caches (float16 values, no
    twins): bit for bit under the same arithmetic; otherwise only their
    dtype and shape, since other last bits round to other float16 values."""
    n = 0
    for pa, pb in zip(ma.get("loglikelihood") or [], mb.get("loglikelihood") or []):
        ka, kb = pa.get("kv_cache") if isinstance(pa, dict) else None, pb.get("kv_cache") if isinstance(pb, dict) else None
        if not isinstance(ka, dict) or ka != kb:
            continue  # absent, or a difference the manifest comparison reports
        for rel in (ka.get("k") or []) + (ka.get("v") or []):
            a, b = load_npy(a_root, rel), load_npy(b_root, rel)
            n += 1
            d = shape_problem(rel, a, b)
            if d:
                diffs.append(d)
            elif str(a.dtype) != "float32":
                diffs.append(f"{a_root}/{rel}: {a.dtype}, want float32")
            elif exact:
                d = diff_exact(rel, a, b)
                if d:
                    diffs.append(d)
    return n


def load_corpus(root):
    """A corpus set's document, its arrays, and what is wrong with them:
    (sha256 not the document's, dtype or shape not the document's)."""
    path = os.path.join(root, "corpus.json")
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except OSError as e:
        raise BadInput(f"{path}: cannot read: {e.strerror}")
    except json.JSONDecodeError as e:
        raise BadInput(f"{path}: not valid JSON: {e}")
    if not isinstance(doc, dict) or doc.get("kind") != "corpus" or not isinstance(doc.get("files"), dict):
        raise BadInput(f"{path}: not a corpus set (kind \"corpus\" with a 'files' map)")
    P, K = doc.get("positions"), doc.get("top_k")
    want = {"ids.npy": ("int32", [P, K]), "logprobs.npy": ("float32", [P, K]),
            "logprobs_f64.npy": ("float64", [P, K]), "targets.npy": ("int32", [P]),
            "target_logprobs.npy": ("float32", [P]), "target_logprobs_f64.npy": ("float64", [P]),
            "top1.npy": ("int32", [P]), "kl_f32.npy": ("float64", [P])}
    if sorted(doc["files"]) != sorted(want):
        raise BadInput(f"{path}: 'files' lists {sorted(doc['files'])}, expected {sorted(want)}")
    arrays, problems, broken = {}, [], []
    for rel, (dtype, shape) in want.items():
        p = safe_join(root, rel)
        try:
            with open(p, "rb") as f:
                sha = hashlib.sha256(f.read()).hexdigest()
        except OSError as e:
            raise BadInput(f"{p}: cannot read: {e.strerror}")
        if sha != doc["files"][rel]:
            problems.append(f"{p}: sha256 {sha} is not the {doc['files'][rel]} corpus.json records")
        arrays[rel] = x = load_npy(root, rel)
        if str(x.dtype) != dtype or list(x.shape) != shape:
            broken.append(f"{p}: {x.dtype}{list(x.shape)}, corpus.json implies {dtype}{shape}")
    return doc, arrays, problems, broken


def diff_top1(a, b):
    """top1 may differ between float32 runs only where the float64 top two
    lie within float32's error (of either set, twice over) of each other."""
    ta, tb = a["top1.npy"], b["top1.npy"]
    lp64, ids = b["logprobs_f64.npy"], b["ids.npy"]
    err = 2 * max(max_error(x["logprobs.npy"], x["logprobs_f64.npy"]) for x in (a, b))
    for i in np.flatnonzero(ta != tb):
        near = ids[i][lp64[i, 0] - lp64[i] <= err]
        if ta[i] not in near or tb[i] not in near:
            return (f"top1.npy: position {int(i)}: {int(ta[i])} vs {int(tb[i])}, where only {near.tolist()} "
                    f"lie within float32's error {err:.3e} of the float64 top log-probability")
    return None


def compare_corpus(a_root, b_root):
    """compare() for corpus sets: (mode, lines describing it, arrays compared, differences)."""
    (ma, a, diffs, broken), (mb, b, pb, bb) = load_corpus(a_root), load_corpus(b_root)
    diffs += pb
    broken += bb + [d for d in (shape_problem(rel, a[rel], b[rel]) for rel in a) if d]
    exact, about = judge_arithmetic(recorded_arithmetic(ma), recorded_arithmetic(mb))
    # In budget mode the arrays differ in their last bits, and so their sha256s.
    diff_json(ma, mb, [], diffs, IGNORED if exact else IGNORED | {("files",)})
    mode = "exact" if exact else "budget"
    if broken:
        return mode, about, len(a), diffs + broken  # the values cannot be compared
    if exact:
        return mode, about, len(a), diffs + [d for d in (diff_exact(rel, a[rel], b[rel]) for rel in a) if d]
    for rel in CORPUS_INTS[:2]:
        diffs.append(diff_exact(rel, a[rel], b[rel]))
    for rel, rel64 in CORPUS_TWINS.items():
        diffs.append(diff_twin(rel64, a[rel64], b[rel64]))
        diffs.append(diff_budget(rel, a[rel], a[rel64], b[rel], b[rel64]))
    diffs.append(diff_top1(a, b))
    ka, kb = (math.sqrt(float(np.mean(x["kl_f32.npy"]))) for x in (a, b))
    if not (ka > 0 and kb > 0 and max(ka / kb, kb / ka) <= BUDGET_RATIO):
        diffs.append(f"kl_f32.npy: root mean divergence {ka:.3e} in A, {kb:.3e} in B: more than "
                     f"{BUDGET_RATIO:g}x apart")
    return "budget", about, len(a), [d for d in diffs if d]


def main(argv):
    if len(argv) != 2:
        print("usage: compare_references.py COMMITTED_SET REGENERATED_SET", file=sys.stderr)
        return 2
    try:
        mode, about, n, diffs = compare(*argv)
    except BadInput as e:
        print(f"compare_references: error: {e}", file=sys.stderr)
        return 2
    for line in about:
        print(line)
    for d in diffs:
        print("DIFFERENCE: " + d)
    noun = "arrays" if os.path.exists(os.path.join(argv[0], "corpus.json")) else "tensors"
    print(f"{n} {noun} compared ({mode}), {len(diffs)} differences")
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
