"""Tests for dump_references.py / compare_references.py / make_tiny_model.py.

Uses a very small model (1 layer, n_embd 16) made in a temp dir; the vocab
stays the real 50257 tokens so that prompts tokenize.
"""

import contextlib
import hashlib
import io
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
import torch  # noqa: E402

import compare_references as cr  # noqa: E402
import dump_references as dr  # noqa: E402
import emulate  # noqa: E402
import families  # noqa: E402
import gpt2_torch  # noqa: E402
import make_tiny_model as mtm  # noqa: E402

SMALL = dict(seed=7, L=1, H=2, C=16, P=32)


def make_small(d, dtype="f16"):
    mtm.write_model(d, dtype=dtype, **SMALL)
    return d


def contents(d):
    out = {}
    for rel, p in dr.tree(d).items():
        with open(p, "rb") as f:
            out[rel] = f.read()
    return out


def run_quiet(fn, *a):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = fn(*a)
    return rc, out.getvalue() + err.getvalue()


class SafetensorsTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        self.path = os.path.join(self.tmp, "model.safetensors")

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def test_round_trip_all_dtypes(self):
        x = np.array([[1.5, -2.25, 3e-5], [65504.0, -0.0, 0.1]], dtype=np.float32)
        dr.write_safetensors(self.path, {
            "a": ("F32", x), "b": ("F16", x.astype("<f2")), "c": ("BF16", dr.float32_to_bf16_bits(x))})
        got, dtypes, sha, names = dr.read_safetensors(self.path)
        self.assertEqual(dtypes, {"a": "F32", "b": "F16", "c": "BF16"})
        np.testing.assert_array_equal(got["a"], x)
        np.testing.assert_array_equal(got["b"], x.astype(np.float16).astype(np.float32))
        bf = torch.from_numpy(x).to(torch.bfloat16).to(torch.float32).numpy()
        np.testing.assert_array_equal(got["c"], bf)
        with open(self.path, "rb") as f:
            n = int.from_bytes(f.read(8), "little")
        self.assertEqual(n % 8, 0)

    def bad(self, data, *words):
        with open(self.path, "wb") as f:
            f.write(data)
        with self.assertRaises(dr.BadInput) as cm:
            dr.read_safetensors(self.path)
        msg = str(cm.exception)
        self.assertIn(self.path, msg)
        for w in words:
            self.assertIn(w, msg)

    def good_bytes(self, dtype="F32"):
        dr.write_safetensors(self.path, {"w": (dtype, np.zeros((4, 4), dtype="<f4"))})
        with open(self.path, "rb") as f:
            return f.read()

    def test_truncated(self):
        self.bad(self.good_bytes()[:-5], "truncated")
        self.bad(b"\x01\x02", "truncated")

    def test_header_length_lies(self):
        data = self.good_bytes()
        self.bad((10 ** 9).to_bytes(8, "little") + data[8:], "header length")

    def test_header_lies_about_sizes(self):
        data = self.good_bytes().replace(b'"shape":[4,4]', b'"shape":[4,2]')
        self.bad(data, "header lies", "'w'")

    def test_unsupported_dtype(self):
        data = self.good_bytes().replace(b'"F32"', b'"I32"')
        self.bad(data, "unsupported dtype I32")

    def test_corrupt_header(self):
        data = self.good_bytes()
        self.bad(data[:8] + b"[" + data[9:], "corrupt header")


class RoundMatricesTest(unittest.TestCase):
    """--weight-dtype f16 rounds what llorch-check's loader rounds, the same way."""

    def test_matrices_only_nearest_even(self):
        one = np.float32(1.0)
        ulp = np.float32(2.0 ** -10)  # float16 spacing at 1
        w = {"wte.weight": np.array([[1.0001, one + ulp / 2, one + 3 * ulp / 2]], np.float32),
             "h.0.mlp.c_fc.weight": np.array([[-1.0001]], np.float32),
             "wpe.weight": np.array([[1.0001]], np.float32),
             "h.0.ln_1.bias": np.array([1.0001], np.float32)}
        self.assertTrue(dr.round_matrices_f16(w))
        np.testing.assert_array_equal(w["wte.weight"], [[one, one, one + 2 * ulp]])  # ties to even
        np.testing.assert_array_equal(w["h.0.mlp.c_fc.weight"], [[-one]])
        self.assertEqual(w["wte.weight"].dtype, np.float32)
        self.assertEqual(w["wpe.weight"][0, 0], np.float32(1.0001))
        self.assertEqual(w["h.0.ln_1.bias"][0], np.float32(1.0001))

    def test_float16_values_unchanged(self):
        w = {"wte.weight": np.array([[1.0, 0.5, -2.0 ** -14]], np.float32)}
        self.assertFalse(dr.round_matrices_f16(w), "an F16 file's matrices are not rounded")

    def test_overflow_names_the_tensor(self):
        w = {"h.1.attn.c_proj.weight": np.array([[0.5, 70000.0]], np.float32)}
        with self.assertRaisesRegex(dr.BadInput, r"'h.1.attn.c_proj.weight': element 1 is 70000"):
            dr.round_matrices_f16(w)


class ModelLoadTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp()
        cls.model = make_small(os.path.join(cls.tmp, "m"))

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def copy(self):
        d = tempfile.mkdtemp(dir=self.tmp)
        shutil.rmtree(d)
        shutil.copytree(self.model, d)
        return d

    def edit_config(self, **kw):
        d = self.copy()
        p = os.path.join(d, "config.json")
        with open(p) as f:
            cfg = json.load(f)
        cfg.update(kw)
        with open(p, "w") as f:
            json.dump(cfg, f)
        return d

    def rewrite(self, d, fn):
        p = os.path.join(d, "model.safetensors")
        w, dtypes, _, _ = dr.read_safetensors(p)
        dr.write_safetensors(p, {k: ("F32", v) for k, v in fn(w).items()})

    def test_bad_config_fields(self):
        for field, value in (("activation_function", "gelu"), ("scale_attn_by_inverse_layer_idx", True),
                             ("reorder_and_upcast_attn", True), ("model_type", "llama")):
            with self.subTest(field=field):
                d = self.edit_config(**{field: value})
                with self.assertRaises(dr.BadInput) as cm:
                    dr.load_model(d)
                self.assertIn(field, str(cm.exception))
                self.assertIn("config.json", str(cm.exception))

    def test_missing_tensor(self):
        d = self.copy()
        self.rewrite(d, lambda w: {k: v for k, v in w.items() if k != "h.0.mlp.c_fc.bias"})
        with self.assertRaisesRegex(dr.BadInput, "missing tensor 'h.0.mlp.c_fc.bias'"):
            dr.load_model(d)

    def test_prefix_buffers_and_tied_head(self):
        d = self.copy()
        ref = dr.load_model(self.model)["weights"]

        def hub_style(w):
            out = {"transformer." + k: v for k, v in w.items()}
            out["transformer.h.0.attn.bias"] = np.ones((1, 1, 4, 4), np.float32)
            out["transformer.h.0.attn.masked_bias"] = np.array([-1e4], np.float32)
            out["lm_head.weight"] = w["wte.weight"]
            return out
        self.rewrite(d, hub_style)
        m = dr.load_model(d)
        self.assertEqual(m["dtype"], "F32")
        self.assertEqual(sorted(m["weights"]), sorted(ref))
        for k in ref:
            np.testing.assert_array_equal(m["weights"][k], ref[k])

    def test_unexpected_tensor(self):
        d = self.copy()
        self.rewrite(d, lambda w: dict(w, **{"h.0.attn.extra": np.zeros(2, np.float32)}))
        with self.assertRaisesRegex(dr.BadInput, "unexpected tensor 'h.0.attn.extra'"):
            dr.load_model(d)


class SamplingTest(unittest.TestCase):
    def probs(self, logits, **kw):
        sc = dict({"temperature": 1.0, "top_k": 0, "top_p": 1.0, "min_p": 0.0, "repetition_penalty": 1.0}, **kw)
        hist = sc.pop("history", [])
        return dr.process_logits(torch.tensor(logits, dtype=torch.float64), hist, sc).numpy()

    P = np.log([0.5, 0.3, 0.15, 0.05])

    def test_top_p_keeps_smallest_set_reaching_p(self):
        # ascending cumsum 0.05, 0.2, 0.5, 1.0; removed where <= 1 - top_p
        np.testing.assert_allclose(self.probs(self.P, top_p=0.75), [0.625, 0.375, 0, 0])
        np.testing.assert_allclose(self.probs(self.P, top_p=0.9), [0.5, 0.3, 0.15, 0] / np.float64(0.95))
        np.testing.assert_allclose(self.probs(self.P, top_p=0.01), [1, 0, 0, 0])

    def test_top_k_keeps_ties(self):
        np.testing.assert_allclose(self.probs([1.0, 3.0, 3.0, 2.0, 3.0], top_k=2), [0, 1 / 3, 1 / 3, 0, 1 / 3])
        np.testing.assert_allclose(self.probs([1.0, 3.0, 2.0], top_k=1), [0, 1, 0])
        np.testing.assert_allclose(self.probs([1.0, 3.0, 2.0], top_k=10), self.probs([1.0, 3.0, 2.0]))

    def test_min_p(self):
        # threshold 0.2 * 0.5 = 0.1 removes only the 0.05 token
        np.testing.assert_allclose(self.probs(self.P, min_p=0.2), [0.5, 0.3, 0.15, 0] / np.float64(0.95))

    def test_repetition_penalty_and_temperature(self):
        # penalty on unique prior tokens: positive logits divided, negative multiplied
        got = self.probs([2.0, -2.0, 1.0, 0.5], repetition_penalty=2.0, temperature=0.5, history=[0, 1, 0])
        want = np.exp(np.array([1.0, -4.0, 1.0, 0.5]) / 0.5)
        np.testing.assert_allclose(got, want / want.sum())

    def test_openai_bias_and_penalties(self):
        # bias first (token 3: 0.5 + 1.5 = 2), repetition penalty on the
        # biased logit (2 / 2 = 1), then presence 0.5 once and frequency
        # 0.25 per occurrence: token 0 twice (-1.0), token 3 once (-0.75).
        got = self.probs([2.0, 1.0, 0.0, 0.5], logit_bias={"3": 1.5, "2": -100.0}, repetition_penalty=2.0,
                         presence_penalty=0.5, frequency_penalty=0.25, history=[0, 3, 0])
        want = np.exp(np.array([2.0 / 2 - 1.0, 1.0, -100.0, 2.0 / 2 - 0.75]))
        np.testing.assert_allclose(got, want / want.sum())
        np.testing.assert_allclose(self.probs([1.0, 2.0], presence_penalty=-1.0, history=[0]),
                                   self.probs([2.0, 2.0]))

    def test_float32_probabilities_accurate_over_a_full_vocabulary(self):
        # torch's float32 softmax over 50257 logits is off by ~1e-5 relative;
        # the reference must be within checkpoint 11's atol 1e-6 of exact.
        logits = np.random.default_rng(7).normal(0, 2.5, 50257).astype(np.float32)
        # One token takes half the mass, where the float32 error is largest.
        logits[123] = np.float32(0.7 * np.log(np.exp(logits.astype(np.float64) / 0.7).sum()))
        sc = {"temperature": 0.7, "top_k": 0, "top_p": 1.0, "min_p": 0.0, "repetition_penalty": 1.0}
        got = dr.process_logits(torch.from_numpy(logits), [], sc).numpy()
        self.assertEqual(got.dtype, np.float32)
        x = logits.astype(np.float64) / np.float32(0.7).astype(np.float64)
        exact = np.exp(x - x.max())
        exact /= exact.sum()
        self.assertLess(np.abs(got - exact).max(), 1e-6)

    def test_order_top_k_before_top_p(self):
        # top-k 2 first leaves {0.5, 0.3} -> renormalised 0.625/0.375; top-p 0.6 then keeps only the first
        np.testing.assert_allclose(self.probs(self.P, top_k=2, top_p=0.6), [1, 0, 0, 0])

    def test_lm_eval_pair_tokenization(self):
        tok = dr.GPT2Tokenizer.from_dir(os.path.join(os.path.dirname(HERE), "testdata", "gpt2-vocab"))
        self.assertEqual(dr.loglikelihood_tokens(tok, "", "Hi"), ([50256], tok.encode("Hi")))
        ctx, cont = dr.loglikelihood_tokens(tok, "Answer: ", "42")
        self.assertEqual((ctx, cont), (tok.encode("Answer:"), tok.encode(" 42")))

    def test_logits_rows(self):
        self.assertIsNone(dr.logits_rows(4, 4))
        self.assertEqual(dr.logits_rows(10, 4), [0, 3, 6, 9])
        self.assertEqual(dr.logits_rows(112, 4), [0, 37, 74, 111])
        self.assertEqual(dr.logits_rows(5, 1), [4])


class EmulateTest(unittest.TestCase):
    """emulate.py's llama.cpp CPU numerics follow ggml's code."""

    def test_gelu_table_is_tanh_gelu_rounded(self):
        # For x >= 0 (no cancellation in 1 + tanh) every entry is the tanh
        # GELU rounded to float16, within float32's evaluation error: at
        # most half a float16 step (and a hair) from the exact value.
        t = emulate.ggml_gelu_table()
        x = np.arange(1 << 16, dtype=np.uint16).view(np.float16)
        inside = np.isfinite(x) & (x >= 0) & (x < 10)
        xd = x[inside].astype(np.float64)
        exact = 0.5 * xd * (1 + np.tanh(np.sqrt(2 / np.pi) * (xd + 0.044715 * xd ** 3)))
        got = t[inside].astype(np.float64)
        step = np.abs(np.spacing(exact.astype(np.float16)).astype(np.float64))
        self.assertTrue(np.all(np.abs(got - exact) <= step * 0.5 * (1 + 1e-3)))
        self.assertEqual(t[np.float16(0).view(np.uint16)], 0)

    def test_gelu_lookup_and_range(self):
        e = emulate.LlamaCppCPU()
        x = torch.tensor([-12.0, -10.0, -1.2345678, 0.0, 0.1, 2.6130, 9.99, 10.0, 11.5], dtype=torch.float32)
        y = e.gelu(x)
        t = emulate.ggml_gelu_table()
        for xi, yi in zip(x.tolist(), y.tolist()):
            if xi <= -10:
                self.assertEqual(yi, 0.0)
            elif xi >= 10:
                self.assertEqual(yi, xi)
            else:
                self.assertEqual(yi, float(t[np.float16(xi).view(np.uint16)]))
        self.assertEqual(y.dtype, torch.float32)
        self.assertEqual(e.gelu(x.to(torch.float64)).dtype, torch.float64)

    def test_f16_kv_rounds_only_the_cache(self):
        """f16-kv: cache() is to_f16 (float32 and float64 alike), q and the
        probabilities pass through untouched, the GELU is gpt2_torch's."""
        e = emulate.profile("f16-kv")
        g = torch.Generator().manual_seed(3)
        for dtype in (torch.float32, torch.float64):
            x = torch.randn(2, 5, 8, generator=g, dtype=dtype) * 3
            c = e.cache(x)
            self.assertEqual(c.dtype, dtype)
            np.testing.assert_array_equal(c.numpy(), x.numpy().astype(np.float16).astype(c.numpy().dtype))
            self.assertFalse(torch.equal(c, x))
            self.assertIs(e.kq_operand(x), x)
            self.assertIs(e.kqv_operand(x), x)
            self.assertTrue(torch.equal(e.gelu(x), gpt2_torch.gelu_new(x)))
        self.assertEqual(emulate.unsupported("f16-kv", "qwen2"), None)
        self.assertEqual(emulate.unsupported("llamacpp-cpu-f16kv", "gpt2"), None)

    def test_float16_rounding_is_direct(self):
        # float64 -> float16 in one rounding: 1 + 2^-11 + 2^-40 is just above
        # a float16 midpoint; through float32 it would land on it and round
        # to even (down).
        x = torch.tensor([1 + 2.0 ** -11 + 2.0 ** -40], dtype=torch.float64)
        self.assertEqual(emulate.to_f16(x).item(), 1 + 2.0 ** -10)


class RecordedConfigTest(unittest.TestCase):
    """The manifest's config carries head_dim whenever Go could not derive
    it from hidden_size / num_attention_heads; otherwise it is the file's."""

    def test_head_dim(self):
        gemma2 = {"model_type": "gemma2", "hidden_size": 2304, "num_attention_heads": 8}
        qwen3 = {"model_type": "qwen3", "hidden_size": 1024, "num_attention_heads": 16}
        llama = {"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4}
        for name, raw, resolved, want in (
                ("gemma2 default 256, derived 288", gemma2, 256, 256),
                ("qwen3 default 128, derived 64", qwen3, 128, 128),
                ("the file's own head_dim", dict(qwen3, head_dim=128), 128, 128),
                ("llama derives hidden/heads", llama, 16, None),
                ("gpt2 has none", {"model_type": "gpt2", "n_embd": 64}, None, None)):
            with self.subTest(name):
                cfg = dict(raw) if resolved is None else dict(raw, head_dim=resolved)
                got = dr.recorded_config(raw, cfg)
                self.assertEqual(got.get("head_dim"), want)
                self.assertEqual({k: v for k, v in got.items() if k != "head_dim"},
                                 {k: v for k, v in raw.items() if k != "head_dim"})


class LogProbsTest(unittest.TestCase):
    """Checkpoint 9's log-softmax carries no float32 error of its own: on
    logits like Gemma-2-2B's (one far above 256000 others), torch's float32
    log_softmax is off by more than the log-likelihood tolerance (1e-4);
    processors.log_probs is within float32's spacing of the float64 value."""

    def test_one_logit_above_a_large_vocabulary(self):
        import processors
        g = torch.Generator().manual_seed(7)
        for V, top in ((256000, 17.8), (262144, 25.0), (50257, 12.0)):
            with self.subTest(vocab=V):
                x = (torch.rand(V, generator=g, dtype=torch.float64) * 6 - 4.4).to(torch.float32)
                x[V // 3] = top
                want = torch.log_softmax(x.to(torch.float64), -1)
                got = processors.log_probs(x)
                self.assertEqual(got.dtype, torch.float64)
                self.assertLess(float((got - want).abs().max()), 1e-12)
                rounded = got.to(torch.float32).to(torch.float64)
                self.assertLess(float((rounded - want).abs().max()), 2e-6)  # float32's spacing at |lp| < 32
        x = torch.tensor([0.5, -1.0, 2.0], dtype=torch.float64)
        self.assertTrue(torch.equal(processors.log_probs(x), torch.log_softmax(x, -1)))


class DumperTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp()
        cls.model = make_small(os.path.join(cls.tmp, "m"))
        cls.cases = os.path.join(cls.tmp, "cases.json")
        with open(cls.cases, "w") as f:
            json.dump({"cases": [{"id": "a", "prompt": "Hello, world. 12 monkeys!"}, {"id": "one", "tokens": [50256]}],
                       "loglikelihood": [{"context": "", "continuation": " cat"},
                                         {"context": "The ", "continuation": "dog"}]}, f)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def dump(self, out, *extra, model=None):
        return run_quiet(dr.main, ["--model", model or self.model, "--cases", self.cases, "--out", out,
                                   "--n-generate", "4", *extra])

    def load(self, out, rel, f64=False):
        return np.load(os.path.join(out, rel + (".f64.npy" if f64 else ".npy")))

    def test_tiny_model_stats(self):
        """make_tiny_model.py --stats measures what the scales were tuned
        for through this module's names (it once reached a gelu_new this
        module did not have)."""
        rc, msg = run_quiet(lambda: mtm.stats(self.model, self.cases))
        self.assertIsNone(rc)
        self.assertIn("case a: T=", msg)
        self.assertIn("max |tanh-GELU - erf-GELU|", msg)

    def test_emulate_llamacpp_cpu(self):
        """--emulate llamacpp-cpu changes the GELU and nothing before it:
        every gelu value, float32 and float64 twin, is a value of ggml's
        float16 table; the profile is recorded in the manifest."""
        plain, emu = os.path.join(self.tmp, "plain"), os.path.join(self.tmp, "emu")
        self.assertEqual(self.dump(plain)[0], 0)
        self.assertEqual(self.dump(emu, "--emulate", "llamacpp-cpu")[0], 0)
        m = json.loads(contents(emu)["manifest.json"])
        self.assertEqual(m["generator"]["emulates"]["profile"], "llamacpp-cpu")
        self.assertNotIn("emulates", json.loads(contents(plain)["manifest.json"])["generator"])
        for rel in ("a/embeddings", "a/l00_ln_1", "a/l00_probs", "a/l00_attn_out", "a/l00_ln_2"):
            np.testing.assert_array_equal(self.load(emu, rel), self.load(plain, rel), rel)
        table = set(emulate.ggml_gelu_table().astype(np.float64).tolist())
        for f64 in (False, True):
            g = self.load(emu, "a/l00_gelu", f64)
            self.assertTrue(set(g.ravel().tolist()) <= table, "gelu values outside the table")
            self.assertFalse(np.array_equal(g, self.load(plain, "a/l00_gelu", f64)))
        k = self.load(emu, "a/l00_k_cache")
        self.assertFalse(np.array_equal(k, k.astype(np.float16).astype(np.float32)), "F32 cache kept")

    def test_emulate_f16_kv(self):
        """llamacpp-cpu-f16kv stores K and V as float16 (the cache holds
        float16 values), leaves q, k, v themselves float32."""
        out = os.path.join(self.tmp, "emu16")
        self.assertEqual(self.dump(out, "--emulate", "llamacpp-cpu-f16kv")[0], 0)
        for f64 in (False, True):
            for name in ("k_cache", "v_cache"):
                c = self.load(out, "a/l00_" + name, f64)
                np.testing.assert_array_equal(c, c.astype(np.float16).astype(c.dtype))
        k = self.load(out, "a/l00_k")
        self.assertFalse(np.array_equal(k, k.astype(np.float16).astype(np.float32)))

    def test_emulate_f16_kv_profile(self):
        """--emulate f16-kv (llorch-check's float16 KV cache): the cache
        holds float16 values, float32 and twin alike, and differs from the
        plain set's; everything before the attention is the plain set's;
        q and the probabilities are not rounded to float16, unlike
        llamacpp-cpu-f16kv's (which rounds q and the softmax for its
        matmuls); the GELU is the plain tanh GELU, not ggml's table."""
        plain, out = os.path.join(self.tmp, "plain-kv"), os.path.join(self.tmp, "f16-kv")
        ggml = os.path.join(self.tmp, "ggml-kv")
        self.assertEqual(self.dump(plain)[0], 0)
        rc, msg = self.dump(out, "--emulate", "f16-kv")
        self.assertEqual(rc, 0, msg)
        self.assertEqual(self.dump(ggml, "--emulate", "llamacpp-cpu-f16kv")[0], 0)
        g = json.loads(contents(out)["manifest.json"])["generator"]["emulates"]
        self.assertEqual(g["profile"], "f16-kv")
        self.assertIn("--kv-cache-dtype f16", g["applies"])
        for f64 in (False, True):
            for name in ("k_cache", "v_cache"):
                c = self.load(out, "a/l00_" + name, f64)
                np.testing.assert_array_equal(c, c.astype(np.float16).astype(c.dtype))
                p = self.load(plain, "a/l00_" + name, f64)
                self.assertFalse(np.array_equal(c, p), name)
                # The layer's cache is its k, v rounded once, nearest even.
                np.testing.assert_array_equal(c, p.astype(np.float16).astype(p.dtype))
            for rel in ("a/embeddings", "a/l00_ln_1", "a/l00_q", "a/l00_k", "a/l00_v"):
                np.testing.assert_array_equal(self.load(out, rel, f64), self.load(plain, rel, f64), rel)
            for rel in ("a/l00_scores", "a/l00_probs", "a/l00_attn_out", "a/last_logits"):
                self.assertFalse(np.array_equal(self.load(out, rel, f64), self.load(plain, rel, f64)), rel)
        # q and the softmax stay float32: the scores of a float16 cache and
        # an unrounded q differ from llamacpp-cpu-f16kv's, whose q is rounded.
        s, s16 = self.load(out, "a/l00_scores"), self.load(ggml, "a/l00_scores")
        causal = np.tril(np.ones(s.shape[-2:], dtype=bool))
        self.assertFalse(np.array_equal(s[..., causal], s16[..., causal]))
        np.testing.assert_array_equal(self.load(out, "a/l00_k_cache"), self.load(ggml, "a/l00_k_cache"))
        self.assertFalse(np.array_equal(self.load(out, "a/l00_attn_out"), self.load(ggml, "a/l00_attn_out")))
        # The GELU is the plain one: a table value check would fail somewhere.
        table = set(emulate.ggml_gelu_table().astype(np.float64).tolist())
        self.assertFalse(set(self.load(out, "a/l00_gelu").ravel().tolist()) <= table)
        # Each log-likelihood pair carries the float16 cache of its input,
        # a K and a V file a layer, [H, T, D]; the plain set's pairs none.
        m = json.loads(contents(out)["manifest.json"])
        cfg = m["model"]["config"]
        self.assertTrue(m["loglikelihood"])
        for i, p in enumerate(m["loglikelihood"]):
            T = len(p["context_tokens"]) + len(p["continuation_tokens"]) - 1
            kv = p["kv_cache"]
            self.assertEqual(kv["k"], [f"loglikelihood/{i}_k_cache_{l}.npy" for l in range(cfg["n_layer"])])
            self.assertEqual(kv["v"], [f"loglikelihood/{i}_v_cache_{l}.npy" for l in range(cfg["n_layer"])])
            for rel in kv["k"] + kv["v"]:
                c = np.load(os.path.join(out, rel))
                self.assertEqual((str(c.dtype), list(c.shape)), ("float32", [cfg["n_head"], T, cfg["n_embd"] // cfg["n_head"]]), rel)
                np.testing.assert_array_equal(c, c.astype(np.float16).astype(c.dtype))
        for p in json.loads(contents(plain)["manifest.json"])["loglikelihood"]:
            self.assertNotIn("kv_cache", p)

    def test_case_option(self):
        """--case keeps the named cases of the --cases file, and every pair."""
        out = os.path.join(self.tmp, "one-case")
        rc, msg = self.dump(out, "--case", "one")
        self.assertEqual(rc, 0, msg)
        m = json.loads(contents(out)["manifest.json"])
        self.assertEqual([c["id"] for c in m["cases"]], ["one"])
        self.assertEqual({e["case"] for e in m["tensors"]}, {"one"})
        self.assertEqual(len(m["loglikelihood"]), 2)
        self.assertEqual(sorted(os.listdir(out)), ["manifest.json", "one"])
        rc, msg = self.dump(os.path.join(self.tmp, "never"), "--case", "nope")
        self.assertEqual(rc, 2, msg)
        self.assertIn("--case 'nope': no such case", msg)

    def test_rerun_identical_refuses_different_force_replaces(self):
        out = os.path.join(self.tmp, "refs")
        self.assertEqual(self.dump(out)[0], 0)
        m = json.loads(contents(out)["manifest.json"])
        self.assertEqual([c["id"] for c in m["cases"]], ["a", "one"])
        self.assertFalse(any(e["name"] == "k_cache" for e in m["tensors"] if e["case"] == "one"))
        self.assertEqual([len(r["tokens"]) for r in m["generation"]["results"]], [4, 4])
        self.assertEqual(m["loglikelihood"][1]["continuation_tokens"], [3290])  # " dog"
        snap = contents(out)

        rc, msg = self.dump(out)  # identical: success, untouched
        self.assertEqual(rc, 0, msg)
        self.assertIn("up to date", msg)
        self.assertEqual(contents(out), snap)

        other = os.path.join(self.tmp, "refs2")
        self.assertEqual(self.dump(other)[0], 0)
        rc, msg = run_quiet(cr.main, [out, other])
        self.assertEqual(rc, 0, msg)
        self.assertIn("tensors compared (exact), 0 differences", msg)

        rc, msg = self.dump(out, "--logits-rows", "2")  # different: refused
        self.assertEqual(rc, 2)
        self.assertIn("--force", msg)
        self.assertEqual(contents(out), snap)
        rc, msg = self.dump(out, "--logits-rows", "2", "--force")
        self.assertEqual(rc, 0, msg)
        rc, msg = run_quiet(cr.main, [out, other])
        self.assertEqual(rc, 1)
        self.assertIn("DIFFERENCE", msg)
        self.assertEqual([n for n in os.listdir(self.tmp) if n.startswith(".")], [])  # no temp dirs left

    def test_compare_detects_value_change(self):
        a, b = os.path.join(self.tmp, "ca"), os.path.join(self.tmp, "cb")
        self.assertEqual(self.dump(a)[0], 0)
        shutil.copytree(a, b)
        p = os.path.join(b, "a", "l00_ln_1.npy")
        x = np.load(p)
        x[1, 3] += 1e-3
        np.save(p, x)
        rc, msg = run_quiet(cr.main, [a, b])
        self.assertEqual(rc, 1)
        self.assertIn("a/l00_ln_1.npy", msg)
        self.assertIn("1 differences", msg)

    def test_bad_inputs_exit_2(self):
        out = os.path.join(self.tmp, "never")
        bad_tok = run_quiet(dr.main, ["--model", self.model, "--tokens", "1,50257", "--out", out])
        self.assertEqual(bad_tok[0], 2)
        self.assertIn("50257", bad_tok[1])
        long = run_quiet(dr.main, ["--model", self.model, "--prompt", "word " * 40, "--out", out])
        self.assertEqual(long[0], 2)
        self.assertIn("n_positions=32", long[1])
        bare = os.path.join(self.tmp, "bare")
        shutil.copytree(self.model, bare)
        os.remove(os.path.join(bare, "vocab.json"))
        rc, msg = run_quiet(dr.main, ["--model", bare, "--prompt", "Hi", "--out", out])
        self.assertEqual(rc, 2)
        self.assertIn("vocab.json", msg)
        self.assertEqual(run_quiet(dr.main, ["--model", bare, "--tokens", "1,2", "--out", out])[0], 0)
        self.assertIsNone(json.loads(contents(out)["manifest.json"])["generation"]["results"][0]["text"])

    def test_make_tiny_model_is_deterministic(self):
        a = make_small(os.path.join(self.tmp, "x1"), dtype="bf16")
        b = make_small(os.path.join(self.tmp, "x2"), dtype="bf16")
        for name in ("model.safetensors", "config.json", "README.md"):
            self.assertEqual(contents(a)[name], contents(b)[name])
        self.assertEqual(dr.load_model(a)["dtype"], "BF16")

    def test_prompt_and_tokens(self):
        """A case may give both: the ids are authoritative and the prompt is
        recorded; with a tokenizer (GPT-2) they must agree, or exit 2."""
        path = os.path.join(self.tmp, "both.json")
        out = os.path.join(self.tmp, "both")
        for toks, rc in (([15496, 13], 0), ([15496, 11], 2)):
            with open(path, "w") as f:
                json.dump({"cases": [{"id": "x", "prompt": "Hello.", "tokens": toks}],
                           "loglikelihood": [{"context": "The ", "continuation": "dog",
                                              "context_tokens": [464], "continuation_tokens": [3290]}]}, f)
            got, msg = run_quiet(dr.main, ["--model", self.model, "--cases", path, "--out", out, "--force",
                                           "--n-generate", "2"])
            self.assertEqual(got, rc, msg)
        self.assertIn("case 'x': the text tokenizes to [15496, 13], not the given ids [15496, 11]", msg)
        m = json.loads(contents(out)["manifest.json"])
        self.assertEqual(m["cases"], [{"id": "x", "prompt": "Hello.", "tokens": [15496, 13]}])
        self.assertEqual(m["loglikelihood"][0]["continuation_tokens"], [3290])
        with open(path, "w") as f:  # a pair's given ids are held to the tokenizer too
            json.dump({"cases": [{"id": "x", "tokens": [15496]}],
                       "loglikelihood": [{"context": "The ", "continuation": "dog",
                                          "context_tokens": [464], "continuation_tokens": [3290, 13]}]}, f)
        rc, msg = run_quiet(dr.main, ["--model", self.model, "--cases", path, "--out", out, "--force"])
        self.assertEqual(rc, 2, msg)
        self.assertIn("not the given ids [[464], [3290, 13]]", msg)


def layer_names(arch):
    """llama_torch's probes of one layer in forward order, k_cache/v_cache aside."""
    return (["attn_norm", "q", "k", "v"] + (["q_norm", "k_norm"] if arch == "qwen3" else []) +
            ["q_rope", "k_rope", "scores", "probs", "attn_out", "ffn_norm", "gate", "up", "act", "down",
             "block_out"])


class LlamaDumperTest(unittest.TestCase):
    """The Llama family's sets (llama_torch's forward) have GPT-2's structure."""

    ROOT = os.path.dirname(HERE)
    HELLO = [1, 15043, 29892, 3186, 29889]  # "Hello, world." with BOS (llama-spm and phi-3 vocabularies)

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp()
        cls.cases = os.path.join(cls.tmp, "cases.json")
        with open(cls.cases, "w") as f:
            json.dump({"cases": [{"id": "hello", "prompt": "Hello, world.", "tokens": cls.HELLO},
                                 {"id": "one", "tokens": [1]}],
                       "loglikelihood": [{"context": "The capital of France is", "continuation": " Paris",
                                          "context_tokens": [450, 7483, 310, 3444, 338],
                                          "continuation_tokens": [3681]}]}, f)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def model(self, name):
        return os.path.join(self.ROOT, "testdata", name)

    def dump(self, model, out, *extra, cases=None):
        return run_quiet(dr.main, ["--model", model, "--cases", cases or self.cases, "--out", out,
                                   "--n-generate", "4", "--logits-rows", "3", *extra])

    def test_structure_names_and_shapes(self):
        """qwen3 (head_dim 32 != hidden/heads 16, q_norm/k_norm) and phi3
        (fused projections, vocab 32064), both GQA (4 query heads, 2 KV
        heads): names in forward order, shapes, float64 twins; k_cache and
        v_cache only from the incremental run (none for a one-token case)."""
        for name, arch, D, V in (("tiny-llama-qwen3", "qwen3", 32, 32000), ("tiny-llama-phi3", "phi3", 16, 32064)):
            with self.subTest(model=name):
                out = os.path.join(self.tmp, name)
                rc, msg = self.dump(self.model(name), out)
                self.assertEqual(rc, 0, msg)
                m = json.loads(contents(out)["manifest.json"])
                self.assertEqual(m["model"]["config"]["model_type"], arch)
                self.assertEqual(m["model"]["weights_dtype"], "F16")
                self.assertNotIn("matrices_held_as", m["model"])
                self.assertEqual(m["cases"][0], {"id": "hello", "prompt": "Hello, world.", "tokens": self.HELLO})
                self.assertIsNone(m["cases"][1]["prompt"])
                sampling = ["sampling_" + sc["name"] for sc in dr.SAMPLING]
                T, H, Hkv, C, I = 5, 4, 2, 64, 128
                shapes = {"embeddings": [T, C], "attn_norm": [T, C], "q": [H, T, D], "k": [Hkv, T, D],
                          "v": [Hkv, T, D], "q_norm": [H, T, D], "k_norm": [Hkv, T, D], "q_rope": [H, T, D],
                          "k_rope": [Hkv, T, D], "scores": [H, T, T], "probs": [H, T, T], "attn_out": [T, C],
                          "ffn_norm": [T, C], "gate": [T, I], "up": [T, I], "act": [T, I], "down": [T, C],
                          "block_out": [T, C], "norm": [T, C], "logits": [3, V], "last_logits": [V],
                          "last_logprobs": [V], "k_cache": [Hkv, T, D], "v_cache": [Hkv, T, D],
                          "step_logits": [V]}
                shapes.update({n: [V] for n in sampling})
                hello = [e for e in m["tensors"] if e["case"] == "hello"]
                want = [(None, "embeddings")] + [(i, n) for i in range(2) for n in layer_names(arch)] + \
                    [(None, "norm"), (None, "logits"), (None, "last_logits"), (None, "last_logprobs")] + \
                    [(i, n) for i in range(2) for n in ("k_cache", "v_cache")] + [(None, "step_logits")] + \
                    [(None, n) for n in sampling]
                self.assertEqual([(e["layer"], e["name"]) for e in hello], want)
                for e in hello:
                    self.assertEqual(e["shape"], shapes[e["name"]], e["name"])
                    self.assertEqual(list(np.load(os.path.join(out, e["file"])).shape), e["shape"])
                    self.assertEqual(np.load(os.path.join(out, e["file_f64"])).dtype, np.float64)
                    if e["name"] in ("k_cache", "v_cache"):
                        self.assertEqual(e["checkpoint"], 3)
                self.assertEqual(next(e["rows"] for e in hello if e["name"] == "logits"), [0, 2, 4])
                one = [e["name"] for e in m["tensors"] if e["case"] == "one"]
                self.assertFalse({"k_cache", "v_cache", "step_logits"} & set(one), one)
                # The cache holds k after RoPE and v: the full run's values.
                for layer in range(2):
                    kc = np.load(os.path.join(out, f"hello/l{layer:02d}_k_cache.npy"))
                    np.testing.assert_allclose(kc, np.load(os.path.join(out, f"hello/l{layer:02d}_k_rope.npy")),
                                               atol=1e-5)
                self.assertEqual(len(m["greedy"]), 2)
                self.assertEqual([len(r["tokens"]) for r in m["generation"]["results"]], [4, 4])
                self.assertIsNone(m["generation"]["results"][0]["text"])
                ll = m["loglikelihood"][0]
                self.assertEqual((ll["context_tokens"], ll["continuation_tokens"]), ([450, 7483, 310, 3444, 338], [3681]))
                self.assertLess(ll["ll"], 0)
                self.assertAlmostEqual(ll["ll"], ll["ll_f64"], places=4)

    def test_eos_list_stops_generation(self):
        """config.json's eos_token_id may be a list: any of its ids stops."""
        src = self.model("tiny-llama-qwen3")
        first = os.path.join(self.tmp, "first")
        self.assertEqual(self.dump(src, first)[0], 0)
        gen = json.loads(contents(first)["manifest.json"])["generation"]["results"][0]["tokens"]
        d = os.path.join(self.tmp, "eos-list")
        shutil.copytree(src, d)
        with open(os.path.join(d, "config.json")) as f:
            cfg = json.load(f)
        cfg["eos_token_id"] = [2, gen[1]]
        with open(os.path.join(d, "config.json"), "w") as f:
            json.dump(cfg, f)
        out = os.path.join(self.tmp, "eos-out")
        self.assertEqual(self.dump(d, out)[0], 0)
        r = json.loads(contents(out)["manifest.json"])["generation"]["results"][0]
        self.assertEqual((r["tokens"], r["stop_reason"]), (gen[:2], "eos"))

    def test_weight_dtype_f16(self):
        """An F16 file's set is the same with --weight-dtype f16; a float32
        file whose matrices are not float16 values is rounded and marked."""
        src = self.model("tiny-llama")
        a, b = os.path.join(self.tmp, "f16-a"), os.path.join(self.tmp, "f16-b")
        self.assertEqual(self.dump(src, a)[0], 0)
        self.assertEqual(self.dump(src, b, "--weight-dtype", "f16")[0], 0)
        self.assertTrue(dr.same_tree(a, b))
        d = os.path.join(self.tmp, "f32")
        shutil.copytree(src, d)
        p = os.path.join(d, "model.safetensors")
        w, _, _, _ = dr.read_safetensors(p)
        dr.write_safetensors(p, {k: ("F32", v * np.float32(1 + 1e-4)) for k, v in w.items()})
        c = os.path.join(self.tmp, "f16-c")
        self.assertEqual(self.dump(d, c, "--weight-dtype", "f16")[0], 0)
        m = json.loads(contents(c)["manifest.json"])["model"]
        self.assertEqual((m["weights_dtype"], m["matrices_held_as"]), ("F32", "float16"))

    def test_emulate_f16_kv(self):
        """--emulate f16-kv applies to the Llama family: the cache (k after
        RoPE, v; Hkv heads, before GQA's repeat) holds the float16-rounded
        values, in the float32 set and its twin; q_rope, k_rope and the
        probabilities are not rounded; what precedes the attention is the
        plain set's. qwen2 (biases, GQA 4:2) and qwen3 (q_norm, k_norm)."""
        for name in ("tiny-llama-qwen2", "tiny-llama-qwen3"):
            with self.subTest(model=name):
                plain, out = os.path.join(self.tmp, name + "-plain"), os.path.join(self.tmp, name + "-f16kv")
                self.assertEqual(self.dump(self.model(name), plain)[0], 0)
                rc, msg = self.dump(self.model(name), out, "--emulate", "f16-kv")
                self.assertEqual(rc, 0, msg)
                m = json.loads(contents(out)["manifest.json"])
                self.assertEqual(m["generator"]["emulates"]["profile"], "f16-kv")
                load = (lambda d, rel, f64: np.load(os.path.join(d, rel + (".f64.npy" if f64 else ".npy"))))
                for f64 in (False, True):
                    for layer in range(2):
                        for name_ in ("k_cache", "v_cache"):
                            rel = f"hello/l{layer:02d}_{name_}"
                            c = load(out, rel, f64)
                            self.assertEqual(c.shape[0], 2)  # Hkv heads: rounded before repeat_kv
                            np.testing.assert_array_equal(c, c.astype(np.float16).astype(c.dtype), rel)
                            self.assertFalse(np.array_equal(c, load(plain, rel, f64)), rel)
                        # k_rope is the cache's input, unrounded; the cache is it rounded once.
                        kr = load(out, f"hello/l{layer:02d}_k_rope", f64)
                        self.assertFalse(np.array_equal(kr, kr.astype(np.float16).astype(kr.dtype)))
                        q = load(out, f"hello/l{layer:02d}_q_rope", f64)
                        self.assertFalse(np.array_equal(q, q.astype(np.float16).astype(q.dtype)))
                        p = load(out, f"hello/l{layer:02d}_probs", f64)
                        self.assertFalse(np.array_equal(p, p.astype(np.float16).astype(p.dtype)))
                    for name_ in ("k_cache", "v_cache"):  # layer 0's input is the plain set's: rounded once
                        want = load(plain, "hello/l00_" + name_, f64)
                        np.testing.assert_array_equal(load(out, "hello/l00_" + name_, f64),
                                                      want.astype(np.float16).astype(want.dtype))
                    for rel in ("hello/embeddings", "hello/l00_attn_norm", "hello/l00_q_rope", "hello/l00_k_rope",
                                "hello/l00_v"):
                        np.testing.assert_array_equal(load(out, rel, f64), load(plain, rel, f64), rel)
                    for rel in ("hello/l00_scores", "hello/l00_attn_out", "hello/last_logits"):
                        self.assertFalse(np.array_equal(load(out, rel, f64), load(plain, rel, f64)), rel)

    def test_cases_from_text(self):
        """Without --cases every family gets the default cases, as text: the
        model's own tokenizer (tokenizer.gguf here) gives the ids, which the
        set records with the tokenizer's file and sha256; the pair is split
        without BOS."""
        out = os.path.join(self.tmp, "defaults")
        rc, msg = run_quiet(dr.main, ["--model", self.model("tiny-llama-phi3"), "--out", out, "--n-generate", "2",
                                      "--logits-rows", "2"])
        self.assertEqual(rc, 0, msg)
        m = json.loads(contents(out)["manifest.json"])
        self.assertEqual([c["id"] for c in m["cases"]], ["short", "long"])
        self.assertEqual(m["cases"][0]["tokens"], self.HELLO)
        ll = m["loglikelihood"][0]
        self.assertEqual((ll["context_tokens"], ll["continuation_tokens"]), ([450, 7483, 310, 3444, 338], [3681]))
        self.assertEqual(m["model"]["tokenizer_file"], "tokenizer.gguf")
        with open(os.path.join(self.ROOT, "testdata", "tokenizer", "phi-3", "ggml-vocab-phi-3.gguf"), "rb") as f:
            self.assertEqual(m["model"]["tokenizer_sha256"], hashlib.sha256(f.read()).hexdigest())

    def test_given_ids_held_to_the_tokenizer(self):
        """Ids a cases file gives are checked against the model's tokenizer:
        Llama 2's ids are not Mistral's, so the case is bad input (exit 2),
        named; so is a pair's."""
        d = os.path.join(self.tmp, "mistral-vocab")
        shutil.copytree(self.model("tiny-llama"), d, ignore=shutil.ignore_patterns("tokenizer.gguf"))
        for name in ("tokenizer.json", "tokenizer_config.json"):
            shutil.copy(os.path.join(self.ROOT, "testdata", "tokenizer", "mistral-hf", name), d)
        out = os.path.join(self.tmp, "never-mistral")
        rc, msg = self.dump(d, out)
        self.assertEqual(rc, 2, msg)
        self.assertIn("case 'hello': the text tokenizes to [1, 22557, 28725, 1526, 28723], not the given ids "
                      "[1, 15043, 29892, 3186, 29889]", msg)
        path = os.path.join(self.tmp, "pair-only.json")
        with open(path, "w") as f:
            json.dump({"cases": [{"id": "one", "tokens": [1]}],
                       "loglikelihood": [{"context": "The capital of France is", "continuation": " Paris",
                                          "context_tokens": [450, 7483, 310, 3444, 338],
                                          "continuation_tokens": [3681]}]}, f)
        rc, msg = self.dump(d, out, cases=path)
        self.assertEqual(rc, 2, msg)
        self.assertIn("loglikelihood 'The capital of France is' + ' Paris': the text tokenizes to", msg)
        self.assertFalse(os.path.exists(out))
        # The same text alone gives Mistral's ids, and the set names tokenizer.json.
        with open(path, "w") as f:
            json.dump({"cases": [{"id": "hello", "prompt": "Hello, world."}]}, f)
        rc, msg = self.dump(d, out, cases=path)
        self.assertEqual(rc, 0, msg)
        m = json.loads(contents(out)["manifest.json"])
        self.assertEqual(m["cases"][0]["tokens"], [1, 22557, 28725, 1526, 28723])
        self.assertEqual(m["model"]["tokenizer_file"], "tokenizer.json")

    def test_generation_config_eos(self):
        """generation_config.json's eos_token_id stops greedy generation, as
        Go's generate stops on it (TestGenerateStopsOnGenerationConfigEOS:
        the same model and prompt continue 372, 31271, ...); a malformed one
        is bad input naming the file."""
        d = os.path.join(self.tmp, "gen-eos")
        shutil.copytree(self.model("tiny-llama3"), d)
        with open(os.path.join(d, "generation_config.json"), "w") as f:
            json.dump({"eos_token_id": [2, 31271]}, f)
        out = os.path.join(self.tmp, "gen-eos-out")
        rc, msg = run_quiet(dr.main, ["--model", d, "--tokens", "1,450,7483", "--out", out, "--n-generate", "4"])
        self.assertEqual(rc, 0, msg)
        res = json.loads(contents(out)["manifest.json"])["generation"]["results"][0]
        self.assertEqual((res["tokens"], res["stop_reason"]), ([372, 31271], "eos"))
        with open(os.path.join(d, "generation_config.json"), "w") as f:
            json.dump({"eos_token_id": [2, 32000]}, f)
        rc, msg = run_quiet(dr.main, ["--model", d, "--tokens", "1,450,7483", "--out", out + "2", "--n-generate", "4"])
        self.assertEqual(rc, 2, msg)
        self.assertIn("generation_config.json: field 'eos_token_id': 32000", msg)

    def test_unreadable_tokenizer(self):
        """A tokenizer.json this module cannot read stops only text: ids run,
        unchecked; text is bad input naming the cause."""
        d = os.path.join(self.tmp, "odd-tokenizer")
        shutil.copytree(self.model("tiny-llama"), d, ignore=shutil.ignore_patterns("tokenizer.gguf"))
        with open(os.path.join(d, "tokenizer.json"), "w") as f:
            json.dump({"model": {"type": "Unigram", "vocab": []}}, f)
        out = os.path.join(self.tmp, "odd-out")
        rc, msg = run_quiet(dr.main, ["--model", d, "--tokens", "1,2,3", "--out", out, "--n-generate", "1"])
        self.assertEqual(rc, 0, msg)
        rc, msg = run_quiet(dr.main, ["--model", d, "--prompt", "Hi", "--out", out + "2"])
        self.assertEqual(rc, 2, msg)
        self.assertIn("model.type 'Unigram' is not supported (BPE)", msg)

    def test_bad_inputs_exit_2(self):
        out = os.path.join(self.tmp, "never")
        model = self.model("tiny-llama-qwen3")
        for prof in ("llamacpp-cpu", "llamacpp-cpu-f16kv"):
            rc, msg = self.dump(model, out, "--emulate", prof)
            self.assertEqual(rc, 2, msg)
            self.assertIn(f"--emulate {prof}: not implemented for model_type 'qwen3'", msg)
            self.assertIn("GELU", msg)
            self.assertIn("f16-kv", msg)  # what the family can use
        bare = os.path.join(self.tmp, "no-tokenizer")  # the model without its tokenizer.gguf
        shutil.copytree(model, bare, ignore=shutil.ignore_patterns("tokenizer.gguf"))
        rc, msg = run_quiet(dr.main, ["--model", bare, "--prompt", "Hello", "--out", out])
        self.assertEqual(rc, 2, msg)
        self.assertIn("no tokenizer (tokenizer.json, or a *.gguf vocabulary", msg)
        self.assertIn("needed to tokenize prompt from --prompt", msg)
        rc, msg = run_quiet(dr.main, ["--model", bare, "--corpus", os.path.join(self.ROOT, "testdata", "corpus",
                                                                     "shakespeare.txt"), "--out", out])
        self.assertEqual(rc, 2, msg)
        self.assertIn("corpus sets are GPT-2's only, not model_type 'qwen3'", msg)
        rc, msg = run_quiet(dr.main, ["--model", model, "--tokens", "1,32000", "--out", out])
        self.assertEqual(rc, 2, msg)
        self.assertIn("token id 32000 outside the vocabulary [0, 32000)", msg)
        rc, msg = run_quiet(dr.main, ["--model", model, "--tokens", ",".join(["1"] * 129), "--out", out])
        self.assertEqual(rc, 2, msg)
        self.assertIn("max_position_embeddings=128", msg)
        d = os.path.join(self.tmp, "mamba")
        shutil.copytree(model, d)
        with open(os.path.join(d, "config.json")) as f:
            cfg = json.load(f)
        with open(os.path.join(d, "config.json"), "w") as f:
            json.dump(dict(cfg, model_type="mamba"), f)
        rc, msg = run_quiet(dr.main, ["--model", d, "--tokens", "1,2", "--out", out])
        self.assertEqual(rc, 2, msg)
        self.assertIn(f"'mamba': only {', '.join(families.BY_ARCH)} are supported", msg)
        self.assertFalse(os.path.exists(out))


if __name__ == "__main__":
    unittest.main()
