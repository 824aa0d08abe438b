"""Forwards in passes: every sequence a pass needs goes through a layer
before the next layer's weights are converted (Forward.run, which every
family's forward is), so that a model of any size is converted a layer at
a time and once a pass, however many sequences the pass holds. Each
sequence's arithmetic stays its own, op for op: layer-major is the order
of the loops, not a batch (concatenating sequences into one matmul would
change OpenBLAS's blocking and so the bits).

run_tasks drives work that needs several passes (a KV-cache step after a
prefill, greedy decoding): each task is a generator that yields the
forwards it needs next and receives their results.
"""

import numpy as np
import torch
import torch.nn.functional as F

from weights import as_weights


# The float64 LM head is applied this many bytes of its rows at a time.
# Chunks of the vocabulary give the whole product's bits under the pinned
# OpenBLAS (Haswell dgemm) as long as no chunk is thin: a chunk of one row
# takes another path (measured: 27 of 288 shapes differ when the last
# chunk is one row, none when it is merged into the one before;
# test_streaming.py). So chunks are a multiple of 64 rows and the last
# one takes the remainder. The float32 head is applied whole: sgemm's
# Haswell kernel computes the rows of a product whose row count is 8-11
# modulo 12 through a path that depends on the vocabulary's extent
# (measured: 30 of 117 shapes differ whatever the chunk size).
HEAD_CHUNK_BYTES = 256 << 20
HEAD_CHUNK_UNIT = 64


# A layer's attention scores past this many values ([heads, T, keys]) are
# computed, probed and let go a group of heads at a time (Forward.attend),
# as Go's forward does past its DefaultProbeValues: a 4104-token case of 32
# heads held [32, 4104, 4104] whole in float64 three times over (scores,
# their masked copy, probabilities: 13 GB, notes 39).
HEAD_VALUES = 1 << 24


def head_chunks(V, C, dtype):
    """Row ranges [lo, hi) of a [V,C] head applied at once in dtype."""
    if dtype != torch.float64:
        return [(0, V)]
    n = max(HEAD_CHUNK_UNIT, HEAD_CHUNK_BYTES // (C * 8) // HEAD_CHUNK_UNIT * HEAD_CHUNK_UNIT)
    bounds = list(range(0, V, n))[1:]
    if bounds and V - bounds[-1] < n:
        bounds.pop()  # the remainder goes with the last whole chunk
    edges = [0] + bounds + [V]
    return list(zip(edges[:-1], edges[1:]))


class Seq:
    """One sequence's forward in progress (Forward.run)."""

    def __init__(self, tokens, past=None, probe=None, rows=None):
        self.tokens, self.past, self.rows = tokens, past, rows
        self.probe = probe or (lambda *a, **k: None)
        self.T = len(tokens)
        self.t0 = 0 if past is None else past[0][0].shape[2]
        self.present = []


def used_names(names, layers, prefix):
    """The parameters a forward through the first layers blocks reads:
    block i's are named prefix + "i." (Forward.PREFIX), the others are
    read whatever the depth."""
    def layer(n):
        return int(n[len(prefix):].split(".")[0]) if n.startswith(prefix) else -1
    return [n for n in names if layer(n) < layers]


class Forward:
    """The layer-major pass every family's forward shares; a family's
    forward (gpt2_torch.GPT2, llama_torch.Llama) subclasses it and writes
    only its maths:

      PREFIX      block i's parameters are the names beginning PREFIX + "i."
      LAYERS      the config field holding the number of blocks
      TIED_HEAD   the matrix the LM head is when no lm_head.weight is stored
      NORM        the final norm's probe name (checkpoint 8)
      start(s)    checks, the embeddings (probed) and whatever the blocks
                  need of the sequence s (its mask, RoPE tables), into s;
                  returns s
      block(i, P, s)  block i of s, P its weights in dtype: s.x in and out,
                  the block's (k, v) appended to s.present
      final_norm()    the final norm as a function of x [1,T,C] -> [T,C]
    and may override
      logits_out(logits)  what the model does to the LM head's output
                  before it is probed and returned (Gemma's soft-cap);
                  identity by default

    The weights (model["weights"]: a weights.Weights, or a dict of float32
    arrays) are converted to dtype a layer at a time as the pass reaches
    it and let go after; run() takes several sequences through each layer
    together, so a layer is converted once for all of them.
    model["layers"], when given, runs only the first blocks (then the
    final norm and head). numerics: an engine's approximations
    (emulate.py), applied at the ops they replace, in the forward and its
    float64 twin alike; None is plain PyTorch."""

    # What a family's forward gives (families.register checks).
    DECLARES = ("PREFIX", "LAYERS", "TIED_HEAD", "NORM", "start", "block", "final_norm")

    def __init__(self, model, dtype, numerics=None):
        self.cfg = model["config"]
        self.numerics = numerics
        self.dtype = dtype
        self.w = as_weights(model["weights"])
        self.n_layers = model.get("layers") or self.cfg[self.LAYERS]
        # progress(pass, layers done, layers, sequences), if set, as a pass
        # begins (0 done) and after each layer: an 8B model's reference runs for an hour.
        self.progress = None
        self.passes = 0

    def _t(self, name):
        return torch.from_numpy(np.ascontiguousarray(self.w.get(name))).to(self.dtype)

    @property
    def p(self):
        """Every parameter in dtype at once (tests and tools; the forward
        converts a layer at a time)."""
        return {n: self._t(n) for n in self.w.names()}

    def layer(self, i):
        """Block i's weights in dtype."""
        prefix = f"{self.PREFIX}{i}."
        return {n: self._t(n) for n in self.w.names() if n.startswith(prefix)}

    def logits_out(self, logits):
        return logits

    def hook(self, name, x):
        """x through the numerics' hook name (cache, kq_operand,
        kqv_operand: an engine's rounding of what it stores or multiplies);
        x itself without numerics."""
        return x if self.numerics is None else getattr(self.numerics, name)(x)

    def attend(self, i, s, q, kr, vr, scores, softmax):
        """Block i's attention of s: q [1,H,T,D] against kr, vr [1,H,S,D]
        (KV heads already repeated). scores(q, k) are a group of heads'
        scores as the family computes them (scaled, capped, masked), q
        through the kq_operand hook; softmax(sc) its probabilities. Both
        are probed (checkpoint 4) and the probabilities go through the
        kqv_operand hook to weight vr. Returns [1,H,T,D]. Past
        HEAD_VALUES scores, a group of heads at a time, each probed as a
        part (part=(first head, H)): every head's products and softmax
        rows are its own either way, so the bits are the batched ones'
        (test_streaming.py)."""
        H, T, S = q.shape[1], q.shape[2], kr.shape[2]
        step = H if H * T * S <= HEAD_VALUES else max(1, HEAD_VALUES // (T * S))
        part = (lambda h0: {}) if step == H else (lambda h0: {"part": (h0, H)})
        outs = []
        for h0 in range(0, H, step):
            h1 = min(H, h0 + step)
            sc = scores(self.hook("kq_operand", q[:, h0:h1]), kr[:, h0:h1])
            s.probe(4, i, "scores", sc[0], **part(h0))
            pr = softmax(sc)
            del sc
            s.probe(4, i, "probs", pr[0], **part(h0))
            outs.append(torch.matmul(self.hook("kqv_operand", pr), vr[:, h0:h1]))
            del pr
        return outs[0] if len(outs) == 1 else torch.cat(outs, dim=1)

    def cached(self, i, s, k, v):
        """Block i's keys and values [1,heads,Tk,D] over the whole of s: k
        and v [1,heads,T,D] as the cache stores them (the cache hook) after
        the past's, appended to s.present."""
        k, v = self.hook("cache", k), self.hook("cache", v)
        if s.past is not None:
            k = torch.cat((s.past[i][0], k), dim=-2)
            v = torch.cat((s.past[i][1], v), dim=-2)
        s.present.append((k, v))
        return k, v

    def forward(self, tokens, past=None, probe=None, rows=None):
        """tokens: ids; past: per-layer (k, v) [1,heads,Tp,D] as present
        holds them; rows: positions whose logits to compute (None: all).
        Returns (logits [R,V], present)."""
        return self.run([dict(tokens=tokens, past=past, probe=probe, rows=rows)])[0]

    def run(self, jobs):
        """Several forwards (jobs: dicts of forward's arguments) layer by
        layer: each layer's weights converted once for all of them. Each
        sequence's arithmetic is forward's alone, op for op. Returns
        [(logits, present)] in the jobs' order."""
        seqs = [self.start(Seq(**j)) for j in jobs]
        self.passes += 1
        if self.progress is not None:
            self.progress(self.passes, 0, self.n_layers, len(seqs))
        for i in range(self.n_layers):
            P = self.layer(i)
            for s in seqs:
                self.block(i, P, s)
            del P
            if self.progress is not None:
                self.progress(self.passes, i + 1, self.n_layers, len(seqs))
        head = "lm_head.weight" if self.w.has("lm_head.weight") else self.TIED_HEAD
        return finish(self.w, seqs, self.final_norm(), self.NORM, head, self.dtype, self.logits_out)

    def greedy(self, tokens, n):
        """n greedy tokens through the KV cache (torch.argmax: ties to the lowest id)."""
        logits, past = self.forward(tokens, rows=[len(tokens) - 1])
        out = []
        for _ in range(n):
            t = int(torch.argmax(logits[-1]))
            out.append(t)
            if len(out) == n:
                break
            logits, past = self.forward([t], past=past)
        return out


def finish(weights, seqs, norm, name, head, dtype, out_fn=None):
    """The end of a pass of every sequence after its last block: the final
    norm (probed as `name`: GPT-2's ln_f, the Llama family's norm), then
    the LM head `head` on the rows each sequence keeps, probed as logits.
    Returns each sequence's (logits, present cache); out_fn, if given,
    maps the head's logits first (Forward.logits_out)."""
    sels = []
    for s in seqs:
        x = norm(s.x)
        s.probe(8, None, name, x)
        sels.append(x if s.rows is None else x[list(s.rows)])
        del s.x
    out = []
    for s, logits in zip(seqs, apply_head(weights, head, sels, dtype)):
        if out_fn is not None:
            logits = out_fn(logits)
        s.probe(8, None, "logits", logits, rows=None if s.rows is None or len(s.rows) == s.T else list(s.rows))
        out.append((logits, s.present))
    return out


def apply_head(weights, name, sels, dtype):
    """F.linear(sel, head) for every sel ([R,C] rows), the head converted
    a chunk of rows at a time (head_chunks) and each chunk used for every
    sel before the next is converted."""
    V, C = weights.shape(name)
    parts = [[] for _ in sels]
    for lo, hi in head_chunks(V, C, dtype):
        if not any(sel.shape[0] for sel in sels):
            break
        w = torch.from_numpy(weights.row_range(name, lo, hi)).to(dtype)
        for part, sel in zip(parts, sels):
            if sel.shape[0]:
                part.append(F.linear(sel, w))
        del w
    weights.release(name)
    return [torch.cat(p, dim=1) if len(p) > 1 else p[0] if p else sel.new_zeros((0, V))
            for p, sel in zip(parts, sels)]



def same_rows(weights, a, b, rows=1 << 14):
    """Whether two matrices hold the same values, compared a block of rows at a time."""
    if weights.shape(a) != weights.shape(b):
        return False
    n = weights.shape(a)[0]
    same = all(np.array_equal(weights.row_range(a, lo, min(lo + rows, n)), weights.row_range(b, lo, min(lo + rows, n)))
               for lo in range(0, n, rows))
    weights.release(a)
    weights.release(b)
    return same



def run_tasks(model, tasks):
    """Runs the tasks (generators) in passes of model.run. A task yields a
    list of forward jobs (dicts of forward's arguments) and is sent back
    the list of their (logits, present); what it returns is its result.
    Returns the results in the tasks' order."""
    results = [None] * len(tasks)
    pending = {}

    def advance(i, value):
        try:
            pending[i] = tasks[i].send(value)
        except StopIteration as e:
            results[i] = e.value
            pending.pop(i, None)

    for i in range(len(tasks)):
        advance(i, None)
    while pending:
        order = sorted(pending)
        jobs = [j for i in order for j in pending[i]]
        outs = model.run(jobs) if jobs else []
        at = 0
        for i in order:
            n = len(pending[i])
            advance(i, outs[at:at + n])
            at += n
    return results
