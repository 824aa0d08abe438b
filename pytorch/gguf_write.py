#!/usr/bin/env python3
"""GGUF writing (v3, F32/F16 tensors, alignment 32) and the conversion of an
HF-layout model into llama.cpp's converter layout (convert_hf_to_gguf.py)
for the families that give one (families.py: a family's gguf_layout, the
Llama family's llama, qwen2, qwen3 and phi3 in llama_torch.py, which names
what the converter does and it does too):
  - general.architecture (the model_type), general.name, the family's
    keys, general.file_type;
  - 1-D tensors (norms, biases, rope_freqs) stay F32; matrices are --type;
  - the tokenizer.* keys of a llama.cpp vocabulary GGUF copied with their
    types, or (--tokenizer-json DIR) converted from DIR's SentencePiece
    tokenizer.json as llama.cpp's converter does (gguf_vocab_json.py).
--no-permute writes llama's q and k in HF order: a deliberately wrong file
for showing that a check catches a RoPE layout error.

Usage: gguf_write.py HF_DIR OUT.gguf [--type f32|f16] [--vocab VOCAB.gguf | --tokenizer-json DIR] [--no-permute]
"""

import argparse
import os
import struct
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import families  # noqa: E402
from safetensors_io import BadInput  # noqa: E402

# GGUF metadata value types.
U8, I8, U16, I16, U32, I32, F32, BOOL, STRING, ARRAY, U64, I64, F64 = range(13)
_FMT = {U8: "<B", I8: "<b", U16: "<H", I16: "<h", U32: "<I", I32: "<i", F32: "<f", BOOL: "<?",
        U64: "<Q", I64: "<q", F64: "<d"}
GGML_F32, GGML_F16 = 0, 1
ALIGN = 32
# A family's metadata values by Python type (gguf_layout).
_TYPE_OF = {int: U32, float: F32, str: STRING}
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


def default_vocab(cfg):
    name = "phi-3" if cfg["vocab_size"] == 32064 else "llama-spm"
    return os.path.join(VOCABS, name, f"ggml-vocab-{name}.gguf")


def convert(model, out, gtype=GGML_F32, vocab=None, permute_qk=True, name="tiny", tokenizer_json=None):
    """Writes model (a family's load_model) as a GGUF file in llama.cpp's
    converter layout: the family's gguf_layout (families.py), general.*
    around it and the vocabulary's tokenizer.* keys after (vocab's, or
    those of tokenizer_json, a directory with a SentencePiece
    tokenizer.json); 1-D tensors F32, matrices gtype."""
    cfg, w = model["config"], model["weights"]
    fam = families.of_config(cfg)
    if not hasattr(fam, "gguf_layout"):
        raise BadInput(f"field 'model_type' = {cfg['model_type']!r}: {fam.__name__} has no GGUF layout to write "
                       f"(the families with one: {', '.join(a for f in families.FAMILIES if hasattr(f, 'gguf_layout') for a in f.ARCHS)})")
    if tokenizer_json is not None:
        if vocab is not None:
            raise BadInput("give a vocabulary GGUF or a tokenizer.json directory, not both")
        import gguf_vocab_json  # it imports this module
        vocab = os.path.join(tokenizer_json, "tokenizer.json")
        tok = gguf_vocab_json.keys(tokenizer_json, cfg["vocab_size"])
    else:
        vocab = vocab or default_vocab(cfg)
        tok = [e for e in read_kv_typed(vocab) if e[0].startswith("tokenizer.")]
    n_tokens = next(len(v) for k, _, v, _ in tok if k == "tokenizer.ggml.tokens")
    if n_tokens != cfg["vocab_size"]:
        raise BadInput(f"{vocab}: {n_tokens} tokens, the model's vocab_size is {cfg['vocab_size']}")
    meta, tensors = fam.gguf_layout(cfg, w, permute_qk)
    # A layout may name llama.cpp's architecture for it (Mistral's is llama).
    arch = dict(meta).get("general.architecture", cfg["model_type"])
    meta = [(k, v) for k, v in meta if k != "general.architecture"]
    kv = [("general.architecture", STRING, arch, None), ("general.name", STRING, name, None)]
    kv += [(k, _TYPE_OF[type(v)], v, None) for k, v in meta]
    kv.append(("general.file_type", U32, 0 if gtype == GGML_F32 else 1, None))
    kv += tok
    write_gguf(out, kv, [(n, x, gtype if x.ndim >= 2 else GGML_F32) for n, x in tensors])


def main():
    ap = argparse.ArgumentParser(description="Write an HF-layout Llama-family model as GGUF in llama.cpp's converter layout.")
    ap.add_argument("model")
    ap.add_argument("out")
    ap.add_argument("--type", choices=("f32", "f16"), default="f32")
    ap.add_argument("--vocab", help="llama.cpp vocabulary GGUF whose tokenizer.* keys to copy")
    ap.add_argument("--tokenizer-json", metavar="DIR",
                    help="a directory whose SentencePiece tokenizer.json (and tokenizer_config.json) to convert instead")
    ap.add_argument("--no-permute", action="store_true", help="llama: leave q/k in HF order (a deliberately wrong file)")
    a = ap.parse_args()
    try:
        fam, _ = families.of_model(a.model)
        model = fam.load_model(a.model)
        convert(model, a.out, GGML_F32 if a.type == "f32" else GGML_F16, a.vocab, not a.no_permute,
                os.path.basename(os.path.normpath(a.model)), a.tokenizer_json)
    except BadInput as e:
        print(f"gguf_write: {e}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
