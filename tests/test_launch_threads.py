"""Triton launches made beside the forward. Properties (evidence_outside): a launch from a thread other than
the one the evaluator runs its op on is refused and counted (attacks q03, q05: a thread of the candidate's
keeps the source's kernel busy in every profiled window); and the judge counts of each kernel no more
executions in the profiler's rows than the op launched through Triton's launch path (attack q04: the same
thread running the compiled kernel directly, around the hook)."""
from __future__ import annotations

import threading
import types

import pytest

from drk.gym.judge.checks import kernel_work, timed_work_problem
from drk.gym.sandbox import triton_hooks


def _hooked():
    rec = triton_hooks.LaunchRecorder()
    ran: list = []
    run = triton_hooks._wrap(lambda self, *a, grid=None, warmup=False, **k: ran.append(a), rec)
    kernel = types.SimpleNamespace(fn=types.SimpleNamespace(__name__="busy_kernel"))
    return rec, ran, lambda: run(kernel, 1, grid=(1,))


def test_a_launch_from_the_ops_thread_runs_and_is_counted():
    rec, ran, launch = _hooked()
    launch()
    launch()
    assert len(ran) == 2 and rec.counts() == {"busy_kernel": 2} and rec.foreign == 0


def test_a_launch_from_another_thread_is_refused_and_counted(monkeypatch):
    rec, ran, launch = _hooked()
    errors: list = []
    monkeypatch.setattr(threading, "get_ident", lambda: rec.owner)  # a candidate's disguise changes nothing

    def other():
        try:
            launch()
        except RuntimeError as e:
            errors.append(str(e))
    t = threading.Thread(target=other)
    t.start()
    t.join()
    assert not ran and rec.counts() == {} and rec.foreign == 1
    assert errors and "thread other than the one the evaluator called the forward on" in errors[0]
    rec.reset()
    assert rec.foreign == 1  # never reset: the runner reports it with its next reply


ROWS = [{"name": "busy_kernel", "ms": 8.0, "calls": 40}, {"name": "one_kernel", "ms": 0.01, "calls": 1},
        {"name": "elementwise_kernel", "ms": 0.3, "calls": 3}]


def test_executions_beyond_the_launches_are_not_the_forwards_work():
    names = {"busy_kernel", "one_kernel"}
    assert kernel_work(ROWS, names, {"busy_kernel": 40, "one_kernel": 1}) == (pytest.approx(8.01), 41)
    ms, n = kernel_work(ROWS, names, {"one_kernel": 1})  # busy_kernel ran 40 times, launched none
    assert ms == pytest.approx(0.01) and n == 1
    ms, n = kernel_work(ROWS, names, {"busy_kernel": 4, "one_kernel": 1})
    assert ms == pytest.approx(0.81) and n == 5
    for forged in (None, "all", {"busy_kernel": "40"}, {"busy_kernel": -3}):  # not a count: counts as none
        assert kernel_work(ROWS, {"busy_kernel"}, forged) == (0.0, 0)


def test_the_timed_work_check_uses_the_counted_executions():
    """A timed op whose source-kernel executions came around the launch path (none launched) shows no work."""
    names = {"busy_kernel"}
    profiled = kernel_work([{"name": "busy_kernel", "ms": 0.2, "calls": 1}], names, {"busy_kernel": 1})
    timed_rows = [{"name": "busy_kernel", "ms": 20.0, "calls": 100}]
    assert timed_work_problem(profiled, kernel_work(timed_rows, names, {"busy_kernel": 100}), 100) == ""
    assert "ran the kernels 0 times" in timed_work_problem(profiled, kernel_work(timed_rows, names, {}), 100)
