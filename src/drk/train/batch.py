"""Training samples from rollouts: one row per turn, exactly the ids it was sampled with.

A turn's row is (context ids, completion ids) as the engine reported them: the loss mask covers the
completion only, so prompt and feedback tokens never get gradient, and nothing is re-tokenized or
truncated on the training side. Rows are grouped into micro-batches under a padded-token budget, and
their log-probs computed under the same distribution transform the engine sampled from (temperature,
padded vocabulary masked).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from drk.train.algos import entropy_from_logits, selective_log_softmax


@dataclass
class TurnRow:
    prompt_ids: list[int]
    completion_ids: list[int]
    rollout_logprobs: list[float]
    advantage: float
    traj: int                 # trajectory index (prompt * rollouts + rollout) for MRS
    pnt: tuple[int, int, int]  # (prompt, rollout, turn) position in the (P, N, T) tensors

    @property
    def length(self) -> int:
        return len(self.prompt_ids) + len(self.completion_ids)


def micro_batches(rows: list[int], lengths: list[int], token_budget: int) -> list[list[int]]:
    """Group row indices (sorted by length) so that max_len * count <= token_budget per group; a row longer
    than the budget gets a group of its own."""
    order = sorted(rows, key=lambda i: lengths[i])
    groups: list[list[int]] = []
    cur: list[int] = []
    for i in order:
        if cur and lengths[i] * (len(cur) + 1) > token_budget:  # sorted: row i is the group's longest
            groups.append(cur)
            cur = []
        cur.append(i)
    if cur:
        groups.append(cur)
    return groups


def pad_rows(rows: list[TurnRow], pad_id: int, device) -> tuple[torch.Tensor, torch.Tensor, int]:
    """Right-padded input ids (R, L), the positions whose logits score a completion token (`keep`, the span
    from the earliest completion's first predicting position to the end of the longest row), and Lc = the
    longest completion.

    Right padding needs no attention mask: causal attention already keeps every real token from seeing the
    pads after it, so the forward takes the unmasked (flash) path. A padding mask would send it to the
    masked memory-efficient kernel, whose backward returned NaN gradients on an H200 for the long left pads
    of multi-turn rows (2026-12-02, docs/measurements/rl-step-throughput.md), and one NaN poisons the step."""
    seqs = [r.prompt_ids + r.completion_ids for r in rows]
    ids = torch.full((len(seqs), max(len(x) for x in seqs)), pad_id, dtype=torch.long)
    for i, x in enumerate(seqs):
        ids[i, :len(x)] = torch.tensor(x, dtype=torch.long)
    lo = min(len(r.prompt_ids) for r in rows) - 1  # logits at position p predict token p + 1
    keep = torch.arange(lo, ids.shape[1] - 1)
    return ids.to(device), keep.to(device), max(len(r.completion_ids) for r in rows)


def right_aligned(values: list[list], lc: int, dtype, device) -> torch.Tensor:
    out = torch.zeros((len(values), lc), dtype=dtype)
    for i, v in enumerate(values):
        if v:
            out[i, lc - len(v):] = torch.tensor(v, dtype=dtype)
    return out.to(device)


def completion_logprobs(model, rows: list[TurnRow], *, pad_id: int, temperature: float, vocab_limit: int | None,
                        with_entropy: bool = False) -> tuple[torch.Tensor, torch.Tensor, float | None]:
    """(logp (R, Lc), mask (R, Lc), mean entropy) of each row's completion tokens under `model`, right-
    aligned (row i's last n_i columns hold its n_i completion tokens; the rest are 0 and masked out).

    The model produces logits only for the span `pad_rows` keeps; each position is scored against the token
    it predicts, and each row's completion part of that span is then moved into its right-aligned place."""
    device = next(model.parameters()).device
    ids, keep, lc = pad_rows(rows, pad_id, device)
    logits = model(input_ids=ids, use_cache=False, logits_to_keep=keep).logits  # (R, S, V)
    if vocab_limit is not None and vocab_limit < logits.shape[-1]:
        logits = logits[..., :vocab_limit]  # the engine never samples ids >= vocab_limit (padded vocabulary)
    t = temperature if temperature > 0 else 1.0
    span_logp = selective_log_softmax(logits, ids[:, keep + 1], temperature=t)  # (R, S)
    n = torch.tensor([len(r.completion_ids) for r in rows], device=device)
    first = torch.tensor([len(r.prompt_ids) - 1 for r in rows], device=device) - keep[0]  # row's first in span
    col = torch.arange(lc, device=device)
    mask = col[None, :] >= (lc - n)[:, None]
    src = torch.where(mask, first[:, None] + col[None, :] - (lc - n)[:, None], 0)
    logp = torch.where(mask, span_logp.gather(1, src), 0.0)
    entropy = None
    if with_entropy:
        pos = torch.arange(logits.shape[1], device=device)
        span_mask = (pos[None, :] >= first[:, None]) & (pos[None, :] < (first + n)[:, None])
        entropy = float(entropy_from_logits(logits.detach(), span_mask, temperature=t))
    return logp, mask, entropy


def rollout_logprob_tensor(rows: list[TurnRow], lc: int, device) -> torch.Tensor:
    return right_aligned([r.rollout_logprobs for r in rows], lc, torch.float32, device)
