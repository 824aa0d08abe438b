"""Safetensors read and write, with every size checked before it is trusted.

Debian's torch has no safetensors module, hence this. BadInput carries a
message that names the file and field; the scripts exit 2 on it.
"""

import hashlib
import json
import math
import mmap
import os

import numpy as np


class BadInput(Exception):
    """Bad user input (file, field or value); the message names it. Exit code 2."""


ST_DTYPES = {"F32": 4, "F16": 2, "BF16": 2}


# Each stored dtype's numpy type (BF16 as its bits).
NP_DTYPES = {"F32": "<f4", "F16": "<f2", "BF16": "<u2"}


def to_float32(dtype, a):
    """Stored values (a numpy array of NP_DTYPES[dtype]) -> a new float32
    array, exactly (every F16 and BF16 value is a float32)."""
    if dtype == "F32":
        return np.array(a, dtype=np.float32)
    if dtype == "F16":
        return a.astype(np.float32)
    u = a.astype(np.uint32)
    u <<= 16
    return u.view(np.float32)


def st_to_float32(dtype, raw):
    """Stored bytes -> float32, exactly."""
    return to_float32(dtype, np.frombuffer(raw, dtype=NP_DTYPES[dtype]))


def float32_to_bf16_bits(x):
    """Round-to-nearest-even float32 -> bfloat16 bit pattern (uint16)."""
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype("<u2")


def _parse_header(path, f, size):
    """(header length, {name: (dtype, shape, begin, end)}) of an open
    safetensors file, every entry's offsets checked against the file size."""
    if size < 8:
        raise BadInput(f"{path}: truncated: {size} bytes, too short for the 8-byte header length")
    n = int.from_bytes(f.read(8), "little")
    if n > size - 8:
        raise BadInput(f"{path}: header length {n} exceeds the file size ({size} bytes): truncated or not safetensors")
    try:
        header = json.loads(f.read(n).decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise BadInput(f"{path}: corrupt header: {e}")
    if not isinstance(header, dict):
        raise BadInput(f"{path}: corrupt header: not a JSON object")
    data_len = size - 8 - n
    entries = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        try:
            dtype, shape, (b, e) = info["dtype"], info["shape"], info["data_offsets"]
            ok = all(isinstance(v, int) and v >= 0 for v in list(shape) + [b, e]) and b <= e
        except (TypeError, KeyError, ValueError):
            ok = False
        if not ok:
            raise BadInput(f"{path}: corrupt header entry for tensor {name!r}: {info!r}")
        if e > data_len:
            raise BadInput(f"{path}: truncated: tensor {name!r} data ends at byte {e} "
                           f"but the data section has only {data_len} bytes")
        entries[name] = (dtype, list(shape), b, e)
    return n, entries


def _check_entry(path, name, entry):
    """A tensor about to be decoded: a supported dtype whose size the
    data_offsets span exactly."""
    dtype, shape, b, e = entry
    if dtype not in ST_DTYPES:
        raise BadInput(f"{path}: tensor {name!r} has unsupported dtype {dtype} "
                       f"(supported: {', '.join(ST_DTYPES)})")
    need = math.prod(shape) * ST_DTYPES[dtype]
    if e - b != need:
        raise BadInput(f"{path}: header lies about tensor {name!r}: {dtype}{shape} needs {need} "
                       f"bytes but data_offsets [{b}, {e}] span {e - b}")


def read_safetensors(path, wanted=None):
    """Return ({name: float32 array}, {name: dtype}, sha256 hex, [all tensor names]).

    Every header entry is checked against the file size; only tensors for
    which wanted(name) is true are decoded (and must have a supported dtype).
    """
    try:
        f = open(path, "rb")
    except OSError as e:
        raise BadInput(f"{path}: cannot open: {e.strerror}")
    with f:
        size = os.fstat(f.fileno()).st_size
        n, entries = _parse_header(path, f, size)
        mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    with mm:
        out, dtypes = {}, {}
        for name, entry in entries.items():
            if wanted is not None and not wanted(name):
                continue
            _check_entry(path, name, entry)
            dtype, shape, b, e = entry
            out[name] = st_to_float32(dtype, mm[8 + n + b:8 + n + e]).reshape(shape)
            dtypes[name] = dtype
    return out, dtypes, file_sha256(path), list(entries)


def write_safetensors(path, tensors, metadata=None):
    """tensors: {name: (dtype tag, array already in that storage type)}.

    Deterministic: sorted keys, data in sorted key order, header padded with
    spaces to a multiple of 8 (as the Rust safetensors library does).
    """
    header, blobs, off = {}, [], 0
    for name in sorted(tensors):
        tag, arr = tensors[name]
        raw = np.ascontiguousarray(arr).tobytes()
        header[name] = {"dtype": tag, "shape": list(arr.shape), "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    if metadata is not None:
        header["__metadata__"] = metadata
    h = json.dumps(header, sort_keys=True, separators=(",", ":")).encode("utf-8")
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(len(h).to_bytes(8, "little"))
        f.write(h)
        for raw in blobs:
            f.write(raw)


def file_sha256(path, block=1 << 24):
    """A file's sha256, read in blocks: a shard of several GB is never
    held whole (nor mapped, which would count it in the process's RSS)."""
    h = hashlib.sha256()
    try:
        with open(path, "rb") as f:
            while chunk := f.read(block):
                h.update(chunk)
    except OSError as e:
        raise BadInput(f"{path}: cannot read: {e.strerror}")
    return h.hexdigest()
