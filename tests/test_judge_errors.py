"""Property: a failure of the evaluator's own code is never the candidate's. A probe that raised inside the judge
(the near_all probe's first version, on every task with a one-item input: level1/100_HingeLoss on an H100) was
recorded as `crashed`, which RL trains on as the kernel's failure; it is `infra_error` (never trained on), with
the evaluator's error text, and the next evaluation is unaffected. A reply of the candidate's process that is
not a well-formed reply stays the candidate's failure (`checks.CandidateFault`, `crashed`: attack m09)."""
from __future__ import annotations

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
