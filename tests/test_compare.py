"""Output comparison in blocks: the same verdicts and numbers as a whole-tensor check, for any strides."""
import math

import pytest
import torch

from drk.gym.common import compare


def test_blocks_cover_every_element_once_for_any_shape():
    for shape in [(), (7,), (5, 3), (2, 9, 4), (1, 40), (3, 0, 2)]:
        t = torch.arange(math.prod(shape), dtype=torch.float64).reshape(shape)
        parts = [t[idx].reshape(-1) for idx in compare.blocks(shape, limit=6)]
        seen = torch.cat(parts) if parts else t.reshape(-1)
        assert torch.equal(seen.sort().values, t.reshape(-1)), shape
        assert all(t[idx].numel() <= max(6, shape[-1] if shape else 1) for idx in compare.blocks(shape, limit=6))


def test_blocked_comparison_matches_whole_tensor(monkeypatch):
    torch.manual_seed(0)
    ref = torch.randn(64, 33).t()  # non-contiguous
    out = ref + 0.001 * torch.randn_like(ref)
    out[3, 7] += 0.5
    whole = compare.compare_outputs([out], [ref], 1e-2)
    monkeypatch.setattr(compare, "CHUNK", 50)
    blocked = compare.compare_outputs([out], [ref], 1e-2)
    assert not whole.ok and not blocked.ok
    assert blocked.message == whole.message and "1 of 2112 values differ" in blocked.message
    assert blocked.max_abs_diff == pytest.approx(float((out - ref).abs().max()))
    assert blocked.mean_abs_diff == pytest.approx(float((out - ref).abs().mean()))


def test_nan_where_reference_is_finite_fails_and_matching_nan_passes(monkeypatch):
    monkeypatch.setattr(compare, "CHUNK", 4)
    ref = torch.ones(3, 5)
    out = ref.clone()
    out[2, 4] = float("nan")
    c = compare.compare_outputs([out], [ref], 1e-2)
    assert not c.ok and "1 of 15 values are NaN/inf" in c.message
    ref[2, 4] = float("nan")
    assert compare.compare_outputs([out], [ref], 1e-2).ok


def test_constants_and_zeros_probes_without_full_size_copies(monkeypatch):
    monkeypatch.setattr(compare, "CHUNK", 8)
    tiny = torch.full((10, 10), 1e-4)
    assert compare.zeros_pass([tiny], 1e-2)
    assert not compare.zeros_pass([torch.randn(10, 10)], 1e-2)
    ref = torch.full((6, 7), 3.0) + 1e-3 * torch.randn(6, 7)
    guess = compare.constant_guess([ref])
    assert guess[0] == pytest.approx(float(ref.double().mean()))
    assert compare.constants_pass(guess, [ref], 1e-2)
    assert not compare.constants_pass(guess, [ref * 2], 1e-2)


def test_integer_outputs_need_exact_match_and_inputs_changed_blockwise(monkeypatch):
    monkeypatch.setattr(compare, "CHUNK", 3)
    a = torch.arange(20).reshape(4, 5)
    b = a.clone()
    b[3, 4] += 1
    c = compare.compare_outputs([b], [a], 1e-2)
    assert not c.ok and "1 of 20 values differ (exact match" in c.message
    x = torch.randn(4, 5)
    x[0, 0] = float("nan")
    y = x.clone()
    assert compare.input_state([x]) == compare.input_state([y])
    y[3, 4] = y[3, 4] + 1
    assert compare.input_state([x]) != compare.input_state([y])


def test_fingerprint_sees_any_in_place_change_but_not_nan_payloads_or_signed_zero(monkeypatch):
    """The input-mutation check compares digests of the inputs before and after the forward."""
    monkeypatch.setattr(compare, "CHUNK", 7)  # several blocks per tensor
    x = torch.randn(6, 5)
    x[0, 0], x[1, 1] = float("nan"), 0.0
    y = x.clone()
    y[0, 0] = torch.tensor(float("nan")).neg()  # another NaN bit pattern
    y[1, 1] = -0.0
    assert compare.fingerprint([x]) == compare.fingerprint([y])
    assert compare.input_state([x]) == compare.input_state([y])
    z = x.clone()
    z[5, 4] = torch.nextafter(z[5, 4], torch.tensor(float("inf")))  # the smallest change of the last element
    assert compare.input_state([x]) != compare.input_state([z])
    s = torch.arange(12.0)
    t = s.clone()
    t[[2, 9]] = t[[9, 2]]  # the same values in other places: the position weights tell
    assert compare.fingerprint([s]) != compare.fingerprint([t])
    for a in (torch.tensor([True, False, True]), torch.randn(4, dtype=torch.bfloat16),
              torch.randn(3, dtype=torch.complex64), torch.arange(5, dtype=torch.int64)):
        b = a.clone()
        b[-1] = ~b[-1] if b.dtype == torch.bool else b[-1] + 1
        assert compare.fingerprint([a, 3]) == compare.fingerprint([a.clone(), 4]) != compare.fingerprint([b, 3])
    assert compare.input_state([torch.zeros(4)]) != compare.input_state([torch.zeros(2, 2)])  # a reshape: a change
