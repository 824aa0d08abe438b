"""A GPT-2 nn.Module with Hugging Face's module tree, for dump_hooks.py
where transformers is not installed.

The module names are those of transformers' GPT2LMHeadModel
(transformer.wte, .wpe, .drop, .h.{i}.ln_1, .attn.c_attn, .attn.c_proj,
.ln_2, .mlp.c_fc, .mlp.act, .mlp.c_proj, .ln_f, lm_head), and each module
returns what HF's returns (a block and an attention return tuples), so
forward hooks written for HF's model attach here unchanged. It is a
stand-in for the engine under test, written from HF's modeling_gpt2.py
structure, not from gpt2_torch.py's op-by-op forward.
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class Conv1D(nn.Module):
    """HF's Conv1D: weight [in, out], y = x·W + b."""

    def __init__(self, n_in, n_out):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(n_in, n_out))
        self.bias = nn.Parameter(torch.empty(n_out))

    def forward(self, x):
        return torch.addmm(self.bias, x.reshape(-1, x.shape[-1]), self.weight).view(*x.shape[:-1], self.weight.shape[1])


class NewGELU(nn.Module):
    def forward(self, x):
        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


class Attention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.C, self.H = cfg["n_embd"], cfg["n_head"]
        self.c_attn = Conv1D(self.C, 3 * self.C)
        self.c_proj = Conv1D(self.C, self.C)

    def forward(self, x):
        B, T, C = x.shape
        D = C // self.H
        q, k, v = self.c_attn(x).split(C, dim=2)
        q, k, v = (t.view(B, T, self.H, D).transpose(1, 2) for t in (q, k, v))
        w = torch.matmul(q, k.transpose(-1, -2)) / torch.full([], D ** 0.5, dtype=x.dtype)
        causal = torch.ones(T, T, dtype=torch.bool).tril()
        w = torch.where(causal, w, torch.full([], torch.finfo(x.dtype).min, dtype=x.dtype))
        o = torch.matmul(F.softmax(w, dim=-1), v).transpose(1, 2).contiguous().view(B, T, C)
        return (self.c_proj(o), None)


class MLP(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        C = cfg["n_embd"]
        inner = cfg.get("n_inner") or 4 * C
        self.c_fc = Conv1D(C, inner)
        self.act = NewGELU()
        self.c_proj = Conv1D(inner, C)

    def forward(self, x):
        return self.c_proj(self.act(self.c_fc(x)))


class Block(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        C, eps = cfg["n_embd"], float(cfg["layer_norm_epsilon"])
        self.ln_1 = nn.LayerNorm(C, eps=eps)
        self.attn = Attention(cfg)
        self.ln_2 = nn.LayerNorm(C, eps=eps)
        self.mlp = MLP(cfg)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))[0]
        return (x + self.mlp(self.ln_2(x)),)


class Transformer(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        C = cfg["n_embd"]
        self.wte = nn.Embedding(cfg["vocab_size"], C)
        self.wpe = nn.Embedding(cfg["n_positions"], C)
        self.drop = nn.Dropout(0.0)
        self.h = nn.ModuleList(Block(cfg) for _ in range(cfg["n_layer"]))
        self.ln_f = nn.LayerNorm(C, eps=float(cfg["layer_norm_epsilon"]))

    def forward(self, ids):
        pos = torch.arange(ids.shape[1], dtype=torch.long).unsqueeze(0)
        x = self.drop(self.wte(ids) + self.wpe(pos))
        for block in self.h:
            x = block(x)[0]
        return self.ln_f(x)


class GPT2LMHeadModel(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.transformer = Transformer(cfg)
        self.lm_head = nn.Linear(cfg["n_embd"], cfg["vocab_size"], bias=False)

    def forward(self, input_ids):
        return self.lm_head(self.transformer(input_ids))

    @classmethod
    def from_weights(cls, cfg, weights):
        """weights: numpy arrays by HF name without 'transformer.' (gpt2_torch.load_model)."""
        m = cls(cfg)
        state = {"transformer." + k: torch.from_numpy(v) for k, v in weights.items()}
        state["lm_head.weight"] = state["transformer.wte.weight"]  # tied
        missing, unexpected = m.load_state_dict(state, strict=False)
        if missing or unexpected:
            raise ValueError(f"weights do not fit the module: missing {missing}, unexpected {unexpected}")
        return m.eval()
