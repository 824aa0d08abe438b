"""The pure-Python tokenizer against llama.cpp's GPT-2 test vectors (made by HF)."""

import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import gpt2_tokenizer  # noqa: E402

VOCAB_DIR = os.path.join(ROOT, "testdata", "gpt2-vocab")
VECTOR_DIRS = [os.path.join(ROOT, "testdata", "tokenizer"),
               os.path.join(ROOT, "..", "shared", "peers", "llama.cpp")]
SEP = "\n__ggml_vocab_test__\n"


def load_vectors():
    for d in VECTOR_DIRS:
        inp = os.path.join(d, "ggml-vocab-gpt-2.gguf.inp")
        out = os.path.join(d, "ggml-vocab-gpt-2.gguf.out")
        if os.path.isfile(inp) and os.path.isfile(out):
            with open(inp, encoding="utf-8", newline="") as f:
                texts = f.read().split(SEP)
            with open(out, encoding="utf-8", newline="") as f:
                ids = f.read().split("\n")
            # Both files end with a separator / newline: drop the empty tail.
            assert texts[-1] == "" and ids[-1] == "", inp
            return inp, texts[:-1], [[int(x) for x in l.split()] for l in ids[:-1]]
    raise unittest.SkipTest("no ggml-vocab-gpt-2.gguf.inp/.out found in " + ", ".join(VECTOR_DIRS))


class PeerVectors(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tok = gpt2_tokenizer.GPT2Tokenizer.from_dir(VOCAB_DIR)

    def test_peer_vectors(self):
        path, texts, expected = load_vectors()
        self.assertEqual(len(texts), len(expected), path)
        self.assertGreater(len(texts), 40)
        for text, want in zip(texts, expected):
            with self.subTest(text=text):
                got = self.tok.encode(text)
                self.assertEqual(got, want)
                self.assertEqual(self.tok.decode(got), text)

    def test_white_space_is_unicode_white_space(self):
        # U+001C..U+001F are str.isspace() but not White_Space: they are
        # "other" for the GPT-2 regex and glue to a preceding space.
        self.assertEqual(gpt2_tokenizer.pretokenize("a \x1c b"), ["a", " \x1c", " b"])
        # Only a literal U+0020 is the regex's optional " ?" prefix.
        self.assertEqual(gpt2_tokenizer.pretokenize("a\u3000\u3000b"), ["a", "\u3000", "\u3000", "b"])

    def test_pretokenize(self):
        self.assertEqual(gpt2_tokenizer.pretokenize("Hello   world  "), ["Hello", "  ", " world", "  "])
        self.assertEqual(gpt2_tokenizer.pretokenize("I'm 'RE x'lL"), ["I", "'m", " '", "RE", " x", "'", "lL"])

    def test_endoftext(self):
        self.assertEqual(self.tok.encode("a<|endoftext|>b"), [64, 50256, 65])


if __name__ == "__main__":
    unittest.main()
