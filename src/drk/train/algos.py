"""The math of Dr. Kernel's multi-turn RL objective, as pure tensor functions.

What this module is
-------------------
Every formula the trainer needs between "the evaluator returned verdicts" and "call ``loss.backward()``":

====================  ==========================================================================
``returns_to_go``     discounted reward-to-go over the valid turns of each trajectory
``trloo_advantages``  Turn-level REINFORCE Leave-One-Out advantages (the paper's estimator)
``grpo_advantages``   the GRPO group-mean baseline, kept for the paper's comparison
``mrs_mask``          Mismatch Rejection Sampling: drop trajectories/turns whose training-policy
                      log-probs disagree with the rollout engine's
``prs_mask``          Profiling-based Rejection Sampling: randomly drop correct turns with low
                      Triton coverage
``policy_loss``       PPO-style clipped objective with dual clip, token-sum per turn
``selective_log_softmax`` / ``entropy_from_logits``   memory-light log-prob gathering and logging
====================  ==========================================================================

Shapes. Per-turn quantities (rewards, returns, advantages, the ``valid`` mask, correctness, speedup,
coverage) are ``(P, N, T)``: P prompts (tasks) x N rollouts per prompt x T turns. A rollout may stop early,
so ``valid[p, i, t]`` marks real turns; invalid entries are padding, never read, and written as 0.
Per-token quantities are ``(B, L)``: one row per *turn* (the assistant message of one turn, plus whatever
prompt/feedback context is in the row, masked out by ``token_mask``). The trainer flattens the valid
turns of a ``(P, N, T)`` tensor row-major (``x[valid]``) to get the ``(B,)`` per-turn vectors that go with
those rows.

What this module deliberately is not
------------------------------------
No model code, no tokenisation, no I/O, no distributed logic, no optimiser, no global state. Every
function takes tensors and plain numbers and returns tensors (plus, for logging, plain Python numbers);
all of them work on any device in float32/float64 (the log-prob helpers also accept bf16/fp16 logits and
compute in float32). Randomness (PRS) comes only from an explicit ``torch.Generator``.

Where it departs from textbook PPO / GRPO, and why (the paper's choices)
------------------------------------------------------------------------
- **TRLOO instead of GRPO.** GRPO's baseline is the mean over *all* rollouts of the group, including the
  sample itself; that shrinks every advantage by (N-1)/N and, per turn with a varying number of valid
  rollouts, biases the gradient (self-inclusion bias). TRLOO uses the mean of the *other* valid rollouts
  at the same (prompt, turn): an unbiased leave-one-out baseline, computed per turn on returns-to-go.
- **No std scaling.** Dividing by the group std up-weights prompts whose rewards barely vary (too easy or
  too hard) - a difficulty bias. TRLOO advantages are not scaled; ``grpo_advantages`` offers the scaling
  only to reproduce the baseline.
- **Turn-level returns.** The reward of a turn is the evaluator's verdict on that turn's kernel; a turn is
  credited with the reward-to-go of its trajectory (gamma = 1 by default).
- **Dual clip.** For negative advantages the PPO objective is unbounded as the ratio grows; the dual clip
  caps the per-token loss at ``-A * c`` (c = 3), so a stale, far-off-policy token cannot dominate.
  Asymmetric clip range ``[1 - 0.2, 1 + 0.28]`` (the higher upper bound keeps low-probability tokens
  explorable).
- **Token-sum per turn.** The per-token losses of a turn are summed (not averaged), then averaged over
  kept turns: every token of a long turn counts fully, and short and long turns are not re-weighted by
  their lengths. ``aggregation="token-mean"`` is provided for comparison.
- **No KL penalty, no entropy bonus.** The reference-policy KL term and entropy regularisation are off;
  a k3 KL estimate and the entropy are only *logged*.
- **Rejection sampling instead of correction.** MRS drops samples where the inference engine and the
  training policy disagree (rather than importance-weighting them); PRS drops "lazy" correct kernels
  whose Triton code covers little of the runtime (reward hacking by wrapping PyTorch).

Tests: ``cd /work/main && PYTHONPATH=src .venv/bin/python -m pytest tests/test_algos.py -q`` (CPU, seconds).
"""
from __future__ import annotations

import math
from typing import NamedTuple

import torch
from torch import Tensor

from drk.train.settings import ADVANTAGE_ESTIMATORS, AGGREGATIONS, AlgoConfig  # noqa: F401 (defined there: torch-free)

LOG_RATIO_CLAMP = 20.0  # |log ratio| is clamped to this before exp() in the policy loss (overflow guard)


# --------------------------------------------------------------------------------------------------------
# helpers


def _float_dtype(*tensors: Tensor | None) -> torch.dtype:
    """The floating dtype to compute in: the widest floating dtype among the inputs, at least float32."""
    dtype = torch.float32
    for t in tensors:
        if t is not None and t.is_floating_point():
            dtype = torch.promote_types(dtype, t.dtype)
    return dtype


def _check_pnt(returns: Tensor, valid: Tensor) -> None:
    if returns.shape != valid.shape:
        raise ValueError(f"shape mismatch: {tuple(returns.shape)} vs valid {tuple(valid.shape)}")
    if returns.dim() < 2:
        raise ValueError("expected (P, N, T) (at least (N, T)): rollouts on dim -2, turns on dim -1")


# --------------------------------------------------------------------------------------------------------
# rewards, returns, advantages


def returns_to_go(rewards: Tensor, valid: Tensor, gamma: float = 1.0) -> Tensor:
    """Discounted reward-to-go of each turn over the valid turns of the same trajectory.

    ``G[..., t] = sum_{k >= t, valid[..., k]} gamma**(k - t) * r[..., k]`` for valid t; 0 for invalid t.

    Args:
        rewards: float ``(P, N, T)`` (any leading dims; turns on the last dim). Values at invalid turns are
            ignored (may be NaN).
        valid: bool ``(P, N, T)``.
        gamma: discount, default 1 (undiscounted sum of the remaining rewards).

    Returns:
        float ``(P, N, T)``, same dtype as ``rewards`` (at least float32). The exponent is the distance in
        turn index ``k - t``; valid turns normally form a prefix, and if there are gaps the invalid turns
        add nothing but still count in the distance.
    """
    if rewards.shape != valid.shape:
        raise ValueError(f"shape mismatch: rewards {tuple(rewards.shape)} vs valid {tuple(valid.shape)}")
    dtype = _float_dtype(rewards)
    valid = valid.to(torch.bool)
    r = torch.where(valid, rewards.to(dtype), torch.zeros((), dtype=dtype, device=rewards.device))
    out = torch.zeros_like(r)
    acc = torch.zeros_like(r[..., 0])
    for t in range(r.shape[-1] - 1, -1, -1):  # backward over turns; T is small
        acc = r[..., t] + gamma * acc
        out[..., t] = acc
    return torch.where(valid, out, torch.zeros((), dtype=dtype, device=r.device))


def _group_sums(returns: Tensor, valid: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """(G with invalid entries zeroed, sum over valid rollouts (P,1,T), count of valid rollouts (P,1,T))."""
    dtype = _float_dtype(returns)
    v = valid.to(torch.bool)
    g = torch.where(v, returns.to(dtype), torch.zeros((), dtype=dtype, device=returns.device))
    s = g.sum(dim=-2, keepdim=True)
    n = v.sum(dim=-2, keepdim=True).to(dtype)
    return g, s, n


def trloo_advantages(returns: Tensor, valid: Tensor) -> Tensor:
    """Turn-level REINFORCE Leave-One-Out (TRLOO) advantages.

    For each prompt p, rollout i and turn t with ``valid[p, i, t]``, with ``n`` = number of valid rollouts
    at (p, t) and ``S`` = sum of their returns::

        A[p, i, t] = G[p, i, t] - (S - G[p, i, t]) / (n - 1)     if n >= 2
        A[p, i, t] = G[p, i, t]                                  if n == 1 (no baseline available)

    i.e. the return minus the mean return of the *other* valid rollouts at the same turn. Invalid entries
    are 0. No std scaling. With all N rollouts valid, ``A_TRLOO = N/(N-1) * (G - mean(G))`` and the
    advantages at each (p, t) sum to 0.

    Args:
        returns: float ``(P, N, T)`` returns-to-go (values at invalid entries are ignored, may be NaN).
        valid: bool ``(P, N, T)``.

    Returns:
        float ``(P, N, T)`` (dtype of ``returns``, at least float32).
    """
    _check_pnt(returns, valid)
    g, s, n = _group_sums(returns, valid)
    others = (n - 1.0).clamp(min=1.0)
    baseline = torch.where(n >= 2.0, (s - g) / others, torch.zeros_like(g))
    return torch.where(valid.to(torch.bool), g - baseline, torch.zeros_like(g))


def grpo_advantages(returns: Tensor, valid: Tensor, *, scale_by_std: bool = False, eps: float = 1e-6,
                    unbiased: bool = True) -> Tensor:
    """GRPO-style group-mean advantages (the self-inclusive baseline TRLOO replaces), per turn.

    For valid (p, i, t), with mean and std over the ``n`` valid rollouts at (p, t) (the sample itself
    included)::

        A[p, i, t] = G[p, i, t] - mean_j G[p, j, t]                      (scale_by_std=False)
        A[p, i, t] = (G[p, i, t] - mean_j G[p, j, t]) / (std_j + eps)    (scale_by_std=True)

    ``std`` is the sample std (Bessel, divisor n - 1) by default, matching ``torch.std`` as GRPO
    implementations use it; ``unbiased=False`` gives the population std (divisor n). With n == 1 the
    advantage is 0 (the sample is its own baseline; the std, undefined, is taken as 0); a zero
    deviation stays 0 even when ``std + eps == 0``. Invalid entries are 0. With all N valid: ``A_GRPO(no std) = (N-1)/N * A_TRLOO`` exactly.

    Args:
        returns: float ``(P, N, T)``; valid: bool ``(P, N, T)``.

    Returns:
        float ``(P, N, T)`` (dtype of ``returns``, at least float32).
    """
    _check_pnt(returns, valid)
    v = valid.to(torch.bool)
    g, s, n = _group_sums(returns, v)
    mean = s / n.clamp(min=1.0)
    zero = torch.zeros_like(g)
    dev = torch.where(v, g - mean, zero)
    if scale_by_std:
        denom = (n - 1.0) if unbiased else n
        var = (dev * dev).sum(dim=-2, keepdim=True) / denom.clamp(min=1.0)
        std = torch.where(n >= 2.0, var.sqrt(), torch.zeros_like(var))
        denom = std + eps
        # n == 1, or all returns equal with eps = 0: deviations are 0 -> advantage 0 (not 0/0)
        dev = dev / torch.where(denom > 0, denom, torch.ones_like(denom))
    return torch.where(v, dev, zero)


# --------------------------------------------------------------------------------------------------------
# rejection sampling


class MRSResult(NamedTuple):
    """Result of ``mrs_mask``. ``keep`` is what goes into the loss; the rest is for logging."""

    keep: Tensor         # bool (B,): turn row kept (its trajectory passed the bounds and it holds no vetoed token)
    rho_bar: Tensor      # float (num_traj,): geometric-mean ratio per trajectory (1 for one without tokens)
    traj_keep: Tensor    # bool (num_traj,): trajectory within [lower, upper]
    turn_vetoed: Tensor  # bool (B,): turn row holds a masked token with ratio < veto


def mrs_mask(logp_train: Tensor, logp_rollout: Tensor, token_mask: Tensor, traj_index: Tensor | None = None,
             *, lower: float = 0.999, upper: float = 1.001, veto: float | None = 1e-4,
             num_traj: int | None = None) -> MRSResult:
    """Mismatch Rejection Sampling: drop samples whose rollout-engine log-probs disagree with the trainer's.

    Per-token ratio ``rho = exp(logp_train - logp_rollout)``. For each trajectory k (all turn rows b with
    ``traj_index[b] == k``)::

        rho_bar[k] = exp( mean over the masked tokens of all its rows of (logp_train - logp_rollout) )
        traj_keep[k] = lower <= rho_bar[k] <= upper

    (the token-weighted geometric mean over the whole trajectory, not a mean of per-turn means). A turn
    row is additionally vetoed if any of its masked tokens has ``rho < veto``. ``keep[b] =
    traj_keep[traj_index[b]] & ~turn_vetoed[b]``.

    Args:
        logp_train: float ``(B, L)``: log-probs of the sampled tokens under the training policy (computed
            by the trainer's forward pass, before any update; no gradient needed).
        logp_rollout: float ``(B, L)``: the same tokens' log-probs as reported by the inference engine.
        token_mask: bool/0-1 ``(B, L)``: tokens generated by the policy in this row (trained tokens).
            Values at unmasked positions are ignored (may be NaN/-inf).
        traj_index: long ``(B,)`` in ``[0, num_traj)``: the trajectory of each turn row. ``None``: every row
            is its own trajectory.
        lower, upper: bounds on rho_bar (defaults 0.999 / 1.001). Use 0 / inf to disable.
        veto: per-token veto threshold (default 1e-4); ``None`` or 0 disables the veto.
        num_traj: number of trajectories (default ``traj_index.max() + 1``).

    Returns:
        ``MRSResult(keep (B,) bool, rho_bar (num_traj,) float, traj_keep (num_traj,) bool,
        turn_vetoed (B,) bool)``. Edge cases: a trajectory without masked tokens has rho_bar = 1 (kept);
        a NaN among the masked log-probs makes rho_bar NaN and the trajectory is rejected.
    """
    if logp_train.shape != logp_rollout.shape or logp_train.shape != token_mask.shape or logp_train.dim() != 2:
        raise ValueError("logp_train, logp_rollout and token_mask must all be (B, L)")
    B = logp_train.shape[0]
    device = logp_train.device
    if traj_index is None:
        traj_index = torch.arange(B, device=device)
    traj_index = traj_index.to(device=device, dtype=torch.long)
    if traj_index.shape != (B,):
        raise ValueError(f"traj_index must be (B,) = ({B},), got {tuple(traj_index.shape)}")
    if num_traj is None:
        num_traj = int(traj_index.max().item()) + 1 if B > 0 else 0
    dtype = _float_dtype(logp_train, logp_rollout)
    mask = token_mask.to(torch.bool)
    diff = (logp_train.detach().to(dtype) - logp_rollout.detach().to(dtype))
    lr = torch.where(mask, diff, torch.zeros((), dtype=dtype, device=device))

    row_sum = lr.sum(dim=-1)
    row_cnt = mask.sum(dim=-1).to(dtype)
    traj_sum = torch.zeros(num_traj, dtype=dtype, device=device).index_add_(0, traj_index, row_sum)
    traj_cnt = torch.zeros(num_traj, dtype=dtype, device=device).index_add_(0, traj_index, row_cnt)
    mean_lr = torch.where(traj_cnt > 0, traj_sum / traj_cnt.clamp(min=1.0), torch.zeros_like(traj_sum))
    rho_bar = mean_lr.exp()
    traj_keep = (rho_bar >= lower) & (rho_bar <= upper)  # NaN -> False

    if veto is not None and veto > 0:
        turn_vetoed = (mask & (lr < math.log(veto))).any(dim=-1)
    else:
        turn_vetoed = torch.zeros(B, dtype=torch.bool, device=device)
    keep = traj_keep[traj_index] & ~turn_vetoed
    return MRSResult(keep=keep, rho_bar=rho_bar, traj_keep=traj_keep, turn_vetoed=turn_vetoed)


def prs_keep_prob(correct: Tensor, coverage: Tensor | None, valid: Tensor, *, tau: float = 0.3,
                  s: float = 0.1) -> Tensor:
    """Keep probability of PRS for each turn, float ``(P, N, T)`` (see ``prs_mask``)."""
    v = valid.to(torch.bool)
    dtype = _float_dtype(coverage)
    one = torch.ones(v.shape, dtype=dtype, device=v.device)
    if coverage is None:
        return torch.where(v, one, torch.zeros_like(one))
    cov = coverage.to(device=v.device, dtype=dtype)
    p = ((cov - tau) / s).clamp(0.0, 1.0)
    p = torch.where(torch.isnan(cov), one, p)                  # unknown coverage: keep
    p = torch.where(correct.to(device=v.device, dtype=torch.bool), p, one)  # incorrect: always keep
    return torch.where(v, p, torch.zeros_like(one))


def prs_mask(correct: Tensor, coverage: Tensor | None, valid: Tensor, *, tau: float = 0.3, s: float = 0.1,
             generator: torch.Generator | None = None) -> Tensor:
    """Profiling-based Rejection Sampling: randomly drop correct turns whose Triton coverage is low.

    Keep probability of a valid turn::

        p = clip((coverage - tau) / s, 0, 1)   if correct and coverage is known
        p = 1                                  if correct and coverage is NaN (unknown, e.g. not profiled)
        p = 1                                  if not correct

    so with tau = 0.3, s = 0.1: coverage <= 0.3 is always dropped, >= 0.4 always kept, linear in between.
    The paper applies PRS to correct samples, the ones that can be "lazy" (a correct model that leaves
    most of the work to PyTorch); incorrect turns are always kept because they carry the zero-reward
    (negative-advantage) signal and coverage says nothing about them. Unknown coverage is kept so a
    CPU/unprofiled run is not silently emptied. Pass ``correct`` as C (correct and not hacked).

    Randomness: ``u = torch.rand(valid.shape, generator=generator)`` drawn on the generator's device
    (or ``valid``'s when ``generator`` is None), one draw per entry whatever its status; ``keep = valid &
    (u < p)``. The same generator state gives the same mask.

    Args:
        correct: bool ``(P, N, T)``; coverage: float ``(P, N, T)`` in [0, 1] or NaN (``None``: all unknown);
        valid: bool ``(P, N, T)``; tau, s: ramp start and width; generator: optional ``torch.Generator``.

    Returns:
        bool ``(P, N, T)`` keep mask (False at invalid entries).
    """
    p = prs_keep_prob(correct, coverage, valid, tau=tau, s=s)
    gen_device = generator.device if generator is not None else p.device
    u = torch.rand(p.shape, generator=generator, device=gen_device, dtype=p.dtype).to(p.device)
    return valid.to(torch.bool) & (u < p)


# --------------------------------------------------------------------------------------------------------
# policy loss


def policy_loss(logp_new: Tensor, logp_old: Tensor, advantages: Tensor, token_mask: Tensor,
                turn_keep: Tensor | None = None, *, clip_low: float = 0.2, clip_high: float = 0.28,
                dual_clip: float | None = 3.0, aggregation: str = "turn-sum") -> tuple[Tensor, dict]:
    """PPO-style clipped policy loss with dual clip, token-sum per turn, averaged over kept turns.

    Per token, with ``lr = clamp(logp_new - logp_old, -20, 20)``, ``ratio = exp(lr)`` and the turn's
    advantage ``A``::

        l1 = -A * ratio
        l2 = -A * clamp(ratio, 1 - clip_low, 1 + clip_high)
        l  = max(l1, l2)                      if A >= 0
        l  = min(max(l1, l2), -A * dual_clip) if A < 0     (dual clip; l <= 3|A|)

    For A > 0 the clip binds (zero gradient) when ratio > 1 + clip_high; for A < 0 when ratio <
    1 - clip_low, and the dual clip binds (zero gradient) when ratio > dual_clip. No KL, no entropy term.

    Aggregation over kept tokens (``token_mask & turn_keep[:, None]``):

    - ``"turn-sum"`` (the paper): ``loss = sum_b sum_l l[b, l] / n_turns`` where ``n_turns`` is the
      number of kept turns that hold at least one masked token (a turn with nothing to train adds
      nothing and is not counted).
    - ``"token-mean"``: ``loss = sum_b sum_l l[b, l] / n_tokens``.

    With nothing kept the loss is an exact 0 still connected to ``logp_new``'s graph.

    Args:
        logp_new: float ``(B, L)``: log-probs of the sampled tokens under the current policy (with grad).
        logp_old: float ``(B, L)``: the same under the policy that collected the batch (no grad).
        advantages: float ``(B,)`` per turn (broadcast to its tokens), or ``(B, L)`` per token.
        token_mask: bool/0-1 ``(B, L)``: tokens to train (the turn's generated tokens; prompt, feedback
            and padding are 0). Masked-out positions get exactly zero gradient, even if they hold
            -inf/NaN.
        turn_keep: bool ``(B,)``: the turn survives MRS x PRS x valid; ``None``: all kept.
        clip_low, clip_high: clip range ``[1 - clip_low, 1 + clip_high]``.
        dual_clip: c > 1, or ``None`` to disable.
        aggregation: ``"turn-sum"`` or ``"token-mean"``.

    Returns:
        ``(loss, stats)``: scalar loss tensor; ``stats`` of Python numbers over kept tokens:
        ``clipfrac_low`` (A < 0, ratio < 1 - clip_low), ``clipfrac_high`` (A > 0, ratio > 1 + clip_high),
        ``dual_clip_frac`` (A < 0, ratio > dual_clip), ``ratio_mean``, ``ratio_max``, ``approx_kl``
        (k3 estimate of KL(old || new): mean of ``ratio - 1 - lr``), ``pg_loss`` (= loss), ``n_kept_turns``
        and ``n_kept_tokens`` (ints).
    """
    if aggregation not in AGGREGATIONS:
        raise ValueError(f"aggregation must be one of {AGGREGATIONS}, got {aggregation!r}")
    if logp_new.shape != logp_old.shape or logp_new.shape != token_mask.shape or logp_new.dim() != 2:
        raise ValueError("logp_new, logp_old and token_mask must all be (B, L)")
    if dual_clip is not None and dual_clip <= 1.0:
        raise ValueError("dual_clip must be > 1 (or None)")
    B, L = logp_new.shape
    device = logp_new.device
    dtype = _float_dtype(logp_new, logp_old)  # bf16/fp16 log-probs are upcast: ratios need the precision

    mask = token_mask.to(device=device, dtype=torch.bool)
    if turn_keep is not None:
        if turn_keep.shape != (B,):
            raise ValueError(f"turn_keep must be (B,) = ({B},), got {tuple(turn_keep.shape)}")
        mask = mask & turn_keep.to(device=device, dtype=torch.bool)[:, None]
    zero = torch.zeros((), dtype=dtype, device=device)

    if advantages.dim() == 1:
        if advantages.shape != (B,):
            raise ValueError(f"advantages must be (B,) or (B, L), got {tuple(advantages.shape)}")
        adv = advantages[:, None].expand(B, L)
    elif advantages.shape == (B, L):
        adv = advantages
    else:
        raise ValueError(f"advantages must be (B,) or (B, L), got {tuple(advantages.shape)}")
    adv = torch.where(mask, adv.detach().to(device=device, dtype=dtype), zero)

    # Mask at the log-ratio level so masked-out positions (possibly -inf/NaN) get an exact zero gradient.
    lr = torch.where(mask, logp_new.to(dtype) - logp_old.detach().to(device=device, dtype=dtype), zero)
    lr = lr.clamp(-LOG_RATIO_CLAMP, LOG_RATIO_CLAMP)
    ratio = lr.exp()
    l1 = -adv * ratio
    l2 = -adv * ratio.clamp(1.0 - clip_low, 1.0 + clip_high)
    clipped = torch.maximum(l1, l2)
    if dual_clip is not None:
        tok_loss = torch.where(adv < 0, torch.minimum(clipped, -adv * dual_clip), clipped)
    else:
        tok_loss = clipped
    tok_loss = torch.where(mask, tok_loss, zero)

    turn_tokens = mask.sum(dim=-1)
    n_tokens = int(turn_tokens.sum().item())
    n_turns = int((turn_tokens > 0).sum().item())
    total = tok_loss.sum()
    if aggregation == "turn-sum":
        loss = total / max(n_turns, 1)
    else:
        loss = total / max(n_tokens, 1)

    with torch.no_grad():
        r = ratio.detach()
        a = adv
        denom = max(n_tokens, 1)
        low = mask & (a < 0) & (r < 1.0 - clip_low)
        high = mask & (a > 0) & (r > 1.0 + clip_high)
        dual = (mask & (a < 0) & (r > dual_clip)) if dual_clip is not None else torch.zeros_like(mask)
        k3 = torch.where(mask, r - 1.0 - lr.detach(), zero)
        vals = torch.stack([
            low.sum().to(dtype) / denom,
            high.sum().to(dtype) / denom,
            dual.sum().to(dtype) / denom,
            torch.where(mask, r, zero).sum() / denom,
            torch.where(mask, r, torch.full((), -math.inf, dtype=dtype, device=device)).max()
            if n_tokens > 0 else zero,
            k3.sum() / denom,
            loss.detach(),
        ]).tolist()
    stats = {
        "clipfrac_low": vals[0], "clipfrac_high": vals[1], "dual_clip_frac": vals[2],
        "ratio_mean": vals[3] if n_tokens > 0 else 1.0, "ratio_max": vals[4] if n_tokens > 0 else 1.0,
        "approx_kl": vals[5], "pg_loss": vals[6], "n_kept_turns": n_turns, "n_kept_tokens": n_tokens,
    }
    return loss, stats


# --------------------------------------------------------------------------------------------------------
# log-prob helpers


def _compute_dtype(logits: Tensor) -> torch.dtype:
    return logits.dtype if logits.dtype in (torch.float32, torch.float64) else torch.float32


def selective_log_softmax(logits: Tensor, ids: Tensor, *, temperature: float = 1.0,
                          chunk_rows: int = 1024) -> Tensor:
    """Log-probs of the chosen token ids, ``log_softmax(logits / temperature)[..., ids]``, row-chunked.

    The full ``(..., V)`` log-softmax is never materialised at once: rows (positions) are processed
    ``chunk_rows`` at a time, each as ``z.gather(ids) - logsumexp(z)`` with ``z = logits / temperature``
    (identical to gathering from ``log_softmax(z)``). bf16/fp16 logits are upcast to float32 per chunk
    (log-softmax in half precision is too coarse for PPO ratios); float32/float64 stay as they are.
    Differentiable.

    Args:
        logits: float ``(..., V)``, e.g. ``(B, L, V)``.
        ids: long ``(...)``, e.g. ``(B, L)``, the token ids to score.
        temperature: sampling temperature the rollout used (> 0); log-probs of the tempered distribution.
        chunk_rows: positions per chunk.

    Returns:
        float ``(...)`` (float32 for half-precision logits, else the logits' dtype).
    """
    if ids.shape != logits.shape[:-1]:
        raise ValueError(f"ids {tuple(ids.shape)} must match logits {tuple(logits.shape)} without the last dim")
    if temperature <= 0:
        raise ValueError("temperature must be > 0")
    V = logits.shape[-1]
    flat = logits.reshape(-1, V)
    flat_ids = ids.reshape(-1, 1).to(device=logits.device, dtype=torch.long)
    cdt = _compute_dtype(logits)
    out = []
    for start in range(0, flat.shape[0], max(int(chunk_rows), 1)):
        z = flat[start:start + chunk_rows].to(cdt)
        if temperature != 1.0:
            z = z / temperature
        out.append(z.gather(-1, flat_ids[start:start + chunk_rows]).squeeze(-1) - torch.logsumexp(z, dim=-1))
    res = torch.cat(out) if out else flat.new_zeros(0, dtype=cdt)
    return res.reshape(ids.shape)


def entropy_from_logits(logits: Tensor, mask: Tensor | None = None, *, temperature: float = 1.0,
                        chunk_rows: int = 1024) -> Tensor:
    """Mean per-token entropy of ``softmax(logits / temperature)`` over masked positions (for logging).

    ``H = -sum_v p_v * log p_v`` with ``p = softmax(z)`` per position, averaged over positions with
    ``mask`` True (all positions if ``mask`` is None). Computed row-chunked in float32 (or float64),
    without gradient.

    Args:
        logits: float ``(..., V)``, e.g. ``(B, L, V)``; mask: bool ``(...)``, e.g. ``(B, L)``.

    Returns:
        0-dim float tensor (detached); 0 when no position is masked.
    """
    if temperature <= 0:
        raise ValueError("temperature must be > 0")
    V = logits.shape[-1]
    if mask is not None and mask.shape != logits.shape[:-1]:
        raise ValueError(f"mask {tuple(mask.shape)} must match logits {tuple(logits.shape)} without the last dim")
    cdt = _compute_dtype(logits)
    with torch.no_grad():
        flat = logits.detach().reshape(-1, V)
        parts = []
        for start in range(0, flat.shape[0], max(int(chunk_rows), 1)):
            z = flat[start:start + chunk_rows].to(cdt)
            if temperature != 1.0:
                z = z / temperature
            logp = z - torch.logsumexp(z, dim=-1, keepdim=True)
            p = logp.exp()
            # -sum p log p, with 0 * log 0 = 0 (logits of -inf, e.g. a masked vocabulary, stay finite)
            parts.append(-torch.where(p > 0, p * logp, torch.zeros((), dtype=cdt, device=z.device)).sum(dim=-1))
        ent = torch.cat(parts) if parts else flat.new_zeros(0, dtype=cdt)
        if mask is None:
            m = torch.ones_like(ent, dtype=torch.bool)
        else:
            m = mask.reshape(-1).to(device=ent.device, dtype=torch.bool)
        n = m.sum()
        total = torch.where(m, ent, torch.zeros((), dtype=cdt, device=ent.device)).sum()
        return total / n.clamp(min=1).to(cdt)
