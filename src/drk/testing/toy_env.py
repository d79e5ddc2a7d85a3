"""`toy_env()`: a learnable stand-in for the evaluator in `drk rl` tests, passed to `drk.stages.rl.run` or
`train` as `env`. Every kernel evaluates as ok; a turn's reward is about emitting a code block — 1 for a
reply that contains a code fence (```), otherwise 0.1 per backtick (up to 0.9), dense enough for a randomly
initialised policy to climb — and the first prompt asks for one. A run records `env: toy` and resumes only
when it is given again.

    from drk.stages.rl import train
    from drk.testing.toy_env import toy_env
    train(cfg, env=toy_env())

What it is not: an evaluation of anything. The product never imports it (tests/test_rl.py uses it).
"""
from __future__ import annotations

from drk.gym.types import EvalResult
from drk.stages.rl import Environment


class ToyEnv:
    """The evaluator's stand-in: every request is ok, correct and all Triton (the reward is `reward`'s)."""

    def evaluate_batch(self, reqs, on_result=None) -> list[EvalResult]:
        return [EvalResult(task=r.task.id, verdict="ok", compiled=True, correct=True, coverage=1.0) for r in reqs]


def reward(text: str) -> float:
    return 1.0 if "```" in text else min(0.9, 0.1 * text.count("`"))


def prompt(task) -> str:
    return f"Write a python code block for {task.name}."


def toy_env() -> Environment:
    return Environment("toy", ToyEnv(), turn_reward=reward, first_prompt=prompt)
