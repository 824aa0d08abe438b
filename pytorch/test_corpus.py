"""Tests for corpus sets: dump_references.py --corpus (corpus.py) and their
comparison by compare_references.py. A small model (1 layer, n_embd 16,
n_positions 32) made in a temp dir; n_ctx 32 scores positions 16..30.
"""

import hashlib
import json
import math
import os
import shutil
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import arithmetic  # noqa: E402,F401  first: pins OpenBLAS before numpy loads it
import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import compare_references as cr  # noqa: E402
import corpus  # noqa: E402
import dump_references as dr  # noqa: E402
from test_dump_references import contents, make_small, run_quiet  # noqa: E402

SHAKESPEARE = os.path.join(os.path.dirname(HERE), "testdata", "corpus", "shakespeare.txt")
K = 8
N_CTX = 32


class ChunkingTest(unittest.TestCase):
    def test_chunks_drop_the_partial_tail(self):
        toks = list(range(100, 120))
        self.assertEqual(corpus.chunk(toks, 6, "x"), [list(range(100, 106)), list(range(106, 112)),
                                                     list(range(112, 118))])
        self.assertEqual(corpus.chunk(toks, 20, "x"), [toks])

    def test_scored_positions(self):
        self.assertEqual(corpus.scored(6), [3, 4])
        self.assertEqual(corpus.scored(7), [3, 4, 5])
        self.assertEqual(corpus.scored(128), list(range(64, 127)))
        self.assertEqual(len(corpus.scored(128)), 63)

    def test_too_short(self):
        with self.assertRaises(dr.BadInput) as cm:
            corpus.chunk(list(range(5)), 6, "short.txt")
        self.assertIn("short.txt", str(cm.exception))
        self.assertIn("n_ctx=6", str(cm.exception))
        with self.assertRaises(dr.BadInput):  # a chunk of 2 has no position n_ctx/2 .. n_ctx-2
            corpus.chunk(list(range(5)), 2, "x")

    def test_top_ids_ties_to_the_lowest_id(self):
        lp = np.array([[-1.0, -0.5, -0.5, -3.0, -0.5, -0.25]])
        self.assertEqual(corpus.top_ids(lp, 5).tolist(), [[5, 1, 2, 4, 0]])
        # A vocabulary-sized row of few distinct values: ties everywhere.
        lp = np.random.default_rng(3).choice([-4.0, -2.0, -1.0], size=(2, 5000))
        for row, got in zip(lp, corpus.top_ids(lp, 3000)):
            self.assertEqual(got.tolist(), np.lexsort((np.arange(5000), -row))[:3000].tolist())

    def test_kl_formula_and_normalisation(self):
        p = np.log(np.array([[0.5, 0.5]]))
        q = np.log(np.array([[0.25, 0.75]], dtype=np.float32))
        want = 0.5 * math.log(0.5 / 0.25) + 0.5 * math.log(0.5 / 0.75)
        self.assertAlmostEqual(float(corpus.kl(p, q)[0]), want, places=7)
        # A float32 log-softmax off by a constant (its normalisation error)
        # is the same distribution: the divergence does not see the shift.
        self.assertAlmostEqual(float(corpus.kl(p, q + np.float32(1e-3))[0]), want, places=7)
        self.assertAlmostEqual(float(corpus.kl(p, p.astype(np.float32))[0]), 0.0, places=15)


class CorpusSetTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp()
        cls.model = make_small(os.path.join(cls.tmp, "m"))
        with open(SHAKESPEARE, "rb") as f:
            head = f.read(430)
        cls.text = os.path.join(cls.tmp, "text.txt")
        with open(cls.text, "wb") as f:
            f.write(head)
        cls.out = os.path.join(cls.tmp, "set")
        rc, msg = cls.dump(cls.out)
        assert rc == 0, msg
        loaded = dr.load_model(cls.model)
        cls.sha, cls.tokens = loaded["sha256"], loaded["tokenizer"].encode(head.decode())
        cls.m32, cls.m64 = dr.GPT2(loaded, torch.float32), dr.GPT2(loaded, torch.float64)
        with open(os.path.join(cls.out, "corpus.json")) as f:
            cls.doc = json.load(f)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    @classmethod
    def dump(cls, out, *extra, text=None, model=None):
        return run_quiet(dr.main, ["--model", model or cls.model, "--corpus", text or cls.text, "--out", out,
                                   "--top-k", str(K), *extra])

    def load(self, name, root=None):
        return np.load(os.path.join(root or self.out, name + ".npy"))

    def forwards(self, c):
        """Chunk c's float32 logits and both log-softmaxes at the scored positions, computed here:
        each in float64 (the float32 forward's from its float32 logits), as the set's are."""
        toks = self.tokens[c * N_CTX:(c + 1) * N_CTX]
        rows = list(range(N_CTX // 2, N_CTX - 1))
        with torch.no_grad():
            l32 = self.m32.forward(toks, rows=rows)[0]
            l64 = self.m64.forward(toks, rows=rows)[0]
        return toks, rows, l32.numpy(), F.log_softmax(l32.double(), -1).numpy(), F.log_softmax(l64, -1).numpy()

    def test_manifest(self):
        d, n = self.doc, len(self.tokens) // N_CTX
        self.assertGreaterEqual(n, 2)
        self.assertNotEqual(len(self.tokens) % N_CTX, 0, "the test text should leave a partial chunk")
        self.assertEqual((d["format_version"], d["kind"], d["n_ctx"], d["scored_from"], d["top_k"]),
                         (1, "corpus", N_CTX, N_CTX // 2, K))
        self.assertEqual(d["chunks"], n)
        self.assertEqual(d["positions"], n * (N_CTX // 2 - 1))
        self.assertEqual(d["tokens"], self.tokens[:n * N_CTX])
        with open(self.text, "rb") as f:
            data = f.read()
        self.assertEqual(d["corpus"], {"file": "text.txt", "sha256": hashlib.sha256(data).hexdigest(),
                                       "bytes": len(data), "tokens": len(self.tokens)})
        self.assertEqual(d["model"]["weights_sha256"], self.sha)
        self.assertTrue(d["generator"]["float64_twins"])
        self.assertIn("blas_core", d["generator"]["arithmetic"])
        P = d["positions"]
        shapes = {"ids": ("int32", (P, K)), "logprobs": ("float32", (P, K)), "logprobs_f64": ("float64", (P, K)),
                  "targets": ("int32", (P,)), "target_logprobs": ("float32", (P,)),
                  "target_logprobs_f64": ("float64", (P,)), "top1": ("int32", (P,)), "kl_f32": ("float64", (P,))}
        self.assertEqual(sorted(d["files"]), sorted(n + ".npy" for n in shapes))
        self.assertEqual(sorted(os.listdir(self.out)), sorted(list(d["files"]) + ["corpus.json"]))
        for name, (dtype, shape) in shapes.items():
            x = self.load(name)
            self.assertEqual((str(x.dtype), x.shape, x.dtype.byteorder in "<="), (dtype, shape, True), name)
            with open(os.path.join(self.out, name + ".npy"), "rb") as f:
                self.assertEqual(hashlib.sha256(f.read()).hexdigest(), d["files"][name + ".npy"], name)

    def test_targets_logprobs_and_top1_computed_independently(self):
        ids, tgt = self.load("ids"), self.load("targets")
        got = {n: self.load(n) for n in ("logprobs", "logprobs_f64", "target_logprobs", "target_logprobs_f64", "top1")}
        S = N_CTX // 2 - 1
        for c in range(self.doc["chunks"]):
            toks, rows, l32, lp32, lp64 = self.forwards(c)
            at = slice(c * S, (c + 1) * S)
            self.assertEqual(tgt[at].tolist(), [toks[j + 1] for j in rows])
            self.assertEqual(tgt[at].tolist(), self.tokens[c * N_CTX + N_CTX // 2 + 1:(c + 1) * N_CTX])
            for i, j in enumerate(rows):
                p = c * S + i
                self.assertEqual(got["target_logprobs"][p], np.float32(lp32[i, toks[j + 1]]))
                self.assertEqual(got["target_logprobs_f64"][p], lp64[i, toks[j + 1]])
                np.testing.assert_array_equal(got["logprobs"][p], lp32[i, ids[p]].astype(np.float32))
                np.testing.assert_array_equal(got["logprobs_f64"][p], lp64[i, ids[p]])
                self.assertEqual(got["top1"][p], int(np.flatnonzero(l32[i] == l32[i].max())[0]))

    def test_ids_are_the_float64_top_k(self):
        ids = self.load("ids")
        S = N_CTX // 2 - 1
        for c in range(self.doc["chunks"]):
            _, _, _, _, lp64 = self.forwards(c)
            for i in range(S):
                want = np.lexsort((np.arange(lp64.shape[1]), -lp64[i]))[:K]
                self.assertEqual(ids[c * S + i].tolist(), want.tolist())
        lp = self.load("logprobs_f64")
        self.assertTrue(np.all(np.diff(lp, axis=1) <= 0))

    def test_kl_f32(self):
        kl = self.load("kl_f32")
        self.assertTrue(np.all(kl >= 0), kl.min())
        self.assertTrue(np.all(kl < 1e-6), kl.max())  # float32's own error, not another distribution
        # The textbook sum, normalising both distributions, in x87 extended
        # precision: 11 more bits than float64 put its own error near 1e-4
        # of these divergences (float64 gets ~10% wrong there).
        if np.finfo(np.longdouble).nmant <= np.finfo(np.float64).nmant:
            self.skipTest("long double is float64 here: no more precise sum to check against")
        _, _, _, lp32, lp64 = self.forwards(1)
        S = N_CTX // 2 - 1
        for i in (0, 5, S - 1):
            p = np.exp(lp64[i].astype(np.longdouble))
            p /= p.sum()
            q = lp32[i].astype(np.longdouble)
            q -= np.log(np.exp(q).sum())
            direct = float(np.sum(p * (np.log(p) - q)))
            self.assertGreater(direct, 0)
            self.assertAlmostEqual(kl[S + i] / direct, 1.0, delta=1e-3, msg=(i, kl[S + i], direct))

    def test_deterministic_rerun_and_compare(self):
        snap = contents(self.out)
        rc, msg = self.dump(self.out)
        self.assertEqual(rc, 0, msg)
        self.assertIn("up to date", msg)
        self.assertEqual(contents(self.out), snap)
        other = os.path.join(self.tmp, "again")
        self.assertEqual(self.dump(other)[0], 0)
        self.assertEqual(contents(other), snap)
        rc, msg = run_quiet(cr.main, [self.out, other])
        self.assertEqual(rc, 0, msg)
        self.assertIn("8 arrays compared (exact), 0 differences", msg)

        rc, msg = self.dump(other, "--top-k", str(K + 1))
        self.assertEqual(rc, 2)
        self.assertIn("--force", msg)
        self.assertEqual(contents(other), snap)

        p = os.path.join(other, "target_logprobs.npy")
        x = np.load(p)
        x[3] = np.nextafter(x[3], np.float32(0))
        np.save(p, x)
        rc, msg = run_quiet(cr.main, [self.out, other])
        self.assertEqual(rc, 1, msg)
        self.assertIn("target_logprobs.npy: 1 of", msg)
        self.assertIn("is not the", msg)  # its sha256 in corpus.json
        self.assertEqual([n for n in os.listdir(self.tmp) if n.startswith(".")], [])

    def with_arithmetic(self, name, **changes):
        """A copy of the set claiming another (unpinned) arithmetic: compared in budget mode."""
        b = os.path.join(self.tmp, name)
        shutil.copytree(self.out, b)
        path = os.path.join(b, "corpus.json")
        with open(path) as f:
            doc = json.load(f)
        doc["generator"]["arithmetic"].update(pinned=False, blas_core="Sandybridge", **changes)
        with open(path, "w") as f:
            json.dump(doc, f)
        return b, doc

    def rewrite(self, root, doc, name, x):
        p = os.path.join(root, name)
        dr.save_npy(p, x, x.dtype.str)
        with open(p, "rb") as f:
            doc["files"][name] = hashlib.sha256(f.read()).hexdigest()
        with open(os.path.join(root, "corpus.json"), "w") as f:
            json.dump(doc, f)

    def test_budget_mode(self):
        b, doc = self.with_arithmetic("budget")
        rc, msg = run_quiet(cr.main, [self.out, b])
        self.assertEqual(rc, 0, msg)
        self.assertIn("8 arrays compared (budget), 0 differences", msg)
        # float32 moved by a few of its ulps: within the budget.
        lp = self.load("logprobs")
        self.rewrite(b, doc, "logprobs.npy", np.nextafter(lp, np.float32(0)))
        rc, msg = run_quiet(cr.main, [self.out, b])
        self.assertEqual(rc, 0, msg)
        # A twin moved by 1e-6: the arithmetic changed.
        self.rewrite(b, doc, "logprobs_f64.npy", self.load("logprobs_f64") + 1e-6)
        rc, msg = run_quiet(cr.main, [self.out, b])
        self.assertEqual(rc, 1, msg)
        self.assertIn("logprobs_f64.npy: float64 twin differs", msg)

    def test_budget_mode_top1_and_kl(self):
        b, doc = self.with_arithmetic("budget-top1")
        lp64, top1 = self.load("logprobs_f64"), self.load("top1")
        far = int(np.argmax(lp64[:, 0] - lp64[:, 1]))  # the clearest winner cannot flip
        top1[far] = self.load("ids")[far, 1]
        self.rewrite(b, doc, "top1.npy", top1)
        rc, msg = run_quiet(cr.main, [self.out, b])
        self.assertEqual(rc, 1, msg)
        self.assertIn(f"top1.npy: position {far}", msg)

        b, doc = self.with_arithmetic("budget-kl")
        self.rewrite(b, doc, "kl_f32.npy", self.load("kl_f32") * 20)
        rc, msg = run_quiet(cr.main, [self.out, b])
        self.assertEqual(rc, 1, msg)
        self.assertIn("kl_f32.npy: root mean divergence", msg)

    def test_bad_inputs_exit_2(self):
        out = os.path.join(self.tmp, "never")
        missing = os.path.join(self.tmp, "missing.txt")
        rc, msg = self.dump(out, text=missing)
        self.assertEqual(rc, 2)
        self.assertIn(f"{missing}: cannot read", msg)
        for name, data in (("empty.txt", b""), ("short.txt", b"To be, or not to be.\n" * 2)):
            p = os.path.join(self.tmp, name)
            with open(p, "wb") as f:
                f.write(data)
            rc, msg = self.dump(out, text=p)
            self.assertEqual(rc, 2, name)
            self.assertIn(f"{p}: ", msg)
            self.assertIn(f"fewer than one chunk of n_ctx={N_CTX}", msg)
        latin1 = os.path.join(self.tmp, "latin1.txt")
        with open(latin1, "wb") as f:
            f.write("café ".encode("latin-1") * 40)
        rc, msg = self.dump(out, text=latin1)
        self.assertEqual(rc, 2)
        self.assertIn(f"{latin1}: not UTF-8", msg)
        rc, msg = self.dump(out, "--top-k", "50258")
        self.assertEqual(rc, 2)
        self.assertIn("--top-k 50258", msg)
        bare = os.path.join(self.tmp, "bare")
        shutil.copytree(self.model, bare)
        os.remove(os.path.join(bare, "vocab.json"))
        rc, msg = self.dump(out, model=bare)
        self.assertEqual(rc, 2)
        self.assertIn("no tokenizer", msg)
        self.assertFalse(os.path.exists(out))


if __name__ == "__main__":
    unittest.main()
