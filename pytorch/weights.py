"""A model's parameters as the forwards read them: float32 numpy arrays by
name, converted from the stored dtype only when asked for (a layer's when
the layer runs, the head a chunk of rows at a time), so that a model of
any size runs in about one layer's memory. In memory (a dict, as a GGUF
file's dequantised weights or a test's) or mapped from a checkpoint
(checkpoint.Checkpoint).

With round_f16 the matrices (every 2-D weight but GPT-2's wpe) come out
rounded to float16, nearest even: dump_references.py --weight-dtype f16.
"""

import math

import numpy as np

from safetensors_io import BadInput, to_float32


BLOCK = 1 << 22  # values converted at once


def is_matrix(name, shape):
    """What llorch-check's --weight-dtype f16 holds as float16."""
    return len(shape) == 2 and name != "wpe.weight"


def round_f16(name, w, offset=0):
    """w rounded to float16 (as float32); a finite value beyond float16's
    range is a BadInput naming its element (offset: w's first element's
    index in the whole tensor)."""
    h = w.astype(np.float16)
    bad = np.isinf(h) & np.isfinite(w)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise BadInput(f"tensor {name!r}: element {offset + i} is {w.flat[i]}, beyond float16's range (+-65504)")
    return h.astype(np.float32)


class Weights:
    """names -> float32 arrays on demand. Subclasses give _read(name, lo, hi)
    (rows lo:hi, or the whole tensor when both are None), _take(name, ids),
    shape(name) and names()."""

    round_f16 = False

    def has(self, name):
        return name in self.names()

    def _out(self, name, w, offset=0):
        if self.round_f16 and is_matrix(name, self.shape(name)):
            return round_f16(name, w, offset)
        return w

    def get(self, name):
        """The whole tensor as float32."""
        return self._out(name, self._read(name, None, None))

    def row_range(self, name, lo, hi):
        """Rows lo:hi of a matrix as float32."""
        return self._out(name, self._read(name, lo, hi), lo * self.shape(name)[1])

    def take(self, name, ids):
        """The rows ids of a matrix as float32 (an embedding lookup)."""
        return self._out(name, self._take(name, list(ids)))

    def release(self, name):
        """The tensor will not be read again soon (mapped pages may go)."""

    def rounding_changes(self, names, rows=1 << 16):
        """Whether rounding the matrices among names to float16 changes any
        value; a value beyond float16's range is a BadInput. Read a block
        of rows at a time."""
        changed = False
        for n in names:
            shape = self.shape(n)
            if not is_matrix(n, shape):
                continue
            for lo in range(0, shape[0], rows):
                w = self._read(n, lo, min(lo + rows, shape[0]))
                changed = not np.array_equal(round_f16(n, w, lo * shape[1]), w) or changed
            self.release(n)
        return changed


class MemoryWeights(Weights):
    """Weights already in memory: {name: float32 array}."""

    def __init__(self, arrays):
        self.arrays = arrays

    def names(self):
        return list(self.arrays)

    def shape(self, name):
        return list(self.arrays[name].shape)

    def _read(self, name, lo, hi):
        a = self.arrays[name]
        return a if lo is None else a[lo:hi]

    def _take(self, name, ids):
        return self.arrays[name][ids]


class MappedWeights(Weights):
    """Weights read from a checkpoint.Checkpoint's maps; names maps each
    parameter name to its tensor's name in the files."""

    def __init__(self, ckpt, names):
        self.ckpt, self.files = ckpt, dict(names)

    def names(self):
        return list(self.files)

    def shape(self, name):
        return self.ckpt.shape(self.files[name])

    def dtype(self, name):
        return self.ckpt.dtype(self.files[name])

    def _read(self, name, lo, hi):
        # Converted a block at a time into the result, each block's mapped
        # pages dropped once converted: the peak is the float32 tensor, not
        # it plus the stored one plus the conversion's temporaries.
        t, dtype = self.files[name], self.ckpt.dtype(self.files[name])
        a = self.ckpt.stored(t)
        lo, hi = (0, a.shape[0]) if lo is None else (lo, hi)
        out = np.empty((hi - lo,) + a.shape[1:], dtype=np.float32)
        step = max(1, BLOCK // max(1, math.prod(a.shape[1:])))
        for r in range(lo, hi, step):
            s = min(r + step, hi)
            out[r - lo:s - lo] = to_float32(dtype, a[r:s])
            self.ckpt.release(t, r, s)
        return out

    def _take(self, name, ids):
        t = self.files[name]
        return to_float32(self.ckpt.dtype(t), self.ckpt.stored(t)[ids])

    def release(self, name):
        self.ckpt.release(self.files[name])

    def materialize(self):
        """Every tensor as a float32 array: {name: array}."""
        return {n: self.get(n) for n in self.files}


def as_weights(w):
    return w if isinstance(w, Weights) else MemoryWeights(w)
