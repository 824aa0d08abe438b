"""Gemma 1, Gemma 2 and Gemma 3 text (model_type gemma, gemma2, gemma3_text)
written out op by op in torch, mirroring Hugging Face GemmaForCausalLM,
Gemma2ForCausalLM and Gemma3ForCausalLM in eval mode with the eager
attention, on llama_torch.Llama's pass (its cache, mask and probes). What
Gemma changes (docs/add-a-family.md, model/llama_gemma.go):

  - RMSNorm: x·rsqrt(mean(x²)+eps)·(1+w), in float32 at least, cast after
    the multiply; Gemma 2 and 3: four norms a block (input, post-attention
    before the residual add, pre-feedforward, post-feedforward before the
    add); Gemma 1: Llama's two (input, post_attention_layernorm before the
    FFN);
  - GeGLU: down(gelu_tanh(gate)·up) (hidden_activation gelu_pytorch_tanh;
    Gemma 1's hidden_act too, which newer HF versions read instead);
  - embeddings × √hidden_size: Gemma 1's and 2's torch.tensor(hidden**0.5,
    dtype=the activations'), Gemma 3's a float32 buffer cast to the
    activations' dtype;
  - scores × query_pre_attn_scalar^-½ (Gemma 1: head_dim^-½, no soft-cap,
    no window); Gemma 2 soft-caps them,
    tanh(s/c)·c, before the mask, and the logits by
    final_logit_softcapping (Gemma 3 applies the final cap if set and
    never reads attn_logit_softcapping);
  - Gemma 3: per-head q_norm/k_norm ((1+w) form) before RoPE; sliding
    layers rotate with rope_local_base_freq (default RoPE), the others
    with rope_theta and rope_scaling (linear: inv_freq / factor).
  - Sliding layers: layer_types, else Gemma 2's even layers, Gemma 3's all
    but every sliding_window_pattern-th (default 6).

Probes as llama_torch's, plus (Gemma 2 and 3) at checkpoint 1
post_attn_norm [T,C] (after o_proj's norm, before the residual add) and
post_ffn_norm [T,C] (after down's norm); ffn_norm is
pre_feedforward_layernorm's output (Gemma 1's post_attention_layernorm), act
gelu_tanh(gate)·up, logits after the final soft-cap.
"""


import numpy as np

import torch
import torch.nn.functional as F

import llama_torch
from llama_torch import repeat_kv
from safetensors_io import BadInput
from checkpoint import converted, read_json_object
from config_fields import Fields

ARCHS = ("gemma", "gemma2", "gemma3_text")
GGUF_ARCHS = ()
CONTEXT = "max_position_embeddings"
# llamacpp-cpu: llama.cpp's GELU through ggml's float16 table (its GeGLU),
# what its Gemma graph computes otherwise than HF beyond float32 rounding.
EMULATE = ("f16-kv", "llamacpp-cpu")
CORPUS = llama_torch.CORPUS
TOKENIZER_FILES = llama_torch.TOKENIZER_FILES
TINY_MODELS = {"gemma": "tiny-llama-gemma", "gemma2": "tiny-llama-gemma2", "gemma3_text": "tiny-llama-gemma3"}
reach = llama_torch.reach
eos_ids = llama_torch.eos_ids

# GemmaConfig's, Gemma2Config's and Gemma3TextConfig's defaults for keys a
# hub config.json may omit.
_DEFAULTS = {
    "gemma": {"rms_norm_eps": 1e-6, "rope_theta": 10000.0, "max_position_embeddings": 8192, "head_dim": 256,
              "num_key_value_heads": 16, "tie_word_embeddings": True, "attention_bias": False,
              "hidden_act": "gelu_pytorch_tanh", "hidden_activation": "gelu_pytorch_tanh", "use_adarms": False,
              "bos_token_id": 2, "eos_token_id": 1},
    "gemma2": {"rms_norm_eps": 1e-6, "rope_theta": 10000.0, "max_position_embeddings": 8192, "head_dim": 256,
               "num_key_value_heads": 4, "tie_word_embeddings": True, "attention_bias": False,
               "hidden_activation": "gelu_pytorch_tanh", "query_pre_attn_scalar": 256, "sliding_window": 4096,
               "final_logit_softcapping": 30.0, "attn_logit_softcapping": 50.0, "bos_token_id": 2,
               "eos_token_id": 1},
    "gemma3_text": {"rms_norm_eps": 1e-6, "rope_theta": 1_000_000.0, "max_position_embeddings": 131072,
                    "head_dim": 256, "num_key_value_heads": 4, "tie_word_embeddings": True,
                    "attention_bias": False, "hidden_activation": "gelu_pytorch_tanh",
                    "query_pre_attn_scalar": 256, "sliding_window": 4096, "final_logit_softcapping": None,
                    "attn_logit_softcapping": None, "rope_local_base_freq": 10000.0,
                    "sliding_window_pattern": 6, "bos_token_id": 2, "eos_token_id": 1},
}


def make_tiny(arch, out):
    import make_tiny_llama
    make_tiny_llama.write_model(TINY_ARCH[arch], out, make_tiny_llama.SEED)


# make_tiny_llama's --arch of each architecture.
TINY_ARCH = {"gemma": "gemma", "gemma2": "gemma2", "gemma3_text": "gemma3"}


def load_config(path):
    return load_config_dict(read_json_object(path), path)


def load_config_dict(raw, path):
    """(verbatim config, config with defaults and derived fields). Every
    setting this forward does not implement is a BadInput naming it."""
    if not isinstance(raw, dict):
        raise BadInput(f"{path}: not a JSON object")
    arch = raw.get("model_type")
    if arch not in ARCHS:
        raise BadInput(f"{path}: field 'model_type' = {arch!r}: only {', '.join(ARCHS)} are supported")
    cfg = dict(_DEFAULTS[arch])
    cfg.update({k: v for k, v in raw.items() if v is not None or k in ("final_logit_softcapping",
                                                                      "attn_logit_softcapping")})

    fields = Fields(cfg, path)
    bad, posint, posnum = fields.bad, fields.posint, fields.posnum

    for f in ("vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
              "max_position_embeddings", "num_key_value_heads", "head_dim"):
        posint(f)
    if cfg["num_attention_heads"] % cfg["num_key_value_heads"]:
        bad("num_key_value_heads", f"does not divide num_attention_heads {cfg['num_attention_heads']}")
    if cfg["head_dim"] % 2:
        bad("head_dim", "is odd: RoPE rotates pairs")
    cfg["rotary_dim"] = cfg["head_dim"]
    if cfg["hidden_activation"] != "gelu_pytorch_tanh":
        bad("hidden_activation", "only gelu_pytorch_tanh (GeGLU) is implemented")
    for f in ("rms_norm_eps", "rope_theta"):
        posnum(f)
    # Gemma 1 reads use_adarms and no use_bidirectional_attention.
    flags = ("use_adarms",) if arch == "gemma" else ("use_bidirectional_attention",)
    for f in ("tie_word_embeddings", "attention_bias") + flags:
        if f in cfg and not isinstance(cfg[f], bool):
            bad(f, "must be true or false")
    if cfg["attention_bias"]:
        bad("attention_bias", "Gemma's attention biases are not implemented")
    if arch == "gemma":
        return raw, _gemma1(raw, cfg, bad)
    posint("sliding_window")
    posnum("query_pre_attn_scalar")
    if cfg.get("use_bidirectional_attention"):
        bad("use_bidirectional_attention", "not implemented (causal attention only)")
    if "rope_parameters" in raw and raw["rope_parameters"] is not None:
        bad("rope_parameters", "not implemented (rope_theta, rope_local_base_freq and rope_scaling are)")
    caps = {}
    for f in ("final_logit_softcapping", "attn_logit_softcapping"):
        caps[f] = None if cfg.get(f) is None else posnum(f)
    cfg["final_softcap"] = caps["final_logit_softcapping"]
    # HF's Gemma 3 attention never reads attn_logit_softcapping.
    cfg["attn_softcap"] = caps["attn_logit_softcapping"] if arch == "gemma2" else None
    cfg["local_rope_theta"] = posnum("rope_local_base_freq") if arch == "gemma3_text" else None
    cfg["rope_linear"] = _rope_linear(cfg, bad)
    L = cfg["num_hidden_layers"]
    lt = cfg.get("layer_types")
    if lt is not None:
        if not isinstance(lt, list) or not all(isinstance(t, str) for t in lt):
            bad("layer_types", "must be a list of strings")
        if len(lt) != L:
            bad("layer_types", f"{len(lt)} entries for {L} layers")
        for i, t in enumerate(lt):
            if t not in ("full_attention", "sliding_attention"):
                bad("layer_types", f"layer {i} is {t!r}; only full_attention and sliding_attention are implemented")
        sliding = [t == "sliding_attention" for t in lt]
    else:
        pattern = posint("sliding_window_pattern") if arch == "gemma3_text" else 2
        sliding = [bool((i + 1) % pattern) for i in range(L)]
    cfg["windows"] = [cfg["sliding_window"] if s else 0 for s in sliding]
    _eos(cfg)
    return raw, cfg


def _gemma1(raw, cfg, bad):
    """GemmaConfig's reading. HF's GemmaMLP took its activation from
    hidden_activation (null: gelu_pytorch_tanh), ignoring hidden_act, then
    (modular_gemma.py) from hidden_act, ignoring hidden_activation: only a
    config both read as GeGLU is accepted (the hub's legacy hidden_act
    "gelu" is the exact erf GELU to the newer versions). Gemma 1 reads no
    query_pre_attn_scalar (its scale is head_dim^-1/2), soft-cap, window
    or layer_types."""
    if cfg["hidden_act"] != "gelu_pytorch_tanh":
        bad("hidden_act", "not implemented: HF's GemmaMLP computes it since modular_gemma.py (before, it read "
                          "hidden_activation instead); only gelu_pytorch_tanh (GeGLU), which both read alike")
    if cfg["use_adarms"]:
        bad("use_adarms", "true is not implemented (adaptive RMSNorm)")
    if "rope_parameters" in raw and raw["rope_parameters"] is not None:
        bad("rope_parameters", "not implemented (rope_theta and rope_scaling are)")
    cfg["query_pre_attn_scalar"] = cfg["head_dim"]
    cfg["final_softcap"] = cfg["attn_softcap"] = cfg["local_rope_theta"] = None
    cfg["rope_linear"] = _rope_linear(cfg, bad)
    cfg["windows"] = None
    _eos(cfg)
    return cfg


def _rope_linear(cfg, bad):
    """rope_scaling: none, default or linear (its factor divides inv_freq)."""
    rs = cfg.get("rope_scaling")
    if rs is None:
        return None
    if not isinstance(rs, dict):
        bad("rope_scaling", "must be null or an object")
    kind = rs.get("rope_type", rs.get("type"))
    if kind == "linear":
        v = rs.get("factor")
        if not isinstance(v, (int, float)) or isinstance(v, bool) or not v > 0:
            bad("rope_scaling", "linear needs a positive factor")
        return float(v)
    if kind != "default":
        bad("rope_scaling", f"type {kind!r} is not implemented for Gemma (only linear)")
    return None


def _eos(cfg):
    eos = cfg.get("eos_token_id")
    cfg["eos_token_ids"] = [] if eos is None else (list(eos) if isinstance(eos, list) else [eos])


def param_shapes(cfg):
    """{HF name without "model.": shape}, lm_head included unless tied."""
    C, V, I = cfg["hidden_size"], cfg["vocab_size"], cfg["intermediate_size"]
    H, Hkv, D = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]
    s = {"embed_tokens.weight": [V, C], "norm.weight": [C]}
    if not cfg["tie_word_embeddings"]:
        s["lm_head.weight"] = [V, C]
    for i in range(cfg["num_hidden_layers"]):
        p = f"layers.{i}."
        for n in _norms(cfg):
            s[p + n + ".weight"] = [C]
        for n, rows in (("q", H * D), ("k", Hkv * D), ("v", Hkv * D)):
            s[p + f"self_attn.{n}_proj.weight"] = [rows, C]
        s[p + "self_attn.o_proj.weight"] = [C, H * D]
        if cfg["model_type"] == "gemma3_text":
            s[p + "self_attn.q_norm.weight"] = [D]
            s[p + "self_attn.k_norm.weight"] = [D]
        s[p + "mlp.gate_proj.weight"] = [I, C]
        s[p + "mlp.up_proj.weight"] = [I, C]
        s[p + "mlp.down_proj.weight"] = [C, I]
    return s


def _norms(cfg):
    """A block's norms, in HF's order: Gemma 1 has Llama's two."""
    if cfg["model_type"] == "gemma":
        return ("input_layernorm", "post_attention_layernorm")
    return ("input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm", "post_feedforward_layernorm")


def hf_order(cfg):
    """[(file tensor name, shape)] in HF's state-dict order."""
    shapes = param_shapes(cfg)
    order = ["embed_tokens.weight"]
    for i in range(cfg["num_hidden_layers"]):
        p = f"layers.{i}."
        order += [n for n in shapes if n.startswith(p) and ".self_attn." in n]
        order += [n for n in shapes if n.startswith(p) and ".mlp." in n]
        order += [p + n + ".weight" for n in _norms(cfg)]
    order += ["norm.weight"] + (["lm_head.weight"] if "lm_head.weight" in shapes else [])
    assert sorted(order) == sorted(shapes), "hf_order misses a parameter"
    return [(n if n == "lm_head.weight" else "model." + n, shapes[n]) for n in order]


def open_model(model_dir):
    return llama_torch.open_model(model_dir, load_config, param_shapes)


def load_model(model_dir):
    return converted(open_model(model_dir))


class Gemma(llama_torch.Llama):
    """Gemma's embeddings, block and logits on the Llama family's pass."""

    def __init__(self, model, dtype, numerics=None):
        super().__init__(model, dtype, numerics)
        cfg = self.cfg
        self.gemma3 = cfg["model_type"] == "gemma3_text"
        # Gemma 2 and 3 norm the attention's and the FFN's outputs too.
        self.sandwich = cfg["model_type"] != "gemma"
        self.scaling = cfg["query_pre_attn_scalar"] ** -0.5
        plain = dict(cfg, rope_scaling=None, longrope=None)
        self.inv_freq = llama_torch.inv_freq(plain, self.up)
        if cfg["rope_linear"] is not None:
            self.inv_freq = self.inv_freq / cfg["rope_linear"]  # _compute_linear_scaling_rope_parameters
        self.local_inv_freq = None
        if cfg["local_rope_theta"] is not None:
            self.local_inv_freq = llama_torch.inv_freq(dict(plain, rope_theta=cfg["local_rope_theta"]), self.up)

    def _rms(self, x, weight):
        # Gemma2RMSNorm / Gemma3RMSNorm: (1 + w) in float32, cast after.
        h = x.to(self.up)
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
        return (h * (1.0 + weight.to(self.up))).to(x.dtype)

    def _tables(self, f, positions):
        pos = positions[None, None, :].to(self.up)
        freqs = torch.matmul(f[None, :, None], pos).transpose(1, 2)
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos().to(self.dtype), emb.sin().to(self.dtype)

    def _normalizer(self):
        C = self.cfg["hidden_size"]
        if self.gemma3:  # Gemma3TextScaledWordEmbedding's buffer: float32, cast to the weights' dtype
            return torch.tensor(C ** 0.5).to(self.dtype)
        return torch.tensor(C ** 0.5, dtype=self.dtype)

    def logits_out(self, logits):
        c = self.cfg["final_softcap"]
        if c is None:
            return logits
        return torch.tanh(logits / c) * c

    def start(self, s):
        T, t0 = s.T, s.t0
        s.x = self._embed(s) * self._normalizer()
        s.probe(7, None, "embeddings", s.x[0])
        positions = torch.arange(t0, t0 + T, dtype=torch.long)
        s.cos, s.sin = self._tables(self.inv_freq, positions)
        if self.local_inv_freq is not None:
            s.cos_local, s.sin_local = self._tables(self.local_inv_freq, positions)
        self._masks(s)
        return s

    def block(self, i, P, s):
        H, Hkv, D = self.H, self.Hkv, self.D
        T, x, probe = s.T, s.x, s.probe
        p = f"layers.{i}."
        window = self.cfg["windows"][i] if self.cfg["windows"] else 0
        a = self._rms(x, P[p + "input_layernorm.weight"])
        probe(1, i, "attn_norm", a[0])
        q = self._linear(P, a, p + "self_attn.q_proj").view(1, T, H, D)
        k = self._linear(P, a, p + "self_attn.k_proj").view(1, T, Hkv, D)
        v = self._linear(P, a, p + "self_attn.v_proj").view(1, T, Hkv, D).transpose(1, 2)
        probe(2, i, "q", q[0].transpose(0, 1))
        probe(2, i, "k", k[0].transpose(0, 1))
        probe(2, i, "v", v[0])
        if self.gemma3:
            q = self._rms(q, P[p + "self_attn.q_norm.weight"])
            k = self._rms(k, P[p + "self_attn.k_norm.weight"])
            probe(2, i, "q_norm", q[0].transpose(0, 1))
            probe(2, i, "k_norm", k[0].transpose(0, 1))
        q, k = q.transpose(1, 2), k.transpose(1, 2)
        cos, sin = s.cos, s.sin
        if self.local_inv_freq is not None and window:
            cos, sin = s.cos_local, s.sin_local
        q, k = self._rope(q, cos, sin), self._rope(k, cos, sin)
        probe(2, i, "q_rope", q[0])
        probe(2, i, "k_rope", k[0])
        k, v = self.cached(i, s, k, v)
        probe(3, i, "k_cache", k[0])
        probe(3, i, "v_cache", v[0])
        kr, vr = repeat_kv(k, H // Hkv), repeat_kv(v, H // Hkv)
        cap, mask = self.cfg["attn_softcap"], s.masks[window]

        def scores(qh, kh):
            sc = torch.matmul(qh, kh.transpose(2, 3)) * self.scaling
            if cap is not None:
                sc = sc / cap
                sc = torch.tanh(sc)
                sc = sc * cap
            return sc + mask
        o = self.attend(i, s, q, kr, vr, scores, lambda sc: F.softmax(sc, dim=-1, dtype=self.up).to(self.dtype))
        o = o.transpose(1, 2).contiguous().reshape(1, T, H * D)
        o = self._linear(P, o, p + "self_attn.o_proj")
        probe(5, i, "attn_out", o[0])
        if self.sandwich:
            o = self._rms(o, P[p + "post_attention_layernorm.weight"])
            probe(1, i, "post_attn_norm", o[0])
        x = x + o
        m = self._rms(x, P[p + ("pre_feedforward_layernorm.weight" if self.sandwich else "post_attention_layernorm.weight")])
        probe(1, i, "ffn_norm", m[0])
        g = self._linear(P, m, p + "mlp.gate_proj")
        u = self._linear(P, m, p + "mlp.up_proj")
        probe(6, i, "gate", g[0])
        probe(6, i, "up", u[0])
        # An engine's GELU (emulate.py's llamacpp-cpu: ggml's float16
        # table) where numerics give one; HF's tanh GELU otherwise.
        act = F.gelu(g, approximate="tanh") if self.numerics is None else self.numerics.gelu(g)
        h = act * u
        probe(6, i, "act", h[0])
        y = self._linear(P, h, p + "mlp.down_proj")
        probe(6, i, "down", y[0])
        if self.sandwich:
            y = self._rms(y, P[p + "post_feedforward_layernorm.weight"])
            probe(1, i, "post_ffn_norm", y[0])
        x = x + y
        probe(7, i, "block_out", x[0])
        s.x = x


Forward = Gemma


# ---------------------------------------------------------------- GGUF

# llama.cpp's architecture of each (gemma3_text is its gemma3).
GGUF_ARCH = {"gemma": "gemma", "gemma2": "gemma2", "gemma3_text": "gemma3"}
# llama.cpp's hard-coded rules: sliding layers i % pattern < pattern - 1
# (Gemma 1: none), and Gemma 3's local layers on base 10000.
LLAMACPP_PATTERN = {"gemma": None, "gemma2": 2, "gemma3_text": 6}
LLAMACPP_LOCAL_BASE = 10000.0
# The layer counts llama.cpp takes for a 27B (scale by n_embd/n_head);
# Gemma 1's scale is always 1/sqrt(head_dim).
LLAMACPP_27B_LAYERS = {"gemma": None, "gemma2": 46, "gemma3_text": 62}


def gguf_writable(cfg):
    """Refuses (BadInput) what llama.cpp's Gemma layout cannot say: it
    stores no query_pre_attn_scalar (it scales by 1/sqrt(head_dim), or
    by 1/sqrt(hidden/heads) for a 27B), no window pattern and no local
    rope base (both fixed per architecture)."""
    arch = cfg["model_type"]
    C, H, D, L = cfg["hidden_size"], cfg["num_attention_heads"], cfg["head_dim"], cfg["num_hidden_layers"]
    q = cfg["query_pre_attn_scalar"]
    if not (q == D or (L == LLAMACPP_27B_LAYERS[arch] and q == C // H)):
        raise BadInput(f"{arch} with query_pre_attn_scalar {q} is not written: llama.cpp scales by "
                       f"1/sqrt(head_dim {D}) (or hidden/heads for a 27B) and stores no such key")
    n = LLAMACPP_PATTERN[arch]
    w = cfg.get("sliding_window")
    want = None if n is None else [w if i % n < n - 1 else 0 for i in range(L)]
    if cfg["windows"] != want:
        raise BadInput(f"{arch} with windows {cfg['windows']} is not written: llama.cpp slides every layer "
                       f"but each {n}th ({want})")
    if arch == "gemma2" and (cfg["attn_softcap"] is None or cfg["final_softcap"] is None):
        raise BadInput("gemma2 without a soft-cap is not written: llama.cpp reads an absent soft-cap key "
                       "as its default (50, 30)")
    if cfg["local_rope_theta"] not in (None, LLAMACPP_LOCAL_BASE):
        raise BadInput(f"gemma3 with rope_local_base_freq {cfg['local_rope_theta']} is not written: "
                       f"llama.cpp's local layers rotate on base {LLAMACPP_LOCAL_BASE:g}")


def gguf_layout(cfg, w, permute_qk=True):
    """(metadata, tensors) as llama.cpp's converter (Gemma2Model,
    Gemma3Model; GemmaModel for Gemma 1) writes them: every norm weight
    stored as w + 1 (here in float32, from the float32 weights),
    post_attention_norm and post_ffw_norm (not Gemma 1's),
    Gemma 3's attn_q_norm/attn_k_norm; the soft-caps, window (not Gemma
    1's) and linear rope scaling as keys. permute_qk has no
    effect (Gemma's rope is neox)."""
    gguf_writable(cfg)
    a = GGUF_ARCH[cfg["model_type"]]
    C, H, Hkv, D = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]
    # The Llama family's keys (llama_torch.gguf_layout's, which Go's
    # convert writes alike), then Gemma's.
    kv = [("general.architecture", a), (f"{a}.vocab_size", cfg["vocab_size"]),
          (f"{a}.context_length", cfg["max_position_embeddings"]),
          (f"{a}.embedding_length", C), (f"{a}.block_count", cfg["num_hidden_layers"]),
          (f"{a}.feed_forward_length", cfg["intermediate_size"]), (f"{a}.rope.dimension_count", D),
          (f"{a}.attention.head_count", H), (f"{a}.attention.head_count_kv", Hkv),
          (f"{a}.attention.layer_norm_rms_epsilon", float(cfg["rms_norm_eps"])),
          (f"{a}.rope.freq_base", float(cfg["rope_theta"]))]
    if D != C // H:
        kv += [(f"{a}.attention.key_length", D), (f"{a}.attention.value_length", D)]
    sandwich = cfg["model_type"] != "gemma"
    if sandwich:
        kv.append((f"{a}.attention.sliding_window", cfg["sliding_window"]))
    if cfg["attn_softcap"] is not None:
        kv.append((f"{a}.attn_logit_softcapping", float(cfg["attn_softcap"])))
    if cfg["final_softcap"] is not None:
        kv.append((f"{a}.final_logit_softcapping", float(cfg["final_softcap"])))
    if cfg["rope_linear"] is not None:
        kv += [(f"{a}.rope.scaling.type", "linear"), (f"{a}.rope.scaling.factor", float(cfg["rope_linear"]))]

    def norm(name):
        return (w[name] + np.float32(1)).astype(np.float32)

    t = [("token_embd.weight", w["embed_tokens.weight"]), ("output_norm.weight", norm("norm.weight"))]
    if "lm_head.weight" in w:
        t.append(("output.weight", w["lm_head.weight"]))
    for i in range(cfg["num_hidden_layers"]):
        p, b = f"layers.{i}.", f"blk.{i}."
        t.append((b + "attn_norm.weight", norm(p + "input_layernorm.weight")))
        t += [(b + f"attn_{n}.weight", w[p + f"self_attn.{n}_proj.weight"]) for n in "qkv"]
        if cfg["model_type"] == "gemma3_text":
            t += [(b + "attn_q_norm.weight", norm(p + "self_attn.q_norm.weight")),
                  (b + "attn_k_norm.weight", norm(p + "self_attn.k_norm.weight"))]
        t.append((b + "attn_output.weight", w[p + "self_attn.o_proj.weight"]))
        if sandwich:
            t.append((b + "post_attention_norm.weight", norm(p + "post_attention_layernorm.weight")))
            t.append((b + "ffn_norm.weight", norm(p + "pre_feedforward_layernorm.weight")))
        else:
            t.append((b + "ffn_norm.weight", norm(p + "post_attention_layernorm.weight")))
        t += [(b + "ffn_gate.weight", w[p + "mlp.gate_proj.weight"]), (b + "ffn_up.weight", w[p + "mlp.up_proj.weight"]),
              (b + "ffn_down.weight", w[p + "mlp.down_proj.weight"])]
        if sandwich:
            t.append((b + "post_ffw_norm.weight", norm(p + "post_feedforward_layernorm.weight")))
    return kv, t
