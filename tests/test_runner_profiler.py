"""The runner's profiler plumbing on a CUDA candidate, with the profiler and harness replaced by doubles
(the real ones need a GPU; tests/test_profiled_everywhere.py runs them there): every op runs inside a
profiler started before it, and the device activity of a time or profile op is read by the next op."""
from __future__ import annotations

import types

import pytest

from drk.gym.sandbox.runner import Runner


class FakeProfiler:
    def __init__(self, log: list, rows: list, stops_ok: bool = True) -> None:
        self.log, self.rows, self.stops_ok = log, rows, stops_ok
        log.append("start")

    def stop(self) -> None:
        self.log.append("stop")
        if not self.stops_ok:
            raise RuntimeError("profiler is not running")


def runner(log: list, rows: list, stops_ok: bool = True) -> tuple[Runner, list]:
    r = Runner.__new__(Runner)
    replies: list = []
    r.cuda = True
    r.start_profiler = lambda: FakeProfiler(log, rows, stops_ok)
    r.harness = types.SimpleNamespace(device_rows=lambda prof: list(prof.rows))
    r.policy = types.SimpleNamespace(violations=[])
    r.reply = lambda header, frames=(): replies.append(header)
    r._kept = {}
    r.ambient, r._ambient = False, None  # the per-op profiler (DRK_PROFILER's default)
    return r, replies


def test_every_op_runs_inside_a_profiler_started_before_it():
    log: list = []
    r, replies = runner(log, [])
    r.run_op(lambda h, p: (log.append("op"), r.reply({"op": "forward", "ok": True})), {}, None)
    assert log == ["start", "op", "stop"] and replies == [{"op": "forward", "ok": True}]


def test_a_time_ops_device_rows_are_read_by_the_next_op_outside_its_clock():
    log: list = []
    rows = [{"name": "my_kernel", "ms": 1.0, "calls": 170}]
    r, replies = runner(log, rows)

    r.run_op(lambda h, p: r.reply({"op": "time", "ok": True}), {"op": "time"}, None)
    assert replies == [{"op": "time", "ok": True}]  # the timing reply goes before its profiler stops
    r.run_op(r.op_rows, {"op": "rows", "of": "time"}, None)
    assert replies[-1] == {"op": "rows", "ok": True, "rows": rows}
    r.run_op(lambda h, p: r.reply({"op": "forward", "ok": True}), {"op": "forward"}, None)
    assert r._kept == {}  # read once; an op that keeps nothing leaves nothing


def test_a_profiler_stopped_by_candidate_code_is_a_violation_and_its_rows_are_refused():
    log: list = []
    r, replies = runner(log, [], stops_ok=False)

    r.run_op(lambda h, p: r.reply({"op": "profile", "ok": True}), {"op": "profile"}, None)
    assert r.policy.violations and "profiler" in r.policy.violations[0]
    r.run_op(r.op_rows, {"op": "rows", "of": "profile"}, None)
    assert replies[-1]["ok"] is False and replies[-1]["kind"] == "forbidden"


def test_a_time_op_that_failed_keeps_no_device_rows():
    log: list = []
    r, _ = runner(log, [{"name": "my_kernel", "ms": 1.0, "calls": 1}])

    def failing(h, p):
        raise RuntimeError("the candidate raised in a timed call")
    try:
        r.run_op(failing, {"op": "time"}, None)
    except RuntimeError:
        pass
    assert log == ["start", "stop"] and r._kept == {}


def test_time_and_profile_ops_run_back_to_back_keep_their_own_rows_each_read_once():
    """The judge runs the time and the profile op in one exclusive hold of the GPU and reads both after it:
    neither op's activity may stand in for the other's, and neither can be read twice."""
    log: list = []
    r, replies = runner(log, [])
    r.start_profiler = lambda: FakeProfiler(log, [{"name": f"k{len(log)}", "ms": 1.0, "calls": 1}])
    r.run_op(lambda h, p: r.reply({"op": "time", "ok": True}), {"op": "time"}, None)
    r.run_op(lambda h, p: r.reply({"op": "profile", "ok": True}), {"op": "profile"}, None)
    r.run_op(r.op_rows, {"op": "rows", "of": "profile"}, None)
    prof_rows = replies[-1]["rows"]
    r.run_op(r.op_rows, {"op": "rows", "of": "time"}, None)
    time_rows = replies[-1]["rows"]
    assert time_rows != prof_rows and {time_rows[0]["name"], prof_rows[0]["name"]} == {"k0", "k2"}
    assert time_rows[0]["name"] == "k0"  # the time op's profiler started first
    for of in ("time", "profile", "forward"):
        with pytest.raises(RuntimeError, match="no profiled"):
            r.run_op(r.op_rows, {"op": "rows", "of": of}, None)
