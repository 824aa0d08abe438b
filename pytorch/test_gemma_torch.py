"""Tests of gemma_torch.py (Gemma 1, Gemma 2 and Gemma 3 text), each against the
formula HF's modeling file computes, written out independently here.
What both sides accept and refuse is cmd/llorch-check's
TestConfigsAgreeWithTheReference; that Go matches this forward is the
committed reference sets' (checkpoints.TestFamiliesPassAllTwelve).
Run: /usr/bin/python3 -m unittest discover -s pytorch -p 'test_*.py'
"""

import copy
import math
import os
import shutil
import sys
import tempfile
import unittest

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import emulate  # noqa: E402
import gemma_torch as gt  # noqa: E402
import gguf_write  # noqa: E402
from safetensors_io import BadInput  # noqa: E402
from test_llama_torch import _peer_missing, llamacpp  # noqa: E402

ROOT = os.path.dirname(HERE)
MODELS = {"gemma": "tiny-llama-gemma", "gemma2": "tiny-llama-gemma2", "gemma3": "tiny-llama-gemma3"}
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
        self.assertTrue(torch.allclose(capped, torch.tanh(plain / 10.0) * 10.0, rtol=1e-6, atol=1e-6))
        self.assertLessEqual(float(capped.abs().max()), 10.0)
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


class GGUFLayoutTest(unittest.TestCase):
    def test_norms_stored_plus_one(self):
        m = load("gemma3")
        _, t = gt.gguf_layout(m["config"], m["weights"])
        t = dict(t)
        w = m["weights"]
        for gguf_name, hf in (("output_norm.weight", "norm.weight"), ("blk.2.attn_k_norm.weight", "layers.2.self_attn.k_norm.weight"),
                              ("blk.5.post_ffw_norm.weight", "layers.5.post_feedforward_layernorm.weight"),
                              ("blk.0.ffn_norm.weight", "layers.0.pre_feedforward_layernorm.weight")):
            self.assertTrue(np.array_equal(t[gguf_name], w[hf] + np.float32(1)), gguf_name)
        self.assertTrue(np.array_equal(t["blk.1.attn_q.weight"], w["layers.1.self_attn.q_proj.weight"]))

    def test_refuses_what_llamacpp_cannot_say(self):
        for name, changes, why in (("gemma2", {"query_pre_attn_scalar": 24}, "query_pre_attn_scalar 24"),
                                   ("gemma3", {"sliding_window_pattern": 2}, "llama.cpp slides every layer but each 6th"),
                                   ("gemma2", {"layer_types": ["full_attention", "sliding_attention"]}, "but each 2th"),
                                   ("gemma3", {"rope_local_base_freq": 20000.0}, "rope_local_base_freq 20000"),
                                   ("gemma2", {"final_logit_softcapping": None}, "without a soft-cap")):
            m = with_config(load(name), **changes)
            with self.assertRaisesRegex(BadInput, why):
                gt.gguf_layout(m["config"], m["weights"])


class Gemma1Test(unittest.TestCase):
    """Gemma 1: GemmaConfig's defaults, Llama's two norms a block in the
    (1+w) form, scores scaled by head_dim^-1/2, no soft-cap or window; the
    configs it refuses name the field model/gemma_test.go's
    TestGemma1Config names."""

    def test_defaults_and_what_gemma1_does_not_read(self):
        raw = dict(load("gemma")["config_raw"])
        for k in ("num_key_value_heads", "head_dim", "rms_norm_eps", "rope_theta", "max_position_embeddings",
                  "tie_word_embeddings", "hidden_act", "hidden_activation", "bos_token_id", "eos_token_id"):
            del raw[k]
        raw.update(num_attention_heads=16, query_pre_attn_scalar=24, attn_logit_softcapping=50.0,
                   final_logit_softcapping=30.0, sliding_window=4,
                   layer_types=["sliding_attention", "sliding_attention"])
        _, cfg = gt.load_config_dict(raw, "config.json")
        self.assertEqual((cfg["num_key_value_heads"], cfg["head_dim"], cfg["rms_norm_eps"], cfg["rope_theta"],
                          cfg["max_position_embeddings"], cfg["tie_word_embeddings"], cfg["bos_token_id"],
                          cfg["eos_token_ids"]), (16, 256, 1e-6, 10000.0, 8192, True, 2, [1]))
        self.assertEqual(cfg["query_pre_attn_scalar"], 256)
        self.assertIsNone(cfg["windows"])
        self.assertEqual((cfg["attn_softcap"], cfg["final_softcap"], cfg["local_rope_theta"]), (None, None, None))

    def test_refused_naming_the_field(self):
        base = load("gemma")["config_raw"]
        gt.load_config_dict(dict(base, hidden_activation=None), "config.json")  # HF's null: gelu_pytorch_tanh
        for changes, field in (({"hidden_act": "gelu"}, "hidden_act"), ({"hidden_activation": "gelu"}, "hidden_activation"),
                               ({"use_adarms": True}, "use_adarms"),
                               ({"rope_parameters": {"rope_theta": 10000.0}}, "rope_parameters"),
                               ({"rope_scaling": {"rope_type": "yarn", "factor": 2.0}}, "rope_scaling"),
                               ({"attention_bias": True}, "attention_bias")):
            with self.assertRaisesRegex(BadInput, f"'{field}'"):
                gt.load_config_dict(dict(base, **changes), "config.json")

    def test_block(self):
        m = load("gemma")
        fwd = gt.Gemma(m, torch.float32)
        self.assertFalse(fwd.sandwich)
        logits, cap = run(m)
        self.assertNotIn((0, "post_attn_norm"), cap)
        self.assertNotIn((0, "post_ffn_norm"), cap)
        P = m["weights"]
        # ffn_norm is post_attention_layernorm's (1+w) norm of x + attn_out.
        h = cap[(None, "embeddings")] + cap[(0, "attn_out")]
        w = torch.from_numpy(P["layers.0.post_attention_layernorm.weight"])
        want = h / torch.sqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6) * (1 + w)
        self.assertTrue(torch.allclose(cap[(0, "ffn_norm")], want, rtol=1e-5, atol=1e-5))
        # block_out is x + down, with no norm after down.
        self.assertTrue(torch.allclose(cap[(0, "block_out")], h + cap[(0, "down")], rtol=1e-6, atol=1e-6))
        # Scores are q·k / sqrt(head_dim), the mask aside; query_pre_attn_scalar is not read.
        q, k = cap[(0, "q_rope")], cap[(0, "k_rope")]
        D = m["config"]["head_dim"]
        kr = k.repeat_interleave(q.shape[0] // k.shape[0], dim=0)
        want = torch.matmul(q, kr.transpose(1, 2)) * D ** -0.5
        sc = cap[(0, "scores")]
        seen = sc > torch.finfo(torch.float32).min / 2
        self.assertTrue(torch.allclose(sc[seen], want[seen], rtol=1e-5, atol=1e-5))
        same, _ = run(with_config(m, query_pre_attn_scalar=24))
        self.assertTrue(torch.equal(logits, same))

    def test_gguf_layout(self):
        m = load("gemma")
        kv, t = gt.gguf_layout(m["config"], m["weights"])
        kv, t, w = dict(kv), dict(t), m["weights"]
        self.assertEqual(kv["general.architecture"], "gemma")
        self.assertNotIn("gemma.attention.sliding_window", kv)
        self.assertFalse([k for k in kv if "softcapping" in k])
        self.assertFalse([n for n in t if "post_" in n])
        for gguf_name, hf in (("blk.1.attn_norm.weight", "layers.1.input_layernorm.weight"),
                              ("blk.0.ffn_norm.weight", "layers.0.post_attention_layernorm.weight"),
                              ("output_norm.weight", "norm.weight")):
            self.assertTrue(np.array_equal(t[gguf_name], w[hf] + np.float32(1)), gguf_name)


# Past the tiny models' window of 24, so that llama.cpp's sliding window is
# exercised too.
PEER_TOKENS = [1] + [int(t) for t in np.random.default_rng(7).integers(3, 32000, 45)]


@unittest.skipIf(_peer_missing(), _peer_missing())
class LlamaCppTest(unittest.TestCase):
    """llama.cpp (node-llama-cpp) on gguf_write's F32 file of each tiny
    Gemma model, F32 KV cache, flash attention off: its greedy tokens must
    be PyTorch's while PyTorch's top-2 margin exceeds twice the largest
    logit difference seen (a near tie ends the comparison). Its logits are
    not held to checkpoint 9's tolerance: llama.cpp computes the GELU
    through a float16 table (emulate.py's llamacpp-cpu), and what remains
    beyond that is reported, not asserted."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp()

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def _run(self, name, model):
        path = os.path.join(self.tmp, name + ".gguf")
        gguf_write.convert(model, path, gguf_write.GGML_F32)
        return llamacpp(path, PEER_TOKENS, 16)

    def _check(self, name):
        m = load(name)
        got = self._run(name, m)
        self.assertEqual(got["kv_cache"], [0, 0])
        with torch.no_grad():
            M = gt.Gemma(m, torch.float32)
            want, _ = M.forward(PEER_TOKENS)
            greedy = M.greedy(PEER_TOKENS, 16)
            seq, _ = M.forward(PEER_TOKENS + greedy[:-1])
            emu, _ = gt.Gemma(m, torch.float32, emulate.profile("llamacpp-cpu")).forward(PEER_TOKENS)
        L = np.array(got["logits"], dtype=np.float64)
        d = float(np.abs(L - want.double().numpy()).max())
        d_emu = float(np.abs(L - emu.double().numpy()).max())
        top2 = torch.topk(seq[len(PEER_TOKENS) - 1:], 2).values
        margins = (top2[:, 0] - top2[:, 1]).tolist()
        equal = 0
        for step, (a, b) in enumerate(zip(got["greedy"], greedy)):
            if margins[step] <= 2 * d:
                break
            self.assertEqual(a, b, f"{name}: greedy token {step} (PyTorch's margin {margins[step]:.2e})")
            equal += 1
        self.assertGreater(equal, 0, f"{name}: no greedy step decided")
        print(f"\n  {name}: llama.cpp vs PyTorch float32 over {len(PEER_TOKENS)} tokens: max |Δlogit| {d:.2e} "
              f"({d_emu:.2e} with ggml's float16 GELU table emulated), greedy {equal}/16 decided and equal",
              file=sys.stderr)
        return d

    def test_gemma(self):
        self._check("gemma")

    def test_gemma2(self):
        self._check("gemma2")

    def test_gemma3(self):
        self._check("gemma3")

    def test_norms_added_twice_are_caught(self):
        """A file whose norms hold w + 2 (the 1 added twice) must move
        llama.cpp's logits by far more than the engines' differences."""
        m = copy.deepcopy(load("gemma2"))
        for n in list(m["weights"]):
            if n.endswith("norm.weight"):
                m["weights"][n] = m["weights"][n] + np.float32(1)
        got = self._run("double", m)
        with torch.no_grad():
            want, _ = gt.Gemma(load("gemma2"), torch.float32).forward(PEER_TOKENS)
        self.assertGreater(float(np.abs(np.array(got["logits"]) - want.double().numpy()).max()), 0.1)


if __name__ == "__main__":
    unittest.main()
