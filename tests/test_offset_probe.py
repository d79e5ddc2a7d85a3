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
