"""How a CUDA candidate's ops are profiled (`Runner.run_op`): per op by default, or with DRK_PROFILER=ambient one
profiler kept across the ops whose activity nobody reads. The runner's bookkeeping is checked here with a
scripted profiler (no GPU); the GPU tests in test_profiled_everywhere.py check the profiled behaviour itself."""
from __future__ import annotations

import pytest

from drk.gym.judge.evaluation import profiler_mode
from drk.gym.sandbox.runner import Runner


class _Profilers:
    """A stand-in for the torch profiler: one may run at a time in a process, as with the real one."""

    def __init__(self) -> None:
        self.running = None
        self.started = self.stopped = 0

    def start(self):
        assert self.running is None, "a second profiler started while one runs"
        owner = self

        class Prof:
            def stop(self):
                if owner.running is not self:
                    raise RuntimeError("profiler not running")
                owner.running = None
                owner.stopped += 1
        p = Prof()
        self.running = p
        self.started += 1
        return p

    def enabled(self) -> bool:
        return self.running is not None


class _Policy:
    def __init__(self) -> None:
        self.violations: list[str] = []


def _runner(profilers: _Profilers) -> Runner:
    r = Runner.__new__(Runner)  # no process, no CUDA: only what run_op reads
    r.cuda, r.ambient, r._ambient, r._kept = True, False, None, {}
    r.start_profiler, r._profiling, r.policy = profilers.start, profilers.enabled, _Policy()
    return r


def _op(seen: list, profilers: _Profilers, stop_it: bool = False):
    def handler(h, payload):
        seen.append((h["op"], profilers.enabled()))
        if stop_it:  # candidate code stopping the evaluator's profiler
            profilers.running.stop()
    return handler


@pytest.mark.parametrize("mode", ["per-op", "ambient"])
def test_every_op_of_a_cuda_candidate_runs_profiled_in_either_mode(mode):
    p, seen = _Profilers(), []
    r = _runner(p)
    for op in ("load", "forward", "forward", "time", "rows", "forward", "profile", "rows"):
        r.run_op(_op(seen, p), {"op": op, "profiler": mode}, None)
    assert all(on for _, on in seen)
    assert set(r._kept) == {"time", "profile"} and r.policy.violations == []  # the fakes here read no rows


def test_ambient_mode_keeps_one_profiler_across_ops_that_read_no_rows_and_a_fresh_one_for_time_and_profile():
    p, seen = _Profilers(), []
    r = _runner(p)
    for op in ("load", "forward", "forward", "forward"):
        r.run_op(_op(seen, p), {"op": op, "profiler": "ambient"}, None)
    assert (p.started, p.stopped) == (1, 0)
    r.run_op(_op(seen, p), {"op": "time"}, None)  # ambient stopped, the op's own started and stopped
    assert (p.started, p.stopped) == (2, 2) and "time" in r._kept
    r.run_op(_op(seen, p), {"op": "forward"}, None)
    assert (p.started, p.stopped) == (3, 2)


def test_per_op_mode_starts_and_stops_a_profiler_around_every_op():
    p, seen = _Profilers(), []
    r = _runner(p)
    for op in ("load", "forward", "forward"):
        r.run_op(_op(seen, p), {"op": op, "profiler": "per-op"}, None)
    assert (p.started, p.stopped) == (3, 3)


def test_a_candidate_that_stops_the_ambient_profiler_is_a_violation_and_profiling_resumes():
    p, seen = _Profilers(), []
    r = _runner(p)
    r.run_op(_op(seen, p), {"op": "load", "profiler": "ambient"}, None)
    r.run_op(_op(seen, p, stop_it=True), {"op": "forward"}, None)
    assert r.policy.violations == ["candidate code stopped or replaced the evaluator's profiler"]
    r.run_op(_op(seen, p), {"op": "forward"}, None)
    assert seen[-1] == ("forward", True)


def test_an_unknown_profiler_mode_fails_with_its_name(monkeypatch):
    monkeypatch.setenv("DRK_PROFILER", "sometimes")
    with pytest.raises(ValueError, match="DRK_PROFILER='sometimes'"):
        profiler_mode()
    monkeypatch.setenv("DRK_PROFILER", "ambient")
    assert profiler_mode() == "ambient"
    monkeypatch.delenv("DRK_PROFILER")
    assert profiler_mode() == "per-op"


def test_settle_stops_the_ambient_profiler_outside_the_next_op_and_runs_no_profiler_itself():
    p, seen, replies = _Profilers(), [], []
    r = _runner(p)
    r.reply = replies.append
    r.run_op(_op(seen, p), {"op": "load", "profiler": "ambient"}, None)
    r.run_op(r.op_settle, {"op": "settle"}, None)
    assert (p.started, p.stopped, p.running) == (1, 1, None) and replies == [{"op": "settle", "ok": True}]
    assert r.policy.violations == []
    r.run_op(_op(seen, p), {"op": "time"}, None)
    assert (p.started, p.stopped) == (2, 2)
