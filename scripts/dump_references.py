#!/usr/bin/env python3
"""Write a llorch-check reference set (references/FORMAT.md) from PyTorch.

The GPT-2 forward is written out op by op so that every intermediate tensor
can be captured, and mirrors Hugging Face `GPT2LMHeadModel` in eval mode
(SPEC.md section 1) down to the op choice where that changes rounding:
Conv1D is `torch.addmm(b, x, W)`, the attention scale is a division by
`torch.full([], sqrt(D))`, masked scores are `finfo(dtype).min`.
The same forward runs in float32 (the reference) and float64 (the twin).

Needs only python3, torch and numpy. Exit 0 on success, 2 on bad input.
"""

import argparse
import hashlib
import json
import math
import mmap
import os
import platform
import re
import shutil
import sys
import tempfile

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpt2_tokenizer import GPT2Tokenizer  # noqa: E402

FORMAT_VERSION = 1
EOT = 50256

# Checkpoint 11. Semantics of transformers 4.40-4.46 (RepetitionPenaltyLogitsProcessor,
# TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper, MinPLogitsWarper,
# applied in that order, min_tokens_to_keep=1, filter value -inf).
SAMPLING = [
    {"name": "temperature", "temperature": 0.7, "top_k": 0, "top_p": 1.0, "min_p": 0.0, "repetition_penalty": 1.0},
    {"name": "top_k", "temperature": 1.0, "top_k": 50, "top_p": 1.0, "min_p": 0.0, "repetition_penalty": 1.0},
    {"name": "top_p", "temperature": 0.9, "top_k": 0, "top_p": 0.9, "min_p": 0.0, "repetition_penalty": 1.0},
    {"name": "min_p", "temperature": 1.0, "top_k": 0, "top_p": 1.0, "min_p": 0.05, "repetition_penalty": 1.0},
    {"name": "combined", "temperature": 0.8, "top_k": 40, "top_p": 0.92, "min_p": 0.02, "repetition_penalty": 1.3},
]


class BadInput(Exception):
    """Bad user input (file, field or value); the message names it. Exit code 2."""


# ---------------------------------------------------------------- safetensors

ST_DTYPES = {"F32": 4, "F16": 2, "BF16": 2}


def st_to_float32(dtype, raw):
    """Stored values -> float32, exactly (every F16/BF16 value is a float32)."""
    if dtype == "F32":
        return np.frombuffer(raw, dtype="<f4").copy()
    if dtype == "F16":
        return np.frombuffer(raw, dtype="<f2").astype(np.float32)
    bits = np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16
    return bits.view(np.float32)


def float32_to_bf16_bits(x):
    """Round-to-nearest-even float32 -> bfloat16 bit pattern (uint16)."""
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype("<u2")


def read_safetensors(path, wanted=None):
    """Return ({name: float32 array}, {name: dtype}, sha256 hex, [all tensor names]).

    Every header entry is checked against the file size; only tensors for
    which wanted(name) is true are decoded (and must have a supported dtype).
    """
    try:
        f = open(path, "rb")
    except OSError as e:
        raise BadInput(f"{path}: cannot open: {e.strerror}")
    with f:
        size = os.fstat(f.fileno()).st_size
        if size < 8:
            raise BadInput(f"{path}: truncated: {size} bytes, too short for the 8-byte header length")
        mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    with mm:
        n = int.from_bytes(mm[:8], "little")
        if n > size - 8:
            raise BadInput(f"{path}: header length {n} exceeds the file size ({size} bytes): truncated or not safetensors")
        try:
            header = json.loads(bytes(mm[8:8 + n]).decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            raise BadInput(f"{path}: corrupt header: {e}")
        if not isinstance(header, dict):
            raise BadInput(f"{path}: corrupt header: not a JSON object")
        data_len = size - 8 - n
        out, dtypes = {}, {}
        for name, info in header.items():
            if name == "__metadata__":
                continue
            try:
                dtype, shape, (b, e) = info["dtype"], info["shape"], info["data_offsets"]
                ok = all(isinstance(v, int) and v >= 0 for v in list(shape) + [b, e]) and b <= e
            except (TypeError, KeyError, ValueError):
                ok = False
            if not ok:
                raise BadInput(f"{path}: corrupt header entry for tensor {name!r}: {info!r}")
            if e > data_len:
                raise BadInput(f"{path}: truncated: tensor {name!r} data ends at byte {e} "
                               f"but the data section has only {data_len} bytes")
            use = wanted is None or wanted(name)
            if not use:
                continue
            if dtype not in ST_DTYPES:
                raise BadInput(f"{path}: tensor {name!r} has unsupported dtype {dtype} "
                               f"(supported: {', '.join(ST_DTYPES)})")
            need = math.prod(shape) * ST_DTYPES[dtype]
            if e - b != need:
                raise BadInput(f"{path}: header lies about tensor {name!r}: {dtype}{shape} needs {need} "
                               f"bytes but data_offsets [{b}, {e}] span {e - b}")
            out[name] = st_to_float32(dtype, mm[8 + n + b:8 + n + e]).reshape(shape)
            dtypes[name] = dtype
        sha = hashlib.sha256(mm).hexdigest()
    return out, dtypes, sha, [k for k in header if k != "__metadata__"]


def write_safetensors(path, tensors, metadata=None):
    """tensors: {name: (dtype tag, array already in that storage type)}.

    Deterministic: sorted keys, data in sorted key order, header padded with
    spaces to a multiple of 8 (as the Rust safetensors library does).
    """
    header, blobs, off = {}, [], 0
    for name in sorted(tensors):
        tag, arr = tensors[name]
        raw = np.ascontiguousarray(arr).tobytes()
        header[name] = {"dtype": tag, "shape": list(arr.shape), "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    if metadata is not None:
        header["__metadata__"] = metadata
    h = json.dumps(header, sort_keys=True, separators=(",", ":")).encode("utf-8")
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(len(h).to_bytes(8, "little"))
        f.write(h)
        for raw in blobs:
            f.write(raw)


# ---------------------------------------------------------------- model

# GPT2Config defaults for keys a hub config.json may omit.
CONFIG_DEFAULTS = {
    "vocab_size": 50257, "n_positions": 1024, "n_embd": 768, "n_layer": 12, "n_head": 12,
    "n_inner": None, "activation_function": "gelu_new", "layer_norm_epsilon": 1e-5,
    "scale_attn_weights": True, "scale_attn_by_inverse_layer_idx": False,
    "reorder_and_upcast_attn": False, "add_cross_attention": False, "eos_token_id": EOT,
}


def load_config(path):
    try:
        with open(path, encoding="utf-8") as f:
            raw = json.load(f)
    except OSError as e:
        raise BadInput(f"{path}: cannot read: {e.strerror}")
    except json.JSONDecodeError as e:
        raise BadInput(f"{path}: not valid JSON: {e}")
    if not isinstance(raw, dict):
        raise BadInput(f"{path}: not a JSON object")
    cfg = dict(CONFIG_DEFAULTS, **raw)

    def bad(field, why):
        raise BadInput(f"{path}: field {field!r} = {cfg.get(field)!r}: {why}")

    if cfg.get("model_type") != "gpt2":
        bad("model_type", "only GPT-2 (\"gpt2\") is supported")
    if cfg["activation_function"] != "gelu_new":
        bad("activation_function", "only gelu_new (tanh GELU) is implemented")
    for field, want in (("scale_attn_weights", True), ("scale_attn_by_inverse_layer_idx", False),
                        ("reorder_and_upcast_attn", False), ("add_cross_attention", False)):
        if cfg[field] is not want:
            bad(field, f"only {str(want).lower()} is implemented")
    for field in ("vocab_size", "n_positions", "n_embd", "n_layer", "n_head"):
        if not isinstance(cfg[field], int) or isinstance(cfg[field], bool) or cfg[field] <= 0:
            bad(field, "must be a positive integer")
    if cfg["n_inner"] is not None and (not isinstance(cfg["n_inner"], int) or cfg["n_inner"] <= 0):
        bad("n_inner", "must be null or a positive integer")
    if cfg["n_embd"] % cfg["n_head"]:
        bad("n_head", f"does not divide n_embd {cfg['n_embd']}")
    eps = cfg["layer_norm_epsilon"]
    if not isinstance(eps, (int, float)) or isinstance(eps, bool) or not eps > 0:
        bad("layer_norm_epsilon", "must be a positive number")
    return raw, cfg


def param_shapes(cfg):
    C, V, P = cfg["n_embd"], cfg["vocab_size"], cfg["n_positions"]
    I = cfg["n_inner"] or 4 * C
    shapes = {"wte.weight": [V, C], "wpe.weight": [P, C], "ln_f.weight": [C], "ln_f.bias": [C]}
    for i in range(cfg["n_layer"]):
        p = f"h.{i}."
        shapes.update({
            p + "ln_1.weight": [C], p + "ln_1.bias": [C],
            p + "attn.c_attn.weight": [C, 3 * C], p + "attn.c_attn.bias": [3 * C],
            p + "attn.c_proj.weight": [C, C], p + "attn.c_proj.bias": [C],
            p + "ln_2.weight": [C], p + "ln_2.bias": [C],
            p + "mlp.c_fc.weight": [C, I], p + "mlp.c_fc.bias": [I],
            p + "mlp.c_proj.weight": [I, C], p + "mlp.c_proj.bias": [C],
        })
    return shapes


_BUFFER = re.compile(r"^h\.\d+\.attn\.(bias|masked_bias)$")


def load_model(model_dir):
    """Returns dict with config (verbatim and with defaults), float32 weights, sha256, dtype."""
    if not os.path.isdir(model_dir):
        raise BadInput(f"{model_dir}: not a directory")
    raw_cfg, cfg = load_config(os.path.join(model_dir, "config.json"))
    path = os.path.join(model_dir, "model.safetensors")
    shapes = param_shapes(cfg)

    def strip(name):
        return name[len("transformer."):] if name.startswith("transformer.") else name

    def wanted(name):
        n = strip(name)
        return n in shapes or n == "lm_head.weight"

    tensors, dtypes, sha, names = read_safetensors(path, wanted)
    for name in names:
        if not wanted(name) and not _BUFFER.match(strip(name)):
            raise BadInput(f"{path}: unexpected tensor {name!r} (not a GPT-2 parameter)")
    weights = {}
    for name, arr in tensors.items():
        n = strip(name)
        if n in weights:
            raise BadInput(f"{path}: tensor {n!r} appears twice (with and without 'transformer.')")
        weights[n] = arr
    for n, shape in shapes.items():
        if n not in weights:
            raise BadInput(f"{path}: missing tensor {n!r}")
        if list(weights[n].shape) != shape:
            raise BadInput(f"{path}: tensor {n!r} has shape {list(weights[n].shape)}, config.json implies {shape}")
    lm_head = weights.pop("lm_head.weight", None)
    if lm_head is not None and not np.array_equal(lm_head, weights["wte.weight"]):
        raise BadInput(f"{path}: lm_head.weight differs from wte.weight; only a tied LM head is supported")
    used = sorted({d for k, d in dtypes.items() if strip(k) in shapes})
    return {"config_raw": raw_cfg, "config": cfg, "weights": weights, "sha256": sha,
            "dtype": "+".join(used), "weights_file": "model.safetensors"}


def gelu_new(x):
    # Same expression as transformers' NewGELUActivation.
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


class GPT2:
    """GPT-2 forward with explicit ops; probe(checkpoint, layer, name, tensor, rows) sees every intermediate."""

    def __init__(self, model, dtype):
        self.cfg = model["config"]
        self.dtype = dtype
        self.p = {k: torch.from_numpy(v).to(dtype) for k, v in model["weights"].items()}
        self.C, self.H = self.cfg["n_embd"], self.cfg["n_head"]
        self.D = self.C // self.H
        self.eps = float(self.cfg["layer_norm_epsilon"])

    def _conv1d(self, x, prefix):
        # HF Conv1D: addmm(bias, x, W) with W stored [in, out]; no transpose.
        w, b = self.p[prefix + ".weight"], self.p[prefix + ".bias"]
        return torch.addmm(b, x.reshape(-1, x.shape[-1]), w).view(*x.shape[:-1], w.shape[1])

    def _ln(self, x, prefix):
        return F.layer_norm(x, (self.C,), self.p[prefix + ".weight"], self.p[prefix + ".bias"], self.eps)

    def _heads(self, x):
        T = x.shape[1]
        return x.view(1, T, self.H, self.D).permute(0, 2, 1, 3)

    def forward(self, tokens, past=None, probe=None, rows=None):
        """tokens: ids; past: per-layer (k, v) [1,H,Tp,D]; rows: positions whose logits to
        compute (None: all). Returns (logits [R,V], present cache)."""
        probe = probe or (lambda *a, **k: None)
        T = len(tokens)
        t0 = 0 if past is None else past[0][0].shape[2]
        ids = torch.tensor(tokens, dtype=torch.long)
        pos = torch.arange(t0, t0 + T, dtype=torch.long)
        x = (F.embedding(ids, self.p["wte.weight"]) + F.embedding(pos, self.p["wpe.weight"])).unsqueeze(0)
        probe(7, None, "embeddings", x[0])
        # Query t (absolute t0+t) sees keys 0..t0+t, like HF's bias[:, :, k-q:k, :k].
        mask = torch.ones(T, t0 + T, dtype=torch.bool).tril(diagonal=t0)
        min_val = torch.full([], torch.finfo(self.dtype).min, dtype=self.dtype)
        scale = torch.full([], self.D ** 0.5, dtype=self.dtype)
        present = []
        for i in range(self.cfg["n_layer"]):
            h = f"h.{i}."
            a = self._ln(x, h + "ln_1")
            probe(1, i, "ln_1", a[0])
            q, k, v = self._conv1d(a, h + "attn.c_attn").split(self.C, dim=2)
            q, k, v = self._heads(q), self._heads(k), self._heads(v)
            probe(2, i, "q", q[0])
            probe(2, i, "k", k[0])
            probe(2, i, "v", v[0])
            if past is not None:
                k = torch.cat((past[i][0], k), dim=-2)
                v = torch.cat((past[i][1], v), dim=-2)
            present.append((k, v))
            s = torch.matmul(q, k.transpose(-1, -2)) / scale
            s = torch.where(mask, s, min_val)
            probe(4, i, "scores", s[0])
            pr = F.softmax(s, dim=-1)
            probe(4, i, "probs", pr[0])
            o = torch.matmul(pr, v).permute(0, 2, 1, 3).contiguous().view(1, T, self.C)
            o = self._conv1d(o, h + "attn.c_proj")
            probe(5, i, "attn_out", o[0])
            x = o + x
            m = self._ln(x, h + "ln_2")
            probe(1, i, "ln_2", m[0])
            g = gelu_new(self._conv1d(m, h + "mlp.c_fc"))
            probe(6, i, "gelu", g[0])
            y = self._conv1d(g, h + "mlp.c_proj")
            probe(6, i, "mlp_out", y[0])
            x = x + y
            probe(7, i, "block_out", x[0])
        x = self._ln(x, "ln_f")[0]
        probe(8, None, "ln_f", x)
        sel = x if rows is None else x[list(rows)]
        logits = F.linear(sel, self.p["wte.weight"])  # tied LM head, no bias
        probe(8, None, "logits", logits, rows=None if rows is None or len(rows) == T else list(rows))
        return logits, present


# ---------------------------------------------------------------- checkpoints 10-12

def process_logits(logits, history, sc):
    """HF logits processors on a [V] vector; returns the probabilities [V]."""
    s = logits.unsqueeze(0)
    if sc["repetition_penalty"] != 1.0 and history:
        ids = torch.tensor([history], dtype=torch.long)
        g = torch.gather(s, 1, ids)
        g = torch.where(g < 0, g * sc["repetition_penalty"], g / sc["repetition_penalty"])
        s = s.scatter(1, ids, g)
    if sc["temperature"] != 1.0:
        s = s / sc["temperature"]
    if sc["top_k"] > 0:
        k = min(sc["top_k"], s.size(-1))
        s = s.masked_fill(s < torch.topk(s, k)[0][..., -1, None], -float("inf"))
    if sc["top_p"] < 1.0:
        # HF calls torch.sort without stable=, whose tie order is unspecified (the
        # CPU sort of torch 1.13 is not stable for long rows). A stable sort makes
        # the rule explicit: among equal logits the lower token id is cut first.
        sorted_logits, idx = torch.sort(s, descending=False, stable=True)
        cum = sorted_logits.softmax(dim=-1).cumsum(dim=-1)
        rm = cum <= (1 - sc["top_p"])
        rm[..., -1:] = 0
        s = s.masked_fill(rm.scatter(1, idx, rm), -float("inf"))
    if sc["min_p"] > 0:
        probs = torch.softmax(s, dim=-1)
        rm = probs < sc["min_p"] * probs.max(dim=-1, keepdim=True)[0]
        idx = torch.argsort(s, descending=True, dim=-1)
        srm = torch.gather(rm, -1, idx)
        srm[..., :1] = False
        s = s.masked_fill(srm.scatter(1, idx, srm), -float("inf"))
    # The cuts above use HF's float32 arithmetic, but the final normalisation
    # is done in float64: torch's float32 softmax sums 50257 terms in float32
    # and is off by ~1e-5 relative, ten times checkpoint 11's atol of 1e-6.
    return torch.softmax(s.double(), dim=-1).to(s.dtype)[0]


def argmax_lowest(v):
    a = v.detach().numpy()
    return int(np.flatnonzero(a == a.max())[0])


def greedy_generate(model, tokens, n, eos):
    """Greedy continuation through the KV cache; stops after eos or when the context is full."""
    n_ctx = model.cfg["n_positions"]
    out = []
    logits, cache = model.forward(tokens, rows=[len(tokens) - 1])
    while True:
        if len(out) == n:
            return out, "max_tokens"
        if len(tokens) + len(out) >= n_ctx:
            return out, "context_length"
        t = argmax_lowest(logits[-1])
        out.append(t)
        if t == eos:
            return out, "eos"
        if len(out) < n:
            logits, cache = model.forward([t], past=cache, rows=[0])


def loglikelihood_tokens(tok, context, continuation):
    """lm-evaluation-harness: trailing whitespace of the context moves to the
    continuation; continuation tokens = encode(whole)[len(encode(context)):];
    an empty context conditions on <|endoftext|>."""
    if context == "":
        return [EOT], tok.encode(continuation)
    n = len(context) - len(context.rstrip())
    if n:
        continuation = context[-n:] + continuation
        context = context[:-n]
    whole = tok.encode(context + continuation)
    ctx = tok.encode(context)
    return ctx, whole[len(ctx):]


def loglikelihood(model, ctx, cont):
    n_ctx = model.cfg["n_positions"]
    inp = (ctx + cont)[-(n_ctx + 1):][:-1]  # lm-eval truncation
    rows = list(range(len(inp) - len(cont), len(inp)))
    logits, _ = model.forward(inp, rows=rows)
    lp = F.log_softmax(logits, dim=-1)
    target = torch.tensor(cont, dtype=torch.long)
    greedy = bool((lp.argmax(dim=-1) == target).all())
    return float(torch.gather(lp, 1, target[:, None]).sum()), greedy


# ---------------------------------------------------------------- writing

def logits_rows(T, keep):
    """First, evenly spaced and always the last position; None means all rows."""
    if keep <= 0 or T <= keep:
        return None
    if keep == 1:
        return [T - 1]
    return sorted({round(i * (T - 1) / (keep - 1)) for i in range(keep)})


def save_npy(path, t, dtype):
    arr = np.ascontiguousarray(t.detach().numpy(), dtype=dtype)
    with open(path, "wb") as f:
        np.lib.format.write_array(f, arr, version=(1, 0), allow_pickle=False)


class Recorder:
    """Writes tensors of one case as they are produced; the float64 run must
    produce the same sequence as the float32 run and only writes twins."""

    def __init__(self, root, case, entries, twin):
        self.root, self.case, self.entries, self.twin = root, case, entries, twin
        # The twin run replays this case's entries, which the float32 run appended last.
        self.i = next(i for i, e in enumerate(entries) if e["case"] == case) if twin else None
        os.makedirs(os.path.join(root, case), exist_ok=True)

    def __call__(self, checkpoint, layer, name, t, rows=None):
        stem = f"{self.case}/{name}" if layer is None else f"{self.case}/l{layer:02d}_{name}"
        if not self.twin:
            self.entries.append({"case": self.case, "checkpoint": checkpoint, "layer": layer, "name": name,
                                 "file": stem + ".npy", "file_f64": stem + ".f64.npy", "dtype": "float32",
                                 "shape": list(t.shape), "rows": rows})
            save_npy(os.path.join(self.root, stem + ".npy"), t, "<f4")
        else:
            e = self.entries[self.i]
            assert (e["case"], e["checkpoint"], e["layer"], e["name"], e["shape"]) == \
                (self.case, checkpoint, layer, name, list(t.shape)), (e, name)
            self.i += 1
            save_npy(os.path.join(self.root, stem + ".f64.npy"), t, "<f8")


def dump_case(model, case, root, entries, twin, logits_keep):
    """All tensors of one case for one precision. Returns the last logits."""
    toks = case["tokens"]
    rec = Recorder(root, case["id"], entries, twin)
    with torch.no_grad():
        logits, _ = model.forward(toks, probe=rec, rows=logits_rows(len(toks), logits_keep))
        last = logits[-1]
        rec(9, None, "last_logits", last)
        rec(9, None, "last_logprobs", F.log_softmax(last, dim=-1))
        if len(toks) >= 2:
            _, cache = model.forward(toks[:-1], rows=[])
            step, cache = model.forward(toks[-1:], past=cache, rows=[0])
            for i, (k, v) in enumerate(cache):
                rec(3, i, "k_cache", k[0])
                rec(3, i, "v_cache", v[0])
            rec(3, None, "step_logits", step[0])
        for sc in SAMPLING:
            rec(11, None, "sampling_" + sc["name"], process_logits(last, toks, sc))
    return last


# ---------------------------------------------------------------- inputs

_CASE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


def load_cases(args):
    ll = []
    if args.cases:
        try:
            with open(args.cases, encoding="utf-8") as f:
                doc = json.load(f)
        except OSError as e:
            raise BadInput(f"{args.cases}: cannot read: {e.strerror}")
        except json.JSONDecodeError as e:
            raise BadInput(f"{args.cases}: not valid JSON: {e}")
        if isinstance(doc, dict):
            cases, ll = doc.get("cases"), doc.get("loglikelihood", [])
        else:
            cases = doc
        if not isinstance(cases, list) or not isinstance(ll, list):
            raise BadInput(f"{args.cases}: expected a list of cases or {{\"cases\": [...], \"loglikelihood\": [...]}}")
        src = args.cases
    elif args.prompt is not None:
        cases, src = [{"id": "prompt", "prompt": args.prompt}], "--prompt"
    elif args.tokens is not None:
        try:
            toks = [int(x) for x in args.tokens.split(",") if x.strip()]
        except ValueError:
            raise BadInput(f"--tokens {args.tokens!r}: expected comma-separated integers")
        cases, src = [{"id": "tokens", "tokens": toks}], "--tokens"
    else:
        raise BadInput("give --cases FILE, --prompt TEXT or --tokens IDS")
    seen = set()
    for c in cases:
        cid = c.get("id") if isinstance(c, dict) else None
        if not isinstance(cid, str) or not _CASE_ID.match(cid) or cid == "manifest.json":
            raise BadInput(f"{src}: case {c!r}: 'id' must match {_CASE_ID.pattern}")
        if cid in seen:
            raise BadInput(f"{src}: duplicate case id {cid!r}")
        seen.add(cid)
        if ("prompt" in c) == ("tokens" in c):
            raise BadInput(f"{src}: case {cid!r}: give exactly one of 'prompt' and 'tokens'")
        if "prompt" in c and not isinstance(c["prompt"], str):
            raise BadInput(f"{src}: case {cid!r}: 'prompt' must be a string")
        if "tokens" in c and not (isinstance(c["tokens"], list) and all(
                isinstance(t, int) and not isinstance(t, bool) for t in c["tokens"])):
            raise BadInput(f"{src}: case {cid!r}: 'tokens' must be a list of integers")
    for p in ll:
        if not (isinstance(p, dict) and isinstance(p.get("context"), str) and isinstance(p.get("continuation"), str)):
            raise BadInput(f"{src}: loglikelihood entry {p!r}: needs string 'context' and 'continuation'")
    return cases, ll, src


def resolve(cases, ll, src, tok, cfg, model_dir):
    V, n_ctx = cfg["vocab_size"], cfg["n_positions"]
    needs_tok = [c["id"] for c in cases if "prompt" in c] + (["loglikelihood"] if ll else [])
    if needs_tok and tok is None:
        raise BadInput(f"{model_dir}: no vocab.json + merges.txt, needed to tokenize {', '.join(needs_tok)} from {src}")
    out = []
    for c in cases:
        toks = tok.encode(c["prompt"]) if "prompt" in c else c["tokens"]
        if not toks:
            raise BadInput(f"{src}: case {c['id']!r} has no tokens")
        bad = [t for t in toks if not 0 <= t < V]
        if bad:
            raise BadInput(f"{src}: case {c['id']!r}: token id {bad[0]} outside the vocabulary [0, {V})")
        if len(toks) > n_ctx:
            raise BadInput(f"{src}: case {c['id']!r} has {len(toks)} tokens, more than the context n_positions={n_ctx}")
        out.append({"id": c["id"], "prompt": c.get("prompt"), "tokens": list(toks)})
    pairs = []
    for p in ll:
        ctx, cont = loglikelihood_tokens(tok, p["context"], p["continuation"])
        if not cont:
            raise BadInput(f"{src}: loglikelihood {p!r}: continuation has no tokens")
        pairs.append({"context": p["context"], "continuation": p["continuation"],
                      "context_tokens": ctx, "continuation_tokens": cont})
    return out, pairs


# ---------------------------------------------------------------- main

def build(args, tmp):
    model = load_model(args.model)
    cfg = model["config"]
    cases, ll, src = load_cases(args)
    tok = GPT2Tokenizer.from_dir(args.model)
    cases, pairs = resolve(cases, ll, src, tok, cfg, args.model)
    eos = cfg["eos_token_id"] if isinstance(cfg["eos_token_id"], int) else EOT

    m32 = GPT2(model, torch.float32)
    m64 = GPT2(model, torch.float64)
    del model["weights"]
    entries, greedy, gens = [], [], []
    for c in cases:
        last = dump_case(m32, c, tmp, entries, False, args.logits_rows)
        dump_case(m64, c, tmp, entries, True, args.logits_rows)
        greedy.append({"case": c["id"], "token": argmax_lowest(last)})
        with torch.no_grad():
            out, why = greedy_generate(m32, c["tokens"], args.n_generate, eos)
        text = None if tok is None else tok.decode([t for t in out if t != eos])
        gens.append({"case": c["id"], "tokens": out, "text": text, "stop_reason": why})
    with torch.no_grad():
        for p in pairs:
            ll32, is_greedy = loglikelihood(m32, p["context_tokens"], p["continuation_tokens"])
            ll64, _ = loglikelihood(m64, p["context_tokens"], p["continuation_tokens"])
            p.update(ll=ll32, ll_f64=ll64, is_greedy=is_greedy)
    manifest = {
        "format_version": FORMAT_VERSION,
        "model": {"path": args.model, "weights_file": model["weights_file"], "weights_sha256": model["sha256"],
                  "weights_dtype": model["dtype"], "config": model["config_raw"]},
        "generator": {"script": "scripts/dump_references.py", "python": platform.python_version(),
                      "torch": torch.__version__, "numpy": np.__version__, "float64_twins": True},
        "cases": cases,
        "tensors": entries,
        "sampling": SAMPLING,
        "greedy": greedy,
        "generation": {"n": args.n_generate, "results": gens},
        "loglikelihood": pairs,
    }
    with open(os.path.join(tmp, "manifest.json"), "w", encoding="utf-8") as f:
        f.write(to_json(manifest) + "\n")
    return len(entries)


def _scalar(v):
    return not isinstance(v, (dict, list))


def to_json(v, level=0):
    """Indented JSON, but lists of scalars and short flat objects stay on one
    line (a manifest with one token per line is unreadable). Floats use repr."""
    flat = json.dumps(v, ensure_ascii=True, allow_nan=False, separators=(", ", ": "))
    if isinstance(v, list) and all(map(_scalar, v)):
        return flat
    if isinstance(v, dict) and len(flat) <= 300 and all(
            _scalar(x) or (isinstance(x, list) and all(map(_scalar, x))) for x in v.values()):
        return flat
    if _scalar(v) or not v:
        return flat
    pad, end = " " * (level + 1), " " * level
    if isinstance(v, dict):
        items = [f"{pad}{json.dumps(k, ensure_ascii=True)}: {to_json(x, level + 1)}" for k, x in v.items()]
        return "{\n" + ",\n".join(items) + "\n" + end + "}"
    return "[\n" + ",\n".join(pad + to_json(x, level + 1) for x in v) + "\n" + end + "]"


def tree(root):
    files = {}
    for d, _, names in os.walk(root):
        for n in names:
            p = os.path.join(d, n)
            files[os.path.relpath(p, root)] = p
    return files


def same_tree(a, b):
    fa, fb = tree(a), tree(b)
    if fa.keys() != fb.keys():
        return False
    for rel in fa:
        with open(fa[rel], "rb") as x, open(fb[rel], "rb") as y:
            if x.read() != y.read():
                return False
    return True


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", required=True, help="HF-layout GPT-2 directory (config.json, model.safetensors)")
    ap.add_argument("--out", required=True, help="reference set directory to write")
    src = ap.add_mutually_exclusive_group()
    src.add_argument("--cases", help="JSON cases file: [{id, prompt|tokens}] or "
                     "{\"cases\": [...], \"loglikelihood\": [{context, continuation}]}")
    src.add_argument("--prompt", help="a single prompt (case id 'prompt')")
    src.add_argument("--tokens", help="a single case as comma-separated token ids (case id 'tokens')")
    ap.add_argument("--n-generate", type=int, default=16, help="greedy tokens for checkpoint 12 (default 16)")
    ap.add_argument("--logits-rows", type=int, default=4,
                    help="keep this many rows of the full logits (first, evenly spaced, last); 0 keeps all")
    ap.add_argument("--force", action="store_true", help="replace an existing, different reference set")
    args = ap.parse_args(argv)
    if args.n_generate < 0:
        ap.error("--n-generate must be >= 0")

    torch.set_num_threads(1)  # one thread: reductions in a fixed order, byte-identical re-runs
    torch.use_deterministic_algorithms(True)
    out = os.path.abspath(args.out)
    if os.path.exists(out) and not os.path.isdir(out):
        print(f"dump_references: error: {args.out} exists and is not a directory", file=sys.stderr)
        return 2
    parent = os.path.dirname(out)
    os.makedirs(parent, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="." + os.path.basename(out) + ".tmp-", dir=parent)
    try:
        n = build(args, tmp)
        os.chmod(tmp, 0o755)  # mkdtemp makes it 0700
        if os.path.isdir(out):
            if same_tree(out, tmp):
                print(f"{args.out}: up to date ({n} tensors)")
                return 0
            if not args.force:
                print(f"dump_references: error: {args.out} exists and differs from what would be written; "
                      f"use --force to replace it", file=sys.stderr)
                return 2
            old = tempfile.mkdtemp(prefix="." + os.path.basename(out) + ".old-", dir=parent)
            os.rename(out, os.path.join(old, "set"))
            os.rename(tmp, out)
            shutil.rmtree(old)
        else:
            os.rename(tmp, out)
        print(f"{args.out}: wrote {n} tensors (+ float64 twins)")
        return 0
    except BadInput as e:
        print(f"dump_references: error: {e}", file=sys.stderr)
        return 2
    finally:
        if os.path.isdir(tmp):
            shutil.rmtree(tmp)


if __name__ == "__main__":
    sys.exit(main())
