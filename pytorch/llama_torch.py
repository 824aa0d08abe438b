"""The Llama family (model_type llama, qwen2, qwen3, mistral, phi3, and the
mixtures of experts qwen3_moe and mixtral, moe_torch.py) written out op by
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
  6   i      router_logits, experts, expert_weights, expert_gate, expert_up,
             expert_act, expert_down: a mixture of experts' sparse layer
             instead of gate, up and act (moe_torch.py); down is then the
             experts' weighted sum
  7   i      block_out    [T,C]      residual stream after the block
  8   None   norm         [T,C]      final RMSNorm output
  8   None   logits       [R,V]      lm_head (or embed_tokens when tied), rows R

Weights: an HF-layout directory, config.json + model.safetensors or
HF's shards and model.safetensors.index.json (checkpoint.py), names with
or without the "model." prefix; mapped, and converted a layer at a time
as the forward reaches it (passes.Forward.run).
"""

import math
import os

import numpy as np
import torch
import torch.nn.functional as F

from checkpoint import Checkpoint, converted, read_json_object
from config_fields import Fields
import passes
from safetensors_io import BadInput
from weights import MappedWeights
import moe_torch

# What the generic tools read of this family (families.py).
ARCHS = ("llama", "qwen2", "qwen3", "mistral", "phi3") + moe_torch.ARCHS
GGUF_ARCHS = ()  # llorch-check reads their GGUF files; the reference, HF's layout
CONTEXT = "max_position_embeddings"
EMULATE = ("f16-kv",)
# llama-perplexity starts each chunk with BOS where the vocabulary asks for
# one; corpus.py chunks as for GPT-2, which has none.
CORPUS = "corpus sets are GPT-2's only"
TOKENIZER_FILES = "tokenizer.json, or a *.gguf vocabulary such as tokenizer.gguf"
TINY_MODELS = {"llama": "tiny-llama", "qwen2": "tiny-llama-qwen2", "qwen3": "tiny-llama-qwen3",
               "mistral": "tiny-llama-mistral", "phi3": "tiny-llama-phi3",
               "qwen3_moe": "tiny-llama-qwen3moe", "mixtral": "tiny-llama-mixtral"}  # testdata's, make_tiny's (and tiny-llama3, llama's variant)


def reach(cfg):
    """{mechanism: the sequence length past which it acts}: the longest
    sliding window, longrope's pretrained context (dump_references makes a
    case longer than each when none is)."""
    out = {}
    if cfg.get("windows") and max(cfg["windows"]):
        out["window"] = max(cfg["windows"])
    if cfg.get("longrope"):
        out["longrope"] = cfg["longrope"]["original"]
    return out


def eos_ids(cfg):
    # config.json's eos_token_id: none, one id or a list, any of which stops.
    return list(cfg["eos_token_ids"])


def make_tiny(arch, out):
    import make_tiny_llama
    make_tiny_llama.write_model(arch, out, make_tiny_llama.SEED)


# The HF config classes' defaults for keys a hub config.json may omit.
_DEFAULTS = {
    "llama": {"rms_norm_eps": 1e-6, "rope_theta": 10000.0, "max_position_embeddings": 2048,
              "tie_word_embeddings": False, "attention_bias": False, "mlp_bias": False, "hidden_act": "silu"},
    "qwen2": {"rms_norm_eps": 1e-6, "rope_theta": 10000.0, "max_position_embeddings": 32768,
              "tie_word_embeddings": False, "use_sliding_window": False, "hidden_act": "silu"},
    "qwen3": {"rms_norm_eps": 1e-6, "rope_theta": 10000.0, "max_position_embeddings": 32768, "head_dim": 128,
              "tie_word_embeddings": False, "use_sliding_window": False, "attention_bias": False,
              "hidden_act": "silu"},
    # MistralConfig: Llama with a sliding window (null from v0.2 on).
    "mistral": {"rms_norm_eps": 1e-6, "rope_theta": 10000.0, "max_position_embeddings": 4096 * 32,
                "tie_word_embeddings": False, "sliding_window": 4096, "hidden_act": "silu"},
    "phi3": {"rms_norm_eps": 1e-5, "rope_theta": 10000.0, "max_position_embeddings": 4096,
             "tie_word_embeddings": False, "partial_rotary_factor": 1.0, "hidden_act": "silu"},
    **moe_torch.DEFAULTS,
}


def load_config(path):
    return load_config_dict(read_json_object(path), path)


def load_config_dict(raw, path):
    """(verbatim config, config with defaults and derived fields). Every
    setting this forward does not implement is a BadInput, never ignored."""
    if not isinstance(raw, dict):
        raise BadInput(f"{path}: not a JSON object")
    arch = raw.get("model_type")
    if arch not in ARCHS:
        raise BadInput(f"{path}: field 'model_type' = {arch!r}: only {', '.join(ARCHS)} are supported")
    cfg = dict(_DEFAULTS[arch], **raw)

    fields = Fields(cfg, path)
    bad, posint = fields.bad, fields.posint

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
    if arch in ("qwen3", "qwen3_moe") and cfg.get("mlp_bias"):
        bad("mlp_bias", "Qwen3 has no MLP bias; not implemented")
    if arch in ("qwen2", "mistral", "phi3", "mixtral"):
        # Qwen2's modeling file has fixed q/k/v biases and no o bias whatever
        # the key says; Mistral's and Phi-3's have none (Phi-3's checked above).
        cfg["attention_bias"] = False
    if arch != "llama":
        cfg["mlp_bias"] = False  # only LlamaMLP reads it (Qwen3/Phi-3 true rejected above)
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
        elif kind in ("longrope", "su"):  # "su": Phi-3's first name for it
            _longrope(cfg, rs, bad)
        else:
            bad("rope_scaling", f"type {kind!r} is not implemented (only llama3 and longrope)")
    cfg["windows"] = _windows(arch, cfg, bad, posint)
    if arch in moe_torch.ARCHS:
        moe_torch.load_config(arch, cfg, bad, posint)
    eos = cfg.get("eos_token_id")
    cfg["eos_token_ids"] = [] if eos is None else (list(eos) if isinstance(eos, list) else [eos])
    return raw, cfg


def _longrope(cfg, rs, bad):
    """Checks Phi-3's longrope and derives what HF's
    _compute_longrope_parameters does: the pretrained context (the
    config's original_max_position_embeddings, else the context), factor
    (rope_scaling's, else context / pretrained) and the attention factor
    (rope_scaling's, else sqrt(1 + ln factor / ln pretrained) when factor
    > 1, else 1), into cfg["longrope"]."""
    half = cfg["rotary_dim"] // 2
    for f in ("short_factor", "long_factor"):
        v = rs.get(f)
        if (not isinstance(v, list) or len(v) != half
                or not all(isinstance(x, (int, float)) and not isinstance(x, bool) and x > 0 for x in v)):
            bad("rope_scaling", f"longrope needs {f}: {half} positive numbers (rotary dimension / 2)")
    orig = cfg.get("original_max_position_embeddings") or rs.get("original_max_position_embeddings") \
        or cfg["max_position_embeddings"]
    if not isinstance(orig, int) or isinstance(orig, bool) or orig <= 0:
        bad("original_max_position_embeddings", "must be a positive integer")
    factor = rs.get("factor")
    if factor is None:
        factor = cfg["max_position_embeddings"] / orig
    attn = rs.get("attention_factor")
    if attn is None:
        attn = 1.0 if factor <= 1.0 else math.sqrt(1 + math.log(factor) / math.log(orig))
    for name, v in (("factor", factor), ("attention_factor", attn)):
        if not isinstance(v, (int, float)) or isinstance(v, bool) or not v > 0:
            bad("rope_scaling", f"longrope's {name} must be a positive number")
    cfg["longrope"] = {"short": [float(x) for x in rs["short_factor"]], "long": [float(x) for x in rs["long_factor"]],
                       "original": orig, "attention_factor": float(attn)}


def _windows(arch, cfg, bad, posint):
    """Each layer's sliding window (0: full attention), as the HF config
    classes derive them; None when no layer slides. Mistral's and Phi-3's
    sliding_window is every layer's; Qwen2's and Qwen3's, with
    use_sliding_window, the layers layer_types calls sliding_attention, by
    default those from max_window_layers on. Llama's config has none (HF's
    Llama ignores the key)."""
    L = cfg["num_hidden_layers"]
    lt = cfg.get("layer_types")
    if arch in ("qwen2", "qwen3") and lt is not None:
        if not isinstance(lt, list) or not all(isinstance(t, str) for t in lt):
            bad("layer_types", "must be a list of strings")
        if len(lt) != L:
            bad("layer_types", f"{len(lt)} entries for {L} layers")
        for i, t in enumerate(lt):
            if t not in ("full_attention", "sliding_attention"):
                bad("layer_types", f"layer {i} is {t!r}; only full_attention and sliding_attention are implemented")
    if arch in ("mistral", "phi3", "mixtral"):
        if cfg.get("sliding_window") is None:
            return None
        return [posint("sliding_window")] * L
    if arch in ("qwen2", "qwen3") and cfg.get("use_sliding_window"):
        cfg.setdefault("sliding_window", 4096)
        if cfg["sliding_window"] is None:
            return None
        w = posint("sliding_window")
        first = cfg.get("max_window_layers", 28)
        if first is None:
            first = 28
        if not isinstance(first, int) or isinstance(first, bool) or first < 0:
            bad("max_window_layers", "must be a non-negative integer")
        if lt is None:
            return [w if i >= first else 0 for i in range(L)]
        return [w if t == "sliding_attention" else 0 for t in lt]
    return None


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
        if cfg.get("moe") and cfg["moe"]["sparse"][i]:
            moe_torch.param_shapes(cfg, i, s)
        else:
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
        if not (cfg.get("moe") and cfg["moe"]["sparse"][i]):
            s[p + "mlp.gate_proj.weight"] = [I, C]
            s[p + "mlp.up_proj.weight"] = [I, C]
        if cfg.get("mlp_bias"):
            s[p + "mlp.gate_proj.bias"] = [I]
            s[p + "mlp.up_proj.bias"] = [I]
            s[p + "mlp.down_proj.bias"] = [C]
        if arch in ("qwen3", "qwen3_moe"):
            s[p + "self_attn.q_norm.weight"] = [D]
            s[p + "self_attn.k_norm.weight"] = [D]
    return s


def hf_order(cfg):
    """[(file tensor name, shape)] in the order of HF's state dict
    (embed_tokens, each layer, norm, lm_head): make_checkpoint.py's."""
    shapes = param_shapes(cfg)
    order = ["embed_tokens.weight"]
    for i in range(cfg["num_hidden_layers"]):
        p = f"layers.{i}."
        order += [n for n in shapes if n.startswith(p) and ".self_attn." in n]
        order += [n for n in shapes if n.startswith(p) and (".mlp." in n or ".block_sparse_moe." in n)]
        order += [p + "input_layernorm.weight", p + "post_attention_layernorm.weight"]
    order += ["norm.weight"] + (["lm_head.weight"] if "lm_head.weight" in shapes else [])
    assert sorted(order) == sorted(shapes), "hf_order misses a parameter"
    return [(n if n == "lm_head.weight" else "model." + n, shapes[n]) for n in order]


def open_model(model_dir, load=None, shapes_of=None):
    """{config_raw, config, weights (weights.MappedWeights: float32 on
    demand, names without "model."), sha256, dtype, weights_file,
    checkpoint}. Every header is checked here; no weight is converted.
    load and shapes_of: a family built on this one's load_config and
    param_shapes (gemma_torch), these by default."""
    if not os.path.isdir(model_dir):
        raise BadInput(f"{model_dir}: not a directory")
    raw_cfg, cfg = (load or load_config)(os.path.join(model_dir, "config.json"))
    ckpt = Checkpoint(model_dir)
    shapes = (shapes_of or param_shapes)(cfg)
    # A tied checkpoint may store the head too (checked below); the rotary
    # buffer older transformers saved is no parameter.
    files = ckpt.parameters(shapes, "model.", f"a {cfg['model_type']} parameter of this config",
                            ("lm_head.weight",) if cfg["tie_word_embeddings"] else (),
                            lambda n: n.endswith("rotary_emb.inv_freq"))
    where = os.path.join(model_dir, ckpt.weights_file)
    weights = MappedWeights(ckpt, files)
    if cfg["tie_word_embeddings"] and "lm_head.weight" in files:
        # A tied checkpoint that also stores the head: it must be the embedding.
        if not passes.same_rows(weights, "lm_head.weight", "embed_tokens.weight"):
            raise BadInput(f"{where}: tie_word_embeddings is true but lm_head.weight differs from embed_tokens.weight")
        del weights.files["lm_head.weight"]
    used = sorted({ckpt.dtype(t) for s, t in files.items() if s in shapes})
    return {"config_raw": raw_cfg, "config": cfg, "weights": weights, "sha256": ckpt.sha256(),
            "dtype": "+".join(used), "weights_file": ckpt.weights_file, "checkpoint": ckpt}


def load_model(model_dir):
    """open_model with every weight converted: "weights" is {name: float32
    array} (names without "model.")."""
    return converted(open_model(model_dir))


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


def inv_freq(cfg, dtype, long=False):
    """HF's rope init (default, _compute_llama3_parameters, or
    _compute_longrope_parameters with the short or long factors) in dtype
    (float32: HF's buffer exactly)."""
    dim, base = cfg["rotary_dim"], float(cfg["rope_theta"])
    lr = cfg.get("longrope")
    if lr is not None:
        ext = torch.tensor(lr["long" if long else "short"], dtype=dtype)
        return 1.0 / (ext * base ** (torch.arange(0, dim, 2, dtype=torch.int64).to(dtype) / dim))
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


class Llama(passes.Forward):
    """The block of the four families and their embeddings, RoPE and mask;
    probe sees every intermediate. The pass is passes.Forward's."""

    PREFIX, LAYERS, TIED_HEAD, NORM = "layers.", "num_hidden_layers", "embed_tokens.weight", "norm"

    def __init__(self, model, dtype, numerics=None):
        # numerics (emulate.py): its cache, kq_operand and kqv_operand
        # hooks; the Llama family has no GELU.
        super().__init__(model, dtype, numerics)
        cfg = self.cfg
        self.arch = cfg["model_type"]
        # RMSNorm, rope tables and softmax: HF computes them in float32 at
        # least; a float64 forward keeps float64.
        self.up = torch.float64 if dtype == torch.float64 else torch.float32
        self.C, self.H, self.Hkv = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"]
        self.D, self.I = cfg["head_dim"], cfg["intermediate_size"]
        self.eps = float(cfg["rms_norm_eps"])
        self.scaling = self.D ** -0.5
        self.inv_freq = inv_freq(cfg, self.up)
        lr = cfg.get("longrope")
        # longrope: the long factors for a forward whose last position is
        # past the pretrained context (HF's longrope_frequency_update: per
        # call, so a cache keeps the keys of earlier calls as they were
        # rotated), and cos and sin scaled by the attention factor.
        self.long_inv_freq = inv_freq(cfg, self.up, long=True) if lr else None
        self.rope_switch = lr["original"] if lr else None
        self.attention_scaling = lr["attention_factor"] if lr else 1.0

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
        # LlamaRotaryEmbedding.forward (Phi3RotaryEmbedding's dynamic update
        # for longrope: seq_len is the call's last position + 1).
        f = self.inv_freq
        if self.rope_switch is not None and int(positions.max()) + 1 > self.rope_switch:
            f = self.long_inv_freq
        f = f[None, :, None]
        pos = positions[None, None, :].to(self.up)
        freqs = torch.matmul(f, pos).transpose(1, 2)
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos(), emb.sin()
        if self.rope_switch is not None:
            cos, sin = cos * self.attention_scaling, sin * self.attention_scaling
        return cos.to(self.dtype), sin.to(self.dtype)  # [1,T,rot]

    def _rope(self, x, cos, sin):
        # apply_rotary_pos_emb; Phi-3's partial form passes the tail through.
        cos, sin = cos[:, None], sin[:, None]
        rot = cos.shape[-1]
        if rot == x.shape[-1]:
            return (x * cos) + (rotate_half(x) * sin)
        xr, xp = x[..., :rot], x[..., rot:]
        return torch.cat([(xr * cos) + (rotate_half(xr) * sin), xp], dim=-1)

    def final_norm(self):
        norm = self._t("norm.weight")
        return lambda x: self._rms(x, norm)[0]

    def start(self, s):
        """Checks, the embeddings and the rope tables and mask of s."""
        T, t0 = s.T, s.t0
        s.x = self._embed(s)
        s.probe(7, None, "embeddings", s.x[0])
        s.cos, s.sin = self._rope_tables(torch.arange(t0, t0 + T, dtype=torch.long))
        self._masks(s)
        return s

    def _embed(self, s):
        """s's token embeddings [1,T,C] in dtype, after checking its length
        and ids."""
        T, t0 = s.T, s.t0
        if t0 + T > self.cfg["max_position_embeddings"]:
            raise BadInput(f"sequence of {t0 + T} tokens exceeds max_position_embeddings "
                           f"{self.cfg['max_position_embeddings']}")
        V = self.w.shape("embed_tokens.weight")[0]
        if any(not 0 <= t < V for t in s.tokens):
            raise BadInput(f"token id out of range [0, {V})")
        # F.embedding's rows, gathered before the conversion (the same values).
        return torch.from_numpy(self.w.take("embed_tokens.weight", s.tokens)).to(self.dtype).unsqueeze(0)

    def _masks(self, s):
        """s.masks: HF's eager mask, 0 where key <= query (absolute),
        finfo.min elsewhere, added; a layer of window w sees only
        query − w < key (masking_utils' sliding_window_overlay). One mask
        for each window the layers have."""
        T, t0 = s.T, s.t0
        query = torch.arange(t0, t0 + T).unsqueeze(1)
        key = torch.arange(t0 + T).unsqueeze(0)
        s.masks = {}
        for w in set(self.cfg["windows"] or [0]):
            visible = (key <= query) & ((query - key < w) if w else True)
            s.masks[w] = torch.zeros(T, t0 + T, dtype=self.dtype).masked_fill(~visible, torch.finfo(self.dtype).min)

    def block(self, i, P, s):
        """Block i of s (P: the block's weights in dtype)."""
        H, Hkv, D = self.H, self.Hkv, self.D
        T, x, probe = s.T, s.x, s.probe
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
        if self.arch in ("qwen3", "qwen3_moe"):  # per-head RMSNorm over head_dim, before the transpose and RoPE
            q = self._rms(q, P[p + "self_attn.q_norm.weight"])
            k = self._rms(k, P[p + "self_attn.k_norm.weight"])
            probe(2, i, "q_norm", q[0].transpose(0, 1))
            probe(2, i, "k_norm", k[0].transpose(0, 1))
        q, k = q.transpose(1, 2), k.transpose(1, 2)
        q, k = self._rope(q, s.cos, s.sin), self._rope(k, s.cos, s.sin)
        probe(2, i, "q_rope", q[0])
        probe(2, i, "k_rope", k[0])
        k, v = self.cached(i, s, k, v)  # what the cache stores: k after RoPE and v, Hkv heads
        probe(3, i, "k_cache", k[0])
        probe(3, i, "v_cache", v[0])
        kr, vr = repeat_kv(k, H // Hkv), repeat_kv(v, H // Hkv)
        mask = s.masks[self.cfg["windows"][i] if self.cfg["windows"] else 0]
        o = self.attend(i, s, q, kr, vr, lambda qh, kh: torch.matmul(qh, kh.transpose(2, 3)) * self.scaling + mask,
                        lambda sc: F.softmax(sc, dim=-1, dtype=self.up).to(self.dtype))
        o = o.transpose(1, 2).contiguous().reshape(1, T, H * D)
        o = self._linear(P, o, p + "self_attn.o_proj")
        probe(5, i, "attn_out", o[0])
        x = x + o
        m = self._rms(x, P[p + "post_attention_layernorm.weight"])
        probe(1, i, "ffn_norm", m[0])
        if self.cfg.get("moe") and self.cfg["moe"]["sparse"][i]:
            y = moe_torch.sparse_ffn(self, i, P, m, probe)
            probe(6, i, "down", y[0])
            x = x + y
            probe(7, i, "block_out", x[0])
            s.x = x
            return
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


Forward = Llama


# ---------------------------------------------------------------- GGUF

def permute(w, n_head):
    """llama.cpp's converter: HF's halves -> interleaved pairs, per head."""
    rows = w.shape[0]
    return w.reshape(n_head, 2, rows // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def rope_freqs_llama3(cfg):
    """convert_hf_to_gguf.py LlamaModel.generate_extra_tensors: the factor
    llama.cpp divides each frequency by."""
    rs = cfg["rope_scaling"]
    base, dim = float(cfg["rope_theta"]), cfg["rotary_dim"]
    freqs = 1.0 / (base ** (np.arange(0, dim, 2, dtype=np.float32) / dim))
    factor, lo, hi = rs["factor"], rs["low_freq_factor"], rs["high_freq_factor"]
    old = rs["original_max_position_embeddings"]
    lo_wavelen, hi_wavelen = old / lo, old / hi
    out = []
    for f in freqs:
        wavelen = 2 * math.pi / f
        if wavelen < hi_wavelen:
            out.append(1)
        elif wavelen > lo_wavelen:
            out.append(factor)
        else:
            smooth = (old / wavelen - lo) / (hi - lo)
            out.append(1 / ((1 - smooth) / factor + smooth))
    return np.array(out, dtype=np.float32)


def gguf_layout(cfg, w, permute_qk=True):
    """(metadata [(key, value)], tensors [(name, array)]) of cfg's
    architecture as llama.cpp's converter (convert_hf_to_gguf.py) writes
    it, for gguf_write.py (w: {HF name without "model.": float32 array}):
      - names: token_embd, blk.N.{attn_norm, attn_q, attn_k, attn_v,
        attn_output, ffn_norm, ffn_gate, ffn_up, ffn_down}, output_norm,
        output (absent when tied); qwen2 attn_{q,k,v}.bias; qwen3
        attn_q_norm, attn_k_norm; phi3 attn_qkv (fused) and ffn_up holding
        gate_up_proj (gate rows, then up rows);
      - llama only: the rows of q and k PERMUTED from HF's rotate_half
        halves into interleaved pairs (llama.cpp's "normal" rope):
        w.reshape(n_head, 2, rows//n_head//2, cols).swapaxes(1, 2).reshape(rows, cols),
        with n_head_kv for k (permute_qk False leaves them in HF order: a
        deliberately wrong file). qwen2/qwen3/phi3 use "neox" rope and are
        not permuted;
      - llama with rope_scaling llama3: rope_freqs.weight, one factor per
        rotary pair (1, factor, or 1/((1-smooth)/factor + smooth)), by
        which llama.cpp divides each frequency;
      - phi3 with longrope: rope_factors_long.weight and
        rope_factors_short.weight (F32, one factor per rotary pair) after
        the global tensors, the pretrained context as
        rope.scaling.original_context_length and the attention factor as
        rope.scaling.attn_factor (convert_hf_to_gguf.py's Phi3MiniModel).
    What the layout cannot say (another rope scaling, an active sliding
    window, llama's biases) is a BadInput."""
    arch = cfg["model_type"]
    C, H, Hkv, D = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]
    rs = cfg.get("rope_scaling")
    kind = None if rs is None else rs.get("rope_type", rs.get("type"))
    # llama.cpp converts Mistral as llama (its q/k permuted alike).
    llama_like = arch in ("llama", "mistral")
    longrope = kind in ("longrope", "su") and arch == "phi3"
    if (kind not in (None, "default", "llama3") and not longrope) or (kind == "llama3" and not llama_like):
        raise BadInput(f"rope_scaling {kind!r} is not written for {arch}")
    windows = cfg["windows"] or [0]
    if len(set(windows)) > 1:
        raise BadInput(f"{arch} with sliding windows on some layers only ({windows}) is not written: "
                       "llama.cpp's layout has one window for every layer")
    if cfg.get("mlp_bias") or (arch != "qwen2" and cfg.get("attention_bias")):
        raise BadInput("attention_bias/mlp_bias are not written")
    a = "llama" if llama_like else arch
    if cfg.get("moe"):
        a = moe_torch.gguf_arch(cfg)
        llama_like = a == "llama"
    kv = [("general.architecture", a), (f"{a}.vocab_size", cfg["vocab_size"]), (f"{a}.context_length", cfg["max_position_embeddings"]),
          (f"{a}.embedding_length", C), (f"{a}.block_count", cfg["num_hidden_layers"]),
          (f"{a}.feed_forward_length", cfg["intermediate_size"]),
          (f"{a}.rope.dimension_count", cfg["rotary_dim"]),
          (f"{a}.attention.head_count", H), (f"{a}.attention.head_count_kv", Hkv),
          (f"{a}.attention.layer_norm_rms_epsilon", float(cfg["rms_norm_eps"])),
          (f"{a}.rope.freq_base", float(cfg["rope_theta"]))]
    if D != C // H:
        kv += [(f"{a}.attention.key_length", D), (f"{a}.attention.value_length", D)]
    if windows[0]:
        kv.append((f"{a}.attention.sliding_window", windows[0]))
    if cfg.get("moe"):
        kv += moe_torch.gguf_keys(cfg, a)
    if longrope:
        kv += [("phi3.rope.scaling.original_context_length", cfg["longrope"]["original"]),
               ("phi3.rope.scaling.attn_factor", float(cfg["longrope"]["attention_factor"]))]
    elif arch == "phi3":
        kv.append(("phi3.rope.scaling.original_context_length",
                   cfg.get("original_max_position_embeddings", cfg["max_position_embeddings"])))
    t = [("token_embd.weight", w["embed_tokens.weight"]), ("output_norm.weight", w["norm.weight"])]
    if "lm_head.weight" in w:
        t.append(("output.weight", w["lm_head.weight"]))
    if kind == "llama3":
        t.append(("rope_freqs.weight", rope_freqs_llama3(cfg)))
    if longrope:
        t += [(f"rope_factors_{n}.weight", np.asarray(cfg["longrope"][n], np.float32)) for n in ("long", "short")]
    for i in range(cfg["num_hidden_layers"]):
        p, b = f"layers.{i}.", f"blk.{i}."
        t.append((b + "attn_norm.weight", w[p + "input_layernorm.weight"]))
        if arch == "phi3":
            t.append((b + "attn_qkv.weight", w[p + "self_attn.qkv_proj.weight"]))
        else:
            q, k = w[p + "self_attn.q_proj.weight"], w[p + "self_attn.k_proj.weight"]
            if llama_like and permute_qk:
                q, k = permute(q, H), permute(k, Hkv)
            t += [(b + "attn_q.weight", q), (b + "attn_k.weight", k),
                  (b + "attn_v.weight", w[p + "self_attn.v_proj.weight"])]
            if arch == "qwen2":
                t += [(b + f"attn_{n}.bias", w[p + f"self_attn.{n}_proj.bias"]) for n in "qkv"]
            if arch in ("qwen3", "qwen3_moe"):
                t += [(b + "attn_q_norm.weight", w[p + "self_attn.q_norm.weight"]),
                      (b + "attn_k_norm.weight", w[p + "self_attn.k_norm.weight"])]
        t.append((b + "attn_output.weight", w[p + "self_attn.o_proj.weight"]))
        t.append((b + "ffn_norm.weight", w[p + "post_attention_layernorm.weight"]))
        if cfg.get("moe"):
            t += moe_torch.gguf_tensors(cfg, w, i)
            continue
        if arch == "phi3":
            t.append((b + "ffn_up.weight", w[p + "mlp.gate_up_proj.weight"]))
        else:
            t += [(b + "ffn_gate.weight", w[p + "mlp.gate_proj.weight"]),
                  (b + "ffn_up.weight", w[p + "mlp.up_proj.weight"])]
        t.append((b + "ffn_down.weight", w[p + "mlp.down_proj.weight"]))
    return kv, t
