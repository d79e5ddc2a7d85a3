"""The per-turn reward, computed from evaluator results only (shared by collect, eval, infer and rl).

    r = C * (w_c + w_s * min(speedup, cap) + w_p * coverage)

C = 1 only for verdict `ok` (correct, Triton did the work, no hack or forbidden action); failures,
`no_triton`, `forbidden` and `hacked` score 0. Released Dr. Kernel recipe: w_c = w_s = w_p = 0.5, cap 3.
Speedup unknown (CPU evaluation) or coverage unknown → that term is 0. The same formula over tensors is
`drk.train.algos.turn_rewards`; a test keeps the two in agreement.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from drk.gym.types import OK, EvalResult


@dataclass
class RewardWeights:
    w_c: float = 0.5          # correctness
    w_s: float = 0.5          # speedup (vs eager), capped
    w_p: float = 0.5          # profiling-based reward (PR): Triton coverage; 0 turns PR off
    speedup_cap: float = 3.0


def _finite(x) -> float:
    return float(x) if x is not None and math.isfinite(float(x)) else 0.0


def turn_reward(result: EvalResult | dict, w: RewardWeights | None = None) -> float:
    w = w or RewardWeights()
    get = result.get if isinstance(result, dict) else lambda k, d=None: getattr(result, k, d)
    if get("verdict") != OK:
        return 0.0
    speedup = min(_finite(get("speedup")), w.speedup_cap)
    return w.w_c + w.w_s * speedup + w.w_p * _finite(get("coverage"))
