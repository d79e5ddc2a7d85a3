"""Property: the next candidate's process, started on a thread of the judge while the current evaluation
runs (so its start-up can hold the GPU like any other work, drk.gym.judge.devicelock), serves the next
evaluation like one started on demand; and a spare that failed to start costs the next candidate nothing.
On CPU, with the switch a CUDA judge has on (`Judge.keep_spare`)."""
from __future__ import annotations

import pytest
from conftest import ROOT

from drk.gym import EvalOptions, EvalRequest
from drk.gym.judge.evaluation import SpareStart
from drk.tasks import task_from_file

TASK = task_from_file(ROOT / "data/queries/001_scaled_tanh_bias.py")
GOOD = (ROOT / "data/query_solutions/001_scaled_tanh_bias.py").read_text()
OPTS = EvalOptions(device="cpu", input_budget_mb=0.25, trials=2)


@pytest.fixture(scope="module")
def judge(cpu_judge):
    cpu_judge.keep_spare = True
    return cpu_judge


def test_the_spare_started_on_its_thread_serves_the_next_evaluation(judge):
    first = judge.evaluate(EvalRequest(TASK, GOOD, OPTS))
    spare = judge.spare
    assert first.verdict == "ok" and spare is not None
    started = spare.take()
    assert started is not None and started.hello and started.hello.get("op") == "hello"
    second = judge.evaluate(EvalRequest(TASK, GOOD, OPTS))
    assert second.verdict == "ok" and second.trials_passed == first.trials_passed
    assert judge.spare is not spare  # taken, and the next one started


def test_a_spare_that_failed_to_start_costs_the_next_candidate_nothing(judge):
    judge.evaluate(EvalRequest(TASK, GOOD, OPTS))
    spare = judge.spare
    spare.discard()  # as if its start had failed: nothing to take
    assert spare.take() is None
    after = judge.evaluate(EvalRequest(TASK, GOOD, OPTS))
    assert after.verdict == "ok", after.error


def test_the_spare_start_never_overlaps_a_measurement(judge, tmp_path):
    import time

    from drk.gym.judge.devicelock import DeviceLock, NoLock

    judge.gpu = DeviceLock("spare-test", str(tmp_path))  # as on CUDA
    try:
        for delay in (0.0, 0.02, 0.1):  # the measurement asks as the spare starts, while it starts, or after
            if judge.spare is not None:
                judge.spare.discard()
            judge.spare = spare = SpareStart(judge)
            time.sleep(delay)
            with judge.on_gpu(measure=True):
                t_in = time.monotonic()
                time.sleep(0.2)
                t_out = time.monotonic()
            r = spare.take()
            assert r is not None and r.ready_at is not None
            assert r.ready_at <= t_in or r.spawned_at >= t_out, (r.spawned_at, r.ready_at, t_in, t_out)
    finally:
        judge.gpu = NoLock()
