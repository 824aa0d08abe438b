"""Mixtures of experts (model_type qwen3_moe, mixtral) for llama_torch.py:
their config, their tensors and the sparse FFN, as Hugging Face's
Qwen3MoeSparseMoeBlock and MixtralSparseMoeBlock compute them in eval mode:

  router_logits = gate(h)                            Linear, no bias
  probs = softmax(router_logits, dtype=float32)      over every expert
  w, experts = topk(probs, k)                        top-k order
  w /= w.sum(-1)                                     Mixtral always; Qwen3-MoE if norm_topk_prob
  out = 0; for each expert e chosen by some token, ascending:
      out[tokens of e] += down_e(silu(gate_e(x)) * up_e(x)) * w   (index_add_)

Qwen3-MoE's layers in mlp_only_layers, or where (i+1) % decoder_sparse_step
is not 0, keep the dense MLP of intermediate_size.

Probes of a sparse layer (checkpoint 6), K = num_experts_per_tok, E experts,
Im an expert's intermediate size:
  router_logits [T,E]; experts [T,K] (ids, as floats); expert_weights [T,K];
  expert_gate, expert_up, expert_act [T,K,Im] and expert_down [T,K,C]: each
  slot's expert, unweighted; down [T,C]: the weighted sum.
"""

import numpy as np
import torch
import torch.nn.functional as F

from safetensors_io import BadInput

ARCHS = ("qwen3_moe", "mixtral")

# The config classes' defaults (Qwen3MoeConfig, MixtralConfig) for the keys
# a hub config.json may omit.
DEFAULTS = {
    "qwen3_moe": {"rms_norm_eps": 1e-6, "rope_theta": 10000.0, "max_position_embeddings": 32768,
                  "tie_word_embeddings": False, "use_sliding_window": False, "attention_bias": False,
                  "hidden_act": "silu", "num_experts": 128, "num_experts_per_tok": 8,
                  "moe_intermediate_size": 768, "norm_topk_prob": False, "decoder_sparse_step": 1,
                  "mlp_only_layers": None},
    "mixtral": {"rms_norm_eps": 1e-5, "rope_theta": 1e6, "max_position_embeddings": 4096 * 32,
                "tie_word_embeddings": False, "sliding_window": None, "hidden_act": "silu",
                "num_local_experts": 8, "num_experts_per_tok": 2},
}

# HF's names of a layer's router and an expert's gate, up and down ({e}).
NAMES = {
    "qwen3_moe": ("mlp.gate.weight", "mlp.experts.{e}.gate_proj.weight", "mlp.experts.{e}.up_proj.weight",
                  "mlp.experts.{e}.down_proj.weight"),
    "mixtral": ("block_sparse_moe.gate.weight", "block_sparse_moe.experts.{e}.w1.weight",
                "block_sparse_moe.experts.{e}.w3.weight", "block_sparse_moe.experts.{e}.w2.weight"),
}


def load_config(arch, cfg, bad, posint):
    """cfg["moe"]: {experts, top_k, inner, norm, sparse: [bool a layer]}
    from the arch's keys (checked: a bad value is bad(field, why))."""
    if arch == "qwen3_moe":
        if cfg.get("use_sliding_window"):
            bad("use_sliding_window", "true is not implemented for qwen3_moe")
        experts, inner = posint("num_experts"), posint("moe_intermediate_size")
        norm = cfg.get("norm_topk_prob")
        if not isinstance(norm, bool):
            bad("norm_topk_prob", "must be true or false")
        step = posint("decoder_sparse_step")
        only = cfg.get("mlp_only_layers") or []
        if not isinstance(only, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in only):
            bad("mlp_only_layers", "must be a list of layer indices")
        sparse = [i not in only and (i + 1) % step == 0 for i in range(cfg["num_hidden_layers"])]
    else:
        experts, inner, norm = posint("num_local_experts"), cfg["intermediate_size"], True
        sparse = [True] * cfg["num_hidden_layers"]
    k = posint("num_experts_per_tok")
    if k > experts:
        bad("num_experts_per_tok", f"is more than the {experts} experts")
    cfg["moe"] = {"experts": experts, "top_k": k, "inner": inner, "norm": norm, "sparse": sparse}


def param_shapes(cfg, i, s):
    """Adds layer i's router and experts to s (names without "model.")."""
    m, C = cfg["moe"], cfg["hidden_size"]
    router, gate, up, down = NAMES[cfg["model_type"]]
    p = f"layers.{i}."
    s[p + router] = [m["experts"], C]
    for e in range(m["experts"]):
        s[p + gate.format(e=e)] = [m["inner"], C]
        s[p + up.format(e=e)] = [m["inner"], C]
        s[p + down.format(e=e)] = [C, m["inner"]]


def sparse_ffn(fwd, i, P, m, probe):
    """The sparse FFN of layer i on m [1,T,C] (fwd: the Llama forward, its
    dtype; P the block's weights): [1,T,C] to add to the residual."""
    cfg = fwd.cfg["moe"]
    K, E, I = cfg["top_k"], cfg["experts"], cfg["inner"]
    router, gate, up, down = NAMES[fwd.arch]
    p = f"layers.{i}."
    h = m[0]
    T, C = h.shape
    logits = F.linear(h, P[p + router])
    probe(6, i, "router_logits", logits)
    probs = F.softmax(logits, dim=1, dtype=fwd.up)
    w, sel = torch.topk(probs, K, dim=-1)
    if cfg["norm"]:
        w = w / w.sum(dim=-1, keepdim=True)
    w = w.to(fwd.dtype)
    probe(6, i, "experts", sel.to(fwd.dtype))
    probe(6, i, "expert_weights", w)
    out = torch.zeros(T, C, dtype=fwd.dtype)
    slots = {n: torch.zeros(T, K, I if n != "down" else C, dtype=fwd.dtype) for n in ("gate", "up", "act", "down")}
    for e in range(E):
        slot, tok = torch.where(sel.t() == e)  # HF's expert_mask[e]: [K,T]
        if tok.numel() == 0:
            continue
        x = h[tok]
        g = F.linear(x, P[p + gate.format(e=e)])
        u = F.linear(x, P[p + up.format(e=e)])
        a = F.silu(g) * u
        y = F.linear(a, P[p + down.format(e=e)])
        out.index_add_(0, tok, y * w[tok, slot, None])
        for n, v in (("gate", g), ("up", u), ("act", a), ("down", y)):
            slots[n][tok, slot] = v
    for n in ("gate", "up", "act", "down"):
        probe(6, i, "expert_" + n, slots[n])
    return out.unsqueeze(0)


def gguf_arch(cfg):
    """llama.cpp's architecture for a mixture of experts: qwen3moe, or
    llama for Mixtral (its converter's); what its graph cannot say is a
    BadInput naming the field. llama.cpp's qwen3moe graph has no dense
    layer and always renormalises the chosen experts' weights."""
    m = cfg["moe"]
    if cfg["model_type"] == "mixtral":
        return "llama"
    if not all(m["sparse"]):
        raise BadInput(f"field 'mlp_only_layers'/'decoder_sparse_step': dense layers {[i for i, s in enumerate(m['sparse']) if not s]} "
                       f"are not written: llama.cpp's qwen3moe has a mixture of experts in every layer")
    if not m["norm"]:
        raise BadInput("field 'norm_topk_prob' = False is not written: llama.cpp's qwen3moe always renormalises "
                       "the chosen experts' weights")
    return "qwen3moe"


def gguf_keys(cfg, a):
    """The experts' keys under llama.cpp's architecture a."""
    m = cfg["moe"]
    kv = [(f"{a}.expert_count", m["experts"]), (f"{a}.expert_used_count", m["top_k"])]
    if cfg["model_type"] == "qwen3_moe":
        kv.append((f"{a}.expert_feed_forward_length", m["inner"]))
    return kv


def gguf_tensors(cfg, w, i):
    """Layer i's router and experts as llama.cpp stores them: the router
    blk.i.ffn_gate_inp [E,C], and each of gate, up and down stacked over
    the experts, blk.i.ffn_{gate,up,down}_exps [E,Im,C], [E,Im,C], [E,C,Im]
    (numpy's order; GGUF's dimensions are the reverse)."""
    router, gate, up, down = NAMES[cfg["model_type"]]
    p, b, E = f"layers.{i}.", f"blk.{i}.", cfg["moe"]["experts"]
    out = [(b + "ffn_gate_inp.weight", w[p + router])]
    for name, pat in (("gate", gate), ("up", up), ("down", down)):
        out.append((b + f"ffn_{name}_exps.weight", np.stack([w[p + pat.format(e=e)] for e in range(E)])))
    return out
