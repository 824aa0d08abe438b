"""GPT-2 written out op by op in torch, mirroring Hugging Face
GPT2LMHeadModel in eval mode (docs/spec.md section 1) down to the op choice
where that changes rounding, with a probe at every checkpoint tensor.
"""

import math
import os
import re

import numpy as np
import torch
import torch.nn.functional as F

import gguf_io
from gpt2_tokenizer import GPT2Tokenizer
from checkpoint import Checkpoint, converted, read_json_object
import passes
from safetensors_io import BadInput
from weights import MappedWeights, is_matrix, round_f16

EOT = 50256  # <|endoftext|>, GPT-2's eos and bos

# What the generic tools read of this family (families.py).
ARCHS = ("gpt2",)
GGUF_ARCHS = ("gpt2",)  # llama.cpp's gpt2 layout (load_gguf)
CONTEXT = "n_positions"
EMULATE = ("llamacpp-cpu", "llamacpp-cpu-f16kv", "f16-kv")
CORPUS = None
TOKENIZER_FILES = "vocab.json + merges.txt, or a GGUF's tokenizer.ggml.* keys"
TINY_MODELS = {"gpt2": "tiny-gpt2"}  # testdata's, make_tiny's


def eos_ids(cfg):
    return [cfg["eos_token_id"] if isinstance(cfg["eos_token_id"], int) else EOT]


def make_tiny(arch, out):
    import make_tiny_model
    make_tiny_model.write_model(out, **make_tiny_model.COMMITTED)


# GPT2Config defaults for keys a hub config.json may omit.
CONFIG_DEFAULTS = {
    "vocab_size": 50257, "n_positions": 1024, "n_embd": 768, "n_layer": 12, "n_head": 12,
    "n_inner": None, "activation_function": "gelu_new", "layer_norm_epsilon": 1e-5,
    "scale_attn_weights": True, "scale_attn_by_inverse_layer_idx": False,
    "reorder_and_upcast_attn": False, "add_cross_attention": False, "eos_token_id": EOT,
}


def load_config(path):
    return load_config_dict(read_json_object(path), path)


def load_config_dict(raw, path):
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


def open_model(model_dir):
    """{config_raw, config, weights (weights.Weights: float32 on demand,
    names without "transformer."), sha256, dtype, weights_file, tokenizer}.
    model_dir may also be a GGUF file (llama.cpp's gpt2 layout), whose
    weights are dequantised here. Every header is checked here."""
    if model_dir.endswith(".gguf") and os.path.isfile(model_dir):
        return load_gguf(model_dir)
    if not os.path.isdir(model_dir):
        raise BadInput(f"{model_dir}: not a directory")
    raw_cfg, cfg = load_config(os.path.join(model_dir, "config.json"))
    ckpt = Checkpoint(model_dir)
    shapes = param_shapes(cfg)
    files = ckpt.parameters(shapes, "transformer.", "a GPT-2 parameter", ("lm_head.weight",), _BUFFER.match)
    where = os.path.join(model_dir, ckpt.weights_file)
    weights = MappedWeights(ckpt, files)
    if "lm_head.weight" in files:
        if not passes.same_rows(weights, "lm_head.weight", "wte.weight"):
            raise BadInput(f"{where}: lm_head.weight differs from wte.weight; only a tied LM head is supported")
        del weights.files["lm_head.weight"]
    used = sorted({ckpt.dtype(t) for n, t in files.items() if n in shapes})
    return {"config_raw": raw_cfg, "config": cfg, "weights": weights, "sha256": ckpt.sha256(),
            "dtype": "+".join(used), "weights_file": ckpt.weights_file,
            "tokenizer": GPT2Tokenizer.from_dir(model_dir), "checkpoint": ckpt}


def load_model(model_dir):
    """open_model with every weight converted: "weights" is {name: float32
    array} (names without "transformer.")."""
    return converted(open_model(model_dir))


# GGUF tensor names of llama.cpp's gpt2 layout, and whether the matrix is a
# Conv1D weight (stored transposed, as PyTorch Linear's [out,in]).
def _gguf_names(cfg):
    names = {"token_embd.weight": ("wte.weight", False), "position_embd.weight": ("wpe.weight", False),
             "output_norm.weight": ("ln_f.weight", False), "output_norm.bias": ("ln_f.bias", False)}
    for i in range(cfg["n_layer"]):
        for g, h, t in (("attn_norm", "ln_1", False), ("attn_qkv", "attn.c_attn", True),
                        ("attn_output", "attn.c_proj", True), ("ffn_norm", "ln_2", False),
                        ("ffn_up", "mlp.c_fc", True), ("ffn_down", "mlp.c_proj", True)):
            names[f"blk.{i}.{g}.weight"] = (f"h.{i}.{h}.weight", t)
            names[f"blk.{i}.{g}.bias"] = (f"h.{i}.{h}.bias", False)
    return names


def load_gguf(path):
    """A GGUF file's exact weights: every tensor dequantised as ggml does
    (gguf_io), so the reference is of the weights llorch-check and
    llama.cpp load from the file. An output.weight identical to token_embd
    (type and bytes) is the tied head; any other is lm_head.weight."""
    kv, tensors, sha = gguf_io.read_gguf(path)

    def key(k, kind=int):
        v = kv.get(k)
        if not isinstance(v, kind) or isinstance(v, bool):
            raise BadInput(f"{path}: key {k!r} = {v!r}: missing or not {kind.__name__}")
        return v

    if kv.get("general.architecture") != "gpt2":
        raise BadInput(f"{path}: key 'general.architecture' = {kv.get('general.architecture')!r}: only gpt2 is supported")
    if "token_embd.weight" not in tensors:
        raise BadInput(f"{path}: missing tensor 'token_embd.weight'")
    eps = np.float32(key("gpt2.attention.layer_norm_epsilon", float))
    raw = {"model_type": "gpt2", "vocab_size": int(tensors["token_embd.weight"][1][1]),
           "n_positions": key("gpt2.context_length"), "n_embd": key("gpt2.embedding_length"),
           "n_inner": key("gpt2.feed_forward_length"), "n_layer": key("gpt2.block_count"),
           "n_head": key("gpt2.attention.head_count"),
           # the float32 as the decimal it was rounded from (1e-05), as the Go loader reads it
           "layer_norm_epsilon": float(repr(eps)),
           "bos_token_id": kv.get("tokenizer.ggml.bos_token_id", EOT),
           "eos_token_id": kv.get("tokenizer.ggml.eos_token_id", EOT)}
    _, cfg = load_config_dict(raw, path)
    shapes = param_shapes(cfg)
    names = _gguf_names(cfg)
    for n in tensors:
        if n not in names and n != "output.weight":
            raise BadInput(f"{path}: unexpected tensor {n!r} (not part of llama.cpp's gpt2 layout)")
    weights, used = {}, set()
    for g, (h, transposed) in names.items():
        if g not in tensors:
            raise BadInput(f"{path}: missing tensor {g!r}")
        t, dims, data = tensors[g]
        want = shapes[h] if not transposed else list(reversed(shapes[h]))
        if list(reversed(dims)) != want:
            raise BadInput(f"{path}: tensor {g!r} has dims {dims}, the hyper-parameters give {list(reversed(want))}")
        x = gguf_io.dequantize(t, data, int(np.prod(dims))).reshape(want)
        weights[h] = np.ascontiguousarray(x.T if transposed else x)
        used.add(gguf_io.type_name(t))
    if "output.weight" in tensors:
        t, dims, data = tensors["output.weight"]
        et, edims, edata = tensors["token_embd.weight"]
        if (t, dims, bytes(data)) != (et, edims, bytes(edata)):
            if dims != edims:
                raise BadInput(f"{path}: tensor 'output.weight' has dims {dims}, token_embd has {edims}")
            weights["lm_head.weight"] = gguf_io.dequantize(t, data, int(np.prod(dims))).reshape(shapes["wte.weight"])
            used.add(gguf_io.type_name(t))
    return {"config_raw": raw, "config": cfg, "weights": weights, "sha256": sha,
            "dtype": "+".join(sorted(used)), "weights_file": os.path.basename(path),
            "tokenizer": GPT2Tokenizer.from_gguf(kv, path)}


def round_matrices_f16(weights):
    """Rounds the weight matrices (wte and the Conv1D weights; not wpe, as
    llorch-check's --weight-dtype f16 keeps it float32) of a dict of
    float32 arrays to the nearest float16, ties to even, in place
    (weights.round_f16). A finite value beyond float16's range is an error,
    as it is for the Go loader. Returns whether any value changed: an F16
    file's matrices do not."""
    changed = False
    for n, w in weights.items():
        if is_matrix(n, w.shape):
            weights[n] = round_f16(n, w)
            changed = changed or not np.array_equal(weights[n], w)
    return changed


def gelu_new(x):
    # Same expression as transformers' NewGELUActivation.
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


class GPT2(passes.Forward):
    """GPT-2's block and embeddings; probe(checkpoint, layer, name, tensor,
    rows) sees every intermediate. The pass is passes.Forward's."""

    PREFIX, LAYERS, TIED_HEAD, NORM = "h.", "n_layer", "wte.weight", "ln_f"

    def __init__(self, model, dtype, numerics=None):
        super().__init__(model, dtype, numerics)
        self.C, self.H = self.cfg["n_embd"], self.cfg["n_head"]
        self.D = self.C // self.H
        self.eps = float(self.cfg["layer_norm_epsilon"])

    def _conv1d(self, x, prefix, P=None):
        # HF Conv1D: addmm(bias, x, W) with W stored [in, out]; no transpose.
        P = P if P is not None else {n: self._t(n) for n in (prefix + ".weight", prefix + ".bias")}
        w, b = P[prefix + ".weight"], P[prefix + ".bias"]
        return torch.addmm(b, x.reshape(-1, x.shape[-1]), w).view(*x.shape[:-1], w.shape[1])

    def _ln(self, P, x, prefix):
        return F.layer_norm(x, (self.C,), P[prefix + ".weight"], P[prefix + ".bias"], self.eps)

    def _heads(self, x):
        T = x.shape[1]
        return x.view(1, T, self.H, self.D).permute(0, 2, 1, 3)

    def final_norm(self):
        # No bias on the head; tied unless the GGUF unties it.
        P = {n: self._t(n) for n in ("ln_f.weight", "ln_f.bias")}
        return lambda x: self._ln(P, x, "ln_f")[0]

    def start(self, s):
        T, t0 = s.T, s.t0
        pos = list(range(t0, t0 + T))
        # F.embedding's rows, gathered before the conversion (the same values).
        wte = torch.from_numpy(self.w.take("wte.weight", s.tokens)).to(self.dtype)
        wpe = torch.from_numpy(self.w.take("wpe.weight", pos)).to(self.dtype)
        s.x = (wte + wpe).unsqueeze(0)
        s.probe(7, None, "embeddings", s.x[0])
        # Query t (absolute t0+t) sees keys 0..t0+t, like HF's bias[:, :, k-q:k, :k].
        s.mask = torch.ones(T, t0 + T, dtype=torch.bool).tril(diagonal=t0)
        return s

    def block(self, i, P, s):
        T, x, probe, mask = s.T, s.x, s.probe, s.mask
        min_val = torch.full([], torch.finfo(self.dtype).min, dtype=self.dtype)
        scale = torch.full([], self.D ** 0.5, dtype=self.dtype)
        h = f"h.{i}."
        a = self._ln(P, x, h + "ln_1")
        probe(1, i, "ln_1", a[0])
        q, k, v = self._conv1d(a, h + "attn.c_attn", P).split(self.C, dim=2)
        q, k, v = self._heads(q), self._heads(k), self._heads(v)
        probe(2, i, "q", q[0])
        probe(2, i, "k", k[0])
        probe(2, i, "v", v[0])
        k, v = self.cached(i, s, k, v)
        sc = torch.matmul(self.hook("kq_operand", q), k.transpose(-1, -2)) / scale
        sc = torch.where(mask, sc, min_val)
        probe(4, i, "scores", sc[0])
        pr = F.softmax(sc, dim=-1)
        probe(4, i, "probs", pr[0])
        pr = self.hook("kqv_operand", pr)
        o = torch.matmul(pr, v).permute(0, 2, 1, 3).contiguous().view(1, T, self.C)
        o = self._conv1d(o, h + "attn.c_proj", P)
        probe(5, i, "attn_out", o[0])
        x = o + x
        m = self._ln(P, x, h + "ln_2")
        probe(1, i, "ln_2", m[0])
        g = self._conv1d(m, h + "mlp.c_fc", P)
        g = gelu_new(g) if self.numerics is None else self.numerics.gelu(g)
        probe(6, i, "gelu", g[0])
        y = self._conv1d(g, h + "mlp.c_proj", P)
        probe(6, i, "mlp_out", y[0])
        x = x + y
        probe(7, i, "block_out", x[0])
        s.x = x


Forward = GPT2
