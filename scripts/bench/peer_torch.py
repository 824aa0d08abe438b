#!/usr/bin/env python3
"""The PyTorch peer of cmd/gobench: the same figures on the same weights.

GPT-2 written as Hugging Face's GPT2LMHeadModel computes it (addmm Conv1D,
KV cache grown with torch.cat, finfo.min causal mask, tanh GELU, tied LM
head) with a batch dimension, under torch.inference_mode. Like the Go side,
prefill computes the logits of the last position only. Thread counts come
from the caller (torch.set_num_threads here, OPENBLAS_NUM_THREADS in the
environment before torch loads); run.sh tries several and keeps the best.

--dtype bf16 holds the weight matrices (wte and the Conv1D weights) as
bfloat16 and runs the matrix products in bfloat16, casting activations on
the way in and the results back to float32: PyTorch's 16-bit-weight mode on
CPU (1.13 has no float16 matmul there), the peer of Go's float16 weights.

Modes print one JSON line:
  load  load time (file read into memory, wrapped as tensors) and peak RSS
        after one decode step
  run   prefill, batch-1 decode and batched decode rates
"""

import argparse
import json
import math
import os
import resource
import time

import numpy as np
import torch
import torch.nn.functional as F


def load(model_dir):
    with open(os.path.join(model_dir, "config.json"), encoding="utf-8") as f:
        cfg = json.load(f)
    path = os.path.join(model_dir, "model.safetensors")
    with open(path, "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(n))
        buf = bytearray(os.path.getsize(path) - 8 - n)
        f.readinto(buf)
    p = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        assert t["dtype"] == "F32", name
        a, b = t["data_offsets"]
        arr = np.frombuffer(buf, dtype="<f4", count=(b - a) // 4, offset=a).reshape(t["shape"])
        p[name.removeprefix("transformer.")] = torch.from_numpy(arr)  # no copy
    return cfg, p


class GPT2:
    def __init__(self, cfg, p, dtype=torch.float32):
        self.cfg, self.p, self.dtype = cfg, p, dtype
        if dtype != torch.float32:
            for name, t in p.items():
                if t.dim() == 2 and name != "wpe.weight":
                    p[name] = t.to(dtype)
        self.L, self.C, self.H = cfg["n_layer"], cfg["n_embd"], cfg["n_head"]
        self.D = self.C // self.H
        self.eps = cfg["layer_norm_epsilon"]

    def conv1d(self, x, name):
        w, b = self.p[name + ".weight"], self.p[name + ".bias"]
        if self.dtype != torch.float32:
            y = torch.addmm(b.to(self.dtype), x.reshape(-1, x.shape[-1]).to(self.dtype), w).float()
            return y.view(*x.shape[:-1], w.shape[1])
        return torch.addmm(b, x.reshape(-1, x.shape[-1]), w).view(*x.shape[:-1], w.shape[1])

    def ln(self, x, name):
        return F.layer_norm(x, (self.C,), self.p[name + ".weight"], self.p[name + ".bias"], self.eps)

    def heads(self, x):
        B, T, _ = x.shape
        return x.view(B, T, self.H, self.D).permute(0, 2, 1, 3)

    def forward(self, ids, past):
        """ids [B,T] long; past: list of (k, v) [B,H,S,D] or None. Returns last logits [B,V], present."""
        B, T = ids.shape
        t0 = 0 if past is None else past[0][0].shape[2]
        pos = torch.arange(t0, t0 + T)
        x = F.embedding(ids, self.p["wte.weight"]).float() + F.embedding(pos, self.p["wpe.weight"])
        mask = None
        if T > 1:
            mask = torch.ones(T, t0 + T, dtype=torch.bool).tril(diagonal=t0)
        mn = torch.finfo(torch.float32).min
        present = []
        for i in range(self.L):
            h = f"h.{i}."
            q, k, v = self.conv1d(self.ln(x, h + "ln_1"), h + "attn.c_attn").split(self.C, dim=2)
            q, k, v = self.heads(q), self.heads(k), self.heads(v)
            if past is not None:
                k = torch.cat((past[i][0], k), dim=-2)
                v = torch.cat((past[i][1], v), dim=-2)
            present.append((k, v))
            s = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.D)
            if mask is not None:
                s = torch.where(mask, s, torch.tensor(mn))
            o = torch.matmul(F.softmax(s, dim=-1), v).permute(0, 2, 1, 3).reshape(B, T, self.C)
            x = x + self.conv1d(o, h + "attn.c_proj")
            g = self.conv1d(self.ln(x, h + "ln_2"), h + "mlp.c_fc")
            g = 0.5 * g * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (g + 0.044715 * torch.pow(g, 3.0))))
            x = x + self.conv1d(g, h + "mlp.c_proj")
        x = self.ln(x[:, -1], "ln_f")
        return F.linear(x.to(self.dtype), self.p["wte.weight"]).float(), present


def toks(n, seed):
    # The same ids as gobench: a fixed arithmetic sequence over the vocabulary.
    return [(seed * 7919 + i * 104729) % 50257 for i in range(n)]


def decode(m, B, prompt, steps):
    """B sequences with prompt-length caches, then steps of [B,1]; returns seconds of the steps."""
    ids = torch.tensor([toks(prompt, 1 + b) for b in range(B)])
    _, past = m.forward(ids, None)
    nxt = torch.tensor([toks(steps, 100 + b) for b in range(B)])
    t = time.perf_counter()
    for s in range(steps):
        logits, past = m.forward(nxt[:, s:s + 1], past)
    return time.perf_counter() - t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--mode", choices=("load", "run"), required=True)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--dtype", choices=("f32", "bf16"), default="f32")
    ap.add_argument("--prefill", type=int, default=128)
    ap.add_argument("--prompt", type=int, default=16)
    ap.add_argument("--steps", type=int, default=64)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--batches", default="4,8")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    with torch.inference_mode():
        t = time.perf_counter()
        cfg, p = load(a.model)
        m = GPT2(cfg, p, torch.bfloat16 if a.dtype == "bf16" else torch.float32)
        load_s = time.perf_counter() - t
        if a.mode == "load":
            decode(m, 1, 4, 1)
            rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
            print(json.dumps({"load_s": load_s, "peak_rss": rss}))
            return
        decode(m, 1, 4, 2)  # warm-up
        ids = torch.tensor([toks(a.prefill, 0)])
        best = math.inf
        for _ in range(a.reps):
            t = time.perf_counter()
            m.forward(ids, None)
            best = min(best, time.perf_counter() - t)
        out = {"impl": f"torch {torch.__version__} {a.dtype} threads={a.threads} OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', '-')}",
               "prefill_tps": a.prefill / best}
        out["decode1_tps"] = a.steps / min(decode(m, 1, a.prompt, a.steps) for _ in range(2))
        for B in [int(b) for b in a.batches.split(",") if b]:
            out[f"decode{B}_tps"] = B * a.steps / decode(m, B, a.prompt, a.steps)
        print(json.dumps(out))


if __name__ == "__main__":
    main()
