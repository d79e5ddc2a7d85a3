"""Data-parallel `drk rl` training on CPU (gloo): two processes with half the rows each make exactly the
update one process makes with all of them (the multi-GPU path, minus the GPUs).

    .venv/bin/python -m pytest tests/test_distributed.py -q
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest
import torch

from conftest import ROOT

HELPER = str(ROOT / "tests" / "dist_train_step.py")


@pytest.mark.slow
def test_two_processes_match_one(tmp_path):
    torchrun = shutil.which("torchrun", path=os.path.dirname(sys.executable)) or shutil.which("torchrun")
    if torchrun is None:
        pytest.skip("torchrun not found")
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"), OMP_NUM_THREADS="1")
    one, two = tmp_path / "one.pt", tmp_path / "two.pt"
    subprocess.run([sys.executable, HELPER, str(one)], env=env, check=True, capture_output=True, timeout=300)
    logs = tmp_path / "logs"
    r = subprocess.run([torchrun, "--nproc_per_node", "2", "--master_port", "29541", "--log-dir", str(logs),
                        "--redirects", "3", HELPER, str(two)], env=env, capture_output=True, text=True, timeout=300)
    # each rank's own output (torchrun's console only shows which rank died, not why)
    ranks = "".join(f"--- {f.relative_to(logs)}\n{f.read_text()[-3000:]}\n" for f in sorted(logs.rglob("*.log")))
    assert r.returncode == 0, ranks + r.stderr[-1500:]
    a, b = torch.load(one), torch.load(two)
    assert abs(a["loss"] - b["loss"]) < 1e-5, (a["loss"], b["loss"])
    worst = 0.0
    for name, ua in a["update"].items():
        ub = b["update"][name]
        scale = ua.abs().max().item() + 1e-12
        worst = max(worst, (ua - ub).abs().max().item() / scale)
    print("max relative update difference:", worst)
    assert any(u.abs().max() > 0 for u in a["update"].values()), "the step changed nothing"
    assert worst < 1e-3  # float32 summation order; a wrong normalisation would be off by ~100%
