"""A Hugging Face checkpoint directory's weights, mapped and converted one
tensor (or a range of rows) at a time, never the whole model at once.

Layouts, as transformers looks for them (the single file first):
  model.safetensors                  one file;
  model.safetensors.index.json       {"metadata": {...}, "weight_map":
                                     {tensor: shard file}} and the shards
                                     it names (model-00001-of-0000N...).

The weights hash (references/FORMAT.md, "The weights hash"): a single
file's sha256; for a sharded checkpoint the sha256 of the lines
"<sha256 of shard>  <shard file>\\n", shards sorted by file name (what
`sha256sum` prints for them). llorch-check's Go loader computes the same.
"""

import hashlib
import json
import mmap
import os

import numpy as np

from safetensors_io import NP_DTYPES as _NP, BadInput, _check_entry, _parse_header, file_sha256

SINGLE = "model.safetensors"
INDEX = "model.safetensors.index.json"

class _Shard:
    """One safetensors file: its checked header and a read-only map."""

    def __init__(self, path):
        self.path = path
        try:
            f = open(path, "rb")
        except OSError as e:
            raise BadInput(f"{path}: cannot open: {e.strerror}")
        with f:
            size = os.fstat(f.fileno()).st_size
            n, self.entries = _parse_header(path, f, size)
            self.base = 8 + n
            # A file of only a header maps nothing (mmap refuses length 0 past the end).
            self.mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) if size > self.base else None

    def array(self, name):
        """The tensor in its stored dtype: a view of the map (no copy)."""
        dtype, shape, b, e = self.entries[name]
        if e == b:
            return np.zeros(shape, dtype=_NP[dtype])
        return np.frombuffer(self.mm, dtype=_NP[dtype], count=(e - b) // np.dtype(_NP[dtype]).itemsize,
                             offset=self.base + b).reshape(shape)

    def release(self, name, lo=None, hi=None):
        """Drops the tensor's pages (rows lo:hi of it) from this process's
        mapping: they stay in the page cache but no longer count in its RSS."""
        dtype, shape, b, e = self.entries[name]
        if self.mm is None or e == b:
            return
        if lo is not None:
            row = (e - b) // max(1, shape[0])
            b, e = b + lo * row, b + hi * row
        start = (self.base + b) // mmap.PAGESIZE * mmap.PAGESIZE
        if self.base + e > start:
            self.mm.madvise(mmap.MADV_DONTNEED, start, self.base + e - start)

    def close(self):
        if self.mm is not None:
            try:
                self.mm.close()
            except BufferError:
                pass  # a view is still alive; the map goes with it


class Checkpoint:
    """The weights of an HF checkpoint directory: every shard's header
    checked against the index, tensors read from the maps on demand."""

    def __init__(self, model_dir):
        self.dir = model_dir
        single, index = os.path.join(model_dir, SINGLE), os.path.join(model_dir, INDEX)
        if os.path.exists(single) or not os.path.exists(index):
            # transformers prefers the single file when both exist; with
            # neither, the single file's "cannot open" names what is missing.
            self.weights_file = SINGLE
            self.shards = {SINGLE: _Shard(single)}
            self.where = {t: self.shards[SINGLE] for t in self.shards[SINGLE].entries}
            return
        self.weights_file = INDEX
        weight_map = _read_index(index)
        self.shards, self.where = {}, {}
        for file in sorted(set(weight_map.values())):
            path = os.path.join(model_dir, file)
            if not os.path.isfile(path):
                held = sorted(t for t, s in weight_map.items() if s == file)
                more = f" and {len(held) - 1} more" if len(held) > 1 else ""
                raise BadInput(f"{index}: shard {file!r} (holding {held[0]!r}{more}) is missing: "
                               f"{path} does not exist")
            self.shards[file] = _Shard(path)
        for file, shard in self.shards.items():
            for t in shard.entries:
                if t in self.where:
                    raise BadInput(f"tensor {t!r} is in two shards: {self.where[t].path} and {shard.path}")
                if t not in weight_map:
                    raise BadInput(f"{shard.path}: tensor {t!r} is not in {index}'s weight_map")
                self.where[t] = shard
        for t, file in weight_map.items():
            if t not in self.shards[file].entries:
                raise BadInput(f"{self.shards[file].path}: no tensor {t!r}, which {index} places in this shard")
            if self.where[t] is not self.shards[file]:
                raise BadInput(f"tensor {t!r} is in {self.where[t].path}, but {index} places it in {file!r}")

    def names(self):
        """Every tensor name, in the shards' order (sorted by file name)."""
        return list(self.where)

    def dtype(self, name):
        return self.where[name].entries[name][0]

    def shape(self, name):
        return list(self.where[name].entries[name][1])

    def path(self, name):
        return self.where[name].path

    def check(self, name):
        """A tensor about to be used: a supported dtype and an exact size."""
        _check_entry(self.where[name].path, name, self.where[name].entries[name])

    def stored(self, name):
        """The tensor as stored (a view of the map)."""
        return self.where[name].array(name)

    def release(self, name, lo=None, hi=None):
        """The tensor's pages (rows lo:hi) out of the RSS (_Shard.release)."""
        self.where[name].release(name, lo, hi)

    def parameters(self, shapes, prefix, what, optional=(), skip=lambda name: False):
        """{parameter name: tensor name} of a family's table (shapes:
        {parameter name: shape}), a tensor's name being the parameter's
        with or without prefix: every parameter present with the shape
        the config implies, no tensor but those and the optional ones,
        save what skip passes over (buffers HF saves beside the weights);
        what says what a parameter is, for the error on any other."""
        files = {}
        for t in self.names():
            n = t[len(prefix):] if t.startswith(prefix) else t
            if n not in shapes and n not in optional:
                if skip(n):
                    continue
                raise BadInput(f"{self.path(t)}: unexpected tensor {t!r} (not {what})")
            if n in files:
                raise BadInput(f"{self.path(t)}: tensor {n!r} appears twice (with and without {prefix!r})")
            self.check(t)
            files[n] = t
        where = os.path.join(self.dir, self.weights_file)
        for n, shape in shapes.items():
            if n not in files:
                raise BadInput(f"{where}: missing tensor {n!r}")
            if self.shape(files[n]) != shape:
                raise BadInput(f"{self.path(files[n])}: tensor {n!r} has shape {self.shape(files[n])}, "
                               f"config.json implies {shape}")
        return files

    def sha256(self):
        """The weights hash (module docstring): shards read in blocks."""
        if self.weights_file == SINGLE:
            return file_sha256(self.shards[SINGLE].path)
        text = "".join(f"{file_sha256(s.path)}  {f}\n" for f, s in sorted(self.shards.items()))
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def close(self):
        for s in self.shards.values():
            s.close()


def converted(model):
    """A model (a family's open_model) with every weight converted: its
    "weights" {name: float32 array}, its checkpoint's maps closed (a GGUF
    model's weights are in memory already)."""
    if "checkpoint" in model:
        model["weights"] = model["weights"].materialize()
        model.pop("checkpoint").close()
    return model


def read_json_object(path):
    """A JSON file holding an object (config.json, the index), as a dict."""
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except OSError as e:
        raise BadInput(f"{path}: cannot read: {e.strerror}")
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise BadInput(f"{path}: not valid JSON: {e}")
    if not isinstance(doc, dict):
        raise BadInput(f"{path}: not a JSON object")
    return doc


def _read_index(path):
    """model.safetensors.index.json's weight_map: {tensor: shard file name}."""
    doc = read_json_object(path)
    wm = doc.get("weight_map")
    if not isinstance(wm, dict) or not wm:
        raise BadInput(f"{path}: field 'weight_map' = {wm!r}: must be a non-empty object of tensor: shard file")
    for t, file in wm.items():
        if not isinstance(file, str) or not file or file in (".", "..") or "/" in file or "\\" in file:
            raise BadInput(f"{path}: field 'weight_map' entry {t!r} = {file!r}: not a file name in the "
                           f"checkpoint's directory")
    return wm
