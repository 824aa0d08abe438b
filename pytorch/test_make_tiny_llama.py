"""Tests of make_tiny_llama.py's shape flags: without them (or with the
defaults' values) it writes the committed tiny models byte for byte; an
impossible shape is refused with exit 2 and a message naming the flag;
other shapes load in llama_torch with the spreads the docstring gives.
Run: /usr/bin/python3 -m unittest discover -s pytorch -p 'test_*.py'
"""

import contextlib
import io
import os
import shlex
import sys
import tempfile
import unittest

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import llama_torch as lt  # noqa: E402
import make_tiny_llama as mtl  # noqa: E402
from test_llama_torch import MODELS, ROOT  # noqa: E402  the committed tiny models

FILES = ("model.safetensors", "config.json", "README.md", "tokenizer_config.json")


def read(path):
    with open(path, "rb") as f:
        return f.read()


def make(args):
    """main(args); (exit code, stderr)."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        try:
            mtl.main(args)
        except SystemExit as e:
            return e.code, err.getvalue()
    return 0, err.getvalue()


class TestDefaults(unittest.TestCase):
    def test_default_shape(self):
        for arch in mtl.ARCHS:
            d = mtl.default_shape(arch)
            self.assertEqual(mtl.make_shape(arch), d, arch)
            self.assertEqual(mtl.make_shape(arch, **d._asdict()), d, arch)
            self.assertEqual(mtl.shape_flags(arch, d), "", arch)
        self.assertEqual(mtl.default_shape("qwen3").head_dim, 32)
        self.assertEqual(mtl.make_shape("qwen3", hidden=48, heads=6).head_dim, 16, "qwen3: 2·hidden/heads")
        self.assertEqual(mtl.make_shape("phi3", hidden=48, heads=6, head_dim=8).head_dim, 8, "hidden/heads, spelled out")
        self.assertEqual(mtl.shape_flags("qwen3", mtl.make_shape("qwen3", hidden=48, heads=6)), " --heads 6 --hidden 48")
        self.assertEqual(mtl.shape_flags("qwen3", mtl.make_shape("qwen3", head_dim=16)), " --head-dim 16")
        self.assertEqual(mtl.shape_flags("llama", mtl.make_shape("llama", heads=8, tied=True)), " --heads 8 --tied")

    def test_committed_models_reproduce(self):
        """No shape flag, and every shape flag at its default, write the
        committed files (the weights' spreads are multiplied by exactly 1)."""
        with tempfile.TemporaryDirectory() as tmp:
            for arch, name in MODELS.items():
                d = mtl.default_shape(arch)
                spelled = ["--layers", str(d.layers), "--heads", str(d.heads), "--kv-heads", str(d.kv_heads),
                           "--hidden", str(d.hidden), "--intermediate", str(d.intermediate),
                           "--context", str(d.context), "--tied" if d.tied else "--untied"]
                if arch == "qwen3":
                    spelled += ["--head-dim", str(d.head_dim)]
                for how, extra in (("no flags", []), ("defaults spelled out", spelled)):
                    out = os.path.join(tmp, name)
                    self.assertEqual(make(["--arch", arch, "--out", out] + extra), (0, ""))
                    for f in FILES:
                        self.assertEqual(read(os.path.join(out, f)), read(os.path.join(ROOT, "testdata", name, f)),
                                         f"{name}/{f}, {how}")
                    self.assertEqual(os.path.realpath(os.path.join(out, "tokenizer.gguf")),
                                     os.path.realpath(os.path.join(ROOT, "testdata", name, "tokenizer.gguf")))


class TestValidation(unittest.TestCase):
    def test_bad_shapes_exit_2(self):
        for arch, args, msg in [
            ("llama", ["--heads", "6", "--kv-heads", "4"], "--heads 6 is not a multiple of --kv-heads 4"),
            ("qwen2", ["--kv-heads", "3"], "--heads 4 is not a multiple of --kv-heads 3"),
            ("llama", ["--head-dim", "32"], "--head-dim 32: llama's head_dim is hidden/heads = 16"),
            ("phi3", ["--heads", "8", "--head-dim", "16"], "only qwen3"),
            ("phi3", ["--hidden", "50"], "--hidden 50 is not a multiple of --heads 4"),
            ("llama", ["--hidden", "30", "--heads", "6", "--kv-heads", "3"], "head_dim (hidden/heads) 5 is odd"),
            ("qwen3", ["--head-dim", "31"], "--head-dim 31 is odd"),
            ("qwen3", ["--hidden", "8", "--heads", "16", "--kv-heads", "4"], "give --head-dim"),
            ("llama3", ["--context", "1"], "--context 1"),
            ("llama", ["--layers", "0"], "--layers 0: must be a positive integer"),
            ("qwen3", ["--kv-heads", "-2"], "--kv-heads -2: must be a positive integer"),
            ("llama", ["--intermediate", "0"], "--intermediate 0"),
            ("llama", ["--tied", "--untied"], "not allowed with argument --tied"),
            ("llama", ["--heads", "four"], "invalid int value"),
        ]:
            with self.subTest(arch=arch, args=args), tempfile.TemporaryDirectory() as tmp:
                out = os.path.join(tmp, "m")
                code, err = make(["--arch", arch, "--out", out] + args)
                self.assertEqual(code, 2, err)
                self.assertIn(": error: ", err)
                self.assertIn(msg, err)
                self.assertFalse(os.path.exists(out), "nothing is written")

    def test_make_shape_rejects(self):
        with self.assertRaises(mtl.ShapeError):
            mtl.make_shape("llama", tied="yes")
        with self.assertRaises(mtl.ShapeError):
            mtl.make_shape("llama", heads=True)
        with self.assertRaises(TypeError):
            mtl.make_shape("llama", vocab=100)


class TestShapes(unittest.TestCase):
    def write(self, tmp, arch, *args):
        out = os.path.join(tmp, arch + "-" + "-".join(a.strip("-") for a in args))
        self.assertEqual(make(["--arch", arch, "--out", out] + list(args)), (0, ""))
        return out

    def test_shapes_load_as_configured(self):
        with tempfile.TemporaryDirectory() as tmp:
            for arch, args, want in [
                ("llama", ["--kv-heads", "1", "--layers", "3", "--tied"],
                 dict(num_hidden_layers=3, num_key_value_heads=1, head_dim=16, tie_word_embeddings=True)),
                ("llama3", ["--hidden", "96", "--heads", "6", "--kv-heads", "2", "--context", "64"],
                 dict(hidden_size=96, head_dim=16, max_position_embeddings=64, tie_word_embeddings=True)),
                ("qwen2", ["--heads", "8", "--kv-heads", "2", "--untied", "--intermediate", "96"],
                 dict(num_attention_heads=8, head_dim=8, intermediate_size=96, tie_word_embeddings=False)),
                ("qwen3", ["--hidden", "48", "--heads", "3", "--kv-heads", "1", "--head-dim", "40"],
                 dict(num_attention_heads=3, head_dim=40, tie_word_embeddings=False)),
                ("phi3", ["--heads", "8", "--kv-heads", "8", "--tied"],
                 dict(num_key_value_heads=8, head_dim=8, tie_word_embeddings=True)),
            ]:
                with self.subTest(arch=arch, args=args):
                    out = self.write(tmp, arch, *args)
                    m = lt.load_model(out)  # every tensor's shape is the config's
                    cfg = m["config"]
                    self.assertEqual({k: cfg[k] for k in want}, want)
                    self.assertEqual("lm_head.weight" in m["weights"], not want["tie_word_embeddings"])
                    if arch == "llama3":
                        self.assertEqual(cfg["rope_scaling"]["original_max_position_embeddings"], 32)
                    if arch == "phi3":
                        self.assertEqual(cfg["original_max_position_embeddings"], cfg["max_position_embeddings"])
                    # The README's command writes the same model again.
                    readme = read(os.path.join(out, "README.md")).decode()
                    cmd = shlex.split(next(ln for ln in readme.splitlines() if "make_tiny_llama.py --arch" in ln))
                    again = os.path.join(tmp, "again")
                    self.assertEqual(make(cmd[2:cmd.index("--out")] + ["--out", again]), (0, ""))
                    for f in ("model.safetensors", "config.json"):
                        self.assertEqual(read(os.path.join(again, f)), read(os.path.join(out, f)), f)

    def test_spreads_follow_fan_in(self):
        """Doubling hidden, heads·head_dim and intermediate keeps each
        projection's output spread: the weights' std shrinks by sqrt(2)."""
        with tempfile.TemporaryDirectory() as tmp:
            base = lt.load_model(self.write(tmp, "llama"))["weights"]
            big = lt.load_model(self.write(tmp, "llama", "--hidden", "128", "--heads", "8",
                                           "--intermediate", "256"))["weights"]
            for name, want in [("layers.0.self_attn.q_proj.weight", 0.22), ("layers.0.self_attn.v_proj.weight", 0.15),
                               ("layers.0.mlp.gate_proj.weight", 0.18), ("layers.0.self_attn.o_proj.weight", 0.06),
                               ("layers.1.self_attn.o_proj.weight", 0.12)]:
                self.assertAlmostEqual(float(np.std(base[name])), want, delta=0.05 * want, msg=name)
                self.assertAlmostEqual(float(np.std(big[name])), want / np.sqrt(2), delta=0.05 * want, msg=name)
            g, g2 = base["norm.weight"], big["norm.weight"]
            self.assertAlmostEqual(float(np.median(g2)) / float(np.median(g)), 1 / np.sqrt(2), delta=0.1)


if __name__ == "__main__":
    unittest.main()
