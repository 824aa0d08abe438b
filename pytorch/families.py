"""The model families the reference implements, by architecture name.

A family is one module (gpt2_torch.py, llama_torch.py) registered by one
register(...) line below; the generic tools (dump_references.py, gguf_write.py,
make_checkpoint.py, emulate.py, processors.py) find a model's family here
by its config.json model_type (or its GGUF general.architecture) and read
what they need from the module, never naming a family themselves. What a
family module declares (README.md, "Adding a family"):

  ARCHS            the model_type values it implements
  GGUF_ARCHS       the general.architecture values of the GGUF files its
                   open_model reads (the file's exact dequantised weights); () for none
  load_config_dict(raw, path) -> (raw, cfg): the config with its defaults,
                   every setting the forward does not implement a BadInput
  param_shapes(cfg)  {parameter name: shape}
  open_model(path) -> {config_raw, config, weights, sha256, dtype,
                   weights_file[, checkpoint][, tokenizer]}: every header
                   checked, no weight converted; without "tokenizer" the
                   directory's tokenizer file is read (model_tokenizer)
  load_model(path)  open_model with every weight converted to float32
  Forward          its forward, a passes.Forward: Forward(model, dtype,
                   numerics), its block's maths only; Forward.PREFIX and
                   Forward.LAYERS name a block's parameters and the
                   config's block count
  CONTEXT          the config field holding the context length
  eos_ids(cfg)     the ids config.json says end a generation
  EMULATE          the emulate.py profiles its forward applies
  CORPUS           None where corpus sets (corpus.py) are made, else why not
  TOKENIZER_FILES  where its tokenizer is read from, for error messages
  TINY_MODELS      {arch: its committed tiny model, a folder of testdata}
  make_tiny(arch, out)  writes that model again (the same bytes)
and, where the tool applies to it:
  reach(cfg)       {mechanism: the sequence length past which it acts}
                   (a sliding window, longrope's switch): dump_references
                   adds a case past each that no case reaches
  hf_order(cfg)    [(tensor name in the files, shape)] in HF's state-dict
                   order (make_checkpoint.py)
  gguf_layout(cfg, weights, permute_qk) -> ([(key, value)], [(name, array)])
                   llama.cpp's converter layout (gguf_write.py)
"""

import os

import gemma_torch
import gguf_io
import gpt2_torch
import llama_torch
import passes
from checkpoint import read_json_object
from safetensors_io import BadInput

# What every family declares; hf_order and gguf_layout are optional.
REQUIRED = ("ARCHS", "GGUF_ARCHS", "load_config_dict", "param_shapes", "open_model", "load_model", "Forward",
            "CONTEXT", "eos_ids", "EMULATE", "CORPUS", "TOKENIZER_FILES",
            "TINY_MODELS", "make_tiny")

FAMILIES = []
BY_ARCH, BY_GGUF_ARCH = {}, {}


def register(fam):
    """Adds a family module; one missing a declaration, or claiming an
    architecture another family has, is refused (ValueError), so that a
    new family fails here and not deep inside a tool."""
    missing = [a for a in REQUIRED if not hasattr(fam, a)]
    fwd = getattr(fam, "Forward", None)
    if fwd is not None:
        if not (isinstance(fwd, type) and issubclass(fwd, passes.Forward)):
            raise ValueError(f"family {fam.__name__}: Forward is not a passes.Forward")
        missing += [f"Forward.{a}" for a in passes.Forward.DECLARES if not hasattr(fwd, a)]
    if missing:
        raise ValueError(f"family {fam.__name__}: missing {', '.join(missing)} (families.py says what each is)")
    for table, archs in ((BY_ARCH, fam.ARCHS), (BY_GGUF_ARCH, fam.GGUF_ARCHS)):
        taken = [a for a in archs if a in table]
        if taken:
            raise ValueError(f"family {fam.__name__}: {', '.join(map(repr, taken))} already "
                             f"{table[taken[0]].__name__}'s")
    FAMILIES.append(fam)
    BY_ARCH.update((a, fam) for a in fam.ARCHS)
    BY_GGUF_ARCH.update((a, fam) for a in fam.GGUF_ARCHS)


# One line a family.
register(gpt2_torch)
register(llama_torch)
register(gemma_torch)


def family(arch, where="model"):
    """The module of architecture arch (a config's model_type); an unknown
    one is a BadInput naming where it was read and the known ones."""
    f = BY_ARCH.get(arch)
    if f is None:
        raise BadInput(f"{where}: field 'model_type' = {arch!r}: only {', '.join(BY_ARCH)} are supported")
    return f


def gguf_family(arch, where):
    f = BY_GGUF_ARCH.get(arch)
    if f is None:
        raise BadInput(f"{where}: key 'general.architecture' = {arch!r}: "
                       f"only {', '.join(BY_GGUF_ARCH)} GGUF files are read")
    return f


def of_config(cfg, where="config"):
    """The family of a loaded config (a family's cfg keeps its model_type)."""
    return family(cfg.get("model_type"), where)


def of_config_file(path):
    """(family, config.json's verbatim object) of a config file."""
    raw = read_json_object(path)
    return family(raw.get("model_type"), path), raw


def load_config(path):
    """(family, verbatim config, config with defaults) of a config.json."""
    fam, raw = of_config_file(path)
    return (fam,) + tuple(fam.load_config_dict(raw, path))


def of_model(path):
    """(family, architecture) of a model: an HF-layout directory by its
    config.json's model_type, a *.gguf file by its general.architecture."""
    if path.endswith(".gguf") and os.path.isfile(path):
        arch = gguf_io.read_architecture(path)
        return gguf_family(arch, path), arch
    if not os.path.isdir(path):
        raise BadInput(f"{path}: not a directory (nor a *.gguf file)")
    fam, raw = of_config_file(os.path.join(path, "config.json"))
    return fam, raw["model_type"]
