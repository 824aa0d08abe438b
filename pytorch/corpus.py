"""Corpus sets (references/FORMAT.md, "Corpus sets"): PyTorch's next-token
distributions over a text corpus, teacher-forced and chunked as
llama-perplexity --kl-divergence chunks it, for `llorch-check probe --corpus`.

The text is tokenized whole (GPT-2: no BOS) and cut into consecutive chunks
of n_ctx tokens, a final partial chunk dropped. Each chunk is a fresh causal
forward from its start; positions j = n_ctx/2 .. n_ctx-2 of it are scored,
their logits predicting t[j+1]. dump_references.py --corpus calls this.
"""

import hashlib
import os

import numpy as np
import torch

from processors import log_probs
from safetensors_io import BadInput

# name -> dtype of every array a corpus set holds, in the order written.
FILES = {
    "ids": "<i4", "logprobs": "<f4", "logprobs_f64": "<f8",
    "targets": "<i4", "target_logprobs": "<f4", "target_logprobs_f64": "<f8",
    "top1": "<i4", "kl_f32": "<f8",
}


def read_text(path):
    """The corpus as text, and its {"file", "sha256", "bytes"} record."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise BadInput(f"{path}: cannot read: {e.strerror}")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise BadInput(f"{path}: not UTF-8 text: byte {e.start}: {e.reason}")
    return text, {"file": os.path.basename(path), "sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}


def scored(n_ctx):
    """Positions of a chunk whose logits are scored: n_ctx/2 .. n_ctx-2."""
    return list(range(n_ctx // 2, n_ctx - 1))


def chunk(tokens, n_ctx, src):
    """Consecutive n_ctx-token chunks; the final partial one is dropped."""
    n = len(tokens) // n_ctx
    if n == 0 or not scored(n_ctx):
        raise BadInput(f"{src}: {len(tokens)} tokens, fewer than one chunk of n_ctx={n_ctx} "
                       f"(the model's context) with a position to score")
    return [list(tokens[i * n_ctx:(i + 1) * n_ctx]) for i in range(n)]


def top_ids(lp64, k):
    """Per row, the k ids of largest float64 log-probability, largest first,
    ties to the lowest id (a stable sort of the negated values)."""
    return np.argsort(-lp64, axis=1, kind="stable")[:, :k]


def kl(lp64, lp32):
    """KL(p64 || p32) per row, in float64, over the whole vocabulary.

    lp32 is the float32 forward's log-probabilities, the float64
    log-softmax of its float32 logits (processors.log_probs): the forward's
    error, not a float32 log-softmax's. Both distributions are taken
    normalized all the same: a sum's rounding would otherwise swamp a
    divergence this small and could make it negative. So,
    with d = lp64 - lp32 (exact in float64: the two are within a factor of
    two of each other) and P = p64 / sum(p64),
        KL = sum P d + log sum P exp(-d) = log1p(sum P expm1(-(d - m))),  m = sum P d,
    which keeps the result's rounding near 1e-16 of the divergence, where
    summing P (lp64 - lp32) directly leaves an error of ~1e-15 absolute."""
    d = lp64 - lp32.astype(np.float64)
    p = np.exp(lp64)
    p = p / np.sum(p, axis=1, keepdims=True)
    m = np.sum(p * d, axis=1, keepdims=True)
    return np.log1p(np.sum(p * np.expm1(m - d), axis=1))


# Logits held at once by score(): chunks go through the model together
# (one pass a group, passes.py) up to this many bytes of float32 and
# float64 logits and log-probabilities.
GROUP_BYTES = 512 << 20


def score(m32, m64, chunks, k):
    """The set's arrays (FILES) over every scored position, chunk by chunk
    (a group of chunks a pass; each chunk its own forward)."""
    out = {name: [] for name in FILES}
    V = m32.cfg["vocab_size"]
    per = max(1, GROUP_BYTES // (max(1, len(scored(len(chunks[0])))) * V * 24))
    for g in range(0, len(chunks), per):
        group = chunks[g:g + per]
        with torch.no_grad():
            r32 = m32.run([dict(tokens=toks, rows=scored(len(toks))) for toks in group])
            r64 = m64.run([dict(tokens=toks, rows=scored(len(toks))) for toks in group])
        for toks, (l32, _), (l64, _) in zip(group, r32, r64):
            _score_chunk(out, toks, l32, l64, k)
        del r32, r64
    return {name: np.ascontiguousarray(np.concatenate(v), dtype=FILES[name]) for name, v in out.items()}


def _score_chunk(out, toks, l32, l64, k):
    rows = scored(len(toks))
    with torch.no_grad():
        lp32 = log_probs(l32).numpy()  # float64 from float32 logits: the forward's error only
        lp64 = log_probs(l64).numpy()
    ids = top_ids(lp64, k)
    tgt = np.array([toks[j + 1] for j in rows], dtype=np.int64)
    at = np.arange(len(rows))
    out["ids"].append(ids)
    out["logprobs"].append(np.take_along_axis(lp32, ids, axis=1))
    out["logprobs_f64"].append(np.take_along_axis(lp64, ids, axis=1))
    out["targets"].append(tgt)
    out["target_logprobs"].append(lp32[at, tgt])
    out["target_logprobs_f64"].append(lp64[at, tgt])
    out["top1"].append(np.argmax(l32.numpy(), axis=1))  # the first of equal maxima: the lowest id
    out["kl_f32"].append(kl(lp64, lp32))
