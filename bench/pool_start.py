"""How long a fresh pool's first evaluation takes (the judge's and the fork server's start-up included) against
its later ones, on one worker: the cost every `LocalPool` pays once per slot. A benchmark script, not a test:

    PYTHONPATH=src python3 bench/pool_start.py [--device cpu] [--pools 2] [--evals 3]

Prints, per pool, each evaluation's wall seconds and the evaluator's own `total` (the rest of the first one's
wall time is start-up).
"""
from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from drk.gym import EvalOptions, EvalRequest, LocalPool
from drk.tasks import task_from_file

ROOT = Path(__file__).resolve().parent.parent
NAME = "001_scaled_tanh_bias.py"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--pools", type=int, default=2)
    ap.add_argument("--evals", type=int, default=3)
    a = ap.parse_args()
    task = task_from_file(ROOT / "data" / "queries" / NAME)
    source = (ROOT / "data" / "query_solutions" / NAME).read_text()
    opts = EvalOptions(device=a.device, input_budget_mb=0.25, timeout_s=120, input_seed=42)
    for p in range(a.pools):
        with LocalPool(device=a.device, workers=1, cache_dir=tempfile.mkdtemp(prefix="drk-pool-start-")) as pool:
            for k in range(a.evals):
                t0 = time.monotonic()
                r = pool.evaluate(EvalRequest(task, source, opts, solution=f"pool{p}-eval{k}"))
                wall = time.monotonic() - t0
                print(f"pool {p} eval {k}: {r.verdict}, wall {wall:.2f} s, evaluator total "
                      f"{r.phase_seconds.get('total', 0.0):.2f} s")


if __name__ == "__main__":
    main()
