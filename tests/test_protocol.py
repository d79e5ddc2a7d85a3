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


def test_the_probes_cost_no_more_than_a_few_passes_over_the_inputs():
    """At KernelBench's full shapes (level-1 elementwise: 1.6e9 elements per input) the judge spent minutes
    on the CPU planting the wide probe's elements (a random permutation of every index) while the GPU sat
    idle and the candidate waited: every full-size task timed out. Planting and shifting must cost about
    what a few passes over the input cost, whatever its size."""
    import time

    import torch

    from drk.gym.judge.checks import TrialChecks

    x = torch.randn(2**26)

    def best(fn):
        ts = []
        for _ in range(2):
            t0 = time.perf_counter()
            fn()
            ts.append(time.perf_counter() - t0)
        return min(ts)

    passes = best(lambda: (x.clone(), x.min(), x.max(), torch.std_mean(x)))
    assert best(lambda: TrialChecks._widened([x], 7)) < 4 * passes
    assert best(lambda: TrialChecks._offset([x])) < 4 * passes
    assert best(lambda: TrialChecks._offset([x], 7)) < 4 * passes
    wide = TrialChecks._widened([x], 7)[0]
    assert 1 <= int((wide != x).sum()) <= 8  # still a few planted elements, as before


def test_eval_mode_trials_come_before_every_probe_that_shifts_inputs_in_any_order_otherwise():
    """Every eval-mode trial precedes every probe whose inputs stress the arithmetic (their train-mode calls
    would leave BatchNorm's running statistics degenerate for a later eval-mode check), nothing is lost or
    repeated, and the order is otherwise random: each eval trial and each probe takes each of its possible
    places, and the ablation and the train-mode trials go anywhere."""
    import random

    from drk.gym.judge.checks import MODES, eval_trials_first

    n = 5
    base = [("trial", k) for k in range(1, n)] + [(w, n + i) for i, w in enumerate(
        ("wide", "ablation", "offset", "near", "offset_items", "near_all", "edge"))]
    seen: dict[tuple, set[int]] = {x: set() for x in base}
    rng = random.Random(0)
    for _ in range(3000):
        plan = list(base)
        rng.shuffle(plan)
        out = eval_trials_first(plan)
        assert sorted(out) == sorted(base)
        evals = [i for i, x in enumerate(out) if x[0] == "trial" and not MODES[x[1] % 4][0]]
        shifted = [i for i, x in enumerate(out) if x[0] not in ("trial", "ablation")]
        assert max(evals) < min(shifted), out
        for i, x in enumerate(out):
            seen[x].add(i)
    places = {x: len(p) for x, p in seen.items()}
    # 11 places: an eval trial can be anywhere up to the spot before the 6 shifted probes, the ablation and the
    # train-mode trials anywhere, each shifted probe anywhere after the two eval trials
    assert places[("ablation", n + 1)] == len(base) and places[("trial", 1)] == len(base), places
    assert places[("trial", 2)] == len(base) - 6 and places[("offset", n + 2)] == len(base) - 2, places


def test_train_mode_without_random_modules_keeps_batch_statistics_and_drops_no_element():
    """The train-mode computation an eval-mode output may match (`TrialChecks._matches_train_mode`): BatchNorm
    normalises by the batch's statistics, and Dropout, whose draws no other process can match, passes its input
    through; with random modules on, Dropout draws as usual."""
    import torch

    from drk.gym.common import harness

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.BatchNorm1d(8), torch.nn.Dropout(0.5))
    x = 3.0 * torch.randn(64, 8) + 2.0
    batch_norm = (x - x.mean(0)) / torch.sqrt(x.var(0, unbiased=False) + 1e-5)
    out = harness.forward(model, [x], train=True, grad=False, random_modules=False)[0]
    assert torch.allclose(out, batch_norm, atol=1e-5)
    dropped = harness.forward(model, [x], train=True, grad=False)[0]
    assert int((dropped == 0).sum()) > 100  # half of 512 elements, give or take
