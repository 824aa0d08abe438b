"""GGUF vocabularies for the reference side (the tiny models'
tokenizer.gguf), in pure Python, from llama.cpp's documented semantics:

- tokenizer.ggml.model "llama": SentencePiece BPE, merging the pair whose
  joint text has the highest score, then byte fallback (<0xXX>) for what
  no token spells; the dummy-prefix space before every fragment unless
  tokenizer.ggml.add_space_prefix is false; BOS per
  tokenizer.ggml.add_bos_token (true when absent).
- "gpt2" with tokenizer.ggml.pre llama-bpe or qwen2: byte-level BPE with
  Llama 3's or Qwen2's Split regex, the same pipeline as their
  tokenizer.json files (hf_tokenizer.py). GPT-2's own is gpt2_tokenizer's.

Control, user-defined and unknown tokens written in the text are matched
as such (llama.cpp with parse_special).
"""

import heapq
import re

from hf_tokenizer import BPE, Tokenizer, _pretokenizer
from safetensors_io import BadInput

# llama.cpp's token types (tokenizer.ggml.token_type).
_NORMAL, _UNKNOWN, _CONTROL, _USER_DEFINED, _UNUSED, _BYTE = 1, 2, 3, 4, 5, 6


class _SPMScored:
    """llama.cpp's SentencePiece BPE over a GGUF "llama" vocabulary: merge
    the adjacent pair whose joint text is a token of the highest score (the
    leftmost of equal scores), then spell each symbol by its token, or by
    the two symbols it was merged from, or by its bytes' <0xXX> tokens."""

    def __init__(self, tokens, scores, types, source):
        self.source = source
        self.text_to_id = {}
        for i, t in enumerate(tokens):
            self.text_to_id[t] = i
        self.scores = scores
        self.byte_id = {}
        for i, t in enumerate(tokens):
            if types and types[i] == _BYTE:
                m = re.fullmatch(r"<0x([0-9A-Fa-f]{2})>", t)
                if m:
                    self.byte_id[int(m.group(1), 16)] = i
        self._cache = {}

    def tokenize(self, text):
        if text in self._cache:
            return self._cache[text]
        n = len(text)
        sym = list(text)
        nxt, prv, alive = list(range(1, n + 1)), list(range(-1, n - 1)), [True] * n
        heap, merged_from = [], {}

        def push(i):
            j = nxt[i]
            if j < n:
                tid = self.text_to_id.get(sym[i] + sym[j])
                if tid is not None:
                    heapq.heappush(heap, (-self.scores[tid], i, j, sym[i], sym[j]))

        for i in range(n - 1):
            push(i)
        while heap:
            _, i, j, a, b = heapq.heappop(heap)
            if not (alive[i] and alive[j] and nxt[i] == j and sym[i] == a and sym[j] == b):
                continue
            sym[i] = a + b
            merged_from.setdefault(a + b, (a, b))
            alive[j] = False
            nxt[i] = nxt[j]
            if nxt[j] < n:
                prv[nxt[j]] = i
            if prv[i] >= 0:
                push(prv[i])
            push(i)
        ids = []
        for i in range(n):
            if alive[i]:
                self._spell(sym[i], merged_from, ids)
        if n < 256:
            self._cache[text] = ids
        return ids

    def _spell(self, s, merged_from, out):
        tid = self.text_to_id.get(s)
        if tid is not None:
            out.append(tid)
        elif s in merged_from:
            for part in merged_from[s]:
                self._spell(part, merged_from, out)
        else:
            for b in s.encode("utf-8"):
                if b not in self.byte_id:
                    raise BadInput(f"{self.source}: {s!r} is in no token and the vocabulary has no <0x{b:02X}>")
                out.append(self.byte_id[b])


# Llama 3's and Qwen2's Split regexes, as their tokenizer.json files hold
# them (llama.cpp's tokenizer.ggml.pre names them).
LLAMA3_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                r"|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
               r"|\s*[\r\n]+|\s+(?!\S)|\s+")
# tokenizer.ggml.pre: (Split regex, ignore_merges, llama.cpp's add_bos default).
_GGUF_PRE = {"llama-bpe": (LLAMA3_SPLIT, True, True), "llama3": (LLAMA3_SPLIT, True, True),
             "llama-v3": (LLAMA3_SPLIT, True, True), "qwen2": (QWEN2_SPLIT, False, False)}


def _added_from_types(tokens, types):
    """GGUF's control, user-defined and unknown tokens: matched in text."""
    added = {}
    for i, t in enumerate(types or []):
        if t in (_CONTROL, _USER_DEFINED, _UNKNOWN) and tokens[i]:
            added.setdefault(tokens[i], (i, False, False))
    return added


def _gguf_ids(tok, kv, n, add_bos_default):
    def key_id(k):
        v = kv.get(k)
        return v if isinstance(v, int) and 0 <= v < n else None

    tok.bos = key_id("tokenizer.ggml.bos_token_id")
    tok.add_bos = bool(kv.get("tokenizer.ggml.add_bos_token", add_bos_default)) and tok.bos is not None
    tok.eot = key_id("tokenizer.ggml.eot_token_id")
    if tok.eot is None:
        tok.eot = key_id("tokenizer.ggml.eos_token_id")
    return tok


def _from_gguf_bpe(kv, source):
    """A byte-level BPE GGUF vocabulary (tokenizer.ggml.model "gpt2") with
    Llama 3's or Qwen2's pre-tokenizer (tokenizer.ggml.pre): the same
    pipeline as their tokenizer.json files, from the GGUF's tokens and merges."""
    pre = kv.get("tokenizer.ggml.pre")
    if pre not in _GGUF_PRE:
        raise BadInput(f"{source}: tokenizer.ggml.pre {pre!r} is not supported ({', '.join(_GGUF_PRE)}; "
                       f"GPT-2's own is gpt2_tokenizer's)")
    split, ignore_merges, add_bos = _GGUF_PRE[pre]
    tokens, merges = kv.get("tokenizer.ggml.tokens"), kv.get("tokenizer.ggml.merges")
    if not isinstance(tokens, list) or not isinstance(merges, list):
        raise BadInput(f"{source}: tokenizer.ggml.tokens and tokenizer.ggml.merges must be lists")
    types = kv.get("tokenizer.ggml.token_type")
    added = _added_from_types(tokens, types)
    vocab = {}
    for i, t in enumerate(tokens):
        if t not in added:
            vocab.setdefault(t, i)
    bpe = BPE({"vocab": vocab, "merges": merges, "ignore_merges": ignore_merges}, source)
    pretok = _pretokenizer({"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": split}, "behavior": "Isolated", "invert": False},
        {"type": "ByteLevel", "add_prefix_space": False, "use_regex": False}]}, source)

    def segment(text, first):
        ids = []
        for piece in pretok(text, first):
            ids.extend(bpe.tokenize(piece))
        return ids

    return _gguf_ids(Tokenizer(source, added, segment), kv, len(tokens), add_bos)


def from_gguf_kv(kv, source):
    """The tokenizer of a GGUF's tokenizer.ggml.* keys: model "llama"
    (SentencePiece by scores), or "gpt2" with Llama 3's or Qwen2's
    pre-tokenizer (GPT-2's own is gpt2_tokenizer.GPT2Tokenizer.from_gguf)."""
    kind = kv.get("tokenizer.ggml.model")
    if kind == "gpt2":
        return _from_gguf_bpe(kv, source)
    if kind != "llama":
        raise BadInput(f"{source}: tokenizer.ggml.model {kind!r} is not supported (llama, gpt2)")
    tokens, scores = kv.get("tokenizer.ggml.tokens"), kv.get("tokenizer.ggml.scores")
    if not isinstance(tokens, list) or not isinstance(scores, list) or len(scores) != len(tokens):
        raise BadInput(f"{source}: tokenizer.ggml.tokens and tokenizer.ggml.scores must be lists of one length")
    types = kv.get("tokenizer.ggml.token_type")
    if types is not None and (not isinstance(types, list) or len(types) != len(tokens)):
        raise BadInput(f"{source}: tokenizer.ggml.token_type: {len(types) if isinstance(types, list) else types!r} "
                       f"types for {len(tokens)} tokens")
    spm = _SPMScored(tokens, scores, types, source)
    prefix = kv.get("tokenizer.ggml.add_space_prefix", True)

    def segment(text, first):
        # llama.cpp puts the dummy-prefix space before every fragment
        # (each follows a special token or starts the text).
        if prefix:
            text = " " + text
        return spm.tokenize(text.replace(" ", "\u2581"))

    return _gguf_ids(Tokenizer(source, _added_from_types(tokens, types), segment), kv, len(tokens), True)


def from_gguf(path):
    import gguf_io  # numpy; only GGUF vocabularies need it
    kv, _, _ = gguf_io.read_gguf(path)
    return from_gguf_kv(kv, path)
