"""Property: a forward returns tensors of its own, which later calls leave alone (attack s07: one output buffer
kept and filled again on every call, so a caller's earlier outputs silently change; each output was right when
the judge copied it out). The candidate process checks, before each reply, whether the previous call's outputs
that the candidate still holds have changed (`Runner._earlier_outputs_overwritten`); a correct module that keeps
its outputs, or whose freed output's memory the allocator hands back, is not caught (a module returning its
input changed in place: tests/corpus/ok_inplace_reference.py)."""
from __future__ import annotations

import pytest
from conftest import ROOT

from drk.gym import EvalOptions, EvalRequest
from drk.gym import types as T
from drk.tasks import task_from_file

TASK = task_from_file(ROOT / "data/queries/001_scaled_tanh_bias.py")
GOOD = (ROOT / "data/query_solutions/001_scaled_tanh_bias.py").read_text()
OPTS = EvalOptions(device="cpu", input_budget_mb=0.25, trials=3)
RETURN = "        return scaled_tanh_bias(x, self.bias, self.scale)\n"

VARIANTS = {
    # keeps every output it returned, allocating a new one each call: nothing earlier changes
    "keeps its outputs": (RETURN.replace("return ", "y = ") + "        self.kept = getattr(self, 'kept', []) + [y]\n"
                          "        return y\n", T.OK),
    # one buffer per shape, filled again on every call and returned as a view of itself
    "returns a view of one reused buffer": (
        "        y = scaled_tanh_bias(x, self.bias, self.scale)\n"
        "        if not hasattr(self, 'buf'):\n            self.buf = torch.empty(y.numel() + 64)\n"
        "        self.buf[64:].copy_(y.reshape(-1))\n        return self.buf[64:].view(y.shape)\n", T.INCORRECT),
    # a new output each call, the last one freed: the allocator may hand the same memory back, which is no reuse
    "allocates each call": (RETURN, T.OK),
}


@pytest.mark.parametrize("name", list(VARIANTS))
def test_only_a_call_that_changes_an_earlier_output_is_caught(cpu_judge, name):
    body, verdict = VARIANTS[name]
    r = cpu_judge.evaluate(EvalRequest(TASK, GOOD.replace(RETURN, body), OPTS))
    assert r.verdict == verdict, (r.verdict, r.error)
    assert (T.OUTPUT_REUSED in r.flags) == (verdict == T.INCORRECT), r.flags
