"""Checkpoints 10-12 and log-likelihoods: Hugging Face's logit processors,
greedy generation through the KV cache, lm-evaluation-harness scoring.
"""

import numpy as np
import torch
import torch.nn.functional as F

import families
from gpt2_torch import EOT
from passes import run_tasks


def process_logits(logits, history, sc):
    """HF logits processors on a [V] vector; returns the probabilities [V].

    OpenAI's logit_bias comes first (HF's sequence_bias for single tokens),
    its presence and frequency penalties after the repetition penalty (the
    order vLLM applies them in), counted over the whole history.
    """
    s = logits.unsqueeze(0)
    bias = sc.get("logit_bias") or {}
    if bias:
        ids = torch.tensor([int(k) for k in bias], dtype=torch.long)
        s = s.clone()
        s[0, ids] += torch.tensor(list(bias.values()), dtype=s.dtype)
    if sc["repetition_penalty"] != 1.0 and history:
        ids = torch.tensor([history], dtype=torch.long)
        g = torch.gather(s, 1, ids)
        g = torch.where(g < 0, g * sc["repetition_penalty"], g / sc["repetition_penalty"])
        s = s.scatter(1, ids, g)
    presence, frequency = sc.get("presence_penalty", 0.0), sc.get("frequency_penalty", 0.0)
    if (presence or frequency) and history:
        counts = torch.bincount(torch.tensor(history, dtype=torch.long), minlength=s.size(-1)).to(s.dtype)
        s = s - (presence * (counts > 0).to(s.dtype) + frequency * counts)
    if sc["temperature"] != 1.0:
        s = s / sc["temperature"]
    if sc["top_k"] > 0:
        k = min(sc["top_k"], s.size(-1))
        s = s.masked_fill(s < torch.topk(s, k)[0][..., -1, None], -float("inf"))
    if sc["top_p"] < 1.0:
        # HF calls torch.sort without stable=, whose tie order is unspecified (the
        # CPU sort of torch 1.13 is not stable for long rows). A stable sort makes
        # the rule explicit: among equal logits the lower token id is cut first.
        sorted_logits, idx = torch.sort(s, descending=False, stable=True)
        cum = sorted_logits.softmax(dim=-1).cumsum(dim=-1)
        rm = cum <= (1 - sc["top_p"])
        rm[..., -1:] = 0
        s = s.masked_fill(rm.scatter(1, idx, rm), -float("inf"))
    if sc["min_p"] > 0:
        probs = torch.softmax(s, dim=-1)
        rm = probs < sc["min_p"] * probs.max(dim=-1, keepdim=True)[0]
        idx = torch.argsort(s, descending=True, dim=-1)
        srm = torch.gather(rm, -1, idx)
        srm[..., :1] = False
        s = s.masked_fill(srm.scatter(1, idx, srm), -float("inf"))
    # The cuts above use HF's float32 arithmetic, but the final normalisation
    # is done in float64: torch's float32 softmax sums 50257 terms in float32
    # and is off by ~1e-5 relative, ten times checkpoint 11's atol of 1e-6.
    return torch.softmax(s.double(), dim=-1).to(s.dtype)[0]


def argmax_lowest(v):
    a = v.detach().numpy()
    return int(np.flatnonzero(a == a.max())[0])


def context_key(cfg):
    """The config key holding the model's context length (its family's
    CONTEXT: GPT-2's n_positions, the Llama family's max_position_embeddings)."""
    return families.of_config(cfg).CONTEXT


def greedy_task(cfg, tokens, n, eos):
    """Greedy continuation through the KV cache, as a passes.run_tasks task
    (one forward a pass, so that the cases' decode steps share each pass);
    stops after an eos token (eos: one id, or a list of ids, any of which
    stops it) or when the context is full. A longrope model's sequence is
    run again whole when it first passes the pretrained context, as
    Hugging Face's generate does for Phi-3. Returns (tokens, stop reason)."""
    stops = {eos} if isinstance(eos, int) else set(eos)
    n_ctx = cfg[context_key(cfg)]
    switch = (cfg.get("longrope") or {}).get("original")
    out = []
    ((logits, cache),) = yield [dict(tokens=tokens, rows=[len(tokens) - 1])]
    while True:
        if len(out) == n:
            return out, "max_tokens"
        if len(tokens) + len(out) >= n_ctx:
            return out, "context_length"
        t = argmax_lowest(logits[-1])
        out.append(t)
        if t in stops:
            return out, "eos"
        if len(out) < n:
            seq = tokens + out
            if switch is not None and len(seq) == switch + 1:
                # Phi3ForCausalLM.prepare_inputs_for_generation: the first
                # step past the pretrained context drops the cache, whose
                # keys were rotated with the short factors, and runs the
                # whole sequence again, rotated with the long ones.
                ((logits, cache),) = yield [dict(tokens=seq, rows=[len(seq) - 1])]
            else:
                ((logits, cache),) = yield [dict(tokens=[t], past=cache, rows=[0])]


def greedy_generate(model, tokens, n, eos):
    """greedy_task of one sequence."""
    return run_tasks(model, [greedy_task(model.cfg, tokens, n, eos)])[0]


def loglikelihood_tokens(tok, context, continuation):
    """lm-evaluation-harness: trailing whitespace of the context moves to the
    continuation; continuation tokens = encode(whole)[len(encode(context)):];
    an empty context conditions on <|endoftext|>, GPT-2's BOS and so
    lm-eval's prefix_token_id (model_tokenizer.prefix_token)."""
    if context == "":
        return [EOT], tok.encode(continuation)
    n = len(context) - len(context.rstrip())
    if n:
        continuation = context[-n:] + continuation
        context = context[:-n]
    whole = tok.encode(context + continuation)
    ctx = tok.encode(context)
    return ctx, whole[len(ctx):]


def log_probs(logits):
    """The log-softmax of logits over the last dimension, accumulated in
    float64 whatever their dtype: the one checkpoint 9 and the corpus sets
    record. torch's float32 log_softmax sums exp() in float32 lanes; where
    one logit stands far above a 256k vocabulary (Gemma-2-2B's soft-capped
    head, notes 39) that put its log-probabilities 4.6e-4 from the float64
    forward's while the logits themselves were within 3e-6: a float32
    reference error four times the log-likelihood tolerance, which an
    accurate implementation then failed. llorch-check's Go log-softmax
    (sampling.LogSoftmax) accumulates in float64 too. A float64 forward's
    values are what F.log_softmax gives them."""
    return F.log_softmax(logits.to(torch.float64), dim=-1)


def loglikelihood_task(cfg, ctx, cont):
    """lm-evaluation-harness's log-likelihood of cont after ctx and whether
    cont is the greedy continuation, as a passes.run_tasks task."""
    n_ctx = cfg[context_key(cfg)]
    inp = (ctx + cont)[-(n_ctx + 1):][:-1]  # lm-eval truncation
    rows = list(range(len(inp) - len(cont), len(inp)))
    ((logits, _),) = yield [dict(tokens=inp, rows=rows)]
    lp = log_probs(logits)
    target = torch.tensor(cont, dtype=torch.long)
    greedy = bool((lp.argmax(dim=-1) == target).all())
    return float(torch.gather(lp, 1, target[:, None]).sum()), greedy


def loglikelihood(model, ctx, cont):
    return run_tasks(model, [loglikelihood_task(model.cfg, ctx, cont)])[0]
