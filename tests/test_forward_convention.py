"""The candidate's forward, as the runner calls it (`harness.forward(..., plain=True)`): a tensor subclass
output and a current stream left changed are refused as hacks (`harness.Refused`), an honest forward is not.
The stream case needs CUDA for real; here the current-stream reading is replaced, so the rule is tested on
any machine (GPU: tests/attacks/g10_side_stream_left_current.py)."""
from __future__ import annotations

import pytest
import torch

from drk.gym.common import harness


class Double(torch.nn.Module):
    def forward(self, x):
        return x * 2


class Lazy(torch.Tensor):
    pass


class ReturnsSubclass(torch.nn.Module):
    def forward(self, x):
        return (x * 2).as_subclass(Lazy)


def test_honest_forward_passes():
    out = harness.forward(Double(), [torch.ones(3)], plain=True)
    assert torch.equal(out[0], torch.full((3,), 2.0))


def test_subclass_output_is_refused():
    with pytest.raises(harness.Refused, match="tensor subclass"):
        harness.forward(ReturnsSubclass(), [torch.ones(3)], plain=True)


def test_forward_that_leaves_another_stream_current_is_refused(monkeypatch):
    streams = iter([111, 222])  # before and after the forward: the candidate switched streams
    monkeypatch.setattr(harness, "_current_stream_handle", lambda: next(streams))
    with pytest.raises(harness.StreamChanged, match="another CUDA stream current"):
        harness.forward(Double(), [torch.ones(3)], plain=True)


def test_same_stream_after_forward_passes(monkeypatch):
    monkeypatch.setattr(harness, "_current_stream_handle", lambda: 111)
    assert harness.forward(Double(), [torch.ones(3)], plain=True)[0].sum() == 6


def test_reference_forward_is_not_checked(monkeypatch):
    monkeypatch.setattr(harness, "_current_stream_handle", lambda: pytest.fail("read for a reference forward"))
    harness.forward(Double(), [torch.ones(3)], plain=False)
