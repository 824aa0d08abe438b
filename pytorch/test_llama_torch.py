"""Tests of llama_torch.py (the Llama-family PyTorch reference), of the tiny
Llama-family models and of gguf_write.py; and the independent check:
llama.cpp (node-llama-cpp, e2e/llamacpp/llama_family.mjs) on the GGUF
files gguf_write.py makes must give llama_torch's float32 greedy tokens
and logits, and a file with llama's q/k left unpermuted must not.
Run: /usr/bin/python3 -m unittest discover -s pytorch -p 'test_*.py'
"""

import copy
import hashlib
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gguf_io  # noqa: E402
import gguf_write  # noqa: E402
import llama_torch as lt
import passes  # noqa: E402
import moe_torch  # noqa: E402
import make_tiny_llama  # noqa: E402
from safetensors_io import BadInput  # noqa: E402

ROOT = os.path.dirname(HERE)
MODELS = {"llama": "tiny-llama", "llama3": "tiny-llama3", "qwen2": "tiny-llama-qwen2",
          "qwen3": "tiny-llama-qwen3", "mistral": "tiny-llama-mistral", "phi3": "tiny-llama-phi3",
          "qwen3_moe": "tiny-llama-qwen3moe", "mixtral": "tiny-llama-mixtral"}
# BOS and 20 ids drawn once (np.random.default_rng(7).integers(3, 32000, 20)).
TOKENS = [1] + [int(t) for t in np.random.default_rng(7).integers(3, 32000, 20)]
N_GREEDY = 16
# SPEC section 2's default tolerances: checkpoints 1-7 and 8-9.
TOL = {ck: (1e-4, 1e-4) for ck in range(1, 8)}
TOL.update({8: (1e-3, 1e-4), 9: (1e-3, 1e-4)})

_cache = {}


def load(arch):
    if arch not in _cache:
        _cache[arch] = lt.load_model(os.path.join(ROOT, "testdata", MODELS[arch]))
    return _cache[arch]


def run(model, dtype, tokens=TOKENS):
    cap = {}
    with torch.no_grad():
        logits, _ = lt.Llama(model, dtype).forward(
            tokens, probe=lambda ck, l, n, t, rows=None: cap.__setitem__((l, n), (ck, t.clone())))
    return logits, cap


def with_config(model, **changes):
    m = copy.deepcopy(model)
    raw = dict(m["config_raw"], **changes)
    m["config_raw"], m["config"] = lt.load_config_dict(raw, "test")
    return m


class TestForward(unittest.TestCase):
    def test_float64_agrees_with_float32(self):
        """Every probed tensor of the float32 forward is within the SPEC's
        tolerance of the float64 twin (masked scores excluded)."""
        for arch in MODELS:
            m = load(arch)
            _, c32 = run(m, torch.float32)
            _, c64 = run(m, torch.float64)
            self.assertEqual(c32.keys(), c64.keys())
            for key, (ck, a) in c32.items():
                b = c64[key][1]
                a, b = a.double(), b
                if key[1] == "scores":
                    vis = torch.ones(b.shape[-2:], dtype=torch.bool).tril()
                    a, b = a[..., vis], b[..., vis]
                atol, rtol = TOL[ck]
                err = float(((a - b).abs() - rtol * b.abs()).max())
                self.assertLessEqual(err, atol, f"{arch} {key}: float32 vs float64")

    def test_gqa_ratio_one_is_mha(self):
        """The GQA model equals the MHA model (num_key_value_heads = heads,
        ratio 1) whose KV heads are repeat_kv's copies: KV head j serves
        query heads j*g .. j*g+g-1. In float64, so that only the BLAS's
        blocking of a taller k/v matrix can differ (~1e-15); copies in the
        other order (tiled: j serving j, j+Hkv) differ at O(1)."""
        for arch in ("llama", "qwen2", "qwen3", "phi3"):
            m = load(arch)
            cfg = m["config"]
            H, Hkv, D = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]
            g = H // Hkv
            self.assertEqual(g, 2)

            def mha_copy(order):
                mha = with_config(m, num_key_value_heads=H)
                w = mha["weights"]

                def rep(x):
                    x = x.reshape(Hkv, D, *x.shape[1:])
                    x = np.repeat(x, g, axis=0) if order == "repeat" else np.concatenate([x] * g)
                    return x.reshape(H * D, *x.shape[2:])

                for i in range(cfg["num_hidden_layers"]):
                    p = f"layers.{i}.self_attn."
                    if arch == "phi3":
                        qkv = w[p + "qkv_proj.weight"]
                        q, k, v = qkv[:H * D], qkv[H * D:(H + Hkv) * D], qkv[(H + Hkv) * D:]
                        w[p + "qkv_proj.weight"] = np.concatenate([q, rep(k), rep(v)])
                        continue
                    for n in ("k_proj", "v_proj"):
                        w[p + n + ".weight"] = rep(w[p + n + ".weight"])
                        if p + n + ".bias" in w:
                            w[p + n + ".bias"] = rep(w[p + n + ".bias"])
                return mha

            a, ca = run(m, torch.float64)
            b, cb = run(mha_copy("repeat"), torch.float64)
            self.assertLess(float((a - b).abs().max()), 1e-10, f"{arch}: GQA and its MHA copy differ")
            self.assertLess(float((ca[(1, "probs")][1] - cb[(1, "probs")][1]).abs().max()), 1e-12, arch)
            self.assertEqual(list(ca[(0, "k_rope")][1].shape), [Hkv, len(TOKENS), D])
            self.assertEqual(list(cb[(0, "k_rope")][1].shape), [H, len(TOKENS), D])
            c, _ = run(mha_copy("tile"), torch.float64)
            self.assertGreater(float((a - c).abs().max()), 1e-2, f"{arch}: the KV head order does not matter?")

    def test_qwen3_head_dim_independent_of_hidden(self):
        m = load("qwen3")
        cfg = m["config"]
        self.assertEqual((cfg["hidden_size"], cfg["num_attention_heads"], cfg["head_dim"]), (64, 4, 32))
        _, cap = run(m, torch.float32)
        T = len(TOKENS)
        want = {"attn_norm": [T, 64], "q": [4, T, 32], "k": [2, T, 32], "v": [2, T, 32], "q_norm": [4, T, 32],
                "k_norm": [2, T, 32], "q_rope": [4, T, 32], "k_rope": [2, T, 32], "k_cache": [2, T, 32],
                "scores": [4, T, T], "probs": [4, T, T], "attn_out": [T, 64], "gate": [T, 128], "up": [T, 128],
                "act": [T, 128], "down": [T, 64], "block_out": [T, 64]}
        for name, shape in want.items():
            self.assertEqual(list(cap[(1, name)][1].shape), shape, name)
        self.assertEqual(list(cap[(None, "logits")][1].shape), [T, 32000])
        # Without head_dim, Qwen3Config's default (128) applies and the weights do not fit.
        raw = {k: v for k, v in m["config_raw"].items() if k != "head_dim"}
        self.assertEqual(lt.load_config_dict(raw, "t")[1]["head_dim"], 128)
        self.assertNotIn((0, "q_norm"), run(load("llama"), torch.float32)[1])

    def test_tied_and_untied_heads(self):
        for arch, tied in (("llama", False), ("llama3", True), ("qwen2", True), ("qwen3", False), ("phi3", False)):
            m = load(arch)
            self.assertEqual(m["config"]["tie_word_embeddings"], tied, arch)
            self.assertEqual("lm_head.weight" in m["weights"], not tied, arch)
            logits, cap = run(m, torch.float32)
            h = cap[(None, "norm")][1]
            emb = torch.from_numpy(m["weights"]["embed_tokens.weight"])
            via_emb = torch.nn.functional.linear(h, emb)
            if tied:
                self.assertTrue(torch.equal(logits, via_emb), arch)
            else:
                head = torch.from_numpy(m["weights"]["lm_head.weight"])
                self.assertTrue(torch.equal(logits, torch.nn.functional.linear(h, head)), arch)
                self.assertGreater(float((logits - via_emb).abs().max()), 1.0, arch)

    def test_checks_have_teeth(self):
        """rms_norm_eps, the RoPE layout and llama3 scaling each move the
        tensors far beyond the 1e-4 tolerance."""
        m = load("llama")
        _, base = run(m, torch.float32)
        _, eps = run(with_config(m, rms_norm_eps=1e-6), torch.float32)
        d = float((base[(0, "attn_norm")][1] - eps[(0, "attn_norm")][1]).abs().max())
        self.assertGreater(d, 1e-3, "rms_norm_eps 1e-5 vs 1e-6 on attn_norm")
        _, l3 = run(with_config(m, rope_scaling=load("llama3")["config_raw"]["rope_scaling"]), torch.float32)
        d = float((base[(0, "scores")][1] - l3[(0, "scores")][1]).tril().abs().max())
        self.assertGreater(d, 1e-2, "llama3 rope scaling on scores")
        # Interleaved pairs instead of rotate_half's halves: permuting q and k
        # rows as llama.cpp's converter does but rotating as HF does.
        w = copy.deepcopy(m)
        cfg = m["config"]
        for i in range(cfg["num_hidden_layers"]):
            p = f"layers.{i}.self_attn."
            w["weights"][p + "q_proj.weight"] = lt.permute(w["weights"][p + "q_proj.weight"], cfg["num_attention_heads"])
            w["weights"][p + "k_proj.weight"] = lt.permute(w["weights"][p + "k_proj.weight"], cfg["num_key_value_heads"])
        logits, perm = run(w, torch.float32)
        d = float((base[(0, "scores")][1] - perm[(0, "scores")][1]).tril().abs().max())
        self.assertGreater(d, 1e-2, "RoPE pair layout on scores")

    def test_partial_rotary(self):
        """partial_rotary_factor 0.5: RoPE turns the first half of each head
        (with inv_freq over that dimension) and passes the rest through."""
        m = with_config(load("phi3"), partial_rotary_factor=0.5)
        self.assertEqual(m["config"]["rotary_dim"], 8)
        _, cap = run(m, torch.float32)
        q, qr = cap[(0, "q")][1], cap[(0, "q_rope")][1]
        self.assertTrue(torch.equal(q[..., 8:], qr[..., 8:]))
        self.assertTrue(torch.equal(q[:, 0], qr[:, 0]))  # position 0: no rotation
        self.assertGreater(float((q[..., :8] - qr[..., :8]).abs().max()), 0.1)

    def test_kv_cache_matches_full_forward(self):
        for arch in MODELS:
            m = load(arch)
            M = lt.Llama(m, torch.float32)
            with torch.no_grad():
                full, _ = M.forward(TOKENS)
                _, past = M.forward(TOKENS[:-1])
                step, _ = M.forward(TOKENS[-1:], past=past)
            self.assertLess(float((full[-1] - step[-1]).abs().max()), 1e-4, arch)

    def test_moe_routing(self):
        """The sparse FFN as HF's blocks compute it: the chosen experts are
        the top k of the softmax over every expert, in descending order;
        their weights renormalised only for Mixtral (the tiny Qwen3-MoE has
        norm_topk_prob false); down is the weighted sum of the experts'
        outputs; Qwen3-MoE's mlp_only_layers stay dense. The scales give
        the renormalisation teeth: with it flipped, down moves by > 1e-2."""
        for arch, norm in (("qwen3_moe", False), ("mixtral", True)):
            m = load(arch)
            _, cap = run(m, torch.float64)
            sparse = m["config"]["moe"]["sparse"]
            self.assertEqual(sparse, [True, False] if arch == "qwen3_moe" else [True, True])
            for i, sp in enumerate(sparse):
                if not sp:
                    self.assertIn((i, "gate"), cap)
                    self.assertNotIn((i, "router_logits"), cap)
                    continue
                p = torch.softmax(cap[(i, "router_logits")][1], -1)
                ids, w = cap[(i, "experts")][1].long(), cap[(i, "expert_weights")][1]
                top = p.gather(1, ids)
                self.assertTrue(bool((top[:, :-1] >= top[:, 1:]).all()), arch)
                rest = p.scatter(1, ids, -1.0).max(-1).values
                self.assertTrue(bool((rest <= top[:, -1]).all()), arch)
                renorm = top / top.sum(-1, keepdim=True)
                torch.testing.assert_close(w, renorm if norm else top)
                ed = cap[(i, "expert_down")][1]
                down = cap[(i, "down")][1]
                torch.testing.assert_close(down, (w[..., None] * ed).sum(1))
                flipped = ((top if norm else renorm)[..., None] * ed).sum(1)
                self.assertGreater(float((flipped - down).abs().max()), 1e-2, arch)

    def test_rejects_what_is_not_implemented(self):
        m = load("llama")
        raw = m["config_raw"]
        for change, field in ((dict(rope_scaling={"rope_type": "yarn", "factor": 4.0}), "rope_scaling"),
                              (dict(rope_scaling={"type": "linear", "factor": 2.0}), "rope_scaling"),
                              (dict(hidden_act="gelu"), "hidden_act"),
                              (dict(model_type="mamba"), "model_type"),
                              (dict(num_key_value_heads=3), "num_key_value_heads")):
            with self.assertRaises(BadInput) as e:
                lt.load_config_dict(dict(raw, **change), "cfg")
            self.assertIn(field, str(e.exception))
        for arch, change, field in (("qwen3", dict(use_sliding_window=True, layer_types=["chunked_attention"] * 2), "layer_types"),
                                    ("qwen3", dict(use_sliding_window=True, layer_types=["full_attention"]), "layer_types"),
                                    ("mistral", dict(sliding_window=-1), "sliding_window"),
                                    ("qwen3_moe", dict(use_sliding_window=True), "use_sliding_window"),
                                    ("qwen3_moe", dict(num_experts_per_tok=5), "num_experts_per_tok"),
                                    ("qwen3_moe", dict(mlp_only_layers="1"), "mlp_only_layers"),
                                    ("mixtral", dict(num_local_experts=0), "num_local_experts")):
            with self.assertRaises(BadInput) as e:
                lt.load_config_dict(dict(load(arch)["config_raw"], **change), "cfg")
            self.assertIn(field, str(e.exception))

    def test_longrope_generation(self):
        """Greedy generation across longrope's switch runs as Hugging
        Face's generate runs Phi-3: the step whose sequence first passes
        the pretrained 32 positions drops the cache and runs all 33
        positions again (the only such step), so each step's logits are
        one forward's over the whole sequence, the tokens their argmax."""
        from processors import argmax_lowest, greedy_task
        m = lt.load_model(os.path.join(ROOT, "testdata", "tiny-llama-phi3-longrope"))
        M = lt.Llama(m, torch.float32)
        prompt = [100 + 37 * i for i in range(28)]
        jobs = []

        class Recording:
            cfg = m["config"]

            def run(self, js):
                jobs.extend(js)
                return M.run(js)
        with torch.no_grad():
            got, why = passes.run_tasks(Recording(), [greedy_task(m["config"], prompt, 8, [])])[0]
            self.assertEqual(why, "max_tokens")
            self.assertEqual([len(j["tokens"]) for j in jobs], [28, 1, 1, 1, 1, 33, 1, 1])
            self.assertEqual([j.get("past") is None for j in jobs], [True] * 1 + [False] * 4 + [True] + [False] * 2)
            for k in range(8):
                whole, _ = M.forward(prompt + got[:k])
                self.assertEqual(got[k], argmax_lowest(whole[-1]), f"token {k}")

    def test_longrope(self):
        """Phi-3's longrope as HF's _compute_longrope_parameters: the
        pretrained context, the default attention factor, the factors chosen
        a call at a time by its last position (so a forward past the switch
        on a cache of earlier calls keeps their short-rotated keys, which is
        why greedy generation restarts there: test_longrope_generation);
        written to GGUF as
        llama.cpp's converter writes it (rope_factors_long/short, the
        pretrained context, attn_factor). The committed tiny model
        reproduces."""
        path = os.path.join(ROOT, "testdata", "tiny-llama-phi3-longrope")
        m = lt.load_model(path)
        lr = m["config"]["longrope"]
        self.assertEqual(lr["original"], 32)
        self.assertAlmostEqual(lr["attention_factor"], math.sqrt(1 + math.log(4) / math.log(32)), places=15)
        M = lt.Llama(m, torch.float32)
        cos, _ = M._rope_tables(torch.arange(0, 32))
        self.assertEqual(float(cos[0, 0, 0]), float(torch.tensor(1.0) * lr["attention_factor"]))
        cos_long, _ = M._rope_tables(torch.arange(0, 33))
        self.assertFalse(torch.equal(cos[0, 20], cos_long[0, 20]), "33 positions: the long factors")
        toks = [100 + 37 * i for i in range(40)]
        with torch.no_grad():
            whole, _ = M.forward(toks)
            _, past = M.forward(toks[:30])
            for t in toks[30:]:
                step, past = M.forward([t], past=past)
        self.assertGreater(float((whole[-1] - step[-1]).abs().max()), 1e-3)
        with self.assertRaises(BadInput) as e:
            lt.load_config_dict(dict(m["config_raw"], rope_scaling=dict(m["config_raw"]["rope_scaling"], short_factor=[1.0] * 7)), "cfg")
        self.assertIn("short_factor", str(e.exception))
        with tempfile.TemporaryDirectory() as tmp:
            gguf_write.convert(m, os.path.join(tmp, "x.gguf"), gguf_write.GGML_F32)
            kv, tensors, _ = gguf_io.read_gguf(os.path.join(tmp, "x.gguf"))
        self.assertEqual(kv["phi3.rope.scaling.original_context_length"], 32)
        self.assertEqual(np.float32(kv["phi3.rope.scaling.attn_factor"]), np.float32(lr["attention_factor"]))
        names = list(tensors)
        self.assertEqual(names[names.index("output.weight") + 1:][:2], ["rope_factors_long.weight", "rope_factors_short.weight"])
        for n in ("long", "short"):
            t, dims, data = tensors[f"rope_factors_{n}.weight"]
            self.assertEqual(gguf_io.type_name(t), "F32")
            np.testing.assert_array_equal(gguf_io.dequantize(t, data, int(np.prod(dims))), np.asarray(lr[n], np.float32))
        with tempfile.TemporaryDirectory() as tmp:
            make_tiny_llama.write_model("phi3-longrope", tmp, 1234)
            for f in ("model.safetensors", "config.json"):
                with open(os.path.join(tmp, f), "rb") as a, open(os.path.join(path, f), "rb") as b:
                    self.assertEqual(a.read(), b.read(), f)

    def test_cases_reach_the_window(self):
        """A set whose cases never pass the sliding window gets one that
        does (past-window: the longest case cycled to 8 past it, BOS first);
        --case keeps only what was asked for."""
        import dump_references as dr
        with tempfile.TemporaryDirectory() as tmp:
            model = os.path.join(tmp, "m")
            shutil.copytree(os.path.join(ROOT, "testdata", "tiny-llama-mistral"), model, symlinks=True)
            with open(os.path.join(model, "config.json")) as f:
                cfg = json.load(f)
            cfg["sliding_window"] = 80
            with open(os.path.join(model, "config.json"), "w") as f:
                json.dump(cfg, f)
            cases = os.path.join(ROOT, "testdata", "cases-llama.json")
            out = os.path.join(tmp, "refs")
            self.assertEqual(dr.main(["--model", model, "--cases", cases, "--out", out, "--n-generate", "2"]), 0)
            with open(os.path.join(out, "manifest.json")) as f:
                m = json.load(f)
            ids = [c["id"] for c in m["cases"]]
            self.assertEqual(ids, ["hello", "story", "past-window"])
            story, past = m["cases"][1]["tokens"], m["cases"][2]["tokens"]
            self.assertEqual(len(past), 88)
            self.assertEqual(past[:len(story)], story)
            self.assertEqual(past[len(story)], story[1])
            one = os.path.join(tmp, "one")
            self.assertEqual(dr.main(["--model", model, "--cases", cases, "--case", "story", "--out", one, "--n-generate", "2"]), 0)
            with open(os.path.join(one, "manifest.json")) as f:
                self.assertEqual([c["id"] for c in json.load(f)["cases"]], ["story"])

    def test_cases_cross_longrope(self):
        """A longrope set none of whose greedy continuations crosses the
        pretrained context gets one that does (across-longrope: the
        longest case cycled to n_generate // 2 short of it), and its
        continuation is what whole-sequence forwards give past the
        crossing, where generation runs the sequence again."""
        import dump_references as dr
        model = os.path.join(ROOT, "testdata", "tiny-llama-phi3-longrope")
        cases = os.path.join(ROOT, "testdata", "cases-llama.json")
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "refs")
            self.assertEqual(dr.main(["--model", model, "--cases", cases, "--out", out]), 0)
            with open(os.path.join(out, "manifest.json")) as f:
                m = json.load(f)
        self.assertEqual([c["id"] for c in m["cases"]], ["hello", "story", "across-longrope"])
        story, across = m["cases"][1]["tokens"], m["cases"][2]["tokens"]
        mod = lt.load_model(model)
        switch = mod["config_raw"]["original_max_position_embeddings"]
        self.assertEqual(len(across), switch - 8)
        self.assertEqual(across, story[:len(across)])
        gen = next(r for r in m["generation"]["results"] if r["case"] == "across-longrope")
        self.assertEqual(gen["stop_reason"], "max_tokens")
        from processors import argmax_lowest
        seq = list(across)
        for t in gen["tokens"]:
            logits, _ = run(mod, torch.float32, tokens=seq)
            self.assertEqual(t, argmax_lowest(logits[-1]), f"the token after {len(seq)}")
            seq.append(t)

    def test_sliding_window_config(self):
        """Each layer's window as the HF config classes derive it (the same
        table as model/window_test.go's TestSlidingWindowConfig)."""
        for arch, change, want in (
                ("llama", dict(sliding_window=8), None),
                ("mistral", dict(), [24, 24]),
                ("mistral", dict(sliding_window=None), None),
                ("phi3", dict(sliding_window=7), [7, 7]),
                ("qwen2", dict(sliding_window=4), None),
                ("qwen2", dict(use_sliding_window=True, sliding_window=4, max_window_layers=1), [0, 4]),
                ("qwen2", dict(use_sliding_window=True, sliding_window=4, max_window_layers=None), [0, 0]),
                ("qwen3", dict(use_sliding_window=True, sliding_window=6,
                               layer_types=["sliding_attention", "full_attention"]), [6, 0])):
            raw = dict(load(arch)["config_raw"], **change)
            self.assertEqual(lt.load_config_dict(raw, "cfg")[1]["windows"], want, f"{arch} {change}")
        raw = {k: v for k, v in load("mistral")["config_raw"].items() if k != "sliding_window"}
        self.assertEqual(lt.load_config_dict(raw, "cfg")[1]["windows"], [4096, 4096], "MistralConfig's default")

    def test_sliding_window_mask(self):
        """A query sees itself and the window-1 keys before it; a window as
        long as the sequence is no window, bit for bit; the cache's decode
        step sees what the full forward's row saw."""
        T = len(TOKENS)
        base = load("mistral")
        full_logits, full = run(with_config(base, sliding_window=None), torch.float32)
        long_logits, long = run(with_config(base, sliding_window=T), torch.float32)
        self.assertTrue(torch.equal(full_logits, long_logits))
        for w in (1, 5):
            m = with_config(base, sliding_window=w)
            logits, cap = run(m, torch.float32)
            for layer in range(2):
                pr = cap[(layer, "probs")][1]
                for q in range(T):
                    for k in range(T):
                        if not (k <= q and q - k < w):
                            self.assertEqual(float(pr[:, q, k].abs().max()), 0.0, (w, layer, q, k))
            self.assertFalse(torch.equal(logits, full_logits), w)
            M = lt.Llama(m, torch.float32)
            with torch.no_grad():
                _, past = M.forward(TOKENS[:-1])
                step, _ = M.forward(TOKENS[-1:], past=past)
            self.assertLess(float((logits[-1] - step[-1]).abs().max()), 1e-4, w)


class TestFiles(unittest.TestCase):
    def test_tiny_models_reproduce(self):
        with tempfile.TemporaryDirectory() as tmp:
            for arch, d in MODELS.items():
                out = os.path.join(tmp, arch)
                make_tiny_llama.write_model(arch, out, 1234)
                for f in ("model.safetensors", "config.json"):
                    with open(os.path.join(out, f), "rb") as a, open(os.path.join(ROOT, "testdata", d, f), "rb") as b:
                        self.assertEqual(hashlib.sha256(a.read()).digest(), hashlib.sha256(b.read()).digest(), f"{d}/{f}")
                self.assertLess(os.path.getsize(os.path.join(out, "model.safetensors")), 10 << 20)

    def test_gguf_layout(self):
        with tempfile.TemporaryDirectory() as tmp:
            for arch in MODELS:
                m = load(arch)
                cfg = m["config"]
                path = os.path.join(tmp, arch + ".gguf")
                if arch == "qwen3_moe":
                    # Its dense layer and norm_topk_prob false, which llama.cpp's
                    # qwen3moe cannot say: refused, naming the field.
                    with self.assertRaisesRegex(BadInput, "mlp_only_layers"):
                        gguf_write.convert(m, path, gguf_write.GGML_F16)
                    self.assertFalse(os.path.exists(path))
                    one = with_config(m, mlp_only_layers=[])
                    with self.assertRaisesRegex(BadInput, "norm_topk_prob"):
                        moe_torch.gguf_arch(dict(one["config"], moe=dict(one["config"]["moe"], sparse=[True, True])))
                    continue
                gguf_write.convert(m, path, gguf_write.GGML_F16)
                kv, tensors, _ = gguf_io.read_gguf(path)
                a = "llama" if cfg["model_type"] in ("mistral", "mixtral") else cfg["model_type"]  # llama.cpp's converter's
                self.assertEqual(kv["general.architecture"], a)
                self.assertEqual(kv.get(f"{a}.attention.sliding_window"), (cfg["windows"] or [None])[0])
                self.assertEqual(kv[f"{a}.attention.head_count_kv"], 2)
                self.assertEqual(kv[f"{a}.rope.dimension_count"], cfg["head_dim"])
                self.assertEqual(len(kv["tokenizer.ggml.tokens"]), cfg["vocab_size"])
                self.assertEqual(tensors["token_embd.weight"][1], [64, cfg["vocab_size"]])
                self.assertEqual("output.weight" in tensors, not cfg["tie_word_embeddings"])
                self.assertEqual(gguf_io.type_name(tensors["blk.0.attn_norm.weight"][0]), "F32")
                if cfg.get("moe"):  # Mixtral: llama's keys and layout, the experts stacked
                    E, I, C = cfg["moe"]["experts"], cfg["moe"]["inner"], cfg["hidden_size"]
                    self.assertEqual((kv["llama.expert_count"], kv["llama.expert_used_count"]), (E, 2))
                    self.assertEqual(tensors["blk.1.ffn_gate_inp.weight"][1], [C, E])
                    for n, dims in (("gate", [C, I, E]), ("up", [C, I, E]), ("down", [I, C, E])):
                        self.assertEqual(tensors[f"blk.1.ffn_{n}_exps.weight"][1], dims)
                        self.assertEqual(gguf_io.type_name(tensors[f"blk.1.ffn_{n}_exps.weight"][0]), "F16")
                    self.assertNotIn("blk.1.ffn_gate.weight", tensors)

                def get(n):
                    t, dims, data = tensors[n]
                    return gguf_io.dequantize(t, data, int(np.prod(dims))).reshape(list(reversed(dims)))

                w = m["weights"]
                a = cfg["model_type"]
                if a == "phi3":
                    np.testing.assert_array_equal(get("blk.1.attn_qkv.weight"), w["layers.1.self_attn.qkv_proj.weight"])
                    np.testing.assert_array_equal(get("blk.1.ffn_up.weight"), w["layers.1.mlp.gate_up_proj.weight"])
                    continue
                q, k = get("blk.1.attn_q.weight"), get("blk.1.attn_k.weight")
                if a in ("llama", "mistral", "mixtral"):  # llama.cpp converts Mixtral as llama
                    # Row h*D + 2i + j of the file is HF row h*D + j*D/2 + i.
                    D = cfg["head_dim"]
                    hf = w["layers.1.self_attn.k_proj.weight"]
                    for h in range(2):
                        for i in range(D // 2):
                            for j in range(2):
                                np.testing.assert_array_equal(k[h * D + 2 * i + j], hf[h * D + j * D // 2 + i])
                    self.assertFalse(np.array_equal(q, w["layers.1.self_attn.q_proj.weight"]))
                else:
                    np.testing.assert_array_equal(q, w["layers.1.self_attn.q_proj.weight"])
                    np.testing.assert_array_equal(k, w["layers.1.self_attn.k_proj.weight"])
                if arch == "llama3":
                    f = get("rope_freqs.weight")
                    self.assertEqual(f[0], 1.0)
                    self.assertEqual(f[-1], 8.0)


def _peer_missing():
    if shutil.which("node") is None:
        return "node is not installed"
    if not os.path.isdir(os.path.join(ROOT, "e2e", "llamacpp", "node_modules", "node-llama-cpp")):
        return "the llama.cpp peer is not installed (make peer-llamacpp)"
    return None


def llamacpp(path, tokens=TOKENS, n=N_GREEDY):
    r = subprocess.run(["node", os.path.join(ROOT, "e2e", "llamacpp", "llama_family.mjs"), path,
                        ",".join(map(str, tokens)), str(n)], capture_output=True, text=True, timeout=300)
    if r.returncode:
        raise AssertionError(f"llama_family.mjs {path}: exit {r.returncode}: {r.stderr[-2000:]}")
    return json.loads(r.stdout)


@unittest.skipIf(_peer_missing(), _peer_missing())
class TestLlamaCpp(unittest.TestCase):
    """llama.cpp's forward with F32 weights, an F32 KV cache and flash
    attention off is float32 arithmetic throughout; what it computes
    otherwise than PyTorch is rounding-level: summation order of its dot
    products (vec_dot_f32 / tinyBLAS), ggml_v_expf's polynomial exp in the
    softmax and SiLU, theta_i by repeated multiplication in its RoPE, and
    RMSNorm's sum of squares in double. So its logits must agree with
    PyTorch float32 as any float32 engine must: within SPEC checkpoint 9's
    tolerance (atol 1e-3, rtol 1e-4), which is not fitted to this data
    (measured: about 2e-5 to 5e-5, of the same size as PyTorch float32's
    own distance from float64); and its greedy tokens must be PyTorch's
    (each greedy step's top-2 margin is checked to be far above that
    tolerance, so a near tie cannot excuse a flip). A wrong RoPE layout
    moves logits by units."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp()

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def _check(self, arch, positions=None):
        """positions: compare greedy tokens only while the sequence is that
        short (llama.cpp runs a Mistral file, its converter's llama,
        without the sliding window: past it the two forwards differ)."""
        m = load(arch)
        path = os.path.join(self.tmp, arch + ".gguf")
        gguf_write.convert(m, path, gguf_write.GGML_F32)
        got = llamacpp(path)
        self.assertEqual(got["kv_cache"], [0, 0], "F32 KV cache (ggml type 0)")
        self.assertFalse(got["flash_attention"])
        M = lt.Llama(m, torch.float32)
        with torch.no_grad():
            want, _ = M.forward(TOKENS + [])
            greedy = M.greedy(TOKENS, N_GREEDY)
            seq, _ = M.forward(TOKENS + greedy[:-1])
        L = np.array(got["logits"], dtype=np.float64)
        w = want.double().numpy()
        atol, rtol = TOL[9]
        excess = np.abs(L - w) - rtol * np.abs(w)
        self.assertLessEqual(float(excess[-1].max()), atol, f"{arch}: last-position logits")
        self.assertLessEqual(float(excess.max()), atol, f"{arch}: logits at every position")
        # Greedy tokens must be PyTorch's up to the first step whose top-2
        # margin is within twice the logit tolerance (there, each engine's
        # logits being within tolerance no longer fixes the argmax).
        top2 = torch.topk(seq[len(TOKENS) - 1:], 2).values
        margins = (top2[:, 0] - top2[:, 1]).tolist()
        for step, (a, b) in enumerate(zip(got["greedy"], greedy)):
            if margins[step] <= 2 * (atol + rtol * float(top2[step, 0].abs())):
                break
            if positions is not None and len(TOKENS) + step > positions:
                break
            self.assertEqual(a, b, f"{arch}: greedy token {step} (PyTorch's margin {margins[step]:.2e})")
        print(f"\n  {arch}: llama.cpp vs PyTorch float32: max |Δlogit| {np.abs(L - w).max():.2e} (last position "
              f"{np.abs(L[-1] - w[-1]).max():.2e}), greedy {sum(a == b for a, b in zip(got['greedy'], greedy))}/{N_GREEDY} "
              f"equal, smallest top-2 margin {min(margins):.1e}", file=sys.stderr)

    def test_llama(self):
        self._check("llama")

    def test_llama3_rope_scaling(self):
        self._check("llama3")

    def test_qwen2(self):
        self._check("qwen2")

    def test_qwen3(self):
        self._check("qwen3")

    def test_mistral(self):
        # TOKENS' 21 positions are inside the window of 24: every logit and
        # the greedy tokens whose sequence fits it must be PyTorch's.
        window = load("mistral")["config"]["windows"][0]
        self.assertLess(len(TOKENS), window)
        self._check("mistral", positions=window)

    def test_phi3(self):
        self._check("phi3")

    def test_unpermuted_llama_is_caught(self):
        """Not permuting q/k when writing (HF halves read as interleaved
        pairs) must fail the check above: logits and greedy tokens."""
        m = load("llama")
        path = os.path.join(self.tmp, "noperm.gguf")
        gguf_write.convert(m, path, gguf_write.GGML_F32, permute_qk=False)
        got = llamacpp(path)
        with torch.no_grad():
            want, _ = lt.Llama(m, torch.float32).forward(TOKENS)
            greedy = lt.Llama(m, torch.float32).greedy(TOKENS, N_GREEDY)
        d = float(np.abs(np.array(got["logits"][-1]) - want[-1].double().numpy()).max())
        self.assertGreater(d, 100 * TOL[9][0], "an unpermuted file's last-position logits")
        self.assertNotEqual(got["greedy"], greedy)


if __name__ == "__main__":
    unittest.main()
