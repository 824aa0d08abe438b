"""Tests of make_checkpoint.py: HF's sharded layout and tensor names for
every Llama-family arch, values that do not depend on the sharding, a
forward that stays finite, the committed real configs' parameter counts.
Run: /usr/bin/python3 -m unittest test_make_checkpoint (from pytorch/)
"""

import contextlib
import io
import json
import math
import os
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import arithmetic  # noqa: E402,F401  first: pins OpenBLAS before numpy loads it
import numpy as np  # noqa: E402
import torch  # noqa: E402

import checkpoint  # noqa: E402
import families  # noqa: E402
import llama_torch as lt  # noqa: E402
import make_checkpoint as mc  # noqa: E402
import make_tiny_llama as mtl  # noqa: E402
from safetensors_io import to_float32  # noqa: E402

ROOT = os.path.dirname(HERE)
# The published parameter counts (the model cards' and the safetensors' sums).
REAL = {"SmolLM2-135M": 134515008, "Qwen2.5-0.5B": 494032768, "Llama-3.2-1B": 1235814400,
        "Qwen2.5-7B": 7615616512, "Llama-3.1-8B": 8030261248}


def run(argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = mc.main(argv)
        except SystemExit as e:
            rc = e.code
    return rc, out.getvalue() + err.getvalue()


def write_config(d, cfg):
    p = os.path.join(d, "config-" + cfg["model_type"] + str(cfg["tie_word_embeddings"]) + ".json")
    with open(p, "w") as f:
        json.dump(cfg, f, indent=2)
    return p


def tensors(d):
    """{name: (dtype, float32 values)} of a checkpoint directory."""
    ck = checkpoint.Checkpoint(d)
    out = {n: (ck.dtype(n), to_float32(ck.dtype(n), ck.stored(n))) for n in ck.names()}
    ck.close()
    return out


class MakeCheckpointTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.d = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def configs(self):
        """Each arch's tiny config (make_tiny_llama), and llama untied and tied."""
        out = [mtl.config(a, mtl.make_shape(a, layers=3)) for a in mtl.ARCHS]
        out.append(mtl.config("llama", mtl.make_shape("llama", tied=True)))
        return out

    def test_layout_names_and_sizes(self):
        for cfg in self.configs():
            arch = cfg["model_type"] + ("" if not cfg.get("rope_scaling") else "3")
            with self.subTest(arch=arch, tied=cfg["tie_word_embeddings"]):
                path = write_config(self.d, cfg)
                out = os.path.join(self.d, arch + str(cfg["tie_word_embeddings"]))
                rc, msg = run(["--config", path, "--out", out, "--shard-size", "3MB"])
                self.assertEqual(rc, 0, msg)
                with open(os.path.join(out, "config.json"), "rb") as f, open(path, "rb") as g:
                    self.assertEqual(f.read(), g.read())
                with open(os.path.join(out, checkpoint.INDEX)) as f:
                    index = json.load(f)
                files = sorted(set(index["weight_map"].values()))
                N = len(files)
                self.assertGreater(N, 1)
                self.assertEqual(files, [f"model-{i:05d}-of-{N:05d}.safetensors" for i in range(1, N + 1)])
                self.assertFalse(os.path.exists(os.path.join(out, "model.safetensors")))
                fam, _, full = families.load_config(path)
                want = {("" if n == "lm_head.weight" else "model.") + n: s for n, s in fam.param_shapes(full).items()}
                self.assertEqual(set(index["weight_map"]), set(want))
                self.assertEqual("lm_head.weight" in want, not cfg["tie_word_embeddings"])
                got = tensors(out)
                self.assertEqual({n: list(v.shape) for n, (_, v) in got.items()}, want)
                self.assertEqual({t for t, _ in got.values()}, {"BF16"})
                self.assertEqual(index["metadata"]["total_size"], 2 * sum(math.prod(s) for s in want.values()))
                for f in files:  # a shard passes 3 MB only by holding one tensor
                    sh = checkpoint._Shard(os.path.join(out, f))
                    if len(sh.entries) > 1:
                        self.assertLessEqual(sum(e - b for _, _, b, e in sh.entries.values()), 3 * 10 ** 6, f)
                    sh.close()
                # HF's state-dict order: the embedding first, the final norm then the head last.
                self.assertEqual(index["weight_map"]["model.embed_tokens.weight"], files[0])
                last = "model.norm.weight" if cfg["tie_word_embeddings"] else "lm_head.weight"
                self.assertEqual(index["weight_map"][last], files[-1])
                m = fam.open_model(out)  # every check the reference makes
                self.assertEqual(m["weights_file"], checkpoint.INDEX)
                m["checkpoint"].close()

    def test_values_and_a_finite_forward(self):
        cfg = mtl.config("qwen3", mtl.make_shape("qwen3", layers=3))
        path = write_config(self.d, cfg)
        one, many = os.path.join(self.d, "one"), os.path.join(self.d, "many")
        self.assertEqual(run(["--config", path, "--out", one, "--dtype", "f32", "--seed", "4"])[0], 0)
        self.assertEqual(run(["--config", path, "--out", many, "--dtype", "f32", "--seed", "4",
                              "--shard-size", "1000000"])[0], 0)
        self.assertTrue(os.path.exists(os.path.join(one, "model.safetensors")))
        self.assertFalse(os.path.exists(os.path.join(one, checkpoint.INDEX)))
        a, b = tensors(one), tensors(many)
        self.assertEqual(sorted(a), sorted(b))
        for n in a:  # the same values however they are sharded
            np.testing.assert_array_equal(a[n][1], b[n][1], n)
        std = cfg["initializer_range"]
        L = cfg["num_hidden_layers"]
        for n, (_, v) in a.items():
            if n.endswith("norm.weight"):
                self.assertAlmostEqual(float(v.mean()), 1.0, delta=0.02, msg=n)
            elif n.endswith(("o_proj.weight", "down_proj.weight")):
                self.assertAlmostEqual(float(v.std()), std / math.sqrt(2 * L), delta=0.1 * std, msg=n)
            else:
                self.assertAlmostEqual(float(v.std()), std, delta=0.1 * std, msg=n)
        c = tensors(os.path.join(self.d, "many"))
        rc, _ = run(["--config", path, "--out", os.path.join(self.d, "other"), "--dtype", "f32", "--seed", "5"])
        self.assertFalse(np.array_equal(tensors(os.path.join(self.d, "other"))["model.norm.weight"][1],
                                        c["model.norm.weight"][1]), "the seed changes the values")
        m = lt.load_model(many)
        with torch.no_grad():
            logits, _ = lt.Llama(m, torch.float32).forward([1, 450, 7483, 310])
        self.assertTrue(torch.isfinite(logits).all())
        self.assertGreater(float(logits.std()), 1e-3)

    def test_gemma_norms_scale_by_about_one(self):
        """Gemma applies a norm weight w as 1 + w: drawn about 0 so that
        its norms scale by about 1, as every other family's do."""
        for arch in ("gemma2", "gemma3", "llama"):
            with self.subTest(arch=arch):
                cfg = mtl.config(arch, mtl.make_shape(arch))
                out = os.path.join(self.d, arch)
                self.assertEqual(run(["--config", write_config(self.d, cfg), "--out", out, "--dtype", "f32"])[0], 0)
                norms = {n: v for n, (_, v) in tensors(out).items() if n.endswith("norm.weight")}
                self.assertTrue(norms)
                applied = 1.0 if arch.startswith("gemma") else 0.0
                for n, v in norms.items():
                    self.assertAlmostEqual(applied + float(v.mean()), 1.0, delta=0.02, msg=n)
                    self.assertAlmostEqual(float(v.std()), 0.05, delta=0.02, msg=n)

    def test_deterministic_bf16(self):
        path = write_config(self.d, mtl.config("phi3"))
        for out in ("a", "b"):
            self.assertEqual(run(["--config", path, "--out", os.path.join(self.d, out), "--shard-size", "2MB"])[0], 0)
        names = sorted(os.listdir(os.path.join(self.d, "a")))
        self.assertEqual(names, sorted(os.listdir(os.path.join(self.d, "b"))))
        for n in names:
            with open(os.path.join(self.d, "a", n), "rb") as f, open(os.path.join(self.d, "b", n), "rb") as g:
                self.assertEqual(f.read(), g.read(), n)

    def test_bf16_rounding(self):
        """The maker's 32-bit rounding is float32_to_bf16_bits' (nearest even) on finite values."""
        from safetensors_io import float32_to_bf16_bits
        rng = np.random.default_rng(0)
        x = np.concatenate([rng.standard_normal(100000).astype(np.float32) * 0.02,
                            np.array([1 + 2 ** -8, 1 + 3 * 2 ** -8, -(1 + 2 ** -8), 3.4e38, -3.4e38, 0.0, -0.0],
                                     np.float32)])
        np.testing.assert_array_equal(mc.bf16_bits(x.copy()), float32_to_bf16_bits(x))

    def test_bad_input_exit_2(self):
        path = write_config(self.d, mtl.config("llama"))
        gpt2 = os.path.join(self.d, "gpt2.json")
        with open(gpt2, "w") as f:
            json.dump({"model_type": "gpt2"}, f)
        for argv, words in ((["--config", gpt2], "'model_type' = 'gpt2'"),
                            (["--config", path, "--shard-size", "5 parsecs"], "--shard-size '5 parsecs'"),
                            (["--config", path, "--shard-size", "0"], "must be positive"),
                            (["--config", os.path.join(self.d, "none.json")], "cannot read")):
            with self.subTest(argv=argv):
                rc, msg = run(argv + ["--out", os.path.join(self.d, "never")])
                self.assertEqual(rc, 2, msg)
                self.assertIn(words, msg)
        self.assertEqual(mc.parse_size("5GB"), 5 * 10 ** 9)
        self.assertEqual(mc.parse_size("2GiB"), 2 << 30)
        self.assertEqual(mc.parse_size("1000"), 1000)

    def test_real_configs(self):
        """testdata/configs: the published configs, parameter counts as published."""
        for name, count in REAL.items():
            with self.subTest(model=name):
                raw, cfg = lt.load_config(os.path.join(ROOT, "testdata", "configs", name + ".json"))
                self.assertEqual(sum(math.prod(s) for s in lt.param_shapes(cfg).values()), count)
                self.assertEqual(raw["torch_dtype"], "bfloat16")
        _, llama31 = lt.load_config(os.path.join(ROOT, "testdata", "configs", "Llama-3.1-8B.json"))
        self.assertEqual(llama31["rope_scaling"]["rope_type"], "llama3")


if __name__ == "__main__":
    unittest.main()
