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

from drk.engines.decoders import left_pad
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


def pad_rows(rows: list[TurnRow], pad_id: int, device) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, int]:
    """Left-padded input ids (R, L), attention mask, position ids, and Lc = the longest completion.

    Left padding right-aligns every completion, so the logits of all completions sit in the last Lc + 1
    positions and the model only has to produce those (`logits_to_keep`); per-token tensors (R, Lc) are
    right-aligned the same way."""
    ids, att, pos = left_pad([r.prompt_ids + r.completion_ids for r in rows], pad_id, device)
    return ids, att, pos, max(len(r.completion_ids) for r in rows)


def right_aligned(values: list[list], lc: int, dtype, device) -> torch.Tensor:
    out = torch.zeros((len(values), lc), dtype=dtype)
    for i, v in enumerate(values):
        if v:
            out[i, lc - len(v):] = torch.tensor(v, dtype=dtype)
    return out.to(device)


def completion_logprobs(model, rows: list[TurnRow], *, pad_id: int, temperature: float, vocab_limit: int | None,
                        with_entropy: bool = False) -> tuple[torch.Tensor, torch.Tensor, float | None]:
    """(logp (R, Lc), mask (R, Lc), mean entropy) of each row's completion tokens under `model`, right-
    aligned. Logits at position p predict token p + 1, so the last Lc + 1 positions cover every completion."""
    device = next(model.parameters()).device
    ids, att, pos, lc = pad_rows(rows, pad_id, device)
    logits = model(input_ids=ids, attention_mask=att, position_ids=pos, use_cache=False,
                   logits_to_keep=lc + 1).logits[:, :lc]
    if vocab_limit is not None and vocab_limit < logits.shape[-1]:
        logits = logits[..., :vocab_limit]  # the engine never samples ids >= vocab_limit (padded vocabulary)
    targets = right_aligned([r.completion_ids for r in rows], lc, torch.long, device)
    mask = right_aligned([[1] * len(r.completion_ids) for r in rows], lc, torch.bool, device)
    t = temperature if temperature > 0 else 1.0
    logp = selective_log_softmax(logits, targets, temperature=t)
    entropy = float(entropy_from_logits(logits.detach(), mask, temperature=t)) if with_entropy else None
    return logp, mask, entropy


def rollout_logprob_tensor(rows: list[TurnRow], lc: int, device) -> torch.Tensor:
    return right_aligned([r.rollout_logprobs for r in rows], lc, torch.float32, device)
