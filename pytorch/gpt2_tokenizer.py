"""GPT-2 byte-level BPE tokenizer in pure Python (standard library only).

Reads an HF-style `vocab.json` + `merges.txt` and reproduces the Hugging Face
GPT-2 tokenizer, including its pre-tokenization regex

    's|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+

which Python's `re` cannot express (no \\p{L}); it is implemented by hand
below. `\\s` follows the `regex` module for str patterns, i.e. the Unicode
White_Space property. That is NOT Python's str.isspace(), which also accepts
U+001C..U+001F (and the `regex` module does not).

`<|endoftext|>` in the text is encoded as the special token 50256, as the HF
tokenizer does for its added special tokens.
"""

import json
import os
import unicodedata

EOT_TEXT = "<|endoftext|>"

# Unicode White_Space (PropList.txt); stable since Unicode 6.3.
_WHITE_SPACE = frozenset(
    [chr(c) for c in range(0x09, 0x0E)]
    + [" ", "\x85", "\xa0", "\u1680"]
    + [chr(c) for c in range(0x2000, 0x200B)]
    + ["\u2028", "\u2029", "\u202f", "\u205f", "\u3000"]
)
_CONTRACTIONS = ("s", "t", "re", "ve", "m", "ll", "d")  # case-sensitive, as in GPT-2

_WS, _LETTER, _NUMBER, _OTHER = range(4)


def _kind(ch):
    if ch in _WHITE_SPACE:
        return _WS
    cat = unicodedata.category(ch)
    if cat[0] == "L":
        return _LETTER
    if cat[0] == "N":
        return _NUMBER
    return _OTHER


def pretokenize(text):
    """Split text exactly like the GPT-2 regex (leftmost alternative wins)."""
    out = []
    n = len(text)
    kinds = [_kind(c) for c in text]
    i = 0
    while i < n:
        if text[i] == "'":
            hit = next((c for c in _CONTRACTIONS if text.startswith(c, i + 1)), None)
            if hit is not None:
                out.append(text[i:i + 1 + len(hit)])
                i += 1 + len(hit)
                continue
        # ` ?X+` for X in letter, number, other: the optional space binds only
        # if a run of X follows it.
        start = i
        k = kinds[i]
        if text[i] == " " and i + 1 < n and kinds[i + 1] != _WS:
            k = kinds[i + 1]
            i += 1
        if k != _WS:
            while i < n and kinds[i] == k:
                i += 1
            out.append(text[start:i])
            continue
        # Whitespace run [i, j). `\s+(?!\S)` backtracks one char so that the
        # last space can join the following word; a lone whitespace char
        # before a non-space falls through to `\s+`.
        j = i
        while j < n and kinds[j] == _WS:
            j += 1
        end = j if (j == n or j - i == 1) else j - 1
        out.append(text[i:end])
        i = end
    return out


def bytes_to_unicode():
    """GPT-2's reversible byte -> printable unicode character table."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) \
        + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


class GPT2Tokenizer:
    def __init__(self, encoder, merges, source):
        self.encoder = encoder
        self.decoder = {v: k for k, v in self.encoder.items()}
        for m in merges:
            if len(m) != 2:
                raise ValueError(f"{source}: bad merge {' '.join(m)!r}")
        self.ranks = {m: r for r, m in enumerate(merges)}
        self.byte_encoder = bytes_to_unicode()
        self.byte_decoder = {v: k for k, v in self.byte_encoder.items()}
        self.eot = self.encoder.get(EOT_TEXT)
        self._cache = {}

    @classmethod
    def from_files(cls, vocab_path, merges_path):
        with open(vocab_path, encoding="utf-8") as f:
            encoder = json.load(f)
        with open(merges_path, encoding="utf-8") as f:
            lines = f.read().split("\n")
        if lines and lines[0].startswith("#version"):
            lines = lines[1:]
        return cls(encoder, [tuple(l.split(" ")) for l in lines if l.strip()], merges_path)

    @classmethod
    def from_dir(cls, model_dir):
        """Tokenizer of a model directory, or None when it has no vocab files."""
        v = os.path.join(model_dir, "vocab.json")
        m = os.path.join(model_dir, "merges.txt")
        if os.path.isfile(v) and os.path.isfile(m):
            return cls.from_files(v, m)
        return None

    @classmethod
    def from_gguf(cls, kv, source):
        """Tokenizer of a GGUF file's metadata (tokenizer.ggml.tokens and
        merges, llama.cpp's gpt2 model), or None when it has none."""
        tokens, merges = kv.get("tokenizer.ggml.tokens"), kv.get("tokenizer.ggml.merges")
        if kv.get("tokenizer.ggml.model") != "gpt2" or not isinstance(tokens, list) or not isinstance(merges, list):
            return None
        return cls({t: i for i, t in enumerate(tokens)}, [tuple(m.split(" ")) for m in merges], source)

    def _bpe(self, word):
        if word in self._cache:
            return self._cache[word]
        parts = list(word)
        while len(parts) > 1:
            best = min(range(len(parts) - 1),
                       key=lambda i: self.ranks.get((parts[i], parts[i + 1]), float("inf")))
            pair = (parts[best], parts[best + 1])
            if pair not in self.ranks:
                break
            # Merge every occurrence of the best pair, left to right.
            merged, i = [], 0
            while i < len(parts):
                if i < len(parts) - 1 and (parts[i], parts[i + 1]) == pair:
                    merged.append(parts[i] + parts[i + 1])
                    i += 2
                else:
                    merged.append(parts[i])
                    i += 1
            parts = merged
        ids = [self.encoder[p] for p in parts]
        self._cache[word] = ids
        return ids

    def encode(self, text):
        ids = []
        chunks = text.split(EOT_TEXT) if self.eot is not None else [text]
        for n, chunk in enumerate(chunks):
            if n:
                ids.append(self.eot)
            for piece in pretokenize(chunk):
                word = "".join(self.byte_encoder[b] for b in piece.encode("utf-8"))
                ids.extend(self._bpe(word))
        return ids

    def decode(self, ids):
        text = "".join(self.decoder[i] for i in ids)
        return bytes(self.byte_decoder[c] for c in text).decode("utf-8", errors="replace")


if __name__ == "__main__":
    import argparse
    import sys

    ap = argparse.ArgumentParser(description="Encode text with a GPT-2 BPE vocabulary.")
    ap.add_argument("--dir", required=True, help="directory with vocab.json and merges.txt")
    ap.add_argument("text")
    a = ap.parse_args()
    tok = GPT2Tokenizer.from_dir(a.dir)
    if tok is None:
        sys.exit(f"{a.dir}: no vocab.json + merges.txt")
    print(" ".join(map(str, tok.encode(a.text))))
