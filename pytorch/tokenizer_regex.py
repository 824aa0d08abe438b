"""Hugging Face's Split regexes on Python's re (standard library only).

tokenizer.json's patterns (Oniguruma syntax) use \\p{L}, \\p{N} and \\s,
which re lacks (no \\p{..}) or reads differently (its \\s is
str.isspace, which takes U+001C..U+001F; Unicode White_Space does not):
translate() rewrites them as explicit character classes built from
unicodedata, so a file's own pattern runs with no third-party module
(python3-regex) to install on the reference side or in CI.
"""

import re
import unicodedata

import gpt2_tokenizer
from safetensors_io import BadInput

# Unicode White_Space (PropList.txt), as gpt2_tokenizer uses for \s.
WHITE_SPACE = gpt2_tokenizer._WHITE_SPACE

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
