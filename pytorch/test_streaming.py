"""Tests of checkpoints as Hugging Face ships them (checkpoint.py: one
model.safetensors, or shards and model.safetensors.index.json), of the
streamed reference (weights converted a layer at a time, the cases' passes
layer-major, the float64 head in chunks: passes.py) and of
dump_references.py --layers. The committed sets are reproduced byte for
byte by make verify-references; here, sharded checkpoints give the same
set as the single file holding the same values.
Run: /usr/bin/python3 -m unittest test_streaming (from pytorch/)
"""

import hashlib
import json
import os
import shutil
import sys
import tempfile
import unittest
from unittest import mock

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import arithmetic  # noqa: E402,F401  first: pins OpenBLAS before numpy loads it
import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import checkpoint  # noqa: E402
import dump_references as dr  # noqa: E402
import families  # noqa: E402
import llama_torch as lt  # noqa: E402
import passes  # noqa: E402
import weights as wts  # noqa: E402
from test_dump_references import contents, run_quiet  # noqa: E402

ROOT = os.path.dirname(HERE)
INDEX = "model.safetensors.index.json"
HELLO = [1, 15043, 29892, 3186, 29889]


def tiny(name):
    return os.path.join(ROOT, "testdata", name)


def stored(values, dtype):
    """float32 values -> (tag, array) in dtype's storage."""
    if dtype == "BF16":
        return "BF16", dr.float32_to_bf16_bits(values)
    if dtype == "F16":
        return "F16", values.astype("<f2")
    return "F32", values.astype("<f4")


def copy_model(src, dst, dtype, shards=1):
    """src's config and weights (converted to dtype) into dst: one
    model.safetensors, or `shards` files and an index, as HF lays them
    out. Returns the {tensor: file} map."""
    os.makedirs(dst)
    shutil.copy(os.path.join(src, "config.json"), dst)
    # The tokenizer too: a set records it (model.tokenizer_file/_sha256).
    for f in ("vocab.json", "merges.txt", "tokenizer.gguf", "tokenizer.json", "tokenizer_config.json"):
        if os.path.exists(os.path.join(src, f)):
            shutil.copy(os.path.join(src, f), dst)
    w, _, _, _ = dr.read_safetensors(os.path.join(src, "model.safetensors"))
    names = sorted(w)
    if shards == 1:
        dr.write_safetensors(os.path.join(dst, "model.safetensors"),
                             {n: stored(w[n], dtype) for n in names}, metadata={"format": "pt"})
        return {n: "model.safetensors" for n in names}
    files = [f"model-{i + 1:05d}-of-{shards:05d}.safetensors" for i in range(shards)]
    weight_map = {n: files[i * shards // len(names)] for i, n in enumerate(names)}
    for f in files:
        dr.write_safetensors(os.path.join(dst, f), {n: stored(w[n], dtype) for n in names if weight_map[n] == f},
                             metadata={"format": "pt"})
    write_index(dst, weight_map)
    return weight_map


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def write_index(d, weight_map, text=None):
    with open(os.path.join(d, INDEX), "w") as f:
        f.write(text if text is not None else json.dumps({"metadata": {"total_size": 0}, "weight_map": weight_map}))


def sets_equal_but_weights(test, a, b):
    """Every file of two sets byte for byte; the manifests equal but for
    model.path, weights_file and weights_sha256."""
    ca, cb = contents(a), contents(b)
    test.assertEqual(sorted(ca), sorted(cb))
    for rel in ca:
        if rel != "manifest.json":
            test.assertEqual(ca[rel], cb[rel], rel)
    ma, mb = json.loads(ca["manifest.json"]), json.loads(cb["manifest.json"])
    for m in (ma, mb):
        for k in ("path", "weights_file", "weights_sha256"):
            m["model"].pop(k)
    test.assertEqual(ma, mb)


class ShardedTest(unittest.TestCase):
    """Three shards and an index give the set of the single file holding
    the same values: BF16 and F16, Llama family (tied and untied) and GPT-2."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp()
        cls.cases = os.path.join(cls.tmp, "cases.json")
        with open(cls.cases, "w") as f:
            json.dump({"cases": [{"id": "hello", "tokens": HELLO}, {"id": "one", "tokens": [1]}],
                       "loglikelihood": [{"context": "The capital", "continuation": " is",
                                          "context_tokens": [450, 7483], "continuation_tokens": [338]}]}, f)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def dump(self, model, out, *extra, cases=None):
        return run_quiet(dr.main, ["--model", model, "--out", out, "--n-generate", "3", "--logits-rows", "2",
                                   *(extra or ("--cases", cases or self.cases))])

    def test_shards_give_the_single_files_set(self):
        for name, dtype in (("tiny-llama", "BF16"), ("tiny-llama-qwen2", "F16"), ("tiny-llama-phi3", "BF16"),
                            ("tiny-gpt2", "BF16")):
            with self.subTest(model=name, dtype=dtype):
                single, sharded = (os.path.join(self.tmp, f"{name}-{dtype}-{k}") for k in ("single", "sharded"))
                copy_model(tiny(name), single, dtype)
                wm = copy_model(tiny(name), sharded, dtype, shards=3)
                self.assertEqual(len(set(wm.values())), 3)
                extra = ("--tokens", "50256,464,3290") if name == "tiny-gpt2" else ()
                a, b = single + ".set", sharded + ".set"
                rc, msg = self.dump(single, a, *extra)
                self.assertEqual(rc, 0, msg)
                rc, msg = self.dump(sharded, b, *extra)
                self.assertEqual(rc, 0, msg)
                sets_equal_but_weights(self, a, b)
                ma, mb = (json.loads(contents(s)["manifest.json"])["model"] for s in (a, b))
                self.assertEqual((ma["weights_file"], mb["weights_file"]), ("model.safetensors", INDEX))
                self.assertEqual((ma["weights_dtype"], mb["weights_dtype"]), (dtype, dtype))
                # The contract the Go loader shares: sha256sum's lines of the shards, sorted by name.
                lines = "".join(f"{sha256(os.path.join(sharded, f))}  {f}\n" for f in sorted(set(wm.values())))
                self.assertEqual(mb["weights_sha256"], hashlib.sha256(lines.encode()).hexdigest())
                self.assertEqual(ma["weights_sha256"], sha256(os.path.join(single, "model.safetensors")))

    def test_weight_dtype_f16_on_shards(self):
        """--weight-dtype f16 reads the mapped matrices rounded: a sharded
        F32 checkpoint's set is its single file's (marked rounded), and a
        value beyond float16's range is named, exit 2."""
        src = tiny("tiny-llama")
        w, _, _, _ = dr.read_safetensors(os.path.join(src, "model.safetensors"))
        single, sharded = os.path.join(self.tmp, "f32-single"), os.path.join(self.tmp, "f32-sharded")
        for d, n in ((single, 1), (sharded, 3)):
            copy_model(src, d, "F32", shards=n)
            for f in os.listdir(d):  # values that float16 rounds
                if f.endswith(".safetensors"):
                    p = os.path.join(d, f)
                    got, _, _, _ = dr.read_safetensors(p)
                    dr.write_safetensors(p, {k: ("F32", v * np.float32(1 + 1e-4)) for k, v in got.items()})
        a, b = os.path.join(self.tmp, "f32-single.set"), os.path.join(self.tmp, "f32-sharded.set")
        for d, out in ((single, a), (sharded, b)):
            rc, msg = self.dump(d, out, "--cases", self.cases, "--weight-dtype", "f16")
            self.assertEqual(rc, 0, msg)
        sets_equal_but_weights(self, a, b)
        m = json.loads(contents(b)["manifest.json"])["model"]
        self.assertEqual((m["weights_dtype"], m["matrices_held_as"]), ("F32", "float16"))
        p = os.path.join(sharded, "model-00002-of-00003.safetensors")
        got, _, _, _ = dr.read_safetensors(p)
        name = next(k for k, v in got.items() if v.ndim == 2)
        got[name][0, 3] = 1e5
        dr.write_safetensors(p, {k: ("F32", v) for k, v in got.items()})
        rc, msg = self.dump(sharded, os.path.join(self.tmp, "never"), "--cases", self.cases, "--weight-dtype", "f16")
        self.assertEqual(rc, 2, msg)
        self.assertIn("element 3 is 100000.0, beyond float16's range", msg)

    def test_f16_shards_reproduce_the_committed_set(self):
        """The committed model's own F16 values in shards: its committed set."""
        d = os.path.join(self.tmp, "qwen3-shards")
        copy_model(tiny("tiny-llama-qwen3"), d, "F16", shards=3)
        out = os.path.join(self.tmp, "qwen3-shards.set")
        rc, msg = run_quiet(dr.main, ["--model", d, "--cases", os.path.join(ROOT, "testdata", "cases-llama.json"),
                                      "--logits-rows", "2", "--out", out])
        self.assertEqual(rc, 0, msg)
        sets_equal_but_weights(self, out, os.path.join(ROOT, "testdata", "references", "tiny-llama-qwen3"))

    def test_single_file_preferred(self):
        """Both layouts present: the single file is read, as transformers does."""
        d = os.path.join(self.tmp, "both")
        copy_model(tiny("tiny-llama"), d, "F16")
        wm = {n: "model-00001-of-00001.safetensors" for n in dr.read_safetensors(os.path.join(d, "model.safetensors"))[0]}
        write_index(d, wm)  # its shard does not even exist
        ck = checkpoint.Checkpoint(d)
        self.assertEqual(ck.weights_file, "model.safetensors")
        ck.close()

    def bad(self, d, *words):
        rc, msg = self.dump(d, os.path.join(self.tmp, "never"))
        self.assertEqual(rc, 2, msg)
        for w in words:
            self.assertIn(w, msg)
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "never")))

    def sharded(self, tag):
        d = os.path.join(self.tmp, "bad-" + tag)
        return d, copy_model(tiny("tiny-llama"), d, "BF16", shards=3)

    def test_index_errors_exit_2(self):
        d, wm = self.sharded("missing")
        os.remove(os.path.join(d, "model-00002-of-00003.safetensors"))
        self.bad(d, INDEX, "shard 'model-00002-of-00003.safetensors'", "is missing")

        d, wm = self.sharded("lacks")
        t = next(n for n, f in wm.items() if f == "model-00003-of-00003.safetensors")
        wm2 = dict(wm, **{t: "model-00001-of-00003.safetensors"})  # listed in a shard that lacks it
        write_index(d, wm2)
        self.bad(d, "model-00001-of-00003.safetensors: no tensor", repr(t), "places in this shard")

        d, wm = self.sharded("twice")
        t = next(n for n, f in wm.items() if f == "model-00001-of-00003.safetensors")
        p = os.path.join(d, "model-00002-of-00003.safetensors")
        w, _, _, _ = dr.read_safetensors(p)
        w[t] = dr.read_safetensors(os.path.join(d, "model-00001-of-00003.safetensors"))[0][t]
        dr.write_safetensors(p, {n: stored(v, "BF16") for n, v in w.items()})
        self.bad(d, f"tensor {t!r} is in two shards", "model-00001-of-00003.safetensors",
                 "model-00002-of-00003.safetensors")

        d, wm = self.sharded("unlisted")
        del wm[t]
        write_index(d, wm)
        self.bad(d, f"tensor {t!r} is not in {os.path.join(d, INDEX)}'s weight_map")

        d, wm = self.sharded("notjson")
        write_index(d, wm, text='{"weight_map": {')
        self.bad(d, INDEX, "not valid JSON")

        for value in ({}, [], {"a": 3}, {"a": "../x.safetensors"}):
            d, wm = self.sharded("weightmap")
            write_index(d, wm, text=json.dumps({"weight_map": value}))
            self.bad(d, INDEX, "weight_map")
            shutil.rmtree(d)

        d = os.path.join(self.tmp, "nothing")
        os.makedirs(d)
        shutil.copy(os.path.join(tiny("tiny-llama"), "config.json"), d)
        self.bad(d, os.path.join(d, "model.safetensors"), "cannot open")

    def test_missing_tensor_names_the_index(self):
        d, wm = self.sharded("missing-tensor")
        t = "model.layers.1.mlp.up_proj.weight"
        f = wm.pop(t)
        p = os.path.join(d, f)
        w, _, _, _ = dr.read_safetensors(p)
        del w[t]
        dr.write_safetensors(p, {n: stored(v, "BF16") for n, v in w.items()})
        write_index(d, wm)
        self.bad(d, os.path.join(d, INDEX), "missing tensor 'layers.1.mlp.up_proj.weight'")


class ParametersTest(unittest.TestCase):
    """Checkpoint.parameters, the table check every family's loader makes."""

    SHAPES = {"emb.weight": [4, 2], "blocks.0.w": [2, 2]}

    def files(self, tensors, prefix="m.", optional=(), skip=lambda n: False):
        with tempfile.TemporaryDirectory() as d:
            dr.write_safetensors(os.path.join(d, "model.safetensors"),
                                 {n: ("F32", np.zeros(shape, np.float32)) for n, shape in tensors.items()})
            ck = checkpoint.Checkpoint(d)
            try:
                return ck.parameters(self.SHAPES, prefix, "a test parameter", optional, skip)
            finally:
                ck.close()

    def test_table(self):
        ok = {"m.emb.weight": [4, 2], "blocks.0.w": [2, 2]}  # with and without the prefix
        self.assertEqual(self.files(ok), {"emb.weight": "m.emb.weight", "blocks.0.w": "blocks.0.w"})
        self.assertEqual(self.files(dict(ok, **{"m.head": [4, 2], "m.blocks.0.buf": [1]}), optional=("head",),
                                    skip=lambda n: n.endswith(".buf"))["head"], "m.head")
        for what, tensors, want in (
                ("missing", {"m.emb.weight": [4, 2]}, "missing tensor 'blocks.0.w'"),
                ("shape", dict(ok, **{"blocks.0.w": [2, 3]}), "tensor 'blocks.0.w' has shape [2, 3], config.json implies [2, 2]"),
                ("unexpected", dict(ok, **{"m.blocks.0.buf": [1]}), "unexpected tensor 'm.blocks.0.buf' (not a test parameter)"),
                ("twice", dict(ok, **{"emb.weight": [4, 2]}), "tensor 'emb.weight' appears twice (with and without 'm.')"),
                ("optional only when given", dict(ok, **{"head": [4, 2]}), "unexpected tensor 'head'")):
            with self.subTest(what):
                with self.assertRaises(dr.BadInput) as cm:
                    self.files(tensors)
                self.assertIn(want, str(cm.exception))


class LayersTest(unittest.TestCase):
    """--layers N: the first N blocks, then the final norm and head."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp()
        cls.cases = os.path.join(cls.tmp, "cases.json")
        with open(cls.cases, "w") as f:
            json.dump({"cases": [{"id": "hello", "tokens": HELLO}]}, f)
        # Three layers, so that --layers 2 leaves one out (make_tiny_llama's shape flag).
        import make_tiny_llama as mtl
        cls.model = os.path.join(cls.tmp, "m")
        mtl.write_model("qwen3", cls.model, 5, mtl.make_shape("qwen3", layers=3))
        cls.full = os.path.join(cls.tmp, "full")
        rc, msg = cls.dump(cls.full)
        assert rc == 0, msg

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    @classmethod
    def dump(cls, out, *extra):
        return run_quiet(dr.main, ["--model", cls.model, "--cases", cls.cases, "--out", out,
                                   "--n-generate", "3", *extra])

    def test_first_layers_are_the_full_sets(self):
        for n in (1, 2):
            with self.subTest(layers=n):
                out = os.path.join(self.tmp, f"l{n}")
                rc, msg = self.dump(out, "--layers", str(n))
                self.assertEqual(rc, 0, msg)
                m, full = (json.loads(contents(d)["manifest.json"]) for d in (out, self.full))
                self.assertEqual(m["model"]["layers"], n)
                self.assertNotIn("layers", full["model"])
                self.assertEqual(m["model"]["config"], full["model"]["config"])  # config.json verbatim
                self.assertEqual(m["model"]["config"]["num_hidden_layers"], 3)
                layers = {e["layer"] for e in m["tensors"] if e["layer"] is not None}
                self.assertEqual(layers, set(range(n)))
                want = {(e["layer"], e["name"]): e for e in full["tensors"]}
                same, differ = set(), set()
                for e in m["tensors"]:
                    f = want[(e["layer"], e["name"])]
                    self.assertEqual(e, f)  # same files, shapes and rows
                    for key in ("file", "file_f64"):
                        a, b = (sha256(os.path.join(d, e[key])) for d in (out, self.full))
                        (same if a == b else differ).add(e["name"] if e["layer"] is None else "layer")
                # Every block tensor (and the cache) is the full model's; the
                # embeddings too; what follows the last block is not.
                self.assertEqual(same, {"layer", "embeddings"})
                self.assertEqual(differ, {"norm", "logits", "last_logits", "last_logprobs", "step_logits"} |
                                 {"sampling_" + s["name"] for s in dr.SAMPLING})

    def test_all_layers_is_the_full_set_recorded(self):
        out = os.path.join(self.tmp, "l3")
        self.assertEqual(self.dump(out, "--layers", "3")[0], 0)
        a, b = contents(out), contents(self.full)
        self.assertEqual({k: v for k, v in a.items() if k != "manifest.json"},
                         {k: v for k, v in b.items() if k != "manifest.json"})
        ma, mb = json.loads(a["manifest.json"]), json.loads(b["manifest.json"])
        self.assertEqual(ma["model"].pop("layers"), 3)
        self.assertEqual(ma, mb)

    def test_only_the_first_layers_are_read(self):
        read = []
        real = wts.MappedWeights._read

        def spy(self, name, lo, hi):
            read.append(name)
            return real(self, name, lo, hi)
        with mock.patch.object(wts.MappedWeights, "_read", spy):
            self.assertEqual(self.dump(os.path.join(self.tmp, "l1-spy"), "--layers", "1")[0], 0)
        self.assertTrue(any(n.startswith("layers.0.") for n in read))
        self.assertFalse([n for n in read if n.startswith(("layers.1.", "layers.2."))])

    def test_out_of_range_exit_2(self):
        for n, words in ((0, "--layers 0: must be at least 1"), (-1, "must be at least 1"),
                         (4, "--layers 4: more than the model's 3 layers")):
            with self.subTest(layers=n):
                out = os.path.join(self.tmp, "never")
                try:
                    rc, msg = self.dump(out, "--layers", str(n))
                except SystemExit as e:  # argparse's error
                    rc, msg = e.code, ""
                self.assertEqual(rc, 2, msg)
                if msg:
                    self.assertIn(words, msg)
                self.assertFalse(os.path.exists(out))


class PassesTest(unittest.TestCase):
    """Layer-major passes: a layer converted once a pass whatever the number
    of cases; each case's arithmetic its own."""

    def test_each_layer_converted_once_a_pass(self):
        m = lt.open_model(tiny("tiny-llama"))
        counts = {}
        real = m["weights"]._read

        def spy(name, lo, hi):
            counts[name] = counts.get(name, 0) + 1
            return real(name, lo, hi)
        m["weights"]._read = spy
        model = lt.Llama(m, torch.float64)
        jobs = [dict(tokens=HELLO), dict(tokens=[1, 450]), dict(tokens=[1], rows=[])]
        with torch.no_grad():
            together = model.run(jobs)
        self.assertEqual({n: c for n, c in counts.items() if n.startswith("layers.")},
                         {n: 1 for n in m["weights"].names() if n.startswith("layers.")})
        for j, (logits, present) in zip(jobs, together):
            alone, cache = model.forward(**j)
            self.assertTrue(torch.equal(logits, alone))
            for (k, v), (k2, v2) in zip(present, cache):
                self.assertTrue(torch.equal(k, k2) and torch.equal(v, v2))
        m["checkpoint"].close()

    def test_tasks_share_passes(self):
        """Greedy decoding of three sequences: one pass a step for all."""
        m = lt.load_model(tiny("tiny-llama3"))
        model = lt.Llama(m, torch.float32)
        calls = []
        real = model.run
        model.run = lambda jobs: calls.append(len(jobs)) or real(jobs)
        from processors import greedy_generate, greedy_task
        seqs = [HELLO, [1, 450, 7483], [1]]
        with torch.no_grad():
            got = passes.run_tasks(model, [greedy_task(m["config"], s, 4, [2]) for s in seqs])
        self.assertEqual(calls, [3, 3, 3, 3])
        model.run = real
        with torch.no_grad():
            self.assertEqual(got, [greedy_generate(model, s, 4, [2]) for s in seqs])

    def test_float64_head_chunks_are_bit_identical(self):
        """The float64 head in chunks (multiples of 64 rows, the remainder
        with the last) gives the whole product's bits (OpenBLAS dgemm); the
        float32 head is applied whole."""
        self.assertEqual(passes.head_chunks(1000, 64, torch.float32), [(0, 1000)])
        rng = np.random.default_rng(3)
        for V, C in ((5003, 64), (3001, 576), (1500, 2048), (4097, 896)):
            head = rng.standard_normal((V, C))
            w = wts.MemoryWeights({"h": head.astype(np.float32)})
            W = torch.from_numpy(head.astype(np.float32)).to(torch.float64)
            sels = [torch.from_numpy(rng.standard_normal((r, C))) for r in (1, 2, 4, 8, 9, 12, 17, 33, 64)]
            for chunk_rows in (64, 100, 1000, 4096):
                with self.subTest(V=V, C=C, rows=chunk_rows), \
                        mock.patch.object(passes, "HEAD_CHUNK_BYTES", chunk_rows * C * 8):
                    ranges = passes.head_chunks(V, C, torch.float64)
                    self.assertEqual(ranges[0][0], 0)
                    self.assertEqual(ranges[-1][1], V)
                    self.assertTrue(all(a[1] == b[0] for a, b in zip(ranges, ranges[1:])))
                    self.assertTrue(all(hi - lo >= 64 and lo % 64 == 0 for lo, hi in ranges), ranges)
                    self.assertEqual(len(ranges), max(1, V // (chunk_rows // 64 * 64)))
                    for sel, got in zip(sels, passes.apply_head(w, "h", sels, torch.float64)):
                        self.assertTrue(torch.equal(got, F.linear(sel, W)))

    def test_chunked_head_reproduces_a_committed_set(self):
        """A committed set with the float64 head in 1000-row chunks."""
        out = tempfile.mkdtemp()
        try:
            with mock.patch.object(passes, "HEAD_CHUNK_BYTES", 1000 * 64 * 8):
                self.assertEqual(len(passes.head_chunks(32064, 64, torch.float64)), 33)  # 960 rows each
                rc, msg = run_quiet(dr.main, ["--model", tiny("tiny-llama-phi3"), "--cases",
                                              os.path.join(ROOT, "testdata", "cases-llama.json"),
                                              "--logits-rows", "2", "--out", os.path.join(out, "s")])
            self.assertEqual(rc, 0, msg)
            sets_equal_but_weights(self, os.path.join(out, "s"),
                                   os.path.join(ROOT, "testdata", "references", "tiny-llama-phi3"))
        finally:
            shutil.rmtree(out)

    def test_head_groups_reproduce_committed_sets(self):
        """Attention scores and probabilities computed and written a head
        (or two) at a time, as a case past HEAD_VALUES has them, give the
        committed sets byte for byte: windows and their masks (Mistral),
        soft-capping and alternating windows (Gemma 2), q/k norms and
        local RoPE (Gemma 3), experts (Qwen3-MoE), float32 and float64."""
        out = tempfile.mkdtemp()
        try:
            for name, values in (("tiny-llama-mistral", 1), ("tiny-llama-gemma2", 1),
                                 ("tiny-llama-gemma3", 2 * 63 * 63), ("tiny-llama-qwen3moe", 1)):
                with self.subTest(name), mock.patch.object(passes, "HEAD_VALUES", values):
                    d = os.path.join(out, name)
                    rc, msg = run_quiet(dr.main, ["--model", tiny(name), "--cases",
                                                  os.path.join(ROOT, "testdata", "cases-llama.json"),
                                                  "--logits-rows", "2", "--out", d])
                    self.assertEqual(rc, 0, msg)
                    sets_equal_but_weights(self, d, os.path.join(ROOT, "testdata", "references", name))
        finally:
            shutil.rmtree(out)

    def test_attend_parts(self):
        """Forward.attend probes a group of heads at a time past
        HEAD_VALUES, parts in order that make the whole tensor, and
        returns the whole attention's bits."""
        fam, _ = families.of_model(tiny("tiny-llama-gemma2"))
        m = fam.load_model(tiny("tiny-llama-gemma2"))
        toks = [100 + 37 * i for i in range(40)]

        def probes(values):
            got, parts = {}, {}

            def probe(cp, layer, name, t, rows=None, part=None):
                k = (layer, name)
                if part is None:
                    got[k] = t.clone()
                    return
                self.assertEqual(part[0], 0 if k not in got else got[k].shape[0], k)
                got[k] = t.clone() if k not in got else torch.cat([got[k], t])
                parts[k] = parts.get(k, 0) + 1
            with mock.patch.object(passes, "HEAD_VALUES", values), torch.no_grad():
                logits, _ = fam.Forward(m, torch.float64).forward(toks, probe=probe)
            return got, parts, logits
        whole, none, logits = probes(1 << 24)
        self.assertEqual(none, {})
        H = whole[(0, "scores")].shape[0]
        for values, per in ((1, 1), (2 * 40 * 40, 2)):
            got, parts, got_logits = probes(values)
            self.assertTrue(torch.equal(logits, got_logits))
            self.assertEqual(set(got), set(whole))
            for k in whole:
                self.assertTrue(torch.equal(whole[k], got[k]), k)
            self.assertEqual(parts, {(l, n): H // per for l in range(2) for n in ("scores", "probs")})


if __name__ == "__main__":
    unittest.main()
