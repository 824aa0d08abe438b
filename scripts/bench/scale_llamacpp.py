"""bench-scale's GGUF files next to llama.cpp (issue #41, notes 38): does
llama.cpp load the file `convert --to gguf --type bf16` writes of a
bench-scale checkpoint, and greedy-decode the same tokens as `llorch-check
generate` on that same file?

Converts CHECKPOINT into DIR/NAME-TYPE.gguf (bf16 unless --type), feeds the same few token ids
(the config's BOS, then PROMPT) to llama.cpp (node-llama-cpp 3.22.1, `make
peer-llamacpp`; e2e/llamacpp/llama_family.mjs: float32 KV cache, flash
attention off, argmax of the raw logits) and to `generate --temperature 0
--json`, and prints both token lists and whether they are the same. The
GGUF file is deleted at the end unless --keep. Exit 0 when they agree, 1
when they do not, 2 when a step fails.

Usage: scale_llamacpp.py --model CHECKPOINT --out DIR [--tokens N] [--type T] [--keep]
"""

import argparse
import json
import math
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
# Ids below every bench-scale vocabulary's size (32000 the smallest), none
# of them special in the tokenizers used.
PROMPT = [1000, 2000, 3000, 4000, 5000]


def step(argv, what):
    t0 = time.monotonic()
    p = subprocess.run(argv, capture_output=True, text=True)
    print(f"{what}: exit {p.returncode}, {time.monotonic() - t0:.1f} s", file=sys.stderr)
    if p.returncode != 0:
        sys.stderr.write(p.stderr[-2000:])
        sys.exit(2)
    return p.stdout


def agreement(doc, gen):
    """How much the same tokens say: at each step both took the same token,
    llama.cpp's log-probability of it (its logits' log-softmax, in float64)
    against ours, and llama.cpp's margin between its best and second-best
    logit. Equal tokens with a wide margin (random weights often make one
    token win by far) are a weak check; the log-probabilities are not."""
    steps = [doc["logits"][-1]] + doc["greedy_logits"]
    diffs, margins = [], []
    for logits, mine in zip(steps, gen.get("logprobs") or []):
        vals = [v if v is not None else float("-inf") for v in logits]
        top = max(vals)
        lse = top + math.log(sum(math.exp(v - top) for v in vals))
        t = mine["id"]
        if max(range(len(vals)), key=lambda i: (vals[i], -i)) != t:
            break
        diffs.append(abs((vals[t] - lse) - mine["logprob"]))
        margins.append(top - max(v for i, v in enumerate(vals) if i != t))
    if not diffs:
        return {}
    return {"steps_compared": len(diffs), "max_abs_logprob_diff": max(diffs),
            "llama.cpp_min_margin": min(margins)}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--tokens", type=int, default=4, help="greedy tokens to compare")
    ap.add_argument("--bin", default=os.path.join(ROOT, "bin/llorch-check"))
    ap.add_argument("--type", default="bf16", help="convert's --type: bf16 as bench-scale writes; f32 to see "
                    "what llama.cpp's rounding of the activations to bfloat16 for BF16 products changes")
    ap.add_argument("--keep", action="store_true", help="keep the GGUF file")
    ap.add_argument("--tokenizer", help="convert's --tokenizer: the vocabulary from this GGUF file. Phi-3's "
                    "(llama.cpp's ggml-vocab-phi-3.gguf) for a Phi-3 checkpoint with a stand-in tokenizer.json: "
                    "llama.cpp sets token attributes for a model whose general.name says phi-3 by the texts "
                    "of Phi-3's own tokens (<|endoftext|>), and refuses a vocabulary without them")
    args = ap.parse_args()
    with open(os.path.join(args.model, "config.json")) as f:
        bos = json.load(f).get("bos_token_id", 1)
    ids = [bos] + PROMPT
    gguf = os.path.join(args.out, os.path.basename(os.path.normpath(args.model)) + f"-{args.type}.gguf")
    vocab = ["--tokenizer", args.tokenizer] if args.tokenizer else []
    step([args.bin, "convert", "--to", "gguf", "--type", args.type, *vocab, args.model, gguf], "convert")
    try:
        doc = json.loads(step(["node", os.path.join(ROOT, "e2e/llamacpp/llama_family.mjs"), gguf,
                               ",".join(map(str, ids)), str(args.tokens)], "llama.cpp"))
        peer = doc["greedy"]
        gen = json.loads(step([args.bin, "generate", "--model", gguf, "--tokens", ",".join(map(str, ids)),
                               "--max-tokens", str(args.tokens), "--temperature", "0", "--json",
                               "--logprobs", "1"], "generate"))
        ours = gen["tokens"]
    finally:
        if not args.keep:
            os.remove(gguf)
    same = peer == ours
    out = {"model": args.model, "prompt": ids, "llama.cpp": peer, "llorch-check": ours, "same": same}
    out.update(agreement(doc, gen))
    # At the first step where they part, both have read the same tokens:
    # llama.cpp's logits there for its choice and for ours say whether it
    # is a near tie (random weights make many) or a real disagreement.
    for i, (a, b) in enumerate(zip(peer, ours)):
        if a != b:
            logits = doc["greedy_logits"][i - 1] if i > 0 else doc["logits"][-1]
            top = sorted(range(len(logits)), key=lambda t: -(logits[t] if logits[t] is not None else -1e30))[:3]
            out["first_difference"] = {"step": i, "llama.cpp_logit_of_its_token": logits[a],
                                       "llama.cpp_logit_of_ours": logits[b],
                                       "llama.cpp_top3": [[t, logits[t]] for t in top]}
            break
    print(json.dumps(out))
    sys.exit(0 if same else 1)


if __name__ == "__main__":
    main()
