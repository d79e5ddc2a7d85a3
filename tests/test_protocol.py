"""One protocol: the options the evaluation cache keys on are exactly the ones the judge records in a result.

    .venv/bin/python -m pytest tests/test_protocol.py -q
"""
from __future__ import annotations

import dataclasses

from conftest import ROOT

from drk.gym import EvalOptions, EvalRequest
from drk.gym.judge.evaluation import protocol_of
from drk.gym.transport.cache import content_key
from drk.tasks import task_from_file

TASK = task_from_file(ROOT / "data/queries/001_scaled_tanh_bias.py")


def _changed(value):
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)):
        return value + 1
    if value is None:
        return 0.5
    return value + "-other"


def test_every_option_but_the_wall_budget_changes_the_cache_key_and_is_recorded():
    base = EvalOptions(device="cpu")
    key = content_key(EvalRequest(TASK, "src", base))
    recorded = protocol_of(base, cuda=False)
    for f in dataclasses.fields(EvalOptions):
        other = dataclasses.replace(base, **{f.name: _changed(getattr(base, f.name))})
        same = content_key(EvalRequest(TASK, "src", other)) == key
        if f.name == "timeout_s":
            assert same and f.name not in recorded
        else:
            assert not same, f"{f.name} does not change the cache key"
            assert f.name in recorded, f"{f.name} is not recorded with the result"
