"""Where does drk's timer lose short kernels? (a diagnostic benchmark, not a test; issue 15)

    PYTHONPATH=src python3 bench/timing_overhead.py --kernelbench DIR [--pairs 88_MinGPTNewGelu@0.1,...]

For each short pair (a level-1 task scaled down, its shipped solution), in one process on the GPU, times the
candidate and the reference several ways and prints the median ms (and the 10th/90th percentiles) of each:
- `do_bench`: triton.testing.do_bench, the referee's number;
- `drk`: drk's `harness.time_calls` (its back-to-back pass, the runtime drk reports) on the same call;
- `drk_5calls`: the same with the call counts drk used before it sized them by time (5 warm-up calls,
  100 timed), each of these three after `--idle-s` seconds with the GPU idle (as between two evaluations);
- `drk+prof`, `do_bench+prof`: inside the device profiler drk runs every candidate op under;
- `*_after`: do_bench again once a profiler has started and stopped in this process (does the profiler's
  cost outlive it?).
The differences name the cost: warm-up (drk_5calls vs drk), protocol (drk vs do_bench), profiler (+prof vs
plain), lingering (_after).
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

import torch  # noqa: E402
import triton.testing  # noqa: E402

from drk.gym.common import harness  # noqa: E402
from drk.tasks.scaling import scale_source  # noqa: E402

PAIRS = "88_MinGPTNewGelu@0.1,30_Softsign@0.05,19_ReLU@0.05,30_Softsign@0.1"


def load(path: Path, name: str, workdir: Path):
    """`path` as a module, from a copy in `workdir` (Triton reads kernel source from the module's file)."""
    return harness.load_module(path.read_text(), name, str(workdir / f"{name}.py"))


def stats(ms: list[float]) -> dict:
    q = statistics.quantiles(ms, n=10)
    return {"median": round(statistics.median(ms), 5), "p10": round(q[0], 5), "p90": round(q[-1], 5)}


def bench_do(fn) -> dict:
    ms = triton.testing.do_bench(fn, warmup=25, rep=200, return_mode="all")
    return stats(ms)


def bench_drk(fn, inputs, by_time: bool = True) -> dict:
    spans = harness.WARMUP_MS, harness.REP_MS
    if not by_time:  # the earlier protocol: counts only
        harness.WARMUP_MS = harness.REP_MS = 0.0
    try:
        out = harness.time_calls(lambda i: fn(), "cuda", warmup=5, trials=100, l2_flush=True,
                                 perturb=harness.floating_tensors(inputs))
    finally:
        harness.WARMUP_MS, harness.REP_MS = spans
    return stats(out["b2b"])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--kernelbench", type=Path, required=True)
    ap.add_argument("--pairs", default=PAIRS)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--idle-s", type=float, default=1.0, help="GPU idle before each of the first three timings")
    a = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="overhead-"))
    start_profiler = harness.profiler_factory()
    report = {}
    for pair in a.pairs.split(","):
        stem, sc = pair.split("@")
        src = scale_source((a.kernelbench / "level1" / f"{stem}.py").read_text(), float(sc)).source
        (tmp / f"{stem}_{sc}.py").write_text(src)
        task = load(tmp / f"{stem}_{sc}.py", f"t_{stem}_{sc}".replace(".", "_"), tmp)
        sol = load(ROOT / "data" / "solutions" / "level1" / f"{stem}.py", f"s_{stem}_{sc}".replace(".", "_"), tmp)
        torch.manual_seed(0)
        init = list(task.get_init_inputs())
        ref, cand = task.Model(*init).cuda().train(True), sol.ModelNew(*init).cuda().train(True)
        inputs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in task.get_inputs()]
        row = {}
        with torch.no_grad():
            for who, m in (("ref", ref), ("cand", cand)):
                fn = (lambda m=m: m(*inputs))
                plain = harness.plain_outputs
                fn_drk = (lambda m=m: plain(m(*inputs))) if who == "cand" else fn  # what drk's time op calls
                for name, run in (("do_bench", lambda: bench_do(fn)), ("drk", lambda: bench_drk(fn_drk, inputs)),
                                  ("drk_5calls", lambda: bench_drk(fn_drk, inputs, by_time=False))):
                    torch.cuda.synchronize()
                    time.sleep(a.idle_s)
                    row[f"{who}_{name}"] = run()
            for who, m in (("ref", ref), ("cand", cand)):
                fn = (lambda m=m: m(*inputs))
                prof = start_profiler()
                try:
                    row[f"{who}_do_bench+prof"] = bench_do(fn)
                    row[f"{who}_drk+prof"] = bench_drk(fn, inputs)
                finally:
                    prof.stop()
            for who, m in (("ref", ref), ("cand", cand)):
                row[f"{who}_do_bench_after"] = bench_do(lambda m=m: m(*inputs))
        report[pair] = row
        print(pair, json.dumps({k: v["median"] for k, v in row.items()}), flush=True)
    if a.out:
        a.out.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
