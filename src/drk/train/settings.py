"""The RL run's settings that are not the run's own: the objective (`AlgoConfig`, used by drk.train.algos)
and which turns reach the loss and how much each weighs (`TurnSelection`, `LossScaling`, used by
drk.train.selection). `drk.stages.rl.RLConfig` nests them as `algo`, `turn_selection` and `loss_scaling`.

They live here, apart from the tensor functions that read them, so that this module does not import torch:
`drk --help` lists every field as an option and must answer instantly. Tested with the functions
(tests/test_algos.py, tests/test_rl_selection.py) and the CLI (tests/test_config_schema.py).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from drk.config import build, expand, option
from drk.gym.reward import RewardWeights

AGGREGATIONS = ("turn-sum", "token-mean")
ADVANTAGE_ESTIMATORS = ("trloo", "grpo")


@dataclass
class AlgoConfig:
    """Every hyperparameter of the RL objective, with the released recipe's values as defaults.

    The functions of this module take plain arguments; this dataclass is what the trainer and the recipes
    hold. ``reward_weights()`` gives the reward's weights and ``mrs_kwargs()`` / ``prs_kwargs()`` /
    ``loss_kwargs()`` the keyword arguments for the matching function, all reflecting the ``use_*`` switches.
    """

    # Reward: the evaluator's (drk.gym.reward), its weights nested whole; flat, so they stay algo.w_c,
    # algo.speedup_cap, ... in recipes and flags.
    reward: RewardWeights = option(factory=RewardWeights, flat=True)
    use_pr: bool = True            # PR: include the coverage term (False is the same as w_p = 0)
    # Returns and advantages.
    gamma: float = 1.0             # discount over turns for returns-to-go
    advantage: str = "trloo"       # "trloo" (the paper) or "grpo" (baseline for comparison)
    grpo_scale_by_std: bool = False  # only for advantage="grpo"
    # MRS: mismatch rejection sampling (training policy vs rollout engine).
    use_mrs: bool = True           # MRS on (off: every trajectory is trained)
    mrs_lower: float = 0.999       # keep a trajectory iff lower <= geometric-mean ratio <= upper
    mrs_upper: float = 1.001       # the upper bound of that ratio
    mrs_veto: float = 1e-4         # drop a turn holding a token with ratio below this
    # PRS: profiling-based rejection sampling of correct turns.
    use_prs: bool = True           # PRS on (off: every correct turn is trained)
    prs_tau: float = 0.3           # keep probability clip((coverage - tau) / s, 0, 1)
    prs_s: float = 0.1             # the ramp width s of that keep probability
    # Policy loss.
    clip_low: float = 0.2          # ratio clipped to [1 - clip_low, 1 + clip_high]
    clip_high: float = 0.28        # the upper clip (clip-higher: wider than clip_low)
    dual_clip: float | None = 3.0  # cap of the per-token loss for negative advantages (-A * dual_clip)
    aggregation: str = "turn-sum"  # "turn-sum" (the paper) or "token-mean"

    def __post_init__(self) -> None:
        if self.aggregation not in AGGREGATIONS:
            raise ValueError(f"aggregation must be one of {AGGREGATIONS}, got {self.aggregation!r}")
        if self.advantage not in ADVANTAGE_ESTIMATORS:
            raise ValueError(f"advantage must be one of {ADVANTAGE_ESTIMATORS}, got {self.advantage!r}")
        if not 0.0 <= self.clip_low < 1.0 or self.clip_high < 0.0:
            raise ValueError("need 0 <= clip_low < 1 and clip_high >= 0")
        if self.dual_clip is not None and self.dual_clip <= 1.0:
            raise ValueError("dual_clip must be > 1 (or None to disable)")
        if self.mrs_lower > self.mrs_upper:
            raise ValueError("mrs_lower must be <= mrs_upper")
        if self.prs_s <= 0.0:
            raise ValueError("prs_s must be > 0")
        if self.gamma < 0.0:
            raise ValueError("gamma must be >= 0")

    def reward_weights(self) -> RewardWeights:
        """The reward's weights, with the coverage term off unless `use_pr`."""
        return self.reward if self.use_pr else dataclasses.replace(self.reward, w_p=0.0)

    def mrs_kwargs(self) -> dict:
        return {"lower": self.mrs_lower, "upper": self.mrs_upper, "veto": self.mrs_veto}

    def prs_kwargs(self) -> dict:
        return {"tau": self.prs_tau, "s": self.prs_s}

    def loss_kwargs(self) -> dict:
        return {"clip_low": self.clip_low, "clip_high": self.clip_high, "dual_clip": self.dual_clip,
                "aggregation": self.aggregation}

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict | None) -> "AlgoConfig":
        """From recipe keys (`w_c` or `reward: {w_c: ...}`); an unknown key is a ConfigError (a ValueError)."""
        return build(cls, expand(cls, d or {}))


LOSS_DENOMINATORS = ("nominal", "kept")
FLAT_GROUP_MODES = ("last-turn", "per-turn", "none")


@dataclass
class LossScaling:
    """How the per-turn losses of one optimizer step become the number that is backpropagated."""

    scale_factor: float = 1000.0     # the loss is divided by this; with grad clip 1.0 it decides whether clipping binds
    denominator: str = "nominal"     # nominal: turn-sums over a fixed row count (released) | kept: mean over kept turns
    nominal_rows: int | None = None  # that fixed count per optimizer step; None: prompts x rollouts x turns x turns

    def __post_init__(self) -> None:
        if self.denominator not in LOSS_DENOMINATORS:
            raise ValueError(f"loss_scaling.denominator must be one of {LOSS_DENOMINATORS}, got {self.denominator!r}")
        if not self.scale_factor > 0:
            raise ValueError("loss_scaling.scale_factor must be > 0")
        if self.nominal_rows is not None and self.nominal_rows <= 0:
            raise ValueError("loss_scaling.nominal_rows must be > 0 (or null)")


@dataclass
class TurnSelection:
    """Which turns reach the loss, besides MRS and PRS."""

    mask_regressed_turns: bool = True   # a turn scoring <= 0 after an earlier turn of its episode scored > 0 is not trained
    mask_no_code_turns: bool = False    # a turn with no extractable code (or an empty reply) is not trained
    mask_failed_episodes: bool = True   # an episode an infrastructure error stopped is not trained at all
    flat_groups: str = "last-turn"      # drop prompts whose rollouts' rewards barely differ: last-turn | per-turn | none
    flat_group_std: float = 1e-3        # "barely differ": the sample std of the group's rewards is below this
    prs_coverage_decimals: int | None = 2  # PRS reads coverage rounded to this many decimals; null: unrounded
    prs_seed_per_rank: bool = True      # every data-parallel rank draws its own PRS decisions

    def __post_init__(self) -> None:
        if self.flat_groups not in FLAT_GROUP_MODES:
            raise ValueError(f"turn_selection.flat_groups must be one of {FLAT_GROUP_MODES}, got {self.flat_groups!r}")
        if self.flat_group_std < 0:
            raise ValueError("turn_selection.flat_group_std must be >= 0")
        if self.prs_coverage_decimals is not None and self.prs_coverage_decimals < 0:
            raise ValueError("turn_selection.prs_coverage_decimals must be >= 0 (or null)")
