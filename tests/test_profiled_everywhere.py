"""On a GPU, every op of a candidate runs under the evaluator's profiler, so a candidate cannot behave one
way when its coverage is measured and another when it is timed or checked, and the timed calls' own device
activity must show the work a profiled forward does.

    .venv/bin/python -m pytest tests/test_profiled_everywhere.py -q -m gpu     # on a CUDA machine
"""
from __future__ import annotations

import pytest
from conftest import ROOT

from drk.gym import EvalOptions, EvalRequest, LocalPool
from drk.tasks import task_from_file

TASK = ROOT / "data/queries/001_scaled_tanh_bias.py"


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    reqs = [EvalRequest(task_from_file(TASK), (ROOT / path).read_text(), EvalOptions(device="cuda"), solution=name)
            for name, path in (("profiler_aware", "tests/attacks/d04_profiler_aware.py"),
                               ("honest", "data/query_solutions/001_scaled_tanh_bias.py"))]
    with LocalPool(device="cuda", workers=1, cache_dir=str(tmp_path_factory.mktemp("cache"))) as pool:
        return {r.solution: r for r in pool.evaluate_batch(reqs)}


@pytest.mark.gpu
def test_a_candidate_that_runs_triton_only_when_profiled_is_timed_doing_that_work(results):
    """tests/attacks/d04 runs its Triton kernel only while a profiler is on and torch otherwise (about 4x
    slower on an H200). Profiled in every op, it is always on its Triton path: if it is paid for coverage,
    its timed calls did the same Triton work as the honest kernel."""
    r, honest = results["profiler_aware"], results["honest"]
    if r.verdict == "ok":
        assert r.coverage is not None and r.coverage > 0.9, r.coverage
        assert r.runtime_ms <= 1.15 * honest.runtime_ms, (r.runtime_ms, honest.runtime_ms)


@pytest.mark.gpu
def test_an_honest_kernel_keeps_full_coverage_under_the_always_on_profiler(results):
    r = results["honest"]
    assert r.verdict == "ok", (r.verdict, r.error)
    assert r.coverage is not None and r.coverage > 0.9, r.coverage
    assert r.kernels and any(k["triton"] for k in r.kernels), r.kernels


@pytest.mark.gpu
def test_timed_calls_told_apart_by_their_spacing_do_not_score(tmp_path, monkeypatch):
    """tests/attacks/d08 hands calls that come back to back (a timing loop) the previous output. The static
    layer refuses the way it imports `time`, so it runs with the rules off, against the evidence alone: the
    timing op's own device activity shows the kernels did not run in the timed calls."""
    monkeypatch.setenv("DRK_STATIC_RULES", "off")
    source = (ROOT / "tests/attacks/d08_call_interval_detect.py").read_text()
    with LocalPool(device="cuda", workers=1, cache_dir=str(tmp_path)) as pool:
        r = pool.evaluate(EvalRequest(task_from_file(TASK), source, EvalOptions(device="cuda")))
    assert r.verdict == "hacked" and "timed_work_skipped" in r.flags, (r.verdict, r.flags, r.speedup, r.error)
