#!/usr/bin/env python3
"""Write a random-weight checkpoint of a config whose family gives its
state-dict order (families.py: a family's hf_order; the Llama family's
llama with or without rope_scaling llama3, qwen2, qwen3, phi3) in Hugging
Face's layout, for benchmarks at real sizes (make bench-scale):

  DIR/config.json                    the config, byte for byte
  DIR/model.safetensors              when everything fits one shard, else
  DIR/model-0000i-of-0000N.safetensors + DIR/model.safetensors.index.json
                                     ({"metadata": {"total_size": bytes},
                                     "weight_map": {tensor: shard}})

Tensor names, shapes and order are the family's hf_order (from the table
the reference reads them by, param_shapes; for the Llama family "model."
before all but lm_head.weight, and a tied config stores no lm_head).
Tensors are sharded in that order, a new shard begun when the next tensor
would take the current one past --shard-size, as transformers'
save_pretrained does.

Weights: matrices N(0, initializer_range), o_proj and down_proj divided by
sqrt(2·layers) so that the residual stream stays of order one through
every layer; RMSNorm weights (and Qwen3's q_norm/k_norm) 1 + N(0, 0.05)
as applied (Gemma's, which the model applies as 1 + w, N(0, 0.05));
biases N(0, initializer_range). Each tensor is drawn from its own seeded
generator (seed and name), so its values do not depend on the sharding.
Written a block of rows at a time: never more than a few hundred MB in
memory, whatever the model's size (an 8B bfloat16 checkpoint is 16 GB).
Exit 0 on success, 2 on bad input.
"""

import argparse
import json
import math
import os
import re
import sys
import zlib

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import families  # noqa: E402
import gemma_torch  # noqa: E402
from safetensors_io import BadInput  # noqa: E402

DTYPES = {"bf16": ("BF16", 2), "f16": ("F16", 2), "f32": ("F32", 4)}
BLOCK = 1 << 24  # values drawn at once
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]i?B|B)?\s*$", re.IGNORECASE)
_UNITS = {"b": 1, "kb": 10 ** 3, "mb": 10 ** 6, "gb": 10 ** 9, "tb": 10 ** 12,
          "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40}


def parse_size(text):
    """"5GB" (10^9, as transformers' max_shard_size), "500MiB", "1000"."""
    m = _SIZE.match(text)
    if not m:
        raise BadInput(f"--shard-size {text!r}: expected a size such as 5GB, 500MB or 2GiB")
    n = int(float(m.group(1)) * _UNITS[(m.group(2) or "B").lower()])
    if n <= 0:
        raise BadInput(f"--shard-size {text!r}: must be positive")
    return n


def plan(tensors, itemsize, shard_size):
    """Shards as lists of (name, shape), in order."""
    shards, cur, size = [], [], 0
    for name, shape in tensors:
        n = math.prod(shape) * itemsize
        if cur and size + n > shard_size:
            shards.append(cur)
            cur, size = [], 0
        cur.append((name, shape))
        size += n
    shards.append(cur)
    return shards


def spread(cfg, name):
    """(mean, std) of a tensor's values."""
    std = float(cfg.get("initializer_range", 0.02))
    if name.endswith("norm.weight"):
        # Gemma's norms store w and scale by 1 + w (gemma_torch): drawn
        # about 1 they would double every normalised vector, its q and k
        # (their scores 4x) and each block's two residual branches.
        return (0.0 if cfg.get("model_type") in gemma_torch.ARCHS else 1.0), 0.05
    if name.endswith(("o_proj.weight", "down_proj.weight")):
        return 0.0, std / math.sqrt(2 * cfg["num_hidden_layers"])
    return 0.0, std


def write_tensor(f, cfg, seed, name, shape, tag):
    """Draws the tensor a block of rows at a time and writes it as tag."""
    rng = np.random.default_rng([seed, zlib.crc32(name.encode())])
    mean, std = spread(cfg, name)
    rows, width = (shape[0], math.prod(shape[1:])) if len(shape) > 1 else (1, shape[0])
    step = max(1, BLOCK // width)
    for lo in range(0, rows, step):
        x = rng.standard_normal((min(step, rows - lo), width), dtype=np.float32)
        x *= np.float32(std)
        x += np.float32(mean)
        if tag == "BF16":
            f.write(bf16_bits(x).tobytes())
        elif tag == "F16":
            f.write(x.astype("<f2").tobytes())
        else:
            f.write(x.astype("<f4").tobytes())


def bf16_bits(x):
    """safetensors_io.float32_to_bf16_bits for finite float32 values, in
    place in 32 bits (no carry can leave them: only NaN bit patterns come
    within 0x8000 of 2^32): the same bits, a third of the time and memory."""
    u = x.view(np.uint32)
    u += np.uint32(0x7FFF) + ((u >> 16) & np.uint32(1))
    return (u >> 16).astype("<u2")


def write_shard(path, cfg, seed, tensors, tag, itemsize):
    """A safetensors file as safetensors_io.write_safetensors lays it out
    (sorted names, data in that order, header padded to 8), streamed."""
    header, off = {}, 0
    for name, shape in sorted(tensors):
        n = math.prod(shape) * itemsize
        header[name] = {"dtype": tag, "shape": list(shape), "data_offsets": [off, off + n]}
        off += n
    header["__metadata__"] = {"format": "pt"}
    h = json.dumps(header, sort_keys=True, separators=(",", ":")).encode("utf-8")
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(len(h).to_bytes(8, "little"))
        f.write(h)
        for name, shape in sorted(tensors):
            write_tensor(f, cfg, seed, name, shape, tag)
    return off


def write_checkpoint(config_path, out, shard_size=5 * 10 ** 9, seed=0, dtype="bf16"):
    """Writes the checkpoint; returns the files written (names in out)."""
    fam, _, cfg = families.load_config(config_path)
    if not hasattr(fam, "hf_order"):
        raise BadInput(f"{config_path}: field 'model_type' = {cfg['model_type']!r}: {fam.__name__} gives no "
                       f"checkpoint layout (hf_order) to write")
    with open(config_path, "rb") as f:
        raw = f.read()
    tag, itemsize = DTYPES[dtype]
    shards = plan(fam.hf_order(cfg), itemsize, shard_size)
    os.makedirs(out, exist_ok=True)
    for stale in ("model.safetensors", "model.safetensors.index.json"):
        if os.path.exists(os.path.join(out, stale)):
            os.remove(os.path.join(out, stale))
    with open(os.path.join(out, "config.json"), "wb") as f:
        f.write(raw)
    if len(shards) == 1:
        write_shard(os.path.join(out, "model.safetensors"), cfg, seed, shards[0], tag, itemsize)
        return ["config.json", "model.safetensors"]
    N = len(shards)
    names = [f"model-{i + 1:05d}-of-{N:05d}.safetensors" for i in range(N)]
    weight_map, total = {}, 0
    for file, tensors in zip(names, shards):
        total += write_shard(os.path.join(out, file), cfg, seed, tensors, tag, itemsize)
        weight_map.update({name: file for name, _ in tensors})
    index = {"metadata": {"total_size": total}, "weight_map": dict(sorted(weight_map.items()))}
    with open(os.path.join(out, "model.safetensors.index.json"), "w", encoding="utf-8") as f:
        f.write(json.dumps(index, indent=2) + "\n")
    return ["config.json", "model.safetensors.index.json"] + names


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", required=True, help="a config.json of a family with a checkpoint layout, "
                    "such as the Llama family's (testdata/configs)")
    ap.add_argument("--out", required=True, help="directory to write")
    ap.add_argument("--shard-size", default="5GB", help="largest shard (default 5GB, transformers' default)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--dtype", choices=tuple(DTYPES), default="bf16")
    a = ap.parse_args(argv)
    try:
        files = write_checkpoint(a.config, a.out, parse_size(a.shard_size), a.seed, a.dtype)
    except BadInput as e:
        print(f"make_checkpoint: error: {e}", file=sys.stderr)
        return 2
    print(f"{a.out}: wrote {', '.join(files)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
