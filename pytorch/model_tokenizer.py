"""A model directory's tokenizer for dump_references.py: which file it
is (in the Go tokenizer.Load's order), its hash for the set's
model.tokenizer_file and model.tokenizer_sha256, the tokenizer itself
(GPT-2's, tokenizer.json's or a GGUF vocabulary's), a case's ids and a
log-likelihood pair split as lm-evaluation-harness splits it."""

import hashlib
import os

import gpt2_tokenizer
from gguf_tokenizer import from_gguf_kv
from hf_tokenizer import from_tokenizer_json
from safetensors_io import BadInput

def find(model_dir):
    """The tokenizer files of an HF model directory, in the order the Go
    tokenizer.Load tries them: ("vocab.json", [vocab.json, merges.txt]),
    ("tokenizer.json", [path]), or (NAME.gguf, [path]) for the first *.gguf
    by name with tokenizer.ggml.tokens; None without any."""
    v, m = os.path.join(model_dir, "vocab.json"), os.path.join(model_dir, "merges.txt")
    if os.path.isfile(v) and os.path.isfile(m):
        return "vocab.json", [v, m]
    tj = os.path.join(model_dir, "tokenizer.json")
    if os.path.isfile(tj):
        return "tokenizer.json", [tj]
    for name in sorted(os.listdir(model_dir)):
        p = os.path.join(model_dir, name)
        if name.endswith(".gguf") and os.path.isfile(p) and _gguf_has_tokens(p):
            return name, [p]
    return None


def _gguf_has_tokens(path):
    import gguf_io
    try:
        kv, _, _ = gguf_io.read_gguf(path)
    except BadInput:
        return False
    return "tokenizer.ggml.tokens" in kv


def files_sha256(paths):
    """sha256 of the files' bytes one after another (GPT-2's vocab.json then
    merges.txt; one file otherwise): model.tokenizer_sha256."""
    h = hashlib.sha256()
    for p in paths:
        with open(p, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
    return h.hexdigest()


def info(model_path):
    """The manifest's model.tokenizer_file and model.tokenizer_sha256 for a
    model directory; {} for a GGUF model file (its tokenizer is part of the
    weights file, which weights_sha256 already names) or a directory
    without a tokenizer."""
    if not os.path.isdir(model_path):
        return {}
    found = find(model_path)
    if found is None:
        return {}
    name, paths = found
    return {"tokenizer_file": name, "tokenizer_sha256": files_sha256(paths)}


def for_model_dir(model_dir):
    """The Llama family's tokenizer of an HF model directory (tokenizer.json,
    else a GGUF vocabulary), or None without one."""
    found = find(model_dir)
    if found is None:
        return None
    name, paths = found
    if name == "vocab.json":
        return gpt2_tokenizer.GPT2Tokenizer.from_files(*paths)
    if name == "tokenizer.json":
        return from_tokenizer_json(paths[0], os.path.join(model_dir, "tokenizer_config.json"))
    import gguf_io
    kv, _, _ = gguf_io.read_gguf(paths[0])
    if kv.get("tokenizer.ggml.model") == "gpt2" and kv.get("tokenizer.ggml.pre", "gpt-2") == "gpt-2":
        return gpt2_tokenizer.GPT2Tokenizer.from_gguf(kv, paths[0])
    return from_gguf_kv(kv, paths[0])


# ---------------------------------------------------------------- lm-eval

def prompt_ids(tok, text):
    """A case's ids: BOS first when the tokenizer's files ask for it."""
    return tok.encode_prompt(text) if hasattr(tok, "encode_prompt") else tok.encode(text)


def prefix_token(tok):
    """The token an empty context conditions on, lm-evaluation-harness's
    prefix_token_id, as generation.PrefixToken: the tokenizer's BOS when it
    has one (whether or not prompts start with it), else its end-of-text
    token (GPT-2's <|endoftext|>, also its BOS in Hugging Face's files);
    refused without either."""
    bos = getattr(tok, "bos", None)
    if bos is not None:
        return bos
    if tok.eot is None:
        raise BadInput("an empty context conditions on the BOS token, else the end-of-text token "
                       "(lm-eval's prefix_token_id), and this tokenizer has neither: give the pair a context")
    return tok.eot


def encode_pair(tok, context, continuation):
    """A log-likelihood pair as lm-evaluation-harness's _encode_pair splits
    it: trailing whitespace (str.isspace) of the context moves to the front
    of the continuation; the whole and the context are encoded separately,
    without BOS, and the continuation is the whole's ids past the context's
    length. An empty context, or one of only whitespace, conditions on
    prefix_token (lm-eval's prefix_token_id), as generation.EncodePair."""
    n = len(context) - len(context.rstrip())
    if context and n:
        continuation = context[-n:] + continuation
        context = context[:-n]
    ctx = tok.encode(context) if context else []
    if not ctx:
        return [prefix_token(tok)], tok.encode(continuation)
    whole = tok.encode(context + continuation)
    return ctx, whole[len(ctx):]
