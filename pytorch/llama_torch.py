"""The Llama family (model_type llama, qwen2, qwen3, phi3) written out op by
op in torch, mirroring Hugging Face LlamaForCausalLM, Qwen2ForCausalLM,
Qwen3ForCausalLM and Phi3ForCausalLM in eval mode with the eager attention
(docs/spec.md section 1, "The Llama family"), with a probe at every
checkpoint tensor. The same module runs in float32 (HF exactly) or float64
(the same formulas, every op in float64: HF's float32 upcasts are kept as
"at least float32", so the float64 twin is the truth the float32 forward
is measured against).

Probes: probe(checkpoint, layer, name, tensor, rows=None), layer None for
the non-layer tensors. T tokens of this call, Tk = cache length + T keys,
C hidden_size, H query heads, Hkv KV heads, D head_dim (may differ from
C/H: Qwen3), I intermediate_size, V vocab_size.

  ck  layer  name         shape      what
  7   None   embeddings   [T,C]      embed_tokens rows (the input of block 0)
  1   i      attn_norm    [T,C]      input_layernorm output
  2   i      q            [H,T,D]    q after the projection (and bias), heads split
  2   i      k            [Hkv,T,D]  k likewise
  2   i      v            [Hkv,T,D]  v likewise
  2   i      q_norm       [H,T,D]    Qwen3 only: per-head RMSNorm of q, before RoPE
  2   i      k_norm       [Hkv,T,D]  Qwen3 only: per-head RMSNorm of k, before RoPE
  2   i      q_rope       [H,T,D]    q after RoPE (rotate_half)
  2   i      k_rope       [Hkv,T,D]  k after RoPE: what the cache stores (before numerics.cache)
  3   i      k_cache      [Hkv,Tk,D] the grouped KV cache after this call (after numerics.cache)
  3   i      v_cache      [Hkv,Tk,D]
  4   i      scores       [H,T,Tk]   q·kᵀ·scale, masked entries = finfo.min added
  4   i      probs        [H,T,Tk]   softmax of scores
  5   i      attn_out     [T,C]      after o_proj, before the residual add
  1   i      ffn_norm     [T,C]      post_attention_layernorm output
  6   i      gate         [T,I]      gate_proj (Phi-3: first half of gate_up_proj)
  6   i      up           [T,I]      up_proj (Phi-3: second half)
  6   i      act          [T,I]      silu(gate) * up
  6   i      down         [T,C]      down_proj, before the residual add
  7   i      block_out    [T,C]      residual stream after the block
  8   None   norm         [T,C]      final RMSNorm output
  8   None   logits       [R,V]      lm_head (or embed_tokens when tied), rows R

Weights: an HF-layout directory, config.json + model.safetensors or
HF's shards and model.safetensors.index.json (checkpoint.py), names with
or without the "model." prefix; mapped, and converted a layer at a time
as the forward reaches it (Llama.run, passes.py).
"""

import json
import math
import os

import numpy as np
import torch
import torch.nn.functional as F

from checkpoint import Checkpoint
from passes import Seq, finish, same_rows
from safetensors_io import BadInput
from weights import MappedWeights, as_weights

ARCHS = ("llama", "qwen2", "qwen3", "phi3")

# The HF config classes' defaults for keys a hub config.json may omit.
_DEFAULTS = {
    "llama": {"rms_norm_eps": 1e-6, "rope_theta": 10000.0, "max_position_embeddings": 2048,
              "tie_word_embeddings": False, "attention_bias": False, "mlp_bias": False, "hidden_act": "silu"},
    "qwen2": {"rms_norm_eps": 1e-6, "rope_theta": 10000.0, "max_position_embeddings": 32768,
              "tie_word_embeddings": False, "use_sliding_window": False, "hidden_act": "silu"},
    "qwen3": {"rms_norm_eps": 1e-6, "rope_theta": 10000.0, "max_position_embeddings": 32768, "head_dim": 128,
              "tie_word_embeddings": False, "use_sliding_window": False, "attention_bias": False,
              "hidden_act": "silu"},
    "phi3": {"rms_norm_eps": 1e-5, "rope_theta": 10000.0, "max_position_embeddings": 4096,
             "tie_word_embeddings": False, "partial_rotary_factor": 1.0, "hidden_act": "silu"},
}


def load_config(path):
    try:
        with open(path, encoding="utf-8") as f:
            raw = json.load(f)
    except OSError as e:
        raise BadInput(f"{path}: cannot read: {e.strerror}")
    except json.JSONDecodeError as e:
        raise BadInput(f"{path}: not valid JSON: {e}")
    return load_config_dict(raw, path)


def load_config_dict(raw, path):
    """(verbatim config, config with defaults and derived fields). Every
    setting this forward does not implement is a BadInput, never ignored."""
    if not isinstance(raw, dict):
        raise BadInput(f"{path}: not a JSON object")
    arch = raw.get("model_type")
    if arch not in ARCHS:
        raise BadInput(f"{path}: field 'model_type' = {arch!r}: only {', '.join(ARCHS)} are supported")
    cfg = dict(_DEFAULTS[arch], **raw)

    def bad(field, why):
        raise BadInput(f"{path}: field {field!r} = {cfg.get(field)!r}: {why}")

    def posint(field):
        v = cfg.get(field)
        if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
            bad(field, "must be a positive integer")
        return v

    for f in ("vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers",
              "num_attention_heads", "max_position_embeddings"):
        posint(f)
    if cfg.get("num_key_value_heads") is None:
        cfg["num_key_value_heads"] = cfg["num_attention_heads"]
    posint("num_key_value_heads")
    if cfg["num_attention_heads"] % cfg["num_key_value_heads"]:
        bad("num_key_value_heads", f"does not divide num_attention_heads {cfg['num_attention_heads']}")
    if cfg.get("head_dim") is None:  # llama's null head_dim, and qwen2/phi3 which have none
        if cfg["hidden_size"] % cfg["num_attention_heads"]:
            bad("num_attention_heads", f"does not divide hidden_size {cfg['hidden_size']} and head_dim is not set")
        cfg["head_dim"] = cfg["hidden_size"] // cfg["num_attention_heads"]
    elif arch in ("qwen2", "phi3") and cfg["head_dim"] != cfg["hidden_size"] // cfg["num_attention_heads"]:
        bad("head_dim", f"{arch} derives head_dim from hidden_size/num_attention_heads; another value is not implemented")
    posint("head_dim")
    if cfg["hidden_act"] != "silu":
        bad("hidden_act", "only silu (SwiGLU) is implemented")
    for f in ("rms_norm_eps", "rope_theta"):
        v = cfg[f]
        if not isinstance(v, (int, float)) or isinstance(v, bool) or not v > 0:
            bad(f, "must be a positive number")
    prf = cfg.get("partial_rotary_factor", 1.0)
    if not isinstance(prf, (int, float)) or isinstance(prf, bool) or not 0 < prf <= 1:
        bad("partial_rotary_factor", "must be a number in (0, 1]")
    rot = int(cfg["head_dim"] * prf)
    if rot <= 0 or rot % 2:
        bad("partial_rotary_factor", f"gives a rotary dimension {rot}, not a positive even number")
    cfg["rotary_dim"] = rot
    for f in ("tie_word_embeddings", "attention_bias", "mlp_bias", "use_sliding_window"):
        if f in cfg and not isinstance(cfg[f], bool):
            bad(f, "must be true or false")
    if arch == "phi3":
        for f in ("attention_bias", "mlp_bias"):
            if cfg.get(f):
                bad(f, "Phi-3 has no biases; not implemented")
    if arch == "qwen3" and cfg.get("mlp_bias"):
        bad("mlp_bias", "Qwen3 has no MLP bias; not implemented")
    if arch in ("qwen2", "phi3"):
        # Qwen2's modeling file has fixed q/k/v biases and no o bias whatever
        # the key says; Phi-3 has none (checked above).
        cfg["attention_bias"] = False
    if arch != "llama":
        cfg["mlp_bias"] = False  # only LlamaMLP reads it (Qwen3/Phi-3 true rejected above)
    if arch == "qwen3":
        lt = cfg.get("layer_types")
        if lt is not None and any(t != "full_attention" for t in lt):
            bad("layer_types", "only full_attention layers are implemented")
    # The rope scaling: none, or Llama 3's.
    rs = cfg.get("rope_scaling")
    if rs is not None:
        if not isinstance(rs, dict):
            bad("rope_scaling", "must be null or an object")
        kind = rs.get("rope_type", rs.get("type"))
        if kind == "default":
            pass
        elif kind == "llama3":
            for f in ("factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings"):
                v = rs.get(f)
                if not isinstance(v, (int, float)) or isinstance(v, bool) or not v > 0:
                    bad("rope_scaling", f"llama3 needs a positive {f}")
            if rs["high_freq_factor"] <= rs["low_freq_factor"]:
                bad("rope_scaling", "llama3 needs high_freq_factor > low_freq_factor")
        else:
            bad("rope_scaling", f"type {kind!r} is not implemented (only llama3)")
    # Sliding-window attention is not implemented: a window that is active
    # is accepted only as long as no sequence reaches it (forward checks).
    sw = cfg.get("sliding_window")
    active = sw is not None and (arch == "phi3" or (arch in ("qwen2", "qwen3") and cfg.get("use_sliding_window")))
    if active:
        posint("sliding_window")
    cfg["active_sliding_window"] = sw if active else None
    eos = cfg.get("eos_token_id")
    cfg["eos_token_ids"] = [] if eos is None else (list(eos) if isinstance(eos, list) else [eos])
    return raw, cfg


def param_shapes(cfg):
    """{HF name without "model.": shape}, lm_head included unless tied."""
    arch = cfg["model_type"]
    C, V, I = cfg["hidden_size"], cfg["vocab_size"], cfg["intermediate_size"]
    H, Hkv, D = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]
    s = {"embed_tokens.weight": [V, C], "norm.weight": [C]}
    if not cfg["tie_word_embeddings"]:
        s["lm_head.weight"] = [V, C]
    for i in range(cfg["num_hidden_layers"]):
        p = f"layers.{i}."
        s[p + "input_layernorm.weight"] = [C]
        s[p + "post_attention_layernorm.weight"] = [C]
        s[p + "self_attn.o_proj.weight"] = [C, H * D]
        s[p + "mlp.down_proj.weight"] = [C, I]
        if arch == "phi3":
            s[p + "self_attn.qkv_proj.weight"] = [(H + 2 * Hkv) * D, C]
            s[p + "mlp.gate_up_proj.weight"] = [2 * I, C]
            continue
        for n, rows in (("q", H * D), ("k", Hkv * D), ("v", Hkv * D)):
            s[p + f"self_attn.{n}_proj.weight"] = [rows, C]
            if arch == "qwen2" or cfg.get("attention_bias"):
                s[p + f"self_attn.{n}_proj.bias"] = [rows]
        if cfg.get("attention_bias"):
            s[p + "self_attn.o_proj.bias"] = [C]
        s[p + "mlp.gate_proj.weight"] = [I, C]
        s[p + "mlp.up_proj.weight"] = [I, C]
        if cfg.get("mlp_bias"):
            s[p + "mlp.gate_proj.bias"] = [I]
            s[p + "mlp.up_proj.bias"] = [I]
            s[p + "mlp.down_proj.bias"] = [C]
        if arch == "qwen3":
            s[p + "self_attn.q_norm.weight"] = [D]
            s[p + "self_attn.k_norm.weight"] = [D]
    return s


def _strip(name):
    return name[len("model."):] if name.startswith("model.") else name


def open_model(model_dir):
    """{config_raw, config, weights (weights.MappedWeights: float32 on
    demand, names without "model."), sha256, dtype, weights_file,
    checkpoint}. Every header is checked here; no weight is converted."""
    if not os.path.isdir(model_dir):
        raise BadInput(f"{model_dir}: not a directory")
    raw_cfg, cfg = load_config(os.path.join(model_dir, "config.json"))
    ckpt = Checkpoint(model_dir)
    shapes = param_shapes(cfg)
    files = {}
    for n in ckpt.names():
        s = _strip(n)
        if s not in shapes and not (s == "lm_head.weight" and cfg["tie_word_embeddings"]):
            if s.endswith("rotary_emb.inv_freq"):
                continue
            raise BadInput(f"{ckpt.path(n)}: unexpected tensor {n!r} (not a {cfg['model_type']} parameter of this config)")
        if s in files:
            raise BadInput(f"{ckpt.path(n)}: tensor {s!r} appears twice (with and without 'model.')")
        ckpt.check(n)
        files[s] = n
    where = os.path.join(model_dir, ckpt.weights_file)
    for n, shape in shapes.items():
        if n not in files:
            raise BadInput(f"{where}: missing tensor {n!r}")
        if ckpt.shape(files[n]) != shape:
            raise BadInput(f"{ckpt.path(files[n])}: tensor {n!r} has shape {ckpt.shape(files[n])}, "
                           f"config.json implies {shape}")
    weights = MappedWeights(ckpt, files)
    if cfg["tie_word_embeddings"] and "lm_head.weight" in files:
        # A tied checkpoint that also stores the head: it must be the embedding.
        if not same_rows(weights, "lm_head.weight", "embed_tokens.weight"):
            raise BadInput(f"{where}: tie_word_embeddings is true but lm_head.weight differs from embed_tokens.weight")
        del weights.files["lm_head.weight"]
    used = sorted({ckpt.dtype(t) for s, t in files.items() if s in shapes})
    return {"config_raw": raw_cfg, "config": cfg, "weights": weights, "sha256": ckpt.sha256(),
            "dtype": "+".join(used), "weights_file": ckpt.weights_file, "checkpoint": ckpt}


def load_model(model_dir):
    """open_model with every weight converted: "weights" is {name: float32
    array} (names without "model.")."""
    m = open_model(model_dir)
    m["weights"] = m["weights"].materialize()
    m.pop("checkpoint").close()
    return m


def used_names(names, layers):
    """The parameters a forward through the first layers blocks reads."""
    def layer(n):
        return int(n.split(".")[1]) if n.startswith("layers.") else -1
    return [n for n in names if layer(n) < layers]


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def repeat_kv(x, n_rep):
    """[1,Hkv,T,D] -> [1,Hkv*n_rep,T,D]: KV head j serves query heads j*n_rep ... j*n_rep+n_rep-1."""
    if n_rep == 1:
        return x
    b, hkv, t, d = x.shape
    return x[:, :, None, :, :].expand(b, hkv, n_rep, t, d).reshape(b, hkv * n_rep, t, d)


def inv_freq(cfg, dtype):
    """HF's rope init (default, or _compute_llama3_parameters) in dtype
    (float32: HF's buffer exactly)."""
    dim, base = cfg["rotary_dim"], float(cfg["rope_theta"])
    f = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).to(dtype) / dim))
    rs = cfg.get("rope_scaling")
    if rs is not None and rs.get("rope_type", rs.get("type")) == "llama3":
        factor, lo, hi = rs["factor"], rs["low_freq_factor"], rs["high_freq_factor"]
        old = rs["original_max_position_embeddings"]
        lo_wavelen, hi_wavelen = old / lo, old / hi
        wavelen = 2 * math.pi / f
        g = torch.where(wavelen > lo_wavelen, f / factor, f)
        smooth = (old / wavelen - lo) / (hi - lo)
        smoothed = (1 - smooth) * g / factor + smooth * g
        medium = ~(wavelen < hi_wavelen) * ~(wavelen > lo_wavelen)
        f = torch.where(medium, smoothed, g)
    return f


class Llama:
    """One forward for the four families; probe sees every intermediate.

    The weights (model["weights"]: a weights.Weights, or a dict of float32
    arrays) are converted to dtype a layer at a time as the forward reaches
    it and let go after; run() takes several sequences through each layer
    together, so a layer is converted once for all of them. model["layers"],
    when given, runs only the first blocks (then the final norm and head)."""

    def __init__(self, model, dtype, numerics=None):
        self.cfg = cfg = model["config"]
        # An engine's approximations (emulate.py: its cache, kq_operand and
        # kqv_operand hooks; the Llama family has no GELU), applied at the
        # ops they replace, in this forward and its float64 twin alike;
        # None is plain PyTorch.
        self.numerics = numerics
        self.arch = cfg["model_type"]
        self.dtype = dtype
        # RMSNorm, rope tables and softmax: HF computes them in float32 at
        # least; a float64 forward keeps float64.
        self.up = torch.float64 if dtype == torch.float64 else torch.float32
        self.w = as_weights(model["weights"])
        self.n_layers = model.get("layers") or cfg["num_hidden_layers"]
        self.C, self.H, self.Hkv = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"]
        self.D, self.I = cfg["head_dim"], cfg["intermediate_size"]
        self.eps = float(cfg["rms_norm_eps"])
        self.scaling = self.D ** -0.5
        self.inv_freq = inv_freq(cfg, self.up)

    def _t(self, name):
        return torch.from_numpy(np.ascontiguousarray(self.w.get(name))).to(self.dtype)

    @property
    def p(self):
        """Every parameter in dtype at once (tests and tools; the forward
        converts a layer at a time)."""
        return {n: self._t(n) for n in self.w.names()}

    def _layer(self, i):
        prefix = f"layers.{i}."
        return {n: self._t(n) for n in self.w.names() if n.startswith(prefix)}

    def _linear(self, P, x, name):
        return F.linear(x, P[name + ".weight"], P.get(name + ".bias"))

    def _rms(self, x, weight):
        # LlamaRMSNorm (Qwen2/Qwen3/Phi3 are copies of it).
        in_dtype = x.dtype
        h = x.to(self.up)
        var = h.pow(2).mean(-1, keepdim=True)
        h = h * torch.rsqrt(var + self.eps)
        return weight * h.to(in_dtype)

    def _rope_tables(self, positions):
        # LlamaRotaryEmbedding.forward, attention_scaling 1 (default, llama3).
        f = self.inv_freq[None, :, None]
        pos = positions[None, None, :].to(self.up)
        freqs = torch.matmul(f, pos).transpose(1, 2)
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos().to(self.dtype), emb.sin().to(self.dtype)  # [1,T,rot]

    def _rope(self, x, cos, sin):
        # apply_rotary_pos_emb; Phi-3's partial form passes the tail through.
        cos, sin = cos[:, None], sin[:, None]
        rot = cos.shape[-1]
        if rot == x.shape[-1]:
            return (x * cos) + (rotate_half(x) * sin)
        xr, xp = x[..., :rot], x[..., rot:]
        return torch.cat([(xr * cos) + (rotate_half(xr) * sin), xp], dim=-1)

    def forward(self, tokens, past=None, probe=None, rows=None):
        """tokens: ids; past: per-layer (k, v) [1,Hkv,Tp,D] after RoPE; rows:
        positions whose logits to compute (None: all). Returns (logits [R,V], present)."""
        return self.run([dict(tokens=tokens, past=past, probe=probe, rows=rows)])[0]

    def run(self, jobs):
        """Several forwards (jobs: dicts of forward's arguments) layer by
        layer: each layer's weights converted once for all of them. Each
        sequence's arithmetic is forward's alone, op for op. Returns
        [(logits, present)] in the jobs' order."""
        seqs = [self._start(Seq(**j)) for j in jobs]
        for i in range(self.n_layers):
            P = self._layer(i)
            for s in seqs:
                self._block(i, P, s)
            del P
        norm = self._t("norm.weight")
        head = "lm_head.weight" if self.w.has("lm_head.weight") else "embed_tokens.weight"
        return finish(self.w, seqs, lambda x: self._rms(x, norm)[0], "norm", head, self.dtype)

    def _start(self, s):
        """Checks, the embeddings and the rope tables and mask of s."""
        T, t0 = s.T, s.t0
        sw = self.cfg["active_sliding_window"]
        if sw is not None and t0 + T > sw:
            raise BadInput(f"sequence of {t0 + T} tokens exceeds sliding_window {sw}: "
                           "sliding-window attention is not implemented")
        if t0 + T > self.cfg["max_position_embeddings"]:
            raise BadInput(f"sequence of {t0 + T} tokens exceeds max_position_embeddings "
                           f"{self.cfg['max_position_embeddings']}")
        V = self.w.shape("embed_tokens.weight")[0]
        if any(not 0 <= t < V for t in s.tokens):
            raise BadInput(f"token id out of range [0, {V})")
        # F.embedding's rows, gathered before the conversion (the same values).
        s.x = torch.from_numpy(self.w.take("embed_tokens.weight", s.tokens)).to(self.dtype).unsqueeze(0)
        s.probe(7, None, "embeddings", s.x[0])
        s.cos, s.sin = self._rope_tables(torch.arange(t0, t0 + T, dtype=torch.long))
        # HF's eager mask: 0 where key <= query (absolute), finfo.min elsewhere, added.
        visible = torch.ones(T, t0 + T, dtype=torch.bool).tril(diagonal=t0)
        s.mask = torch.zeros(T, t0 + T, dtype=self.dtype).masked_fill(~visible, torch.finfo(self.dtype).min)
        return s

    def _block(self, i, P, s):
        """Block i of s (P: the block's weights in dtype)."""
        H, Hkv, D = self.H, self.Hkv, self.D
        T, x, probe, past = s.T, s.x, s.probe, s.past
        p = f"layers.{i}."
        a = self._rms(x, P[p + "input_layernorm.weight"])
        probe(1, i, "attn_norm", a[0])
        if self.arch == "phi3":
            qkv = self._linear(P, a, p + "self_attn.qkv_proj")
            q, k, v = qkv[..., :H * D], qkv[..., H * D:(H + Hkv) * D], qkv[..., (H + Hkv) * D:]
        else:
            q = self._linear(P, a, p + "self_attn.q_proj")
            k = self._linear(P, a, p + "self_attn.k_proj")
            v = self._linear(P, a, p + "self_attn.v_proj")
        q = q.view(1, T, H, D)
        k = k.view(1, T, Hkv, D)
        v = v.view(1, T, Hkv, D).transpose(1, 2)
        probe(2, i, "q", q[0].transpose(0, 1))
        probe(2, i, "k", k[0].transpose(0, 1))
        probe(2, i, "v", v[0])
        if self.arch == "qwen3":  # per-head RMSNorm over head_dim, before the transpose and RoPE
            q = self._rms(q, P[p + "self_attn.q_norm.weight"])
            k = self._rms(k, P[p + "self_attn.k_norm.weight"])
            probe(2, i, "q_norm", q[0].transpose(0, 1))
            probe(2, i, "k_norm", k[0].transpose(0, 1))
        q, k = q.transpose(1, 2), k.transpose(1, 2)
        q, k = self._rope(q, s.cos, s.sin), self._rope(k, s.cos, s.sin)
        probe(2, i, "q_rope", q[0])
        probe(2, i, "k_rope", k[0])
        if self.numerics is not None:  # what the cache stores: k after RoPE and v, Hkv heads
            k, v = self.numerics.cache(k), self.numerics.cache(v)
        if past is not None:
            k = torch.cat((past[i][0], k), dim=-2)
            v = torch.cat((past[i][1], v), dim=-2)
        s.present.append((k, v))
        probe(3, i, "k_cache", k[0])
        probe(3, i, "v_cache", v[0])
        kr, vr = repeat_kv(k, H // Hkv), repeat_kv(v, H // Hkv)
        if self.numerics is not None:
            q = self.numerics.kq_operand(q)
        sc = torch.matmul(q, kr.transpose(2, 3)) * self.scaling
        sc = sc + s.mask
        probe(4, i, "scores", sc[0])
        pr = F.softmax(sc, dim=-1, dtype=self.up).to(self.dtype)
        probe(4, i, "probs", pr[0])
        if self.numerics is not None:
            pr = self.numerics.kqv_operand(pr)
        o = torch.matmul(pr, vr).transpose(1, 2).contiguous().reshape(1, T, H * D)
        o = self._linear(P, o, p + "self_attn.o_proj")
        probe(5, i, "attn_out", o[0])
        x = x + o
        m = self._rms(x, P[p + "post_attention_layernorm.weight"])
        probe(1, i, "ffn_norm", m[0])
        if self.arch == "phi3":
            gu = self._linear(P, m, p + "mlp.gate_up_proj")
            g, u = gu.chunk(2, dim=-1)
        else:
            g = self._linear(P, m, p + "mlp.gate_proj")
            u = self._linear(P, m, p + "mlp.up_proj")
        probe(6, i, "gate", g[0])
        probe(6, i, "up", u[0])
        h = F.silu(g) * u
        probe(6, i, "act", h[0])
        y = self._linear(P, h, p + "mlp.down_proj")
        probe(6, i, "down", y[0])
        x = x + y
        probe(7, i, "block_out", x[0])
        s.x = x

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
