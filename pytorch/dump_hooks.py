#!/usr/bin/env python3
"""Dump a PyTorch GPT-2 module's activations as a partial reference set.

Forward hooks on the module tree of Hugging Face's GPT2LMHeadModel record
what references/FORMAT.md's "Dumps from other engines" asks for, for the
cases of a baseline set (same ids, tokens and kept logit rows), so that
`llorch-check diff BASELINE OUT` compares the module tensor by tensor and
names the first that drifts. With transformers installed, --impl
transformers hooks the real GPT2LMHeadModel; --impl standin (the default
when it is not) hooks hf_gpt2.py, a module with the same tree.

Needs python3, torch and numpy. Exit 0 on success, 2 on bad input.
"""

import argparse
import json
import os
import platform
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dump_references import FORMAT_VERSION, arithmetic, save_npy, to_json  # noqa: E402  (arithmetic pins first)

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402

from gpt2_torch import load_model  # noqa: E402
from processors import log_probs  # noqa: E402
from safetensors_io import BadInput  # noqa: E402

# Module (relative to the model) → (checkpoint, tensor name), per layer
# where the path has {i}. A hook's output is [1, T, ...]; tuples give
# their first element, as HF's attention and blocks return.
HOOKS = [
    ("transformer.drop", 7, "embeddings"),
    ("transformer.h.{i}.ln_1", 1, "ln_1"),
    ("transformer.h.{i}.attn.c_attn", 2, "qkv"),
    ("transformer.h.{i}.attn", 5, "attn_out"),
    ("transformer.h.{i}.ln_2", 1, "ln_2"),
    ("transformer.h.{i}.mlp.act", 6, "gelu"),
    ("transformer.h.{i}.mlp", 6, "mlp_out"),
    ("transformer.h.{i}", 7, "block_out"),
    ("transformer.ln_f", 8, "ln_f"),
    ("lm_head", 8, "logits"),
]

FAULTS = ("erf-gelu",)


def load_module(impl, model_dir, model):
    if impl == "transformers":
        from transformers import GPT2LMHeadModel
        return GPT2LMHeadModel.from_pretrained(model_dir, torch_dtype=torch.float32).eval()
    from hf_gpt2 import GPT2LMHeadModel
    return GPT2LMHeadModel.from_weights(model["config"], model["weights"])


def inject(module, fault):
    """A classic porting bug, to see diff name where it enters."""
    if fault == "erf-gelu":
        for block in module.transformer.h:
            block.mlp.act = nn.GELU()  # the erf form, not gelu_new's tanh


def dump_case(module, cfg, case, rows, root, entries):
    H = cfg["n_head"]
    seen = []
    handles = []
    named = dict(module.named_modules())
    for path, cp, name in HOOKS:
        layers = range(cfg["n_layer"]) if "{i}" in path else [None]
        for i in layers:
            mod_path = path.format(i=i)
            if mod_path not in named:
                raise BadInput(f"the module has no {mod_path!r}: not Hugging Face's GPT-2 module tree")

            def hook(_m, _inp, out, cp=cp, name=name, i=i):
                t = out[0] if isinstance(out, tuple) else out
                seen.append((cp, i, name, t[0].detach()))
            handles.append(named[mod_path].register_forward_hook(hook))
    try:
        with torch.no_grad():
            module(torch.tensor([case["tokens"]], dtype=torch.long))
    finally:
        for h in handles:
            h.remove()
    os.makedirs(os.path.join(root, case["id"]), exist_ok=True)

    def write(cp, layer, name, t, rows=None):
        stem = f"{case['id']}/{name}" if layer is None else f"{case['id']}/l{layer:02d}_{name}"
        entries.append({"case": case["id"], "checkpoint": cp, "layer": layer, "name": name, "file": stem + ".npy",
                        "file_f64": None, "dtype": "float32", "shape": list(t.shape), "rows": rows})
        save_npy(os.path.join(root, stem + ".npy"), t, "<f4")

    # Forward order of FORMAT.md: hooks fire as modules finish, so a
    # block's own output comes after its sublayers'.
    for cp, layer, name, t in seen:
        if name == "qkv":
            T, C = t.shape
            for n, part in zip("qkv", t.split(C // 3, dim=1)):
                write(2, layer, n, part.view(T, H, C // 3 // H).transpose(0, 1))
        elif name == "logits":
            write(8, None, "logits", t if rows is None else t[rows], rows)
            write(9, None, "last_logits", t[-1])
            write(9, None, "last_logprobs", log_probs(t[-1]).to(t.dtype))
        else:
            write(cp, layer, name, t)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", required=True, help="HF-layout GPT-2 directory (config.json, model.safetensors)")
    ap.add_argument("--baseline", required=True, help="reference set whose cases and logit rows to dump")
    ap.add_argument("--out", required=True, help="directory to write (must not exist)")
    ap.add_argument("--impl", choices=("transformers", "standin"), help="the module to hook (default: transformers when installed)")
    ap.add_argument("--inject-fault", choices=FAULTS, help="self-test: plant a classic bug in the module")
    args = ap.parse_args(argv)
    try:
        if os.path.exists(args.out):
            raise BadInput(f"--out {args.out}: already exists")
        impl = args.impl
        if impl is None:
            try:
                import transformers  # noqa: F401
                impl = "transformers"
            except ImportError:
                impl = "standin"
        with open(os.path.join(args.baseline, "manifest.json"), encoding="utf-8") as f:
            base = json.load(f)
        model = load_model(args.model)
        if model["sha256"] != base["model"]["weights_sha256"]:
            raise BadInput(f"--model {args.model}: weights sha256 {model['sha256']}, the baseline was made from "
                           f"{base['model']['weights_sha256']}")
        module = load_module(impl, args.model, model)
        if args.inject_fault:
            inject(module, args.inject_fault)
        rows = {t["case"]: t["rows"] for t in base["tensors"] if t["name"] == "logits"}
        os.makedirs(args.out)
        entries = []
        for c in base["cases"]:
            dump_case(module, model["config"], c, rows.get(c["id"]), args.out, entries)
        manifest = {
            "format_version": FORMAT_VERSION,
            "model": {"path": args.model, "weights_file": model["weights_file"], "weights_sha256": model["sha256"],
                      "weights_dtype": model["dtype"], "config": model["config_raw"]},
            "generator": {"script": "pytorch/dump_hooks.py", "module": f"{type(module).__module__}.{type(module).__name__}",
                          "impl": impl, "injected_fault": args.inject_fault, "python": platform.python_version(),
                          "torch": torch.__version__, "numpy": np.__version__, "float64_twins": False,
                          "partial": True, "arithmetic": arithmetic.record()},
            "cases": base["cases"],
            "tensors": entries,
            "sampling": [],
            "greedy": [],
            "generation": None,
            "loglikelihood": [],
        }
        with open(os.path.join(args.out, "manifest.json"), "w", encoding="utf-8") as f:
            f.write(to_json(manifest) + "\n")
    except (BadInput, OSError, ValueError, KeyError) as e:
        print(f"dump_hooks.py: {e}", file=sys.stderr)
        return 2
    print(f"wrote {len(entries)} tensors of {len(base['cases'])} cases ({impl}) to {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
