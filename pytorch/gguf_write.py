#!/usr/bin/env python3
"""GGUF writing (v3, F32/F16 tensors, alignment 32) and the conversion of an
HF-layout Llama-family model into llama.cpp's converter layout
(convert_hf_to_gguf.py) for architectures llama, qwen2, qwen3 and phi3.

What the converter does and this file does too:
  - names: token_embd, blk.N.{attn_norm, attn_q, attn_k, attn_v,
    attn_output, ffn_norm, ffn_gate, ffn_up, ffn_down}, output_norm, output
    (absent when tied); qwen2 attn_{q,k,v}.bias; qwen3 attn_q_norm,
    attn_k_norm; phi3 attn_qkv (fused) and ffn_up holding gate_up_proj
    (gate rows, then up rows);
  - llama only: the rows of q and k PERMUTED from HF's rotate_half halves
    into interleaved pairs (llama.cpp's "normal" rope):
    w.reshape(n_head, 2, rows//n_head//2, cols).swapaxes(1, 2).reshape(rows, cols),
    with n_head_kv for k. qwen2/qwen3/phi3 use "neox" rope and are not
    permuted;
  - llama with rope_scaling llama3: rope_freqs.weight, one factor per
    rotary pair (1, factor, or 1/((1-smooth)/factor + smooth)), by which
    llama.cpp divides each frequency;
  - 1-D tensors (norms, biases, rope_freqs) stay F32; matrices are --type;
  - the tokenizer.* keys of a llama.cpp vocabulary GGUF copied with their
    types.
--no-permute writes llama's q and k in HF order: a deliberately wrong file
for showing that a check catches a RoPE layout error.

Usage: gguf_write.py HF_DIR OUT.gguf [--type f32|f16] [--vocab VOCAB.gguf] [--no-permute]
"""

import argparse
import math
import os
import struct
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import llama_torch  # noqa: E402
from safetensors_io import BadInput  # noqa: E402

# GGUF metadata value types.
U8, I8, U16, I16, U32, I32, F32, BOOL, STRING, ARRAY, U64, I64, F64 = range(13)
_FMT = {U8: "<B", I8: "<b", U16: "<H", I16: "<h", U32: "<I", I32: "<i", F32: "<f", BOOL: "<?",
        U64: "<Q", I64: "<q", F64: "<d"}
GGML_F32, GGML_F16 = 0, 1
ALIGN = 32
# llama.cpp's vocabulary files, as the repository keeps them (SOURCE.md there).
VOCABS = os.path.join(os.path.dirname(HERE), "testdata", "tokenizer")


def _string(s):
    b = s.encode("utf-8", errors="surrogateescape")
    return struct.pack("<Q", len(b)) + b


def _value(vtype, v, etype=None):
    if vtype in _FMT:
        return struct.pack(_FMT[vtype], v)
    if vtype == STRING:
        return _string(v)
    if vtype == ARRAY:
        out = [struct.pack("<IQ", etype, len(v))]
        if etype in _FMT and etype != BOOL:
            out.append(np.asarray(v, dtype=_FMT[etype]).tobytes())
        else:
            out.extend(_value(etype, x) for x in v)
        return b"".join(out)
    raise ValueError(f"GGUF value type {vtype} not supported")


def read_kv_typed(path):
    """The metadata of a GGUF file as [(key, vtype, value, array element type or None)]."""
    with open(path, "rb") as f:
        buf = f.read()
    off = [0]

    def take(n):
        b = buf[off[0]:off[0] + n]
        if len(b) != n:
            raise BadInput(f"{path}: truncated at byte {off[0]}")
        off[0] += n
        return b

    def scalar(fmt):
        return struct.unpack(fmt, take(struct.calcsize(fmt)))[0]

    def string():
        return take(scalar("<Q")).decode("utf-8", errors="surrogateescape")

    def value(t):
        if t in _FMT:
            return scalar(_FMT[t]), None
        if t == STRING:
            return string(), None
        if t == ARRAY:
            et, n = scalar("<I"), scalar("<Q")
            if et in _FMT and et != BOOL:
                a = np.frombuffer(take(n * struct.calcsize(_FMT[et])), dtype=_FMT[et])
                return a.tolist(), et
            return [value(et)[0] for _ in range(n)], et
        raise BadInput(f"{path}: metadata value type {t} not supported")

    if take(4) != b"GGUF":
        raise BadInput(f"{path}: not a GGUF file (bad magic)")
    if scalar("<I") not in (2, 3):
        raise BadInput(f"{path}: GGUF version not supported")
    _, n_kv = scalar("<Q"), scalar("<Q")
    out = []
    for _ in range(n_kv):
        k = string()
        t = scalar("<I")
        v, et = value(t)
        out.append((k, t, v, et))
    return out


def write_gguf(path, kv, tensors):
    """kv: [(key, vtype, value, etype or None)]; tensors: [(name, numpy array
    in ggml row-major order (last axis fastest), ggml type F32 or F16)].
    Deterministic: the order given, zero padding."""
    head = [b"GGUF", struct.pack("<IQQ", 3, len(tensors), len(kv))]
    for k, t, v, et in kv:
        head.append(_string(k) + struct.pack("<I", t) + _value(t, v, et))
    blobs, off = [], 0
    for name, arr, gt in tensors:
        data = np.ascontiguousarray(arr, dtype="<f4" if gt == GGML_F32 else "<f2").tobytes()
        dims = list(reversed(arr.shape))
        head.append(_string(name) + struct.pack("<I", len(dims)) + struct.pack(f"<{len(dims)}Q", *dims)
                    + struct.pack("<IQ", gt, off))
        pad = -len(data) % ALIGN
        blobs.append(data + b"\0" * pad)
        off += len(data) + pad
    h = b"".join(head)
    h += b"\0" * (-len(h) % ALIGN)
    with open(path, "wb") as f:
        f.write(h)
        for b in blobs:
            f.write(b)


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


def default_vocab(cfg):
    name = "phi-3" if cfg["vocab_size"] == 32064 else "llama-spm"
    return os.path.join(VOCABS, name, f"ggml-vocab-{name}.gguf")


def convert(model, out, gtype=GGML_F32, vocab=None, permute_qk=True, name="tiny"):
    """Writes model (llama_torch.load_model) as a GGUF file in llama.cpp's
    converter layout."""
    cfg, w = model["config"], model["weights"]
    arch = cfg["model_type"]
    C, H, Hkv, D = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]
    vocab = vocab or default_vocab(cfg)
    tok = [e for e in read_kv_typed(vocab) if e[0].startswith("tokenizer.")]
    n_tokens = next(len(v) for k, _, v, _ in tok if k == "tokenizer.ggml.tokens")
    if n_tokens != cfg["vocab_size"]:
        raise BadInput(f"{vocab}: {n_tokens} tokens, the model's vocab_size is {cfg['vocab_size']}")
    rs = cfg.get("rope_scaling")
    kind = None if rs is None else rs.get("rope_type", rs.get("type"))
    if kind not in (None, "default", "llama3") or (kind == "llama3" and arch != "llama"):
        raise BadInput(f"rope_scaling {kind!r} is not written for {arch}")
    if cfg["active_sliding_window"] is not None:
        raise BadInput("sliding_window is not written (not implemented)")
    if cfg.get("mlp_bias") or (arch != "qwen2" and cfg.get("attention_bias")):
        raise BadInput("attention_bias/mlp_bias are not written")
    a = arch
    kv = [("general.architecture", STRING, arch, None), ("general.name", STRING, name, None),
          (f"{a}.vocab_size", U32, cfg["vocab_size"], None),
          (f"{a}.context_length", U32, cfg["max_position_embeddings"], None),
          (f"{a}.embedding_length", U32, C, None),
          (f"{a}.block_count", U32, cfg["num_hidden_layers"], None),
          (f"{a}.feed_forward_length", U32, cfg["intermediate_size"], None),
          (f"{a}.rope.dimension_count", U32, cfg["rotary_dim"], None),
          (f"{a}.attention.head_count", U32, H, None),
          (f"{a}.attention.head_count_kv", U32, Hkv, None),
          (f"{a}.attention.layer_norm_rms_epsilon", F32, float(cfg["rms_norm_eps"]), None),
          (f"{a}.rope.freq_base", F32, float(cfg["rope_theta"]), None)]
    if D != C // H:
        kv += [(f"{a}.attention.key_length", U32, D, None), (f"{a}.attention.value_length", U32, D, None)]
    if arch == "phi3":
        kv.append(("phi3.rope.scaling.original_context_length", U32,
                   cfg.get("original_max_position_embeddings", cfg["max_position_embeddings"]), None))
    kv.append(("general.file_type", U32, 0 if gtype == GGML_F32 else 1, None))
    kv += tok

    def mat(x):
        return x, gtype

    def vec(x):
        return x, GGML_F32

    t = [("token_embd.weight", *mat(w["embed_tokens.weight"])), ("output_norm.weight", *vec(w["norm.weight"]))]
    if "lm_head.weight" in w:
        t.append(("output.weight", *mat(w["lm_head.weight"])))
    if kind == "llama3":
        t.append(("rope_freqs.weight", *vec(rope_freqs_llama3(cfg))))
    for i in range(cfg["num_hidden_layers"]):
        p, b = f"layers.{i}.", f"blk.{i}."
        t.append((b + "attn_norm.weight", *vec(w[p + "input_layernorm.weight"])))
        if arch == "phi3":
            t.append((b + "attn_qkv.weight", *mat(w[p + "self_attn.qkv_proj.weight"])))
        else:
            q, k = w[p + "self_attn.q_proj.weight"], w[p + "self_attn.k_proj.weight"]
            if arch == "llama" and permute_qk:
                q, k = permute(q, H), permute(k, Hkv)
            t += [(b + "attn_q.weight", *mat(q)), (b + "attn_k.weight", *mat(k)),
                  (b + "attn_v.weight", *mat(w[p + "self_attn.v_proj.weight"]))]
            if arch == "qwen2":
                t += [(b + f"attn_{n}.bias", *vec(w[p + f"self_attn.{n}_proj.bias"])) for n in "qkv"]
            if arch == "qwen3":
                t += [(b + "attn_q_norm.weight", *vec(w[p + "self_attn.q_norm.weight"])),
                      (b + "attn_k_norm.weight", *vec(w[p + "self_attn.k_norm.weight"]))]
        t.append((b + "attn_output.weight", *mat(w[p + "self_attn.o_proj.weight"])))
        t.append((b + "ffn_norm.weight", *vec(w[p + "post_attention_layernorm.weight"])))
        if arch == "phi3":
            t.append((b + "ffn_up.weight", *mat(w[p + "mlp.gate_up_proj.weight"])))
        else:
            t += [(b + "ffn_gate.weight", *mat(w[p + "mlp.gate_proj.weight"])),
                  (b + "ffn_up.weight", *mat(w[p + "mlp.up_proj.weight"]))]
        t.append((b + "ffn_down.weight", *mat(w[p + "mlp.down_proj.weight"])))
    write_gguf(out, kv, t)


def main():
    ap = argparse.ArgumentParser(description="Write an HF-layout Llama-family model as GGUF in llama.cpp's converter layout.")
    ap.add_argument("model")
    ap.add_argument("out")
    ap.add_argument("--type", choices=("f32", "f16"), default="f32")
    ap.add_argument("--vocab", help="llama.cpp vocabulary GGUF whose tokenizer.* keys to copy")
    ap.add_argument("--no-permute", action="store_true", help="llama: leave q/k in HF order (a deliberately wrong file)")
    a = ap.parse_args()
    try:
        model = llama_torch.load_model(a.model)
        convert(model, a.out, GGML_F32 if a.type == "f32" else GGML_F16, a.vocab, not a.no_permute,
                os.path.basename(os.path.normpath(a.model)))
    except BadInput as e:
        print(f"gguf_write: {e}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
