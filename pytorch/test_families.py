"""Tests of families.py, the registry the generic tools find a model's
family in: what a registration refuses, the one error an unknown
architecture gets, and every registered architecture taken through the
generic paths (its tiny model made again, a reference set dumped).
Run: /usr/bin/python3 -m unittest test_families (from pytorch/)
"""

import json
import os
import shutil
import sys
import tempfile
import types
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import arithmetic  # noqa: E402,F401  first: pins OpenBLAS before numpy loads it

import dump_references as dr  # noqa: E402
import emulate  # noqa: E402
import families  # noqa: E402
import gguf_io  # noqa: E402
import gguf_write  # noqa: E402
import make_checkpoint as mc  # noqa: E402
import passes  # noqa: E402
import processors  # noqa: E402
from safetensors_io import BadInput  # noqa: E402
from test_dump_references import contents, run_quiet  # noqa: E402

ROOT = os.path.dirname(HERE)
# The registry's own list: cmd/llorch-check's
# TestArchitecturesAgreeWithTheReference holds it equal to the Go side's.
KNOWN = f"only {', '.join(families.BY_ARCH)} are supported"


def fake_family(name, **over):
    """A module declaring everything a family must (values are stand-ins)."""
    class Fwd(passes.Forward):
        PREFIX, LAYERS, TIED_HEAD, NORM = "blocks.", "n_blocks", "emb.weight", "norm"

        def start(self, s):
            return s

        def block(self, i, P, s):
            pass

        def final_norm(self):
            return lambda x: x[0]

    m = types.ModuleType(name)
    for a in families.REQUIRED:
        setattr(m, a, None)
    m.ARCHS, m.GGUF_ARCHS, m.Forward = (name,), (), Fwd
    for k, v in over.items():
        if v is None:
            delattr(m, k)
        else:
            setattr(m, k, v)
    return m


class RegisterTest(unittest.TestCase):
    def setUp(self):
        self.saved = list(families.FAMILIES), dict(families.BY_ARCH), dict(families.BY_GGUF_ARCH)

    def tearDown(self):
        families.FAMILIES[:] = self.saved[0]
        for table, saved in ((families.BY_ARCH, self.saved[1]), (families.BY_GGUF_ARCH, self.saved[2])):
            table.clear()
            table.update(saved)

    def test_registered(self):
        # Every family module's architectures, in registration order (the
        # Go side's are compared with these by
        # TestArchitecturesAgreeWithTheReference).
        self.assertEqual(list(families.BY_ARCH), [a for f in families.FAMILIES for a in f.ARCHS])
        self.assertEqual(list(families.BY_GGUF_ARCH), ["gpt2"])
        for arch, fam in families.BY_ARCH.items():
            self.assertIs(families.family(arch), fam)

    def test_a_new_family_is_one_line(self):
        fam = fake_family("mamba")
        families.register(fam)
        self.assertIs(families.family("mamba"), fam)
        self.assertIn("mamba", families.BY_ARCH)

    def test_refused(self):
        cases = (
            ("missing a declaration", fake_family("a", EMULATE=None, make_tiny=None), "missing EMULATE, make_tiny"),
            ("a forward without its maths", fake_family("b", Forward=type("F", (passes.Forward,), {})),
             "missing Forward.PREFIX, Forward.LAYERS, Forward.TIED_HEAD, Forward.NORM, Forward.start"),
            ("a forward that is not a pass", fake_family("c", Forward=object), "Forward is not a passes.Forward"),
            ("an architecture taken", fake_family("d", ARCHS=("e", "qwen2")), "'qwen2' already llama_torch's"),
            ("a GGUF architecture taken", fake_family("f", GGUF_ARCHS=("gpt2",)), "'gpt2' already gpt2_torch's"),
        )
        for what, fam, want in cases:
            with self.subTest(what):
                with self.assertRaises(ValueError) as cm:
                    families.register(fam)
                self.assertIn(want, str(cm.exception))
                self.assertNotIn(fam, families.FAMILIES)
                self.assertNotIn("e", families.BY_ARCH)


class TmpTest(unittest.TestCase):
    """A test class with a temporary directory, self.tmp."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp()

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)


class UnknownTest(TmpTest):
    def config_dir(self, name, cfg):
        d = os.path.join(self.tmp, name)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "config.json"), "w") as f:
            json.dump(cfg, f)
        return d

    def test_one_error_names_the_known(self):
        """Every generic entry point says the same of an architecture no
        family implements: where it was read and the known ones."""
        d = self.config_dir("mamba", {"model_type": "mamba", "state_size": 16})
        cfg_path = os.path.join(d, "config.json")
        calls = (("family", lambda: families.family("mamba", cfg_path)),
                 ("of_model", lambda: families.of_model(d)),
                 ("load_config", lambda: families.load_config(cfg_path)),
                 ("context_key", lambda: processors.context_key({"model_type": "mamba"})),
                 ("emulate", lambda: emulate.unsupported("f16-kv", "mamba")),
                 ("make_checkpoint", lambda: mc.write_checkpoint(cfg_path, os.path.join(self.tmp, "ck"))))
        for what, call in calls:
            with self.subTest(what):
                with self.assertRaises(BadInput) as cm:
                    call()
                self.assertIn(f"field 'model_type' = 'mamba': {KNOWN}", str(cm.exception))
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "ck")))
        d = self.config_dir("none", {"vocab_size": 3})
        with self.assertRaisesRegex(BadInput, f"config.json: field 'model_type' = None: {KNOWN}"):
            families.of_model(d)

    def test_gguf_by_architecture(self):
        """A GGUF file's family is picked by its general.architecture, read
        from the metadata alone."""
        path = os.path.join(self.tmp, "llama.gguf")
        gguf_write.write_gguf(path, [("general.architecture", gguf_write.STRING, "llama", None)], [])
        self.assertEqual(gguf_io.read_architecture(path), "llama")
        with self.assertRaisesRegex(BadInput, "key 'general.architecture' = 'llama': only gpt2 GGUF files are read"):
            families.of_model(path)
        gguf_write.write_gguf(path, [("general.architecture", gguf_write.STRING, "gpt2", None)], [])
        self.assertEqual(families.of_model(path), (families.family("gpt2"), "gpt2"))

    def test_optional_tools_say_which_families(self):
        """gguf_write and make_checkpoint take a family's layout; one
        without it is a BadInput naming the family, not an AttributeError."""
        gpt2 = os.path.join(ROOT, "testdata", "tiny-gpt2")
        with self.assertRaisesRegex(BadInput, "field 'model_type' = 'gpt2': gpt2_torch has no GGUF layout to write "
                                    r"\(the families with one: " + ", ".join(a for a in families.BY_ARCH if a != "gpt2") + r"\)"):
            gguf_write.convert(families.family("gpt2").load_model(gpt2), os.path.join(self.tmp, "x.gguf"))
        with self.assertRaisesRegex(BadInput, "field 'model_type' = 'gpt2': gpt2_torch gives no checkpoint layout"):
            mc.write_checkpoint(os.path.join(gpt2, "config.json"), os.path.join(self.tmp, "ck2"))


class UsedNamesTest(unittest.TestCase):
    def test_by_prefix(self):
        names = ["wte.weight", "h.0.ln_1.weight", "h.1.ln_1.weight", "h.10.ln_1.weight", "h.2.mlp.c_fc.bias",
                 "ln_f.weight", "layers.1.x"]
        self.assertEqual(passes.used_names(names, 2, "h."),
                         ["wte.weight", "h.0.ln_1.weight", "h.1.ln_1.weight", "ln_f.weight", "layers.1.x"])
        self.assertEqual(passes.used_names(names, 11, "h."), names)
        self.assertEqual(passes.used_names(["embed_tokens.weight", "layers.0.a", "layers.1.a", "norm.weight"], 1,
                                           "layers."), ["embed_tokens.weight", "layers.0.a", "norm.weight"])


class EveryArchTest(TmpTest):
    """Each registered architecture through the generic paths."""

    def test_tiny_models_made_again(self):
        """A family's make_tiny writes its committed tiny model byte for byte."""
        for arch, fam in families.BY_ARCH.items():
            with self.subTest(arch):
                out = os.path.join(self.tmp, "tiny-" + arch)
                fam.make_tiny(arch, out)
                committed = os.path.join(ROOT, "testdata", fam.TINY_MODELS[arch])
                for name in ("config.json", "model.safetensors"):
                    with open(os.path.join(out, name), "rb") as a, open(os.path.join(committed, name), "rb") as b:
                        self.assertTrue(a.read() == b.read(), f"{name} differs from {committed}'s")
                self.assertEqual(families.of_model(out), (fam, arch))

    def test_dumped(self):
        """dump_references.py picks each architecture's family: the set's
        config is the model's, its tensors the first block's and the
        head's."""
        for arch, fam in families.BY_ARCH.items():
            with self.subTest(arch):
                model = os.path.join(ROOT, "testdata", fam.TINY_MODELS[arch])
                out = os.path.join(self.tmp, "set-" + arch)
                rc, msg = run_quiet(dr.main, ["--model", model, "--tokens", "1,2,3", "--layers", "1",
                                              "--n-generate", "2", "--logits-rows", "1", "--out", out])
                self.assertEqual(rc, 0, msg)
                m = json.loads(contents(out)["manifest.json"])
                self.assertEqual(m["model"]["config"]["model_type"], arch)
                self.assertEqual(m["model"]["layers"], 1)
                layers = {e["layer"] for e in m["tensors"]}
                self.assertEqual(layers, {None, 0})
                names = {e["name"] for e in m["tensors"] if e["layer"] is None}
                self.assertLessEqual({"embeddings", fam.Forward.NORM, "logits"}, names)


if __name__ == "__main__":
    unittest.main()
