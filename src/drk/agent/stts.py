"""Sequential test-time scaling (STTS), as in the paper: keep every turn; each new context is the first
prompt plus `keep` past turns chosen by reward (`topw`, the paper) or the best consecutive window
(`window`, the released code); the answer is the best correct turn.

Schedule: a first iteration of `turns` turns (the plain multi-turn episode), then `iterations - 1` more
iterations of `turns_per_iteration` turns each, every one built from the selected history. The released
evaluation (5 turns, 10 iterations, keep 4) thus makes 5 + 9 = 14 turns.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable

from drk.agent.episode import Episode, EpisodeConfig, new_episode, run_episodes
from drk.engines.base import Engine
from drk.tasks import Task


@dataclass
class STTSConfig:
    iterations: int = 10          # the first multi-turn iteration counts as one
    turns: int = 5                # turns in the first iteration
    turns_per_iteration: int = 1  # turns in every later iteration
    keep: int = 4                 # past turns carried into each new context
    select: str = "topw"          # topw | window


def total_turns(scfg: STTSConfig) -> int:
    return scfg.turns + max(0, scfg.iterations - 1) * max(1, scfg.turns_per_iteration)


def run_stts(task: Task, engine: Engine, gym, cfg: EpisodeConfig, scfg: STTSConfig,
             on_turn: Callable[[Episode], None] | None = None, episode: Episode | None = None) -> Episode:
    """The whole schedule is one episode whose every context is built from the selected history.
    `episode`: the turns of an interrupted run, continued from where they stopped."""
    ep = episode or new_episode(task, 0, cfg, salt="stts")
    turns = total_turns(scfg)
    run_episodes([ep], engine, gym, replace(cfg, turns=turns, history=scfg.select, keep=scfg.keep),
                 on_turn=(lambda t, eps: on_turn(ep)) if on_turn else None)
    return ep
