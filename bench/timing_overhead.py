"""Where does drk's timer lose short kernels? (a diagnostic benchmark, not a test; issue 15)

    PYTHONPATH=src python3 bench/timing_overhead.py --kernelbench DIR [--pairs 88_MinGPTNewGelu@0.1,...]

For each short pair (a level-1 task scaled down, its shipped solution), in one process on the GPU, times the
candidate and the reference several ways and prints the median ms (and the 10th/90th percentiles) of each:
- `do_bench`: triton.testing.do_bench, the referee's number;
- `drk`: drk's `harness.time_calls` (its back-to-back pass, the runtime drk reports) on the same call;
- `drk_5calls`: the same with the call counts drk used before it sized them by time (5 warm-up calls,
  100 timed), each of these four after `--idle-s` seconds with the GPU idle (as between two evaluations);
- `drk_ahead`: `drk` with the timed calls enqueued behind a hold on the GPU (`harness.HostAhead`);
- `drk+prof`, `do_bench+prof`: inside the device profiler drk runs every candidate op under;
- `*_after`: do_bench again once a profiler has started and stopped in this process (does the profiler's
  cost outlive it?).
- `*_loop_*`: `host_ahead`, do_bench's loop and drk's (with its in-place rescaling, and under the profiler):
  the host's enqueue time per iteration against the device's, and whether the loop is host-bound.
The differences name the cost: warm-up (drk_5calls vs drk), protocol (drk vs do_bench), profiler (+prof vs
plain), lingering (_after), host-bound loop (_loop_).
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


def bench_drk(fn, inputs, by_time: bool = True, host_ahead: bool = False) -> dict:
    spans = harness.WARMUP_MS, harness.REP_MS
    if not by_time:  # the earlier protocol: counts only
        harness.WARMUP_MS = harness.REP_MS = 0.0
    try:
        out = harness.time_calls(lambda i: fn(), "cuda", warmup=5, trials=100, l2_flush=True,
                                 perturb=harness.floating_tensors(inputs), host_ahead=host_ahead)
    finally:
        harness.WARMUP_MS, harness.REP_MS = spans
    return stats(out["b2b"])


def host_ahead(fn, inputs, *, perturb: bool, n: int = 500) -> dict:
    """Is the host ahead of the GPU in a back-to-back timing loop? n iterations of [rescale the inputs in
    place (drk) or not (do_bench); flush the L2; start event; fn; end event], then the host's enqueue time
    and the device's total per iteration, and the median event time. When enqueueing takes as long as the
    device, the loop is host-bound: each call's events then include host time (launch gaps), and the
    protocol's own host work per iteration (the rescaling's launch) is what tips it."""
    flush = torch.empty(harness.L2_FLUSH_BYTES // 4, dtype=torch.int32, device="cuda")
    xs = harness.floating_tensors(inputs) if perturb else []
    for _ in range(50):  # warm
        flush.zero_()
        fn()
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(n)]
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for i, (s, e) in enumerate(events):
        for t in xs:
            t.mul_(harness.PERTURB) if i % 2 == 0 else t.div_(harness.PERTURB)
        flush.zero_()
        s.record()
        fn()
        e.record()
    t1 = time.perf_counter()
    torch.cuda.synchronize()
    t2 = time.perf_counter()
    ms = [s.elapsed_time(e) for s, e in events]
    return {"enqueue_us": round((t1 - t0) / n * 1e6, 2), "device_us": round((t2 - t0) / n * 1e6, 2),
            "host_bound": (t2 - t1) < 0.05 * (t2 - t0), **stats(ms)}


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
                                  ("drk_5calls", lambda: bench_drk(fn_drk, inputs, by_time=False)),
                                  ("drk_ahead", lambda: bench_drk(fn_drk, inputs, host_ahead=True))):
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
            # the host-ahead check: do_bench's loop, drk's, drk's profiled
            for who, m in (("ref", ref), ("cand", cand)):
                fn = (lambda m=m: m(*inputs))
                row[f"{who}_loop_do_bench"] = host_ahead(fn, inputs, perturb=False)
                row[f"{who}_loop_drk"] = host_ahead(fn, inputs, perturb=True)
                prof = start_profiler()
                try:
                    row[f"{who}_loop_drk+prof"] = host_ahead(fn, inputs, perturb=True)
                finally:
                    prof.stop()
        report[pair] = row
        print(pair, json.dumps({k: (v["median"] if "enqueue_us" not in v else
                                     [v["median"], v["enqueue_us"], v["device_us"], v["host_bound"]])
                                 for k, v in row.items()}), flush=True)
    if a.out:
        a.out.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
