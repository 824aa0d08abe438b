"""Hugging Face tokenizer.json files for the reference side, in pure
Python (standard library only), written from Hugging Face's documented
semantics, independently of the Go tokenizer: the two are tested against
the same peer vectors (testdata/tokenizer), so where both pass, a set's
ids are what either side would encode.

The BPE model ranked by its merges, with byte_fallback (Llama 2, Mistral,
Phi-3: SentencePiece vocabularies converted) or over GPT-2's
byte-to-character mapping (Llama 3, Qwen2: the ByteLevel pre-tokenizer
after a Split regex, tokenizer_regex.py); the normalizers (Prepend,
Replace, NFC/NFD/NFKC/NFKD, Sequence), the pre-tokenizers (Metaspace,
Split, ByteLevel, Sequence) and the added tokens those files use. BOS
follows the post_processor (a TemplateProcessing whose single sequence
starts with a special token), overridden by tokenizer_config.json's
add_bos_token for the tokenizer classes that honour it (LlamaTokenizer
and its kin).

Tokenizer.encode() matches added/special tokens written in the text (as
HF's tokenizer(text) does) and adds no BOS; encode_prompt() adds BOS when
the files ask for it. GGUF vocabularies are gguf_tokenizer.py's; a model
directory's tokenizer, its hash and lm-eval's pair split are
model_tokenizer.py's.
"""

import gzip
import heapq
import json
import os
import re
import unicodedata

import gpt2_tokenizer
from safetensors_io import BadInput
from tokenizer_regex import WHITE_SPACE, translate

# ---------------------------------------------------------------- BPE

def _merge(symbols, rank_of):
    """HF's BPE merge loop: repeatedly merge the adjacent pair of lowest rank
    (the leftmost of equal ranks). symbols: list of hashable items;
    rank_of(a, b) -> (rank, merged) or None. Returns the merged list."""
    n = len(symbols)
    if n < 2:
        return list(symbols)
    sym, nxt, prv, alive = list(symbols), list(range(1, n + 1)), list(range(-1, n - 1)), [True] * n
    heap = []

    def push(i):
        j = nxt[i]
        if j < n:
            r = rank_of(sym[i], sym[j])
            if r is not None:
                heapq.heappush(heap, (r[0], i, j, sym[i], sym[j], r[1]))

    for i in range(n - 1):
        push(i)
    while heap:
        _, i, j, a, b, merged = heapq.heappop(heap)
        # Stale: either side merged since this pair was queued.
        if not (alive[i] and alive[j] and nxt[i] == j and sym[i] == a and sym[j] == b):
            continue
        sym[i] = merged
        alive[j] = False
        nxt[i] = nxt[j]
        if nxt[j] < n:
            prv[nxt[j]] = i
        if prv[i] >= 0:
            push(prv[i])
        push(i)
    return [sym[i] for i in range(n) if alive[i]]


class BPE:
    """tokenizer.json's "BPE" model."""

    def __init__(self, m, source):
        self.source = source
        for k in ("dropout",):
            if m.get(k) not in (None, 0, 0.0):
                raise BadInput(f"{source}: model.{k} = {m[k]!r} is not supported")
        for k in ("continuing_subword_prefix", "end_of_word_suffix"):
            if m.get(k) not in (None, ""):
                raise BadInput(f"{source}: model.{k} = {m[k]!r} is not supported")
        vocab = m.get("vocab")
        if not isinstance(vocab, dict):
            raise BadInput(f"{source}: model.vocab: expected an object of token -> id")
        self.vocab = vocab
        self.byte_fallback = bool(m.get("byte_fallback"))
        self.ignore_merges = bool(m.get("ignore_merges"))
        self.fuse_unk = bool(m.get("fuse_unk"))
        unk = m.get("unk_token")
        self.unk = vocab.get(unk) if unk is not None else None
        self.merges = {}
        for r, mg in enumerate(m.get("merges") or []):
            pair = tuple(mg.split(" ", 1)) if isinstance(mg, str) else tuple(mg)
            if len(pair) != 2 or pair[0] not in vocab or pair[1] not in vocab or pair[0] + pair[1] not in vocab:
                raise BadInput(f"{source}: model.merges[{r}] = {mg!r}: not two tokens of the vocabulary "
                               f"whose join is one")
            key = (vocab[pair[0]], vocab[pair[1]])
            if key not in self.merges:  # the first (lowest) rank wins
                self.merges[key] = (r, vocab[pair[0] + pair[1]])
        self._cache = {}

    def _symbols(self, word):
        out = []
        for ch in word:
            if ch in self.vocab:
                out.append(self.vocab[ch])
                continue
            if self.byte_fallback:
                ids = [self.vocab.get(f"<0x{b:02X}>") for b in ch.encode("utf-8")]
                if all(i is not None for i in ids):
                    out.extend(ids)
                    continue
            if self.unk is None:
                raise BadInput(f"{self.source}: {ch!r} is in no token and the model has no unk_token")
            if not (self.fuse_unk and out and out[-1] == self.unk):
                out.append(self.unk)
        return out

    def tokenize(self, word):
        if word in self._cache:
            return self._cache[word]
        if self.ignore_merges and word in self.vocab:
            ids = [self.vocab[word]]
        else:
            ids = _merge(self._symbols(word), lambda a, b: self.merges.get((a, b)))
        if len(word) < 256:
            self._cache[word] = ids
        return ids


# ---------------------------------------------------------------- pipeline

def _normalizer(n, source):
    """A function str -> str for tokenizer.json's normalizer n."""
    if n is None:
        return lambda s: s
    t = n.get("type")
    if t == "Sequence":
        fs = [_normalizer(x, source) for x in n.get("normalizers", [])]

        def seq(s):
            for f in fs:
                s = f(s)
            return s
        return seq
    if t in ("NFC", "NFD", "NFKC", "NFKD"):
        return lambda s: unicodedata.normalize(t, s)
    if t == "Prepend":
        p = n["prepend"]
        return lambda s: p + s if s else s  # HF prepends to a non-empty string only
    if t == "Replace":
        pat, content = n["pattern"], n["content"]
        if "String" in pat:
            old = pat["String"]
            return lambda s: s.replace(old, content)
        rx = translate(pat["Regex"], source)
        return lambda s: rx.sub(lambda _: content, s)
    raise BadInput(f"{source}: normalizer type {t!r} is not supported")


_BEHAVIORS = ("Isolated", "Removed", "MergedWithPrevious", "MergedWithNext", "Contiguous")


def _combine(parts, behavior):
    """A Split's pieces from (text, matched) runs, as HF's
    SplitDelimiterBehavior: a match is its own piece (Isolated), dropped
    (Removed), joined to the non-match just before (MergedWithPrevious) or
    after (MergedWithNext) it, else its own piece ("a--b" split on "-"
    MergedWithPrevious: "a-", "-", "b"), or joined to the matches beside it
    (Contiguous)."""
    if behavior == "Isolated":
        return [t for t, _ in parts]
    if behavior == "Removed":
        return [t for t, m in parts if not m]
    if behavior == "MergedWithNext":
        rev = _combine([(t[::-1], m) for t, m in reversed(parts)], "MergedWithPrevious")
        return [t[::-1] for t in reversed(rev)]
    out, prev = [], None
    for t, m in parts:
        # MergedWithPrevious: onto a preceding non-match; Contiguous: onto a preceding match.
        if out and m and prev == (behavior == "Contiguous"):
            out[-1] += t
        else:
            out.append(t)
        prev = m
    return out


def _pretokenizer(p, source):
    """A function str -> [str] for tokenizer.json's pre_tokenizer p; each
    piece gets the model's BPE on its own. `first` is whether the piece
    starts the text (Metaspace's prepend_scheme "first")."""
    if p is None:
        return lambda s, first: [s]
    t = p.get("type")
    if t == "Sequence":
        fs = [_pretokenizer(x, source) for x in p.get("pretokenizers", [])]

        def seq(s, first):
            pieces = [s]
            for f in fs:
                out = []
                for k, q in enumerate(pieces):
                    out.extend(f(q, first and k == 0))
                pieces = out
            return pieces
        return seq
    if t == "Split":
        if p.get("invert"):
            raise BadInput(f"{source}: pre_tokenizer Split with invert true is not supported")
        behavior = p.get("behavior")
        if behavior not in _BEHAVIORS:
            raise BadInput(f"{source}: pre_tokenizer Split behavior {behavior!r} is not supported "
                           f"({', '.join(_BEHAVIORS)})")
        pat = p["pattern"]
        rx = translate(pat["Regex"], source) if "Regex" in pat else re.compile(re.escape(pat["String"]))

        def split(s, first):
            parts, at = [], 0  # (text, matched), in order, covering s
            for m in rx.finditer(s):
                if m.start() == m.end():
                    continue
                if m.start() > at:
                    parts.append((s[at:m.start()], False))
                parts.append((m.group(), True))
                at = m.end()
            if at < len(s):
                parts.append((s[at:], False))
            return _combine(parts, behavior)
        return split
    if t == "ByteLevel":
        enc = gpt2_tokenizer.bytes_to_unicode()
        prefix, use_regex = p.get("add_prefix_space", False), p.get("use_regex", True)

        def byte_level(s, first):
            if prefix and first and not s.startswith(" "):
                s = " " + s
            parts = gpt2_tokenizer.pretokenize(s) if use_regex else [s]
            return ["".join(enc[b] for b in q.encode("utf-8")) for q in parts if q]
        return byte_level
    if t == "Metaspace":
        rep = p.get("replacement", "\u2581")
        scheme = p.get("prepend_scheme")
        if scheme is None:  # files before prepend_scheme: add_prefix_space
            scheme = "always" if p.get("add_prefix_space", True) else "never"
        if scheme not in ("always", "first", "never"):
            raise BadInput(f"{source}: pre_tokenizer Metaspace prepend_scheme {scheme!r} is not supported")
        do_split = p.get("split", True)

        def metaspace(s, first):
            s = s.replace(" ", rep)
            if s and not s.startswith(rep) and (scheme == "always" or (scheme == "first" and first)):
                s = rep + s
            if not do_split:
                return [s]
            # Split before each replacement character (MergedWithNext).
            out, at = [], 0
            for k in range(1, len(s)):
                if s[k] == rep:
                    out.append(s[at:k])
                    at = k
            out.append(s[at:])
            return [q for q in out if q]
        return metaspace
    raise BadInput(f"{source}: pre_tokenizer type {t!r} is not supported")


_BOS_CLASSES = ("LlamaTokenizer", "LlamaTokenizerFast", "CodeLlamaTokenizer", "CodeLlamaTokenizerFast",
                "GemmaTokenizer", "GemmaTokenizerFast")


class Tokenizer:
    """Encodes text to ids. file_name and sha256 name the file it came from
    (the set's model.tokenizer_file and model.tokenizer_sha256)."""

    bos = None
    add_bos = False
    eot = None

    def __init__(self, source, added, segment_ids):
        """added: {text: (id, lstrip, rstrip)} matched in the text first;
        segment_ids(text, first) encodes the text between them."""
        self.source = source
        self.added = added
        self._segment = segment_ids
        self._added_rx = None
        if added:
            alts = sorted(added, key=lambda t: (-len(t), t))
            self._added_rx = re.compile("|".join(map(re.escape, alts)))

    def encode(self, text):
        """The ids of text, added tokens matched (leftmost, longest first),
        without BOS."""
        ids, at, first = [], 0, True
        if self._added_rx is not None:
            for m in self._added_rx.finditer(text):
                tid, lstrip, rstrip = self.added[m.group()]
                start, end = m.start(), m.end()
                if lstrip:
                    while start > at and text[start - 1] in WHITE_SPACE:
                        start -= 1
                if start < at:
                    continue  # inside the previous token's stripped space
                if start > at:
                    ids.extend(self._segment(text[at:start], first))
                ids.append(tid)
                first = False
                if rstrip:
                    while end < len(text) and text[end] in WHITE_SPACE:
                        end += 1
                at = end
        if at < len(text):
            ids.extend(self._segment(text[at:], first))
        return ids

    def encode_prompt(self, text):
        """encode(text) with BOS first when the files ask for it."""
        ids = self.encode(text)
        return [self.bos] + ids if self.add_bos and self.bos is not None else ids


def from_tokenizer_json(path, config_path=None):
    """The tokenizer of a tokenizer.json (gzip-compressed if it ends in .gz)
    and, if given and present, its tokenizer_config.json."""
    try:
        opener = gzip.open if path.endswith(".gz") else open
        with opener(path, "rt", encoding="utf-8") as f:
            tj = json.load(f)
    except OSError as e:
        raise BadInput(f"{path}: cannot read: {e.strerror or e}")
    except ValueError as e:
        raise BadInput(f"{path}: not valid JSON: {e}")
    model = tj.get("model") or {}
    if model.get("type", "BPE") != "BPE":
        raise BadInput(f"{path}: model.type {model.get('type')!r} is not supported (BPE)")
    bpe = BPE(model, path)
    norm = _normalizer(tj.get("normalizer"), path)
    pre = _pretokenizer(tj.get("pre_tokenizer"), path)

    def segment(text, first):
        ids = []
        for piece in pre(norm(text), first):
            ids.extend(bpe.tokenize(piece))
        return ids

    added = {}
    for a in tj.get("added_tokens") or []:
        if a.get("single_word"):
            raise BadInput(f"{path}: added token {a.get('content')!r}: single_word is not supported")
        added[a["content"]] = (a["id"], bool(a.get("lstrip")), bool(a.get("rstrip")))
    tok = Tokenizer(path, added, segment)
    tok.bos, tok.add_bos = _template_bos(tj.get("post_processor"))
    cfg = {}
    if config_path and os.path.isfile(config_path):
        try:
            with open(config_path, encoding="utf-8") as f:
                cfg = json.load(f)
        except (OSError, ValueError) as e:
            raise BadInput(f"{config_path}: cannot read: {e}")
    ids = dict(bpe.vocab)
    ids.update({t: v[0] for t, v in added.items()})
    if cfg.get("tokenizer_class") in _BOS_CLASSES and isinstance(cfg.get("add_bos_token"), bool):
        # LlamaTokenizerFast rebuilds its post-processor from these.
        name = _token_text(cfg.get("bos_token"))
        tok.add_bos = cfg["add_bos_token"]
        if name is not None and name in ids:
            tok.bos = ids[name]
    # The end-of-text token, which an empty context conditions on when
    # there is no BOS (model_tokenizer.prefix_token), as Go's tokenizer
    # takes it from tokenizer.json, so both sides split a pair alike:
    # <|endoftext|> of a byte-level vocabulary; none for SentencePiece ones
    # (byte_fallback).
    if not bpe.byte_fallback:
        tok.eot = added.get("<|endoftext|>", (bpe.vocab.get("<|endoftext|>"),))[0]
    return tok


def _token_text(v):
    """A tokenizer_config.json token: a string or {"content": ...}."""
    if isinstance(v, dict):
        v = v.get("content")
    return v if isinstance(v, str) else None


def _template_bos(pp):
    """(BOS id, added) from a post_processor: a TemplateProcessing whose
    single template starts with a special token, then $A (in a Sequence too)."""
    if not isinstance(pp, dict):
        return None, False
    if pp.get("type") == "Sequence":
        for sub in pp.get("processors") or []:
            bos, add = _template_bos(sub)
            if add:
                return bos, add
        return None, False
    if pp.get("type") != "TemplateProcessing":
        return None, False
    single = pp.get("single") or []
    if len(single) > 1 and "SpecialToken" in single[0] and "Sequence" in single[1]:
        st = (pp.get("special_tokens") or {}).get(single[0]["SpecialToken"]["id"]) or {}
        if len(st.get("ids") or []) == 1:
            return st["ids"][0], True
    return None, False
