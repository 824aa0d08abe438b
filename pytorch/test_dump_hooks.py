"""Tests for dump_hooks.py: the forward-hooks producer of partial dumps."""

import json
import os
import shutil
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import arithmetic  # noqa: E402,F401  first: pins OpenBLAS before numpy loads it
import numpy as np  # noqa: E402

import dump_hooks as dh  # noqa: E402
from test_dump_references import run_quiet  # noqa: E402

ROOT = os.path.dirname(HERE)
MODEL = os.path.join(ROOT, "testdata", "tiny-gpt2")
BASELINE = os.path.join(ROOT, "testdata", "references", "tiny-gpt2")
# Tensors a partial dump may leave out (references/partial.go).
OPTIONAL = {"scores", "probs", "k_cache", "v_cache", "step_logits"}
# docs/spec.md's default tolerances: checkpoints 1-7, then 8-9.
TOL = {cp: (1e-4, 1e-4) for cp in range(1, 8)} | {8: (1e-3, 1e-4), 9: (1e-3, 1e-4)}


def manifest(d):
    with open(os.path.join(d, "manifest.json"), encoding="utf-8") as f:
        return json.load(f)


def key(t):
    return (t["case"], t["name"], t["layer"])


class DumpHooksTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp()

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def dump(self, name, *extra):
        out = os.path.join(self.tmp, name)
        rc, log = run_quiet(dh.main, ["--model", MODEL, "--baseline", BASELINE, "--out", out, "--impl", "standin", *extra])
        self.assertEqual(rc, 0, log)
        return out

    def test_dump_is_the_baselines_required_subset_within_tolerance(self):
        out = self.dump("hooks")
        got, base = manifest(out), manifest(BASELINE)
        self.assertTrue(got["generator"]["partial"])
        self.assertEqual(got["model"]["weights_sha256"], base["model"]["weights_sha256"])
        self.assertEqual(got["cases"], base["cases"])
        want = {key(t): t for t in base["tensors"] if t["name"] not in OPTIONAL and not t["name"].startswith("sampling_")}
        have = {key(t): t for t in got["tensors"]}
        self.assertEqual(sorted(have), sorted(want))
        for k, t in have.items():
            w = want[k]
            self.assertEqual((t["checkpoint"], t["shape"], t["rows"]), (w["checkpoint"], w["shape"], w["rows"]), k)
            atol, rtol = TOL[w["checkpoint"]]
            np.testing.assert_allclose(np.load(os.path.join(out, t["file"])), np.load(os.path.join(BASELINE, w["file"])),
                                       atol=atol, rtol=rtol, err_msg=str(k))

    def test_fault_first_moves_the_gelu_of_layer_0(self):
        clean, faulty = manifest(self.dump("clean")), self.dump("erf", "--inject-fault", "erf-gelu")
        tensors = manifest(faulty)["tensors"]
        for case in {t["case"] for t in tensors}:
            # The file lists tensors in forward order; the first that moves names the fault.
            moved = None
            for t, c in zip([t for t in tensors if t["case"] == case], [t for t in clean["tensors"] if t["case"] == case]):
                a = np.load(os.path.join(faulty, t["file"]))
                b = np.load(os.path.join(self.tmp, "clean", c["file"]))
                if not np.array_equal(a, b):
                    moved = (t["name"], t["layer"])
                    break
            self.assertEqual(moved, ("gelu", 0), case)

    def test_other_weights_are_refused(self):
        model = os.path.join(self.tmp, "model")
        shutil.copytree(MODEL, model)
        with open(os.path.join(model, "model.safetensors"), "r+b") as f:
            f.seek(-1, os.SEEK_END)
            last = f.read(1)
            f.seek(-1, os.SEEK_END)
            f.write(bytes([last[0] ^ 1]))
        rc, log = run_quiet(dh.main, ["--model", model, "--baseline", BASELINE, "--out", os.path.join(self.tmp, "x")])
        self.assertEqual(rc, 2)
        self.assertIn("sha256", log)

    def test_existing_out_is_refused(self):
        rc, log = run_quiet(dh.main, ["--model", MODEL, "--baseline", BASELINE, "--out", self.tmp])
        self.assertEqual(rc, 2)
        self.assertIn("already exists", log)


if __name__ == "__main__":
    unittest.main()
