#!/usr/bin/env python3
"""Write a llorch-check reference set (references/FORMAT.md) from PyTorch.

The forward is the family's that families.py registers for config.json's
model_type (a GGUF file's general.architecture): gpt2_torch.py for gpt2,
llama_torch.py for llama, qwen2, qwen3 and phi3; each is written out op by
op so that every intermediate tensor can be captured, and runs in float32
(the reference) and float64 (the twin).
processors.py holds checkpoints 10-12, safetensors_io.py the weights file
format, checkpoint.py HF's layouts (one model.safetensors, or shards and
model.safetensors.index.json).

The model is never held whole: its files are mapped and each layer is
converted (float32, then float64 for the twin) when the forward reaches
it, every forward of a pass going through that layer before the next
(passes.py), so the peak is about one float64 layer (or the float32 head)
whatever the model's size. --layers N runs the first N blocks only.

Needs only python3, torch and numpy. Exit 0 on success, 2 on bad input.
"""

import argparse
import hashlib
import json
import os
import platform
import re
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import arithmetic  # noqa: E402  first: it sets OpenBLAS's switches before numpy or torch loads it

import numpy as np  # noqa: E402
import torch  # noqa: E402

from gpt2_tokenizer import GPT2Tokenizer  # noqa: E402,F401  (make_tiny_model reaches it here)
import corpus  # noqa: E402
import emulate  # noqa: E402
import model_tokenizer  # noqa: E402
import families  # noqa: E402
# GPT-2's, re-exported: make_tiny_model.py's --stats and the tests reach them here.
from gpt2_torch import GPT2, gelu_new, load_model, round_matrices_f16  # noqa: E402,F401
from passes import run_tasks, used_names  # noqa: E402
from progress import Progress  # noqa: E402
from processors import (argmax_lowest, context_key, greedy_task, log_probs, loglikelihood_task,  # noqa: E402
                        loglikelihood_tokens, process_logits)
from weights import as_weights  # noqa: E402
# Re-exported: make_tiny_model.py and the tests reach these through this module.
from safetensors_io import BadInput, float32_to_bf16_bits, read_safetensors, write_safetensors  # noqa: E402,F401

FORMAT_VERSION = 1
# Probed on every call by the Llama family's forward; a set holds them only
# from the incremental run (prefill T-1 tokens, then one step), as for GPT-2.
CACHE_NAMES = ("k_cache", "v_cache")

# Checkpoint 11. Semantics of transformers 4.40-4.46 (RepetitionPenaltyLogitsProcessor,
# TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper, MinPLogitsWarper,
# applied in that order, min_tokens_to_keep=1, filter value -inf).
SAMPLING = [
    {"name": "temperature", "temperature": 0.7, "top_k": 0, "top_p": 1.0, "min_p": 0.0, "repetition_penalty": 1.0},
    {"name": "top_k", "temperature": 1.0, "top_k": 50, "top_p": 1.0, "min_p": 0.0, "repetition_penalty": 1.0},
    {"name": "top_p", "temperature": 0.9, "top_k": 0, "top_p": 0.9, "min_p": 0.0, "repetition_penalty": 1.0},
    {"name": "min_p", "temperature": 1.0, "top_k": 0, "top_p": 1.0, "min_p": 0.05, "repetition_penalty": 1.0},
    {"name": "combined", "temperature": 0.8, "top_k": 40, "top_p": 0.92, "min_p": 0.02, "repetition_penalty": 1.3},
    # OpenAI's processors: " the", "." and "," biased, the prompt penalised.
    {"name": "openai", "temperature": 0.9, "top_k": 0, "top_p": 1.0, "min_p": 0.0, "repetition_penalty": 1.0,
     "presence_penalty": 0.6, "frequency_penalty": 0.4, "logit_bias": {"262": 4.0, "13": -100.0, "11": 2.5}},
]

# ---------------------------------------------------------------- writing

def logits_rows(T, keep):
    """First, evenly spaced and always the last position; None means all rows."""
    if keep <= 0 or T <= keep:
        return None
    if keep == 1:
        return [T - 1]
    return sorted({round(i * (T - 1) / (keep - 1)) for i in range(keep)})


def save_npy(path, t, dtype, shape=None):
    """t as a version 1.0 .npy file; with shape, the header says shape and
    t is its first values, the rest appended by append_npy."""
    arr = np.ascontiguousarray(t.detach().numpy() if isinstance(t, torch.Tensor) else t, dtype=dtype)
    with open(path, "wb") as f:
        if shape is None or list(shape) == list(arr.shape):
            np.lib.format.write_array(f, arr, version=(1, 0), allow_pickle=False)
            return
        np.lib.format.write_array_header_1_0(f, {"descr": np.lib.format.dtype_to_descr(arr.dtype),
                                                 "fortran_order": False, "shape": tuple(shape)})
        f.write(arr.tobytes())


def append_npy(path, t, dtype):
    """t's values after those save_npy(path, ..., shape) and earlier
    append_npy calls wrote."""
    arr = np.ascontiguousarray(t.detach().numpy(), dtype=dtype)
    with open(path, "ab") as f:
        f.write(arr.tobytes())


class Recorder:
    """Writes tensors of one case as they are produced; the float64 run must
    produce the same sequence as the float32 run and only writes twins."""

    def __init__(self, root, case, entries, twin):
        # entries: this case's alone (the cases' passes interleave); the
        # twin run replays the float32 run's.
        self.root, self.case, self.entries, self.twin = root, case, entries, twin
        self.i = 0
        os.makedirs(os.path.join(root, case), exist_ok=True)

    def __call__(self, checkpoint, layer, name, t, rows=None, part=None):
        """part=(h, H): t is heads h.. of a tensor of H heads whose earlier
        heads were the calls before (Forward.attend), written to the end
        of its file; the first part writes the whole tensor's header."""
        stem = f"{self.case}/{name}" if layer is None else f"{self.case}/l{layer:02d}_{name}"
        shape = list(t.shape) if part is None else [part[1]] + list(t.shape[1:])
        path, dtype = (stem + ".npy", "<f4") if not self.twin else (stem + ".f64.npy", "<f8")
        if part is not None and part[0] > 0:
            append_npy(os.path.join(self.root, path), t, dtype)
            return
        if not self.twin:
            self.entries.append({"case": self.case, "checkpoint": checkpoint, "layer": layer, "name": name,
                                 "file": stem + ".npy", "file_f64": stem + ".f64.npy", "dtype": "float32",
                                 "shape": shape, "rows": rows})
        else:
            e = self.entries[self.i]
            assert (e["case"], e["checkpoint"], e["layer"], e["name"], e["shape"]) == \
                (self.case, checkpoint, layer, name, shape), (e, name)
            self.i += 1
        save_npy(os.path.join(self.root, path), t, dtype, shape)


def case_task(case, root, entries, twin, logits_keep):
    """All tensors of one case for one precision, as a passes.run_tasks
    task: the full forward and the prefix's beside it in one pass, the
    cached step in the next. Returns the last logits."""
    toks = case["tokens"]
    rec = Recorder(root, case["id"], entries, twin)

    def full_run(checkpoint, layer, name, t, rows=None, part=None):
        if name not in CACHE_NAMES:
            rec(checkpoint, layer, name, t, rows, part)

    jobs = [dict(tokens=toks, probe=full_run, rows=logits_rows(len(toks), logits_keep))]
    if len(toks) >= 2:
        jobs.append(dict(tokens=toks[:-1], rows=[]))
    outs = yield jobs
    last = outs[0][0][-1]
    rec(9, None, "last_logits", last)
    rec(9, None, "last_logprobs", log_probs(last).to(last.dtype))
    if len(toks) >= 2:
        cache = outs[1][1]
        del outs
        ((step, cache),) = yield [dict(tokens=toks[-1:], past=cache, rows=[0])]
        for i, (k, v) in enumerate(cache):
            rec(3, i, "k_cache", k[0])
            rec(3, i, "v_cache", v[0])
        rec(3, None, "step_logits", step[0])
    for sc in SAMPLING:
        rec(11, None, "sampling_" + sc["name"], process_logits(last, toks, sc))
    return last


def pair_cache_task(cfg, pair, i, root):
    """A log-likelihood pair's float16 KV cache, as the forward over its input
    stores it, one K and one V file [Hkv,T,D] a layer: an f16-kv set's, which
    Go's forward stores in place of its own to compare the log-likelihood at
    the default tolerances (FORMAT.md, "f16-kv"). A passes.run_tasks task."""
    n_ctx = cfg[context_key(cfg)]
    inp = (pair["context_tokens"] + pair["continuation_tokens"])[-(n_ctx + 1):][:-1]  # as loglikelihood()
    ((_, cache),) = yield [dict(tokens=inp, rows=[])]
    files = {"k": [], "v": []}
    os.makedirs(os.path.join(root, "loglikelihood"), exist_ok=True)
    for layer, (k, v) in enumerate(cache):
        for name, t in (("k", k[0]), ("v", v[0])):
            rel = f"loglikelihood/{i}_{name}_cache_{layer}.npy"
            save_npy(os.path.join(root, rel), t, "<f4")
            files[name].append(rel)
    return files


# ---------------------------------------------------------------- inputs

_CASE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")

# The cases of a set made without --cases, --prompt, --tokens or --corpus,
# for every family (text, so the model's own tokenizer gives the ids): a
# short prompt, a longer one with numbers and punctuation, one pair whose
# continuation starts with a space (lm-eval's split moves nothing here; the
# space is the continuation's own). Short enough for a 128-token context.
DEFAULT_CASES = {
    "cases": [
        {"id": "short", "prompt": "Hello, world."},
        {"id": "long", "prompt": "On 3 March 1921, the ship left port at 6:45 a.m. with 212 passengers. "
                                 "By noon, the wind had risen to 40 knots; the captain, worried, turned back. "
                                 "Was it the right call?"},
    ],
    "loglikelihood": [{"context": "The capital of France is", "continuation": " Paris"}],
}


def load_cases(args):
    ll = []
    if args.cases:
        try:
            with open(args.cases, encoding="utf-8") as f:
                doc = json.load(f)
        except OSError as e:
            raise BadInput(f"{args.cases}: cannot read: {e.strerror}")
        except json.JSONDecodeError as e:
            raise BadInput(f"{args.cases}: not valid JSON: {e}")
        if isinstance(doc, dict):
            cases, ll = doc.get("cases"), doc.get("loglikelihood", [])
        else:
            cases = doc
        if not isinstance(cases, list) or not isinstance(ll, list):
            raise BadInput(f"{args.cases}: expected a list of cases or {{\"cases\": [...], \"loglikelihood\": [...]}}")
        src = args.cases
    elif args.prompt is not None:
        cases, src = [{"id": "prompt", "prompt": args.prompt}], "--prompt"
    elif args.tokens is not None:
        try:
            toks = [int(x) for x in args.tokens.split(",") if x.strip()]
        except ValueError:
            raise BadInput(f"--tokens {args.tokens!r}: expected comma-separated integers")
        cases, src = [{"id": "tokens", "tokens": toks}], "--tokens"
    else:
        cases, ll, src = DEFAULT_CASES["cases"], DEFAULT_CASES["loglikelihood"], "the default cases"
    seen = set()
    for c in cases:
        cid = c.get("id") if isinstance(c, dict) else None
        if not isinstance(cid, str) or not _CASE_ID.match(cid) or cid == "manifest.json":
            raise BadInput(f"{src}: case {c!r}: 'id' must match {_CASE_ID.pattern}")
        if cid in seen:
            raise BadInput(f"{src}: duplicate case id {cid!r}")
        seen.add(cid)
        if "prompt" not in c and "tokens" not in c:
            raise BadInput(f"{src}: case {cid!r}: give 'prompt', 'tokens' or both")
        if "prompt" in c and not isinstance(c["prompt"], str):
            raise BadInput(f"{src}: case {cid!r}: 'prompt' must be a string")
        if "tokens" in c and not _ids(c["tokens"]):
            raise BadInput(f"{src}: case {cid!r}: 'tokens' must be a list of integers")
    keep = getattr(args, "case", None)
    if keep:
        missing = [k for k in keep if k not in seen]
        if missing:
            raise BadInput(f"{src}: --case {missing[0]!r}: no such case (the file has {', '.join(sorted(seen))})")
        cases = [c for c in cases if c["id"] in keep]
    for p in ll:
        if not (isinstance(p, dict) and isinstance(p.get("context"), str) and isinstance(p.get("continuation"), str)):
            raise BadInput(f"{src}: loglikelihood entry {p!r}: needs string 'context' and 'continuation'")
        given = [k for k in PAIR_TOKENS if k in p]
        if given and (len(given) < 2 or not all(_ids(p[k]) for k in given)):
            raise BadInput(f"{src}: loglikelihood entry {p!r}: give both 'context_tokens' and "
                           f"'continuation_tokens' as lists of integers, or neither")
    return cases, ll, src


PAIR_TOKENS = ("context_tokens", "continuation_tokens")


def _ids(v):
    return isinstance(v, list) and all(isinstance(t, int) and not isinstance(t, bool) for t in v)


def no_tokenizer(cfg, model_dir, why=None):
    """Why model_dir cannot tokenize text (why: the tokenizer's load error)."""
    ids = ("give token ids: a case's 'tokens', a pair's 'context_tokens' and 'continuation_tokens', "
           "with the text for display")
    if why:
        return f"{why} ({ids})"
    return f"{model_dir}: no tokenizer ({families.of_config(cfg).TOKENIZER_FILES}; or {ids})"


def pick_tokens(src, what, given, encoded):
    """The ids given in the cases file, which are authoritative, else the
    text's encoding; with both (a tokenizer and given ids) they must agree."""
    if given is None:
        return encoded
    if encoded is not None and encoded != given:
        raise BadInput(f"{src}: {what}: the text tokenizes to {encoded}, not the given ids {given}")
    return given


def resolve(cases, ll, src, tok, cfg, model_dir, why=None):
    """Cases and pairs with their token ids. Ids given in the file are
    authoritative (the text is then for display); with a tokenizer the text
    must encode to them. A case's text is encoded as a prompt (BOS first
    when the tokenizer's files ask for it), a pair as lm-eval splits it
    (model_tokenizer.encode_pair: no BOS)."""
    V, key = cfg["vocab_size"], context_key(cfg)
    needs_tok = [c["id"] for c in cases if "tokens" not in c] + \
        (["loglikelihood"] if any("context_tokens" not in p for p in ll) else [])
    if needs_tok and tok is None:
        raise BadInput(f"{no_tokenizer(cfg, model_dir, why)}, needed to tokenize {', '.join(needs_tok)} from {src}")

    def check_ids(what, toks):
        bad = [t for t in toks if not 0 <= t < V]
        if bad:
            raise BadInput(f"{src}: {what}: token id {bad[0]} outside the vocabulary [0, {V})")

    out = []
    for c in cases:
        what = f"case {c['id']!r}"
        encoded = None if tok is None or "prompt" not in c else list(model_tokenizer.prompt_ids(tok, c["prompt"]))
        toks = pick_tokens(src, what, c.get("tokens"), encoded)
        if not toks:
            raise BadInput(f"{src}: {what} has no tokens")
        check_ids(what, toks)
        if len(toks) > cfg[key]:
            raise BadInput(f"{src}: {what} has {len(toks)} tokens, more than the context {key}={cfg[key]}")
        out.append({"id": c["id"], "prompt": c.get("prompt"), "tokens": toks})
    pairs = []
    for p in ll:
        what = f"loglikelihood {p['context']!r} + {p['continuation']!r}"
        try:
            encoded = None if tok is None else list(model_tokenizer.encode_pair(tok, p["context"], p["continuation"]))
        except BadInput as e:
            raise BadInput(f"{src}: {what}: {e}")
        given = [p[k] for k in PAIR_TOKENS] if "context_tokens" in p else None
        ctx, cont = pick_tokens(src, what, given, encoded)
        if not ctx:
            raise BadInput(f"{src}: {what}: context has no tokens")
        if not cont:
            raise BadInput(f"{src}: {what}: continuation has no tokens")
        check_ids(what, ctx + cont)
        pairs.append({"context": p["context"], "continuation": p["continuation"],
                      "context_tokens": list(ctx), "continuation_tokens": list(cont)})
    return out, pairs


def reaching_cases(cases, cfg, n_generate=0):
    """A case for each length-dependent mechanism the config has that no
    case reaches (a family's reach(cfg): {name: length}, e.g. a sliding
    window of 4096, or longrope's pretrained context), so that the set
    exercises it rather than assumes it: the longest case's tokens, its
    first (BOS) kept, cycled to 8 past that length, within the context. Its
    id says which: past-window, past-longrope. Longrope also gets a case
    whose greedy continuation (n_generate tokens) crosses the pretrained
    context, where generation runs the sequence again with the long
    factors (processors.greedy_task; Phi3ForCausalLM's generate): the
    same tokens cycled to n_generate // 2 short of it, across-longrope."""
    reach = getattr(families.of_config(cfg), "reach", None)
    if reach is None or not cases:
        return []
    ctx = cfg[context_key(cfg)]
    longest = max((c["tokens"] for c in cases), key=len)
    body = longest[1:] or longest

    def cycled(length):
        return longest[:1] + [body[i % len(body)] for i in range(length - 1)]
    out = []
    lengths = reach(cfg)
    for name, n in sorted(lengths.items()):
        if n >= ctx or any(len(c["tokens"]) > n for c in cases + out):
            continue
        out.append({"id": f"past-{name}", "prompt": None, "tokens": cycled(min(n + 8, ctx))})
    switch = lengths.get("longrope")
    # A continuation crosses when its sequence reaches switch + 1 before its
    # last token: len(tokens) <= switch <= len(tokens) + n_generate - 2.
    crosses = any(len(c["tokens"]) <= switch <= len(c["tokens"]) + n_generate - 2
                  for c in cases + out) if switch else True
    if not crosses and n_generate >= 2 and switch + n_generate <= ctx:
        out.append({"id": "across-longrope", "prompt": None, "tokens": cycled(max(switch - n_generate // 2, 1))})
    return out


# ---------------------------------------------------------------- main

def load(args):
    """The model (its weights mapped, not converted), its forward (a class
    taking (model, dtype)) and whether --weight-dtype f16 rounded it."""
    fam, arch = families.of_model(args.model)
    why = emulate.unsupported(args.emulate, arch)
    if why:
        raise BadInput(f"{why} ({args.model})")
    # The float64 twin applies the same approximations: its truth is the
    # emulated engine's function computed exactly, so the budget column
    # still compares an engine with PyTorch float32 doing the same thing.
    numerics = emulate.profile(args.emulate)
    model = fam.open_model(args.model)
    if "tokenizer" not in model:
        # tokenizer.json or a GGUF vocabulary. One this module cannot read
        # is an error only where text needs it (resolve names the cause).
        model["tokenizer"], model["tokenizer_error"] = None, None
        try:
            model["tokenizer"] = model_tokenizer.for_model_dir(args.model)
        except BadInput as e:
            model["tokenizer_error"] = str(e)
    n_layers = model["config"][fam.Forward.LAYERS]

    def forward(m, dtype):
        return fam.Forward(m, dtype, numerics)
    if args.layers is not None:
        if args.layers > n_layers:
            raise BadInput(f"--layers {args.layers}: more than the model's {n_layers} layers ({args.model})")
        model["layers"] = args.layers
    # Every 2-D weight is a matrix llorch-check rounds (GPT-2's wpe aside;
    # the Llama family's norms and biases are 1-D). Marked only if rounding
    # changed the weights, as llorch-check dump marks it: an F16 file's set
    # is the reference however it is held. Checked over the weights the
    # forward reads, before any runs; the forward then reads them rounded.
    w = model["weights"] = as_weights(model["weights"])
    rounded = False
    if args.weight_dtype == "f16":
        rounded = w.rounding_changes(used_names(w.names(), model.get("layers") or n_layers, fam.Forward.PREFIX))
        w.round_f16 = True
    model["tokenizer_info"] = model_tokenizer.info(args.model)
    return model, forward, rounded


def generation_eos(model_dir, cfg):
    """The ids generation_config.json lists as eos_token_id (an id or a
    list; [] without the file or the field): transformers' generate stops
    on them beside config.json's, and so does llorch-check (Llama 3.1's
    <|eot_id|>, Qwen2.5's <|im_end|> are only there)."""
    path = os.path.join(model_dir, "generation_config.json")
    if not os.path.exists(path):
        return []
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise BadInput(f"{path}: not a JSON object: {e}")
    if not isinstance(doc, dict):
        raise BadInput(f"{path}: not a JSON object")
    v = doc.get("eos_token_id")
    if v is None:
        return []
    ids = v if isinstance(v, list) else [v]
    V = cfg.get("vocab_size")
    for t in ids:
        if not isinstance(t, int) or isinstance(t, bool) or t < 0 or (V is not None and t >= V):
            raise BadInput(f"{path}: field 'eos_token_id': {t!r} is not a token id of the {V}-token vocabulary")
    return ids


def recorded_config(raw, cfg):
    """The config.json the manifest records: as the checkpoint has it, plus
    head_dim when the file leaves it out and the family's default is not
    hidden_size / num_attention_heads (Gemma's 256, Qwen3's 128). A reader
    of the set without the family's defaults (references.ModelDims in Go)
    would otherwise derive the other value and refuse every shape."""
    if raw.get("head_dim") is not None or cfg.get("head_dim") is None:
        return raw
    C, H = raw.get("hidden_size"), raw.get("num_attention_heads")
    if isinstance(C, int) and isinstance(H, int) and H > 0 and C % H == 0 and C // H == cfg["head_dim"]:
        return raw
    return dict(raw, head_dim=cfg["head_dim"])


def forwards(args, model, forward, rounded):
    """The float32 forward, its float64 twin (sharing the mapped weights),
    and the manifest's model and generator blocks."""
    m32, m64 = forward(model, torch.float32), forward(model, torch.float64)
    m32.progress, m64.progress = Progress("float32"), Progress("float64")
    info = {"path": args.model, "weights_file": model["weights_file"], "weights_sha256": model["sha256"],
            "weights_dtype": model["dtype"], **model["tokenizer_info"]}
    if rounded:
        info["matrices_held_as"] = "float16"
    if "layers" in model:
        info["layers"] = model["layers"]
    info["config"] = recorded_config(model["config_raw"], model["config"])
    gen = {"script": "pytorch/dump_references.py", "python": platform.python_version(),
           "torch": torch.__version__, "numpy": np.__version__, "float64_twins": True,
           "arithmetic": arithmetic.record()}
    if args.emulate != "none":
        gen["emulates"] = {"profile": args.emulate, "applies": emulate.DESCRIPTIONS[args.emulate]}
    return m32, m64, info, gen


def build(args, tmp):
    """A case set in tmp: the float32 passes (every case's forwards, greedy
    decoding and the log-likelihoods together), then the float64 ones.
    Returns the number of tensors."""
    model, forward, rounded = load(args)
    cfg = model["config"]
    cases, ll, src = load_cases(args)
    tok = model["tokenizer"]
    cases, pairs = resolve(cases, ll, src, tok, cfg, args.model, model.get("tokenizer_error"))
    if not getattr(args, "case", None):
        cases += reaching_cases(cases, cfg, args.n_generate)
    eos = families.of_config(cfg).eos_ids(cfg)
    eos += [t for t in generation_eos(args.model, cfg) if t not in eos]
    m32, m64, info, gen = forwards(args, model, forward, rounded)
    per_case = {c["id"]: [] for c in cases}
    n, np_ = len(cases), len(pairs)
    with torch.no_grad():
        r32 = run_tasks(m32, [case_task(c, tmp, per_case[c["id"]], False, args.logits_rows) for c in cases] +
                        [greedy_task(cfg, c["tokens"], args.n_generate, eos) for c in cases] +
                        [loglikelihood_task(cfg, p["context_tokens"], p["continuation_tokens"]) for p in pairs] +
                        ([pair_cache_task(cfg, p, i, tmp) for i, p in enumerate(pairs)]
                         if args.emulate == "f16-kv" else []))
        r64 = run_tasks(m64, [case_task(c, tmp, per_case[c["id"]], True, args.logits_rows) for c in cases] +
                        [loglikelihood_task(cfg, p["context_tokens"], p["continuation_tokens"]) for p in pairs])
    close(model)
    greedy, gens = [], []
    for c, last, (out, why) in zip(cases, r32[:n], r32[n:2 * n]):
        greedy.append({"case": c["id"], "token": argmax_lowest(last)})
        # Only GPT-2's tokenizer decodes here; the Llama family's text stays null.
        text = None if not hasattr(tok, "decode") else tok.decode([t for t in out if t not in eos])
        gens.append({"case": c["id"], "tokens": out, "text": text, "stop_reason": why})
    for i, p in enumerate(pairs):
        (ll32, is_greedy), (ll64, _) = r32[2 * n + i], r64[n + i]
        p.update(ll=ll32, ll_f64=ll64, is_greedy=is_greedy)
        if args.emulate == "f16-kv":
            p["kv_cache"] = r32[2 * n + np_ + i]
    entries = [e for c in cases for e in per_case[c["id"]]]
    manifest = {
        "format_version": FORMAT_VERSION,
        "model": info,
        "generator": gen,
        "cases": cases,
        "tensors": entries,
        "sampling": SAMPLING,
        "greedy": greedy,
        "generation": {"n": args.n_generate, "results": gens},
        "loglikelihood": pairs,
    }
    with open(os.path.join(tmp, "manifest.json"), "w", encoding="utf-8") as f:
        f.write(to_json(manifest) + "\n")
    return len(entries)


def close(model):
    """Unmaps the checkpoint's files (a GGUF model's weights are in memory)."""
    if "checkpoint" in model:
        model["checkpoint"].close()


def build_corpus(args, tmp):
    """A corpus set (corpus.py) in tmp; returns the number of scored positions."""
    model, forward, rounded = load(args)
    cfg, tok = model["config"], model["tokenizer"]
    V, n_ctx = cfg["vocab_size"], cfg[context_key(cfg)]
    refused = families.of_config(cfg).CORPUS
    if refused:
        raise BadInput(f"{args.model}: --corpus: {refused}, not model_type {cfg['model_type']!r}")
    if tok is None:
        raise BadInput(f"{no_tokenizer(cfg, args.model)}, needed to tokenize {args.corpus}")
    if args.top_k > V:
        raise BadInput(f"--top-k {args.top_k}: more than the vocabulary's {V} tokens")
    text, about = corpus.read_text(args.corpus)
    tokens = tok.encode(text)
    bad = [t for t in tokens if not 0 <= t < V]
    if bad:
        raise BadInput(f"{args.corpus}: token id {bad[0]} outside the vocabulary [0, {V})")
    chunks = corpus.chunk(tokens, n_ctx, args.corpus)
    m32, m64, info, gen = forwards(args, model, forward, rounded)
    arrays = corpus.score(m32, m64, chunks, args.top_k)
    close(model)
    files = {}
    for name, arr in arrays.items():
        path = os.path.join(tmp, name + ".npy")
        save_npy(path, arr, corpus.FILES[name])
        with open(path, "rb") as f:
            files[name + ".npy"] = hashlib.sha256(f.read()).hexdigest()
    P = len(arrays["targets"])
    doc = {
        "format_version": FORMAT_VERSION,
        "kind": "corpus",
        "model": info,
        "generator": gen,
        "corpus": dict(about, tokens=len(tokens)),
        "n_ctx": n_ctx,
        "chunks": len(chunks),
        "scored_from": n_ctx // 2,
        "positions": P,
        "top_k": args.top_k,
        "files": files,
        "tokens": [t for c in chunks for t in c],
    }
    with open(os.path.join(tmp, "corpus.json"), "w", encoding="utf-8") as f:
        f.write(to_json(doc) + "\n")
    return P


def _scalar(v):
    return not isinstance(v, (dict, list))


def to_json(v, level=0):
    """Indented JSON, but lists of scalars and short flat objects stay on one
    line (a manifest with one token per line is unreadable). Floats use repr."""
    flat = json.dumps(v, ensure_ascii=True, allow_nan=False, separators=(", ", ": "))
    if isinstance(v, list) and all(map(_scalar, v)):
        return flat
    if isinstance(v, dict) and len(flat) <= 300 and all(
            _scalar(x) or (isinstance(x, list) and all(map(_scalar, x))) for x in v.values()):
        return flat
    if _scalar(v) or not v:
        return flat
    pad, end = " " * (level + 1), " " * level
    if isinstance(v, dict):
        items = [f"{pad}{json.dumps(k, ensure_ascii=True)}: {to_json(x, level + 1)}" for k, x in v.items()]
        return "{\n" + ",\n".join(items) + "\n" + end + "}"
    return "[\n" + ",\n".join(pad + to_json(x, level + 1) for x in v) + "\n" + end + "]"


def tree(root):
    files = {}
    for d, _, names in os.walk(root):
        for n in names:
            p = os.path.join(d, n)
            files[os.path.relpath(p, root)] = p
    return files


def same_tree(a, b):
    fa, fb = tree(a), tree(b)
    if fa.keys() != fb.keys():
        return False
    for rel in fa:
        with open(fa[rel], "rb") as x, open(fb[rel], "rb") as y:
            if x.read() != y.read():
                return False
    return True


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", required=True, help="HF-layout directory (config.json and model.safetensors, or "
                    "HF's shards and model.safetensors.index.json) of a "
                    "model_type " + ", ".join(families.BY_ARCH) + " model, "
                    "or a GGUF file in llama.cpp's " + ", ".join(families.BY_GGUF_ARCH) +
                    " layout: its exact (dequantised) weights")
    ap.add_argument("--out", required=True, help="reference set directory to write")
    src = ap.add_mutually_exclusive_group()
    src.add_argument("--cases", help="JSON cases file: [{id, prompt and/or tokens}] or "
                     "{\"cases\": [...], \"loglikelihood\": [{context, continuation[, context_tokens, "
                     "continuation_tokens]}]}; text is encoded by the model's tokenizer; given ids are "
                     "authoritative and must match the text's encoding (default: the built-in cases, "
                     "two prompts and one pair)")
    src.add_argument("--prompt", help="a single prompt (case id 'prompt')")
    src.add_argument("--tokens", help="a single case as comma-separated token ids (case id 'tokens')")
    src.add_argument("--corpus", help="a UTF-8 text file: write a corpus set instead (references/FORMAT.md, "
                     "\"Corpus sets\"): next-token distributions over n_ctx-token chunks, as llama-perplexity scores them")
    ap.add_argument("--top-k", type=int, default=32, help="with --corpus: log-probabilities kept per position (default 32)")
    ap.add_argument("--case", action="append", metavar="ID",
                    help="with --cases: keep only the case ID (repeatable; the file's order; "
                         "its loglikelihood pairs are all kept)")
    ap.add_argument("--n-generate", type=int, default=16, help="greedy tokens for checkpoint 12 (default 16)")
    ap.add_argument("--logits-rows", type=int, default=4,
                    help="keep this many rows of the full logits (first, evenly spaced, last); 0 keeps all")
    ap.add_argument("--layers", type=int, metavar="N",
                    help="run only the first N blocks, then the final norm and head (as vLLM's "
                         "hf_overrides num_hidden_layers); the set records N as model.layers")
    ap.add_argument("--force", action="store_true", help="replace an existing, different reference set")
    ap.add_argument("--weight-dtype", choices=("f32", "f16"), default="f32",
                    help="f16: round the weight matrices to float16 first, the reference of "
                         "llorch-check --weight-dtype f16 (arithmetic stays float32/float64)")
    ap.add_argument("--emulate", choices=("none",) + tuple(emulate.PROFILES), default="none",
                    help="apply an engine's documented numerical approximations in the forward (pytorch/emulate.py): "
                         "the reference that engine is validated against at the default tolerances; "
                         "llamacpp-cpu: ggml's float16 GELU table (F32 KV cache, flash attention off); "
                         "llamacpp-cpu-f16kv: that and llama.cpp's default F16 KV cache (both GPT-2 only); "
                         "f16-kv: K and V stored as float16, all arithmetic float32, as llorch-check serve "
                         "--kv-cache-dtype f16 does (GPT-2 and the Llama family)")
    args = ap.parse_args(argv)
    if args.n_generate < 0:
        ap.error("--n-generate must be >= 0")
    if args.top_k < 1:
        ap.error("--top-k must be >= 1")
    if args.layers is not None and args.layers < 1:
        ap.error(f"--layers {args.layers}: must be at least 1")
    if args.case and not args.cases:
        ap.error("--case picks cases of a --cases file; give --cases FILE")

    arithmetic.setup_torch()
    for k, v in arithmetic.overridden.items():
        print(f"dump_references: note: {k}={v} from the environment replaced by the pinned "
              f"{arithmetic.PINS[k]}", file=sys.stderr)
    for line in arithmetic.unmet(arithmetic.record()):
        print(f"dump_references: note: arithmetic not pinned: {line}; this set will not reproduce "
              f"bit for bit elsewhere (references/FORMAT.md)", file=sys.stderr)
    out = os.path.abspath(args.out)
    if os.path.exists(out) and not os.path.isdir(out):
        print(f"dump_references: error: {args.out} exists and is not a directory", file=sys.stderr)
        return 2
    parent = os.path.dirname(out)
    os.makedirs(parent, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="." + os.path.basename(out) + ".tmp-", dir=parent)
    try:
        n = (build_corpus if args.corpus else build)(args, tmp)
        what = f"{n} scored positions" if args.corpus else f"{n} tensors"
        os.chmod(tmp, 0o755)  # mkdtemp makes it 0700
        if os.path.isdir(out):
            if same_tree(out, tmp):
                print(f"{args.out}: up to date ({what})")
                return 0
            if not args.force:
                print(f"dump_references: error: {args.out} exists and differs from what would be written; "
                      f"use --force to replace it", file=sys.stderr)
                return 2
            old = tempfile.mkdtemp(prefix="." + os.path.basename(out) + ".old-", dir=parent)
            os.rename(out, os.path.join(old, "set"))
            os.rename(tmp, out)
            shutil.rmtree(old)
        else:
            os.rename(tmp, out)
        print(f"{args.out}: wrote {what} (+ float64 twins)")
        return 0
    except BadInput as e:
        print(f"dump_references: error: {e}", file=sys.stderr)
        return 2
    finally:
        if os.path.isdir(tmp):
            shutil.rmtree(tmp)


if __name__ == "__main__":
    sys.exit(main())
