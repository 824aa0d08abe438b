"""Tests of gemma_torch.py (Gemma 2 and Gemma 3 text), each against the
formula HF's modeling file computes, written out independently here.
What both sides accept and refuse is cmd/llorch-check's
TestConfigsAgreeWithTheReference; that Go matches this forward is the
committed reference sets' (checkpoints.TestFamiliesPassAllTwelve).
Run: /usr/bin/python3 -m unittest discover -s pytorch -p 'test_*.py'
"""

import copy
import math
import os
import sys
import unittest

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gemma_torch as gt  # noqa: E402

ROOT = os.path.dirname(HERE)
MODELS = {"gemma2": "tiny-llama-gemma2", "gemma3": "tiny-llama-gemma3"}
# BOS and 39 ids: longer than the tiny models' window of 24.
TOKENS = [1] + [int(t) for t in np.random.default_rng(11).integers(3, 32000, 39)]

_cache = {}


def load(name):
    if name not in _cache:
        _cache[name] = gt.load_model(os.path.join(ROOT, "testdata", MODELS[name]))
    return _cache[name]


def with_config(model, **changes):
    m = copy.deepcopy(model)
    raw = dict(m["config_raw"], **changes)
    m["config_raw"], m["config"] = gt.load_config_dict(raw, "config.json")
    return m


def run(model, dtype=torch.float32):
    cap = {}
    with torch.no_grad():
        logits, _ = gt.Gemma(model, dtype).forward(
            TOKENS, probe=lambda ck, l, n, t, rows=None: cap.__setitem__((l, n), t.clone()))
    return logits, cap


class GemmaTest(unittest.TestCase):
    def test_norm_multiplies_by_one_plus_w(self):
        fwd = gt.Gemma(load("gemma2"), torch.float32)
        x = torch.randn(3, 64, dtype=torch.float32, generator=torch.Generator().manual_seed(1))
        w = torch.randn(64, dtype=torch.float32, generator=torch.Generator().manual_seed(2)) * 0.3
        xd, wd = x.double(), w.double()
        want = xd / torch.sqrt((xd * xd).mean(-1, keepdim=True) + 1e-6) * (1 + wd)
        got = fwd._rms(x, w)
        self.assertEqual(got.dtype, torch.float32)
        self.assertTrue(torch.allclose(got.double(), want, rtol=1e-6, atol=1e-6))
        self.assertFalse(torch.allclose(got.double(), want / (1 + wd) * wd, rtol=1e-2, atol=1e-2))

    def test_attention_softcap_after_scaling_before_mask(self):
        m = load("gemma2")
        _, capped = run(m)
        _, plain = run(with_config(m, attn_logit_softcapping=None))
        # Layer 0's inputs are the same with and without the cap.
        s, p = capped[(0, "scores")], plain[(0, "scores")]
        seen = p > torch.finfo(torch.float32).min / 2  # the mask's entries are not scores
        want = torch.tanh(p[seen] / 5.0) * 5.0
        self.assertTrue(torch.allclose(s[seen], want, rtol=1e-6, atol=1e-6))
        self.assertGreater(float((s[seen] - p[seen]).abs().max()), 0.1, "the cap bites")
        self.assertTrue(torch.equal(seen, s > torch.finfo(torch.float32).min / 2))
        s = capped[(1, "scores")]
        self.assertLess(float(s[s > torch.finfo(torch.float32).min / 2].abs().max()), 5.0)

    def test_final_softcap(self):
        m = load("gemma2")
        capped, _ = run(m)
        plain, _ = run(with_config(m, final_logit_softcapping=None))
        self.assertTrue(torch.allclose(capped, torch.tanh(plain / 3.0) * 3.0, rtol=1e-6, atol=1e-6))
        self.assertLessEqual(float(capped.abs().max()), 3.0)
        self.assertGreater(float((capped - plain).abs().max()), 0.5)

    def test_gemma3_reads_no_attention_softcap(self):
        m = load("gemma3")
        a, _ = run(m)
        b, _ = run(with_config(m, attn_logit_softcapping=5.0))
        self.assertTrue(torch.equal(a, b))

    def test_embedding_scale_rounded_as_hf(self):
        # Gemma 2: torch.tensor(hidden**0.5, dtype=the activations');
        # Gemma 3: a float32 buffer, cast. Seen in float64 at hidden 3072.
        for name, want in (("gemma2", 3072 ** 0.5), ("gemma3", float(np.float32(3072 ** 0.5)))):
            fwd = gt.Gemma(load(name), torch.float64)
            fwd.cfg = dict(fwd.cfg, hidden_size=3072)
            self.assertEqual(float(fwd._normalizer()), want, name)
        _, cap = run(load("gemma2"))
        rows = torch.from_numpy(load("gemma2")["weights"]["embed_tokens.weight"][TOKENS])
        self.assertTrue(torch.equal(cap[(None, "embeddings")], rows * 8.0))

    def test_local_and_global_rope(self):
        # Layers 0-4 slide and rotate with rope_local_base_freq 10000;
        # layer 5 with rope_theta 1e6 scaled linearly by 8.
        _, cap = run(load("gemma3"))
        D = 16
        pos = np.arange(len(TOKENS), dtype=np.float64)
        for layer, base, factor in ((0, 1e4, 1.0), (4, 1e4, 1.0), (5, 1e6, 8.0)):
            inv = 1.0 / (base ** (np.arange(0, D, 2) / D)) / factor
            ang = np.outer(pos, inv)
            cos, sin = np.cos(np.concatenate([ang, ang], 1)), np.sin(np.concatenate([ang, ang], 1))
            q = cap[(layer, "q_norm")].double().numpy()
            rot = np.concatenate([-q[..., D // 2:], q[..., :D // 2]], -1)
            want = q * cos + rot * sin
            got = cap[(layer, "q_rope")].double().numpy()
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4, err_msg=f"layer {layer}")

    def test_windows(self):
        self.assertEqual(load("gemma2")["config"]["windows"], [24, 0])
        self.assertEqual(load("gemma3")["config"]["windows"], [24, 24, 24, 24, 24, 0])
        two = with_config(load("gemma3"), sliding_window_pattern=2)
        self.assertEqual(two["config"]["windows"], [24, 0, 24, 0, 24, 0])
        _, cap = run(load("gemma2"))
        p = cap[(0, "probs")]  # [H, T, T]: a query sees itself and the 23 keys before it
        t = len(TOKENS) - 1
        self.assertEqual(int((p[:, t] > 0).sum(-1).max()), 24)
        self.assertTrue(torch.all(p[:, t, :t - 23] == 0))
        self.assertEqual(int((cap[(1, "probs")][:, t] > 0).sum(-1).min()), t + 1)


if __name__ == "__main__":
    unittest.main()
