#!/usr/bin/env python3
"""The tokenizer.* GGUF keys of a SentencePiece vocabulary saved as Hugging
Face's tokenizer.json (a BPE model with byte_fallback: Llama 2, Mistral,
Phi-3, Gemma 3), as llama.cpp's convert_hf_to_gguf.py writes them, written
from its documented behaviour independently of the Go converter
(tokenizer/gguf_json.go); cmd/llorch-check's TestGGUFVocabJSONPython holds
the two to the same keys.

  - tokenizer.ggml.model "llama", pre "default";
  - tokens by id, the model's rows long: ids past the tokenizer are
    "[PAD{id}]" (UNUSED); added tokens past the rows are dropped, as the
    converter drops them (Gemma 3 1B's <image_soft_token>);
  - types: <0xXX> BYTE, the unknown token UNKNOWN, added tokens CONTROL when
    special or spelled like one (the converter's does_token_look_special),
    else USER_DEFINED with their "▁" written as spaces (llama.cpp matches
    them in the text before it escapes spaces);
  - scores: tokenizer.json has none and llama.cpp merges by score, so a
    token a merge makes scores minus the rank of the first merge making it,
    every other -1e9 (below every merge);
  - add_space_prefix false when the normalizer prepends no "▁" (Gemma);
  - gguf-py's SpecialVocab: bos/eos/unk/sep/pad/cls/mask ids (the tokens
    tokenizer_config.json names, else config.json's ids), add_bos/eos/sep
    from the post-processor's template overridden by tokenizer_config.json,
    and the chat template.

Usage: gguf_vocab_json.py TOKENIZER_DIR ROWS OUT.gguf  (a vocabulary-only file)
"""

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from gguf_write import ARRAY, BOOL, F32, I32, STRING, U32, write_gguf  # noqa: E402
from safetensors_io import BadInput  # noqa: E402

_NORMAL, _UNKNOWN, _CONTROL, _USER_DEFINED, _UNUSED, _BYTE = 1, 2, 3, 4, 5, 6
_NO_MERGE = -1e9
_SPACE = "\u2581"
_TYPES = ["bos", "eos", "unk", "sep", "pad", "cls", "mask"]
_ID_KEYS = {"bos": "bos_token_id", "eos": "eos_token_id", "unk": "unknown_token_id", "sep": "seperator_token_id",
            "pad": "padding_token_id", "cls": "cls_token_id", "mask": "mask_token_id", "eot": "eot_token_id",
            "eom": "eom_token_id"}


def _is_byte(tok):
    return len(tok) == 6 and tok.startswith("<0x") and tok.endswith(">") and \
        all(c in "0123456789abcdefABCDEF" for c in tok[3:5])


def _looks_special(tok):
    return tok in ("<pad>", "<mask>", "<2mass>", "[@BOS@]") or \
        (tok.startswith("<|") and tok.endswith("|>")) or \
        (tok.startswith("<\uff5c") and tok.endswith("\uff5c>")) or \
        (tok.startswith("<unused") and tok.endswith(">"))


def _prepends(normalizer, source):
    """Whether the normalizer gives the text a dummy "▁" prefix: Sequence
    [Prepend "▁", Replace " " -> "▁"] does, Replace alone (Gemma) does not."""
    steps = normalizer.get("normalizers", []) if normalizer.get("type") == "Sequence" else [normalizer]
    prefix = False
    for i, s in enumerate(steps):
        if s.get("type") == "Prepend" and s.get("prepend") == _SPACE and i == 0:
            prefix = True
        elif not (s.get("type") == "Replace" and s.get("pattern", {}).get("String") == " " and s.get("content") == _SPACE):
            raise BadInput(f"{source}: normalizer {json.dumps(normalizer)} is not supported")
    return prefix


def _content(v):
    if isinstance(v, str):
        return v
    if isinstance(v, dict) and isinstance(v.get("content"), str):
        return v["content"]
    return None


def keys(tok_dir, rows):
    """[(key, vtype, value, array element type or None)] for write_gguf."""
    path = os.path.join(tok_dir, "tokenizer.json")
    with open(path, encoding="utf-8") as f:
        tj = json.load(f)
    model = tj.get("model") or {}
    if model.get("type") != "BPE" or not model.get("byte_fallback"):
        raise BadInput(f"{path}: only a BPE model with byte_fallback (SentencePiece's) is converted here")
    norm = tj.get("normalizer")
    if norm is not None:
        prefix = _prepends(norm, path)
    else:
        pre = tj.get("pre_tokenizer") or {}
        if pre.get("type") != "Metaspace":
            raise BadInput(f"{path}: want the Replace normalizer or the Metaspace pre-tokenizer")
        prefix = pre.get("prepend_scheme", "always") != "never"
    vocab = model["vocab"]
    base = max(vocab.values()) + 1
    added = [a for a in tj.get("added_tokens") or [] if not (a["id"] >= rows and a["id"] >= base)]
    size = max([base] + [a["id"] + 1 for a in added])
    if size > rows:
        raise BadInput(f"{path}: {size} tokens (ids up to {size - 1}), the model's vocabulary is {rows}")
    tokens, types, present = [""] * rows, [0] * rows, [False] * rows
    for t, i in vocab.items():
        tokens[i], types[i], present[i] = t, _BYTE if _is_byte(t) else _NORMAL, True
    unk = model.get("unk_token")
    if unk is not None and unk in vocab:
        types[vocab[unk]] = _UNKNOWN
    for a in added:
        t, typ = a["content"], _USER_DEFINED
        if types[a["id"]] == _UNKNOWN:
            typ = _UNKNOWN
        elif a.get("special") or _looks_special(t):
            typ = _CONTROL
        else:
            t = t.replace(_SPACE, " ")
        tokens[a["id"]], types[a["id"]], present[a["id"]] = t, typ, True
    for i in range(rows):
        if not present[i]:
            tokens[i], types[i] = f"[PAD{i}]", _UNUSED
    scores = [_NO_MERGE] * rows
    made = [False] * rows
    for rank, m in enumerate(model["merges"]):
        a, b = m.split(" ", 1) if isinstance(m, str) else m
        i = vocab.get(a + b)
        if i is not None and not made[i]:
            made[i], scores[i] = True, -float(rank)
    kv = [("tokenizer.ggml.model", STRING, "llama", None), ("tokenizer.ggml.pre", STRING, "default", None),
          ("tokenizer.ggml.tokens", ARRAY, tokens, STRING), ("tokenizer.ggml.scores", ARRAY, scores, F32),
          ("tokenizer.ggml.token_type", ARRAY, types, I32)]
    if not prefix:
        kv.append(("tokenizer.ggml.add_space_prefix", BOOL, False, None))
    return kv + _special_vocab(tok_dir, tj, rows)


def _read_json(path):
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def _special_vocab(tok_dir, tj, rows):
    """gguf-py's SpecialVocab for a tokenizer.json, ids bounded by rows."""
    cfg = _read_json(os.path.join(tok_dir, "tokenizer_config.json"))
    types = list(_TYPES)
    ids, add = {}, {}

    def set_id(typ, i):
        if typ not in ids and i is not None and 0 <= i < rows:
            ids[typ] = i

    named = {}
    for typ in types + ["eot", "eom"]:
        c = _content((cfg or {}).get(typ + "_token"))
        if c:
            named[typ] = c
    if cfg is not None and not named.get("bos") and named.get("cls"):
        named["bos"] = named["cls"]
    if cfg is not None and not named.get("eos") and named.get("sep"):
        named["eos"] = named["sep"]
    pp = tj.get("post_processor") or {}
    for proc in pp.get("processors", []) if pp.get("type") == "Sequence" else [pp]:
        if proc.get("type") == "RobertaProcessing":
            add.update(bos=True, eos=True, sep=True)
        elif proc.get("type") == "TemplateProcessing":
            single = proc.get("single") or []
            if len(single) < 2:
                continue
            first = (single[0].get("SpecialToken") or {}).get("id")
            if first:
                if cfg is None:
                    named["bos"] = first
                add["bos"] = first in (named.get("bos"), named.get("cls"))
            last = (single[-1].get("SpecialToken") or {}).get("id")
            if last:
                if cfg is None:
                    named["eos"] = last
                elif last != named.get("eos"):
                    extra = "eom" if len(types) > 7 else "eot"
                    if len(types) < 9:
                        types.append(extra)
                        named[extra] = named.get("eos")
                    named["eos"] = last
                add["eos"] = last == named.get("eos")
    template = None
    if cfg is not None:
        t = cfg.get("chat_template")
        if isinstance(t, list):
            t = next((e.get("template") for e in t if e.get("name") == "default"), None)
        template = t if isinstance(t, str) else None
        for typ in types:
            if isinstance(cfg.get(f"add_{typ}_token"), bool):
                add[typ] = cfg[f"add_{typ}_token"]
            if typ in named:
                set_id(typ, next((a["id"] for a in tj.get("added_tokens") or [] if a["content"] == named[typ]), None))
    conf = _read_json(os.path.join(tok_dir, "config.json")) or {}
    for typ in types:
        if isinstance(conf.get(f"{typ}_token_id"), int):
            set_id(typ, conf[f"{typ}_token_id"])
    kv = [(f"tokenizer.ggml.{_ID_KEYS[typ]}", U32, i, None) for typ, i in ids.items()]
    kv += [(f"tokenizer.ggml.add_{typ}_token", BOOL, v, None) for typ, v in add.items() if typ in ("bos", "eos", "sep")]
    if template is not None:
        kv.append(("tokenizer.chat_template", STRING, template, None))
    return kv


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__.rsplit("Usage: ", 1)[1].strip())
    tok_dir, rows, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    try:
        kv = keys(tok_dir, rows)
    except BadInput as e:
        sys.exit(f"gguf_vocab_json: {e}")
    write_gguf(out, [("general.architecture", STRING, "llama", None)] + kv, [])


if __name__ == "__main__":
    main()
