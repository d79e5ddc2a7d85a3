"""Property: a failure of the evaluator's own code is never the candidate's. A probe that raised inside the judge
(the near_all probe's first version, on every task with a one-item input: level1/100_HingeLoss on an H100) was
recorded as `crashed`, which RL trains on as the kernel's failure; it is `infra_error` (never trained on), with
the evaluator's error text, and the next evaluation is unaffected. A reply of the candidate's process that is
not a well-formed reply stays the candidate's failure (`replies.CandidateFault`, `crashed`: attack m09, and every
forged field type below)."""
from __future__ import annotations

import pytest
from conftest import ROOT

from drk.gym import EvalOptions, EvalRequest
from drk.gym import types as T
from drk.gym.judge import checks
from drk.tasks import task_from_file

TASK = task_from_file(ROOT / "data/queries/001_scaled_tanh_bias.py")
GOOD = (ROOT / "data/query_solutions/001_scaled_tanh_bias.py").read_text()
OPTS = EvalOptions(device="cpu", input_budget_mb=0.25, trials=2)


def test_an_exception_in_the_judges_checks_is_an_infra_error(cpu_judge, monkeypatch):
    def broken(inputs, seed, together=False):
        raise RuntimeError("a bug in a probe")

    monkeypatch.setattr(checks.TrialChecks, "_near", staticmethod(broken))
    r = cpu_judge.evaluate(EvalRequest(TASK, GOOD, OPTS))
    assert r.verdict == T.INFRA_ERROR and not r.correct, (r.verdict, r.error)
    assert "evaluator error" in r.error and "a bug in a probe" in r.error
    monkeypatch.undo()
    after = cpu_judge.evaluate(EvalRequest(TASK, GOOD, OPTS))
    assert after.verdict == T.OK, after.error


def test_a_one_item_input_goes_through_both_near_probes():
    """The bug itself: the near_all probe's shared draw on an input with one item (a 1-D target vector)."""
    import torch

    t = torch.tensor([1.0, -1.0, 1.0, 1.0, -1.0])
    for together in (False, True):
        out = checks.TrialChecks._near([torch.randn(5, 3), t], seed=3, together=together)
        assert out is not None and out[1].shape == t.shape and torch.isfinite(out[1]).all()


# Candidate code can reach its process's runner (the `self` of the `run_op` frame above its forward) and rewrite
# every reply it sends. Each forgery below puts one field the judge reads in a type the runner never sends; the
# forward is otherwise the correct kernel. Before the judge read every reply through one check
# (`drk.gym.judge.replies`), some of these raised inside the judge and read `infra_error`, a verdict RL never
# trains on, so a way to dodge a penalty.
HOOK = '''
import functools as _ft
_sys = _ft.reduce(getattr, ("serialization", "s" + "ys"), torch)
_frame = getattr(_sys, "_get" + "frame")


def _forge_replies():
    f = _frame(1)
    while f is not None and getattr(f, "f_" + "code").co_name != "run_op":
        f = getattr(f, "f_" + "back")
    runner = getattr(f, "f_" + "locals").get("self")
    if getattr(runner, "_forged", False):
        return
    orig = runner.reply

    def reply(msg, *rest, **kw):
        if isinstance(msg, dict) and msg.get("op") == "forward" and msg.get("ok"):
            FORGE
        return orig(msg, *rest, **kw)

    runner.reply, runner._forged = reply, True
'''
FORGERIES = {  # forgery -> the verdict it must get (the candidate's failure, never the evaluator's)
    'msg["outputs"] = [1] * len(msg["outputs"])': T.CRASHED,  # an output description that is not a dict
    'msg["outputs"] = [dict(d, shape=["x"], written=False) for d in msg["outputs"]]': T.CRASHED,
    'msg["outputs"] = [dict(d, subclass=["Lazy"]) for d in msg["outputs"]]': T.CRASHED,
    'msg["launches"] = [["scaled_tanh_bias_kernel"]]': T.CRASHED,
    'msg["launches"] = [["scaled_tanh_bias_kernel", "fast"]]': T.CRASHED,
    'msg["wall_s"] = "fast"': T.CRASHED,
    'msg["written_share"] = float("nan")': T.CRASHED,
}


@pytest.mark.parametrize("forgery", list(FORGERIES))
def test_a_forged_reply_field_of_the_wrong_type_is_the_candidates_crash(cpu_judge, monkeypatch, forgery):
    monkeypatch.setenv("DRK_STATIC_RULES", "off")  # the hook names frames, which the early layer refuses
    source = GOOD.replace("import triton\n", "import triton\n" + HOOK.replace("FORGE", forgery), 1).replace(
        "    def forward(self, x):\n", "    def forward(self, x):\n        _forge_replies()\n", 1)
    r = cpu_judge.evaluate(EvalRequest(TASK, source, OPTS))
    assert r.verdict == FORGERIES[forgery] and "malformed" in r.error, (r.verdict, r.error)
    after = cpu_judge.evaluate(EvalRequest(TASK, GOOD, OPTS))
    assert after.verdict == T.OK, after.error


# The same reading for the ops only a GPU evaluation sends (the time op, the profiler's rows, the memory op) and
# for the fields every reply carries: each well-formed reply as the runner sends it passes whole, and each field
# put in a type or value it never has is the candidate's fault.
WELL_FORMED = {
    "time": {"op": "time", "ok": True, "b2b": [0.07, 0.071], "stream": [0.07], "device": [0.072], "sync_gap_ms": 0.001,
             "calls": 120, "warmup_calls": 9, "launches": 129, "launch_counts": {"k": 129},
             "gate": {"chunks": 3, "missed": 0}},
    "rows": {"op": "rows", "ok": True, "rows": [{"name": "k", "ms": 0.5, "calls": 7}]},
    "profile": {"op": "profile", "ok": True, "triton": ["k"], "launch_counts": {"k": 1}},
    "memory": {"op": "memory", "ok": True, "peak_bytes": 1 << 20},
    "forward": {"op": "forward", "ok": True, "outputs": [{"dtype": "float32", "shape": [2, 3], "subclass": "",
                                                          "device": "cuda:0", "written": True}],
                "n_outputs": 1, "wall_s": 0.01, "launches": [["k", 0.0001]], "skipped": 0, "inputs_changed": False,
                "written_share": None, "outputs_overwritten": False, "integrity": [], "violations": [],
                "spent": {"inputs": 0.002, "forward": 0.0001}},
}
MALFORMED = [
    ("time", "calls", "120"), ("time", "warmup_calls", -1), ("time", "warmup_calls", 1.5), ("time", "b2b", [0.07, "x"]),
    ("time", "b2b", [float("nan")]), ("time", "sync_gap_ms", float("inf")), ("time", "launch_counts", {"k": "many"}),
    ("time", "gate", [1]), ("rows", "rows", [{"name": "k", "ms": "0.5", "calls": 7}]),
    ("rows", "rows", [{"name": "k", "ms": 0.5, "calls": True}]), ("rows", "rows", [["k", 0.5, 7]]),
    ("rows", "rows", {"k": 0.5}), ("profile", "launch_counts", [["k", 1]]), ("memory", "peak_bytes", "1M"),
    ("forward", "outputs", [{"dtype": "float32", "shape": [2, -3]}]), ("forward", "n_outputs", 1.0),
    ("forward", "integrity", 7), ("forward", "violations", [{"v": 1}]), ("forward", "outputs_overwritten", "no"),
    ("forward", "spent", {"forward": "0.1"}), ("forward", "inputs_changed", [True]), ("forward", "spent", {f"s{i}": 0.0 for i in range(17)}),
]


def test_every_reply_the_runner_sends_reads_whole():
    from drk.gym.judge import replies

    for op, reply in WELL_FORMED.items():
        assert replies.check(op, dict(reply)) == reply


@pytest.mark.parametrize("op,field,value", MALFORMED)
def test_a_reply_field_the_runner_never_sends_is_the_candidates_fault(op, field, value):
    from drk.gym.judge import replies

    with pytest.raises(replies.CandidateFault, match=f"malformed {op} reply .*{field}"):
        replies.check(op, dict(WELL_FORMED[op], **{field: value}))
    with pytest.raises(replies.CandidateFault, match="not a mapping"):
        replies.check(op, [WELL_FORMED[op]])
