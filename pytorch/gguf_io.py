"""GGUF reading for the reference dumper: metadata, tensor data, and the
block types' dequantisation exactly as ggml's dequantize_row_* computes it
(float32 arithmetic, each product and sum rounded on its own), so that a
reference set made from a GGUF file holds the very weights llorch-check and
llama.cpp load from it. testdata/ggml-quants has ggml's own output to
compare with (test_gguf_io.py).

Needs only numpy.
"""

import hashlib
import mmap
import struct

import numpy as np

from safetensors_io import BadInput

# ggml_type: name, elements per block, bytes per block.
TYPES = {
    0: ("F32", 1, 4), 1: ("F16", 1, 2), 30: ("BF16", 1, 2),
    2: ("Q4_0", 32, 18), 3: ("Q4_1", 32, 20), 6: ("Q5_0", 32, 22), 7: ("Q5_1", 32, 24),
    8: ("Q8_0", 32, 34), 12: ("Q4_K", 256, 144), 13: ("Q5_K", 256, 176), 14: ("Q6_K", 256, 210),
}
# GGUF metadata value types: struct format, or None for string/array.
_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
_STRING, _ARRAY = 8, 9


class _Reader:
    def __init__(self, buf, path):
        self.buf, self.off, self.path = buf, 0, path

    def take(self, n):
        if self.off + n > len(self.buf):
            raise BadInput(f"{self.path}: truncated at byte {self.off} (wanted {n} more)")
        b = self.buf[self.off:self.off + n]
        self.off += n
        return b

    def scalar(self, fmt):
        return struct.unpack(fmt, self.take(struct.calcsize(fmt)))[0]

    def string(self):
        return bytes(self.take(self.scalar("<Q"))).decode("utf-8", errors="surrogateescape")

    def value(self, vtype, depth=0):
        if vtype in _SCALARS:
            return self.scalar(_SCALARS[vtype])
        if vtype == _STRING:
            return self.string()
        if vtype == _ARRAY and depth < 4:
            etype, n = self.scalar("<I"), self.scalar("<Q")
            if n > len(self.buf):
                raise BadInput(f"{self.path}: array of {n} elements is longer than the file")
            return [self.value(etype, depth + 1) for _ in range(n)]
        raise BadInput(f"{self.path}: metadata value type {vtype} is not supported")


def _open(path):
    """The file mapped, and a reader past its header: (map, reader,
    tensor count, metadata count)."""
    try:
        f = open(path, "rb")
    except OSError as e:
        raise BadInput(f"{path}: cannot read: {e.strerror}")
    with f:
        try:
            data = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        except ValueError:  # an empty file cannot be mapped
            raise BadInput(f"{path}: not a GGUF file (empty)")
    r = _Reader(memoryview(data), path)
    if bytes(r.take(4)) != b"GGUF":
        raise BadInput(f"{path}: not a GGUF file (bad magic)")
    version = r.scalar("<I")
    if version not in (2, 3):
        raise BadInput(f"{path}: GGUF version {version} is not supported (2, 3)")
    return data, r, r.scalar("<Q"), r.scalar("<Q")


def read_architecture(path):
    """The file's general.architecture (None if it has none), read from
    the metadata alone: what picks the family that reads it (families.py)."""
    _, r, _, n_kv = _open(path)
    for _ in range(n_kv):
        key = r.string()
        v = r.value(r.scalar("<I"))
        if key == "general.architecture":
            return v
    return None


def read_gguf(path):
    """Returns (metadata dict, {name: (type, dims fastest first, bytes)},
    sha256 of the file). Tensor bytes are views into a memory map."""
    data, r, n_tensors, n_kv = _open(path)
    sha = hashlib.sha256(data).hexdigest()
    kv = {}
    for _ in range(n_kv):
        key = r.string()
        kv[key] = r.value(r.scalar("<I"))
    infos = []
    for _ in range(n_tensors):
        name = r.string()
        dims = [r.scalar("<Q") for _ in range(r.scalar("<I"))]
        infos.append((name, dims, r.scalar("<I"), r.scalar("<Q")))
    align = kv.get("general.alignment", 32)
    start = (r.off + align - 1) // align * align
    tensors = {}
    for name, dims, t, off in infos:
        if t not in TYPES:
            raise BadInput(f"{path}: tensor {name!r}: ggml type {t} is not supported "
                           f"({', '.join(v[0] for v in TYPES.values())})")
        _, blk, size = TYPES[t]
        n = int(np.prod(dims, dtype=np.int64))
        if dims and dims[0] % blk:
            raise BadInput(f"{path}: tensor {name!r}: first dim {dims[0]} is not whole {TYPES[t][0]} blocks")
        nbytes = n // blk * size
        if start + off + nbytes > len(data):
            raise BadInput(f"{path}: tensor {name!r} runs past the end of the file")
        tensors[name] = (t, dims, r.buf[start + off:start + off + nbytes])
    return kv, tensors, sha


def type_name(t):
    return TYPES[t][0]


def _f16(u8, at):
    """Little-endian float16 at byte `at` of each block row, as float32."""
    return u8[:, at:at + 2].copy().view("<f2").astype(np.float32).reshape(-1)


def _scale_min_k4(scales):
    """The 8 six-bit scales and mins of Q4_K/Q5_K blocks, [nb, 8] each."""
    s = scales.astype(np.uint8)
    sc, m = np.empty((len(s), 8), np.uint8), np.empty((len(s), 8), np.uint8)
    sc[:, :4], m[:, :4] = s[:, 0:4] & 63, s[:, 4:8] & 63
    sc[:, 4:] = (s[:, 8:12] & 0xF) | ((s[:, 0:4] >> 6) << 4)
    m[:, 4:] = (s[:, 8:12] >> 4) | ((s[:, 4:8] >> 6) << 4)
    return sc.astype(np.float32), m.astype(np.float32)


def dequantize(t, raw, n):
    """n float32 values of ggml type t from raw bytes."""
    name, blk, size = TYPES[t]
    buf = np.frombuffer(raw, dtype=np.uint8)
    if len(buf) != n // blk * size:
        raise BadInput(f"{name} data is {len(buf)} bytes, {n} elements need {n // blk * size}")
    if name == "F32":
        return buf.view("<f4").astype(np.float32)
    if name == "F16":
        return buf.view("<f2").astype(np.float32)
    if name == "BF16":
        return (buf.view("<u2").astype(np.uint32) << 16).view(np.float32)
    u8 = buf.reshape(-1, size)
    f32 = np.float32
    if name == "Q8_0":
        return (u8[:, 2:].view(np.int8).astype(f32) * _f16(u8, 0)[:, None]).reshape(-1)
    if name in ("Q4_0", "Q4_1", "Q5_0", "Q5_1"):
        off = {"Q4_0": 2, "Q4_1": 4, "Q5_0": 6, "Q5_1": 8}[name]
        qs = u8[:, off:off + 16]
        q = np.concatenate([qs & 0xF, qs >> 4], axis=1).astype(np.int32)
        if name.startswith("Q5"):
            qh = u8[:, off - 4:off].copy().view("<u4")
            q |= (((qh >> np.arange(32, dtype=np.uint32)) & 1) << 4).astype(np.int32)
        d = _f16(u8, 0)[:, None]
        if name in ("Q4_0", "Q5_0"):
            return ((q - (8 if name == "Q4_0" else 16)).astype(f32) * d).reshape(-1)
        return (q.astype(f32) * d + _f16(u8, 2)[:, None]).reshape(-1)
    if name in ("Q4_K", "Q5_K"):
        d, dmin = _f16(u8, 0)[:, None], _f16(u8, 2)[:, None]
        sc, m = _scale_min_k4(u8[:, 4:16])
        dl, ml = d * sc, dmin * m  # [nb, 8], each rounded to float32
        qs = u8[:, 16:144] if name == "Q4_K" else u8[:, 48:176]
        q = np.empty((len(u8), 8, 32), np.uint8)
        q[:, 0::2], q[:, 1::2] = (qs.reshape(-1, 4, 32) & 0xF), (qs.reshape(-1, 4, 32) >> 4)
        if name == "Q5_K":
            qh = u8[:, 16:48]
            for j in range(8):
                q[:, j] |= ((qh >> j) & 1) << 4
        return (q.astype(f32) * dl[:, :, None] - ml[:, :, None]).reshape(-1)
    if name == "Q6_K":
        ql, qh, sc = u8[:, 0:128], u8[:, 128:192], u8[:, 192:208].view(np.int8).astype(f32)
        d = _f16(u8, 208)
        y = np.empty((len(u8), 256), f32)
        for h in range(2):
            lo, hi = ql[:, 64 * h:64 * h + 64], qh[:, 32 * h:32 * h + 32]
            parts = [(lo[:, :32] & 0xF) | ((hi >> 0) & 3) << 4, (lo[:, 32:] & 0xF) | ((hi >> 2) & 3) << 4,
                     (lo[:, :32] >> 4) | ((hi >> 4) & 3) << 4, (lo[:, 32:] >> 4) | ((hi >> 6) & 3) << 4]
            for p, q in enumerate(parts):
                q = q.astype(np.int32) - 32
                for half in range(2):  # 16 elements share one scale
                    s = d * sc[:, 8 * h + 2 * p + half]
                    y[:, 128 * h + 32 * p + 16 * half:128 * h + 32 * p + 16 * half + 16] = \
                        s[:, None] * q[:, 16 * half:16 * half + 16].astype(f32)
        return y.reshape(-1)
    raise BadInput(f"ggml type {name} is not supported")
