"""The offset probe (inputs shifted far from zero) judges a kernel's algorithm, never the matmul precision
the correctness trials accept.

    .venv/bin/python -m pytest tests/test_offset_probe.py -q -m gpu     # on a CUDA machine
"""
from __future__ import annotations

import pytest
from conftest import ROOT

from drk.gym import EvalOptions, EvalRequest, LocalPool
from drk.tasks import task_from_file


@pytest.mark.gpu
def test_a_tf32_gemm_that_passes_the_trials_is_not_rejected_by_the_offset_probe(kb, tmp_path):
    """Shifting a GEMM's input by 1000 std makes outputs that cancel to near zero, where a TF32 product (what
    tl.dot computes by default, and what the trials' tolerance accepts) misses the float32 reference by
    more than atol; the task computed with TF32 matmuls misses it the same way, so the miss is evidence of
    nothing the kernel's algorithm does (KernelBench level 2/12 at its own shapes, judged `incorrect`
    before)."""
    name = "12_Gemm_Multiply_LeakyReLU.py"
    task = task_from_file(kb / "level2" / name)
    source = (ROOT / "data/solutions/level2" / name).read_text()
    with LocalPool(device="cuda", workers=1, cache_dir=str(tmp_path)) as pool:
        r = pool.evaluate(EvalRequest(task, source, EvalOptions(device="cuda", compile_baseline=False)))
    assert r.verdict == "ok", (r.verdict, r.error)


def test_the_near_probe_moves_a_share_of_the_items_within_a_trials_range_and_shrinks_their_spread():
    """The near probe (attack m10 told the far offset from a trial by its mean): a share of the items, between a
    quarter and all of them (a fixed quarter told the probe apart: attack p06), get a mean 1-3 standard
    deviations away and a spread shrunk 300-1000x, the rest stay as drawn, integers and half precision
    untouched, and the same seed gives the same probe."""
    import torch

    from drk.gym.judge.checks import TrialChecks

    x = 3 * torch.randn(16, 64, 32) + 1
    idx = torch.arange(10)
    out = TrialChecks._near([x, idx, x.half()], seed=5)
    moved, same_idx, same_half = out
    assert same_idx is idx and same_half.dtype == torch.float16 and torch.equal(same_half, x.half())
    changed = [i for i in range(16) if not torch.equal(moved[i], x[i])]
    assert 4 <= len(changed) <= 16
    counts = [sum(not torch.equal(m, r) for m, r in zip(TrialChecks._near([x], seed=s)[0], x)) for s in range(40)]
    assert min(counts) >= 4 and max(counts) <= 16 and min(counts) <= 6 and max(counts) >= 14, counts
    spread = float(x.std())
    for i in changed:
        assert spread <= abs(float(moved[i].mean() - x[i].mean())) <= 3 * spread + 1e-3
        assert 1e-3 * 0.9 <= float(moved[i].std() / x[i].std()) <= 10 ** -2.5 * 1.1
    assert float(moved.abs().max()) < float(x.abs().max()) + 3 * spread  # values stay in a trial's range
    assert all(torch.equal(a, b) for a, b in zip(TrialChecks._near([x], seed=5), [moved]))
    assert TrialChecks._near([idx], seed=5) is None


def test_the_item_offset_probe_gives_every_item_a_large_offset_of_its_own():
    """One offset for all let a softmax that subtracts a global maximum pass (attack p05) and told the probe
    apart ("every row has the same large mean", p06): each item along the first dimension gets its own, 500-1000
    standard deviations either way, its spread kept; the common-offset probe stays as it was."""
    import torch

    from drk.gym.judge.checks import TrialChecks

    x = torch.randn(32, 48, dtype=torch.float64)
    spread = float(x.std())
    moved = TrialChecks._offset([x], seed=3)[0]
    shifts = (moved - x).mean(dim=1)
    assert torch.allclose(moved - x, shifts[:, None].expand_as(x))  # one offset per item, spread kept
    assert bool(((shifts.abs() >= 500 * spread - 1e-6) & (shifts.abs() <= 1000 * spread + 1e-6)).all())
    assert bool((shifts > 0).any()) and bool((shifts < 0).any())
    assert len({round(float(v), 3) for v in shifts}) == 32  # all different
    common = TrialChecks._offset([x])[0] - x
    assert torch.allclose(common, torch.full_like(x, 1000 * spread))

