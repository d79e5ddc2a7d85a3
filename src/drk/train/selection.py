"""Which turns reach the loss and how much each one weighs: the released trainer's rules beyond the paper.

What this module is
-------------------
The paper states its formulas (TRLOO, MRS, PRS, the clipped loss: ``drk.train.algos``); the released
training code (hkust-nlp/KernelGYM, ``drkernel/``, a verl fork) also applies rules the paper does not
spell out. Each is a switch here, defaulting to the released code's behaviour, and a pure function:

=========================  ================================================================================
``regressed_turns``        turns scoring <= 0 after an earlier turn of the same episode scored > 0 (the
                           released ``mask_void_turn``: such turns are not trained on)
``flat_group_keep``        drop prompts (or prompt-turns) whose rollouts' rewards have a sample std < 1e-3
``round_coverage``         coverage rounded to 2 decimals before PRS reads it, as the released reward
                           manager stores it
``micro_batch_weight``     the factor a micro-batch's loss is multiplied by before ``backward``: summed
                           over a fixed nominal row count and divided by the loss scale factor (1000)
``nominal_rows``           that row count, prompts x rollouts x turns x turns as the released trainer
                           normalises its mini-batch
``prs_seed``               the PRS generator's seed, different on every data-parallel rank
=========================  ================================================================================

``LossScaling`` and ``TurnSelection`` hold the switches (nested in ``drk.stages.rl.RLConfig``); every
field says what it does in one line. docs/faithfulness.md maps each switch to the released file and
function it reproduces and to the test that fails if the switch does nothing.

What this module deliberately is not
------------------------------------
No model, no episodes, no I/O: tensors and plain numbers in, tensors and plain numbers out (the trainer
builds the inputs from its episodes). Shapes follow ``drk.train.algos``: per-turn ``(P, N, T)``.

Tests: ``PYTHONPATH=src .venv/bin/python -m pytest tests/test_rl_selection.py -q`` (CPU, seconds).
"""
from __future__ import annotations

import torch
from torch import Tensor

from drk.train.settings import FLAT_GROUP_MODES, LOSS_DENOMINATORS, LossScaling, TurnSelection  # noqa: F401


# --------------------------------------------------------------------------------------------------------
# masks


def regressed_turns(rewards: Tensor, present: Tensor) -> Tensor:
    """Turns that score <= 0 after an earlier present turn of the same trajectory scored > 0.

    ``regressed[..., t] = present[..., t] & rewards[..., t] <= 0 & max_{k < t, present[..., k]} rewards[..., k] > 0``

    The first turn is never regressed. The released trainer does not train on these turns (it masks their
    loss and zeroes their reward): once an episode has a working kernel, a later turn that breaks it would
    otherwise be pushed down with the whole negative advantage of a failure, although the episode is still
    a success.

    Args:
        rewards: float ``(P, N, T)`` (values at non-present turns are ignored); present: bool ``(P, N, T)``.

    Returns:
        bool ``(P, N, T)``.
    """
    if rewards.shape != present.shape:
        raise ValueError(f"shape mismatch: rewards {tuple(rewards.shape)} vs present {tuple(present.shape)}")
    p = present.to(torch.bool)
    r = torch.where(p, rewards.double(), torch.full((), -torch.inf, dtype=torch.float64))
    best_so_far = r.cummax(dim=-1).values
    earlier = torch.cat([torch.full_like(best_so_far[..., :1], -torch.inf), best_so_far[..., :-1]], dim=-1)
    return p & (r <= 0) & (earlier > 0)


def low_spread_groups(values: Tensor, members: Tensor, min_std: float = 1e-3) -> Tensor:
    """Groups whose members' values have a sample standard deviation below ``min_std``.

    Args:
        values: float ``(G, M)``: one value per member; members: bool ``(G, M)``: who belongs to the group.
        min_std: threshold (the released trainer: 1e-3, on ``torch.std``, i.e. with Bessel's correction).

    Returns:
        bool ``(G,)``; a group of fewer than two members is never low-spread (its std is undefined).
    """
    if values.shape != members.shape or values.dim() != 2:
        raise ValueError("values and members must both be (G, M)")
    m = members.to(torch.bool)
    v = torch.where(m, values.double(), torch.zeros((), dtype=torch.float64))
    n = m.sum(dim=-1).double()
    mean = v.sum(dim=-1) / n.clamp(min=1.0)
    dev = torch.where(m, v - mean[:, None], torch.zeros((), dtype=torch.float64))
    std = ((dev * dev).sum(dim=-1) / (n - 1.0).clamp(min=1.0)).sqrt()
    return (n >= 2) & (std < min_std)


def flat_group_keep(rewards: Tensor, valid: Tensor, lengths: Tensor, *, mode: str = "last-turn",
                    min_std: float = 1e-3) -> Tensor:
    """Keep mask ``(P, N, T)`` that drops the turns of groups whose rewards barely differ.

    A group with (almost) equal rewards has (almost) zero advantages: training on it spends compute and,
    with a per-kept-turn mean, dilutes the other groups. The released trainer drops such groups before
    computing advantages. Rewards of turns that are not ``valid`` (masked) count as 0, as the released
    trainer zeroes them first.

    - ``"last-turn"`` (the released recipe, ``is_get_last_turn``): one group per prompt, one value per
      rollout: the reward of its last generated turn. A flat prompt loses every turn of every rollout.
    - ``"per-turn"``: one group per (prompt, turn index) over the rollouts that reached that turn; a flat
      group loses that turn of every rollout.
    - ``"none"``: drop nothing (a plain "off" would read as false in YAML).

    Args:
        rewards: float ``(P, N, T)``; valid: bool ``(P, N, T)`` (trained turns); lengths: int ``(P, N)``,
            the number of turns each rollout generated (so turn ``lengths - 1`` is its last).

    Returns:
        bool ``(P, N, T)``.
    """
    if mode not in FLAT_GROUP_MODES:
        raise ValueError(f"mode must be one of {FLAT_GROUP_MODES}, got {mode!r}")
    P, N, T = rewards.shape
    keep = torch.ones((P, N, T), dtype=torch.bool)
    if mode == "none" or P == 0:
        return keep
    r = torch.where(valid.to(torch.bool), rewards.double(), torch.zeros((), dtype=torch.float64))
    lengths = lengths.to(torch.long)
    if mode == "last-turn":
        last = (lengths - 1).clamp(min=0)
        values = r.gather(-1, last[..., None]).squeeze(-1)
        values = torch.where(lengths > 0, values, torch.zeros_like(values))
        flat = low_spread_groups(values, torch.ones((P, N), dtype=torch.bool), min_std)  # (P,)
        return keep & ~flat[:, None, None]
    reached = torch.arange(T)[None, None, :] < lengths[..., None]                     # (P, N, T)
    flat = low_spread_groups(r.transpose(1, 2).reshape(P * T, N), reached.transpose(1, 2).reshape(P * T, N),
                             min_std).reshape(P, T)
    return keep & ~flat[:, None, :]


def round_coverage(coverage: Tensor, decimals: int | None) -> Tensor:
    """Coverage rounded to ``decimals`` decimal places, exactly as Python's ``round``/``f"{x:.2f}"`` round
    the float (the released reward manager stores ``float(f"{time_coverage:.2f}")`` and PRS reads that).

    Rounding is done per value in Python, not as ``torch.round(x * 100) / 100``: the two disagree on values
    such as 0.015 whose scaled float lands on a half. NaN stays NaN; ``decimals=None`` returns the input.
    """
    if decimals is None:
        return coverage
    vals = [round(x, decimals) if x == x else x for x in coverage.double().flatten().tolist()]
    return torch.tensor(vals, dtype=torch.float64).reshape(coverage.shape).to(coverage.device)


# --------------------------------------------------------------------------------------------------------
# loss scaling


def nominal_rows(prompts: int, rollouts: int, turns: int, given: int | None = None) -> int:
    """Rows one optimizer step's loss is divided by under ``denominator="nominal"``.

    The released trainer multiplies its PPO mini-batch size (prompts) by rollouts and by the turn count in
    ``RayKernelTrainer.__init__`` and again in the FSDP worker's normalisation, so with one mini-batch per
    step it is ``prompts x rollouts x turns x turns``. ``given`` overrides it.
    """
    return int(given) if given else prompts * rollouts * turns * turns


def micro_batch_weight(rows: int, tokens: int, *, aggregation: str, kept: float, nominal: float | None,
                       scale_factor: float = 1.0) -> float:
    """Factor a micro-batch's aggregated loss (``algos.policy_loss``: turn-sum mean over its ``rows`` kept
    turns, or token mean over its ``tokens``) is multiplied by before ``backward``.

    - ``nominal`` given (the released trainer): ``rows / nominal / scale_factor``. The optimizer step's loss
      is the sum of the kept turns' token-sums over a fixed count, so rejected turns lower the step's
      gradient instead of being averaged away.
    - ``nominal=None``: ``(rows or tokens) / kept / scale_factor``, where ``kept`` is the step's kept turns
      (or tokens, for ``"token-mean"``) over all ranks: an exact mean over what survived the masks.
    """
    if nominal is not None:
        if nominal <= 0:
            raise ValueError("nominal must be > 0")
        return rows / nominal / scale_factor
    if kept <= 0:
        raise ValueError("kept must be > 0")
    return (rows if aggregation == "turn-sum" else tokens) / kept / scale_factor


# --------------------------------------------------------------------------------------------------------
# randomness


def prs_seed(seed: int, step: int, rank: int, per_rank: bool = True) -> int:
    """Seed of the PRS generator of one rank at one step.

    Every rank holds different prompts, but with one seed for all of them rank r's k-th draw equals rank 0's
    k-th draw, so the ranks' keep decisions are correlated (the released trainer draws once, on the driver,
    for the whole batch). With ``per_rank`` the rank moves the seed by ``rank * 1_000_003``, more steps than
    a run takes, so no rank meets another's seed; rank 0 keeps the single-process seed, so one-process runs
    draw as before. (A multiple of 2**32 would not do: torch's CPU generator keeps only the low 32 bits.)
    """
    base = seed * 7_919 + step
    return base + rank * 1_000_003 if per_rank else base
