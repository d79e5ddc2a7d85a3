"""The per-turn reward: the one definition, computed from evaluator results only (used by collect, eval,
infer, rl and the tests).

    r = C * (w_c + w_s * min(speedup, cap) + w_p * coverage)

C = 1 only for verdict `ok` (correct, Triton did the work, no hack or forbidden action); failures,
`no_triton`, `forbidden`, `hacked` and `infra_error` score 0 (an infra_error turn is also never trained
on). Released Dr. Kernel recipe: w_c = w_s = w_p = 0.5, cap 3. Speedup or coverage unknown (None or NaN:
CPU evaluation, no profile) → that term is 0; a speedup of +inf is capped like any other, as the released
code's clip does.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from drk.gym.types import OK, EvalResult


@dataclass
class RewardWeights:
    w_c: float = 0.5          # weight of correctness
    w_s: float = 0.5          # weight of the speedup over eager, capped at speedup_cap
    w_p: float = 0.5          # weight of the profiling-based reward (PR: Triton coverage); 0 turns PR off
    speedup_cap: float = 3.0  # speedups above this earn no more (timing noise and outliers cannot buy reward)


def _known(x) -> float:
    """0 for an unknown value (None, NaN); +inf stays +inf (min() with the cap handles it)."""
    return 0.0 if x is None or math.isnan(float(x)) else float(x)


def turn_reward(result: EvalResult | dict, w: RewardWeights | None = None) -> float:
    w = w or RewardWeights()
    get = result.get if isinstance(result, dict) else lambda k, d=None: getattr(result, k, d)
    if get("verdict") != OK:
        return 0.0
    speedup = min(max(_known(get("speedup")), 0.0), w.speedup_cap)
    coverage = min(max(_known(get("coverage")), 0.0), 1.0)
    return w.w_c + w.w_s * speedup + w.w_p * coverage
