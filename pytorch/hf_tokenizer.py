"""The Llama family's tokenizers for the reference side, in pure Python
(standard library only), written from Hugging Face's and llama.cpp's
documented semantics, independently of the Go tokenizer: the two are
tested against the same peer vectors (testdata/tokenizer), so where both
pass, a set's ids are what either side would encode.

Two sources, as a model directory carries them:

- tokenizer.json (Hugging Face tokenizers): a BPE model ranked by its
  merges, with byte_fallback (Llama 2, Mistral, Phi-3: SentencePiece
  vocabularies converted) or over GPT-2's byte-to-character mapping
  (Llama 3, Qwen2: the ByteLevel pre-tokenizer after a Split regex); the
  normalizers (Prepend, Replace, NFC/NFD/NFKC/NFKD, Sequence), the
  pre-tokenizers (Metaspace, Split, ByteLevel, Sequence) and the added
  tokens those files use. BOS follows the post_processor (a
  TemplateProcessing whose single sequence starts with a special token),
  overridden by tokenizer_config.json's add_bos_token for the tokenizer
  classes that honour it (LlamaTokenizer and its kin).
- a GGUF vocabulary (the tiny models' tokenizer.gguf) with
  tokenizer.ggml.model "llama": llama.cpp's SentencePiece BPE, merging the
  pair whose joint text has the highest score, then byte fallback
  (<0xXX>) for what no token spells; the dummy-prefix space before every
  fragment unless tokenizer.ggml.add_space_prefix is false; BOS per
  tokenizer.ggml.add_bos_token (true when absent).

encode() matches added/special tokens written in the text (as HF's
tokenizer(text) and llama.cpp with parse_special do) and adds no BOS;
encode_prompt() adds BOS when the files ask for it. encode_pair() splits
a log-likelihood pair as lm-evaluation-harness does.

Split regexes use \\p{L}, \\p{N} and \\s, which Python's re lacks (no
\\p{..}) or reads differently (its \\s is str.isspace, which takes
U+001C..U+001F): translate() rewrites them as explicit character classes
built from unicodedata, so the file's own pattern runs on the standard
library, with no third-party module to install.
"""

import gzip
import hashlib
import heapq
import json
import os
import re
import unicodedata

import gpt2_tokenizer
from safetensors_io import BadInput

# Unicode White_Space (PropList.txt), as gpt2_tokenizer uses for \s.
WHITE_SPACE = gpt2_tokenizer._WHITE_SPACE

# ---------------------------------------------------------------- regexes

_CLASSES = {}


def _ranges(pred):
    """A character-class body ("\\u0041-\\u005a...") of the code points pred takes."""
    out, start, prev = [], None, None
    for cp in range(0x110000):
        if 0xD800 <= cp <= 0xDFFF:
            ok = False
        else:
            ok = pred(chr(cp))
        if ok and start is None:
            start = cp
        if not ok and start is not None:
            out.append((start, cp - 1))
            start = None
    if start is not None:
        out.append((start, 0x10FFFF))
    esc = lambda cp: f"\\U{cp:08x}"  # noqa: E731
    return "".join(esc(a) if a == b else f"{esc(a)}-{esc(b)}" for a, b in out)


def _class(name):
    if name not in _CLASSES:
        if name == "s":
            body = "".join(f"\\U{ord(c):08x}" for c in sorted(WHITE_SPACE))
        else:
            body = _ranges(lambda ch, n=name: unicodedata.category(ch).startswith(n))
        _CLASSES[name] = body
    return _CLASSES[name]


_PROPS = {"L": "L", "N": "N", "Letter": "L", "Number": "N", "P": "P", "Punctuation": "P",
          "S": "S", "Symbol": "S", "M": "M", "Mark": "M", "Z": "Z", "C": "C"}


def translate(pattern, source="pattern"):
    """pattern (Oniguruma syntax, as tokenizer.json holds it) as a pattern of
    Python's re: \\p{X} and \\s become explicit classes (Unicode general
    categories and White_Space); \\S and \\P{X} their complements outside a
    class. Anything else passes through as re reads it."""
    out, i, depth, n = [], 0, 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "\\" and i + 1 < n:
            e = pattern[i + 1]
            if e in "pP":
                m = re.match(r"\{(\^?)([A-Za-z]+)\}", pattern[i + 2:])
                if not m or m.group(2) not in _PROPS:
                    raise BadInput(f"{source}: regex {pattern!r}: unsupported property at {pattern[i:i + 12]!r}")
                neg = (e == "P") != bool(m.group(1))
                body = _class(_PROPS[m.group(2)])
                if depth and neg:
                    raise BadInput(f"{source}: regex {pattern!r}: a negated property inside a class is not supported")
                out.append(body if depth else (f"[^{body}]" if neg else f"[{body}]"))
                i += 2 + m.end()
                continue
            if e in "sS":
                if depth and e == "S":
                    raise BadInput(f"{source}: regex {pattern!r}: \\S inside a class is not supported")
                body = _class("s")
                out.append(body if depth else (f"[{body}]" if e == "s" else f"[^{body}]"))
                i += 2
                continue
            out.append(pattern[i:i + 2])
            i += 2
            continue
        if c == "[":
            depth += 1
            out.append(c)
            i += 1
            if depth == 1 and i < n and pattern[i] == "^":
                out.append("^")
                i += 1
            if depth == 1 and i < n and pattern[i] == "]":  # a literal ] first in the class
                out.append("\\]")
                i += 1
            continue
        if c == "]" and depth:
            depth -= 1
        out.append(c)
        i += 1
    try:
        return re.compile("".join(out))
    except re.error as e:
        raise BadInput(f"{source}: regex {pattern!r}: {e}")


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


def _split(pieces, fn):
    out = []
    for p in pieces:
        out.extend(fn(p))
    return out


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
    # The token an empty context conditions on (encode_pair), as Go's
    # tokenizer takes it from tokenizer.json, so both sides split a pair
    # alike: <|endoftext|> of a byte-level vocabulary; none for SentencePiece
    # ones (byte_fallback), whose empty contexts are then refused.
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


# ---------------------------------------------------------------- GGUF

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


# ---------------------------------------------------------------- model directories

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


def encode_pair(tok, context, continuation):
    """A log-likelihood pair as lm-evaluation-harness's _encode_pair splits
    it: trailing whitespace (str.isspace) of the context moves to the front
    of the continuation; the whole and the context are encoded separately,
    without BOS, and the continuation is the whole's ids past the context's
    length. An empty context, or one of only whitespace, conditions on the
    end-of-text token (lm-eval's eot_token_id), as generation.EncodePair:
    <|endoftext|> (tokenizer.json), tokenizer.ggml.eot_token_id else
    eos_token_id (GGUF); refused when the tokenizer has none."""
    n = len(context) - len(context.rstrip())
    if context and n:
        continuation = context[-n:] + continuation
        context = context[:-n]
    ctx = tok.encode(context) if context else []
    if not ctx:
        if tok.eot is None:
            raise BadInput("an empty context conditions on the end-of-text token (<|endoftext|>), and this "
                           "tokenizer has none: give the pair a context")
        whole = tok.encode(continuation)
        return [tok.eot], whole
    whole = tok.encode(context + continuation)
    return ctx, whole[len(ctx):]

