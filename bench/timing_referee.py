"""Does drk's timing agree with an independent referee, at every kernel size? (a benchmark, not a test)

    PYTHONPATH=src python3 bench/timing_referee.py --kernelbench DIR --out OUTDIR [--repeat 5] [--only short/]

For each (task, solution) pair: drk evaluates it (`drk.gym`, one warm pool), and the referee
(`bench/referee.py`, which imports nothing from drk) times the same reference and candidate with
`triton.testing.do_bench` (median, its own L2 flush) in a fresh process of its own, on the same shapes.
Pairs, in this order: short kernels (level-1 elementwise solutions on tasks scaled down to 7-200 us), then
the shipped level 1-2 solutions at their full shapes; --only keeps the pairs whose names start with a prefix. Prints per kernel: referee candidate time, drk's, drk speedup,
referee speedup and their ratio; with --repeat N, the coefficient of variation of drk's runtime over N
separate evaluations of a few pairs. Writes OUTDIR/timing_referee.json.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
DEVICE = os.environ.get("DRK_BENCH_DEVICE", "cuda")

SHORT_ALL = ["19_ReLU", "20_LeakyReLU", "21_Sigmoid", "22_Tanh", "25_Swish", "26_GELU_", "28_HardSigmoid",
         "29_Softplus", "30_Softsign", "32_HardTanh", "88_MinGPTNewGelu", "23_Softmax"]
SHORT_SCALES = {0.1: SHORT_ALL, 0.05: ["19_ReLU", "23_Softmax", "26_GELU_", "30_Softsign"]}
# repeatability: separate evaluations of these pairs (names as in `pairs`), short and long kernels
REPEAT = ["short/19_ReLU@0.05", "short/23_Softmax@0.1", "level1/36_RMSNorm_", "level1/1_Square_matrix_multiplication_"]
# pairs whose torch.compile reference is also timed on both sides (compiling costs tens of seconds each)
COMPILE = {"level2/12_Gemm_Multiply_LeakyReLU", "level1/19_ReLU", "short/19_ReLU@0.1"}


def pairs(kb: Path) -> list[dict]:
    from drk.tasks.scaling import scale_source

    out, tmp = [], Path(tempfile.mkdtemp(prefix="referee-"))
    # short kernels first: they are where timers disagree, and a run cut short by its budget still has them
    for sc, stems in SHORT_SCALES.items():
        for stem in stems:
            src = scale_source((kb / "level1" / f"{stem}.py").read_text(), sc).source
            path = tmp / f"{stem}_x{sc}.py"
            path.write_text(src)
            out.append({"name": f"short/{stem}@{sc}", "task": path,
                        "solution": ROOT / "data" / "solutions" / "level1" / f"{stem}.py"})
    for lvl in ("level1", "level2"):
        for sol in sorted((ROOT / "data" / "solutions" / lvl).glob("*.py")):
            out.append({"name": f"{lvl}/{sol.stem}", "task": kb / lvl / sol.name, "solution": sol})
    return out


def same_shapes(task: Path, r) -> Path:
    """The task file the referee must time: drk's own shapes. A task drk scaled down (for its memory budget:
    flag `scaled_shapes`) is written out with the size constants drk used, so both time the same problem."""
    constants = (r.shapes or {}).get("constants") or {}
    if "scaled_shapes" not in r.flags or not constants:
        return task
    from drk.tasks.scaling import rewrite_source

    path = Path(tempfile.mkdtemp(prefix="referee-shapes-")) / task.name
    path.write_text(rewrite_source(task.read_text(), constants))
    return path


def referee(task: Path, solution: Path, compile_ref: bool = False, profiled: bool = False,
            host_ahead: bool = False) -> dict:
    r = subprocess.run([sys.executable, str(ROOT / "bench" / "referee.py"), str(task), str(solution)]
                       + (["--compile"] if compile_ref else []) + (["--profiled"] if profiled else [])
                       + (["--host-ahead"] if host_ahead else []),
                       capture_output=True, text=True, timeout=300, check=False)
    try:
        return json.loads(r.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        return {"error": (r.stderr or r.stdout)[-400:]}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--kernelbench", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="3 pairs, to dry-run the script")
    ap.add_argument("--only", default="", help="comma-separated prefixes of pair names (e.g. short/,level1/100_)")
    ap.add_argument("--profiled", action="store_true",
                    help="the referee also times each side inside a device profiler (what it costs the timer)")
    ap.add_argument("--host-ahead", action="store_true",
                    help="drk times with EvalOptions(host_ahead=True) and is compared with the referee's host-ahead "
                         "loop (do_bench's plain numbers stay in the rows)")
    ap.add_argument("--budget-s", type=float, default=540,
                    help="stop starting new pairs when the rest of this budget is what the repeats need")
    a = ap.parse_args()
    start = time.time()
    a.out.mkdir(parents=True, exist_ok=True)
    from drk.gym import EvalOptions, EvalRequest, LocalPool
    from drk.tasks import task_from_file

    opts = EvalOptions(device=DEVICE, compile_baseline=False, scale=1.0, host_ahead=a.host_ahead)
    rows, repeat = [], {}
    all_pairs = pairs(a.kernelbench)
    by_name = {p["name"]: p for p in all_pairs}
    all_pairs = all_pairs[:3] if a.quick else all_pairs
    prefixes = [x for x in a.only.split(",") if x]
    if prefixes:
        all_pairs = [p for p in all_pairs if any(p["name"].startswith(x) for x in prefixes)]
    # what the repeats need, from the first pairs' seconds (written out after every row, so a run cut short
    # by its caller keeps what it measured)
    repeat_evals = (1 if a.quick else len(REPEAT)) * a.repeat if a.repeat > 1 else 0

    def dump(summary=None):
        (a.out / "timing_referee.json").write_text(json.dumps({"rows": rows, "repeat": repeat, "summary": summary,
                                                               "pairs_planned": len(all_pairs)}, indent=1))

    with LocalPool(device=DEVICE, workers=1, cache_dir=str(a.out / "cache")) as pool:
        for p in all_pairs:
            # a repeat finds its references cached: what it costs is an evaluation less its reference timing
            plain = [r["drk_seconds"] - r.get("drk_reference_timing_s", 0.0) for r in rows if "drk_compile_ms" not in r]
            per_eval = min(plain) if plain else 10.0  # the first evaluation also starts the pool
            if time.time() - start + repeat_evals * per_eval > a.budget_s:
                print(f"budget: {len(all_pairs) - len(rows)} pairs not run", flush=True)
                break
            t0 = time.time()
            comp = p["name"] in COMPILE
            popts = (EvalOptions(device=DEVICE, compile_baseline=True, scale=1.0, host_ahead=a.host_ahead)
                     if comp else opts)
            r = pool.evaluate(EvalRequest(task_from_file(p["task"]), p["solution"].read_text(), popts,
                                          solution=p["name"]))
            drk_s = time.time() - t0
            ref = referee(same_shapes(p["task"], r), p["solution"], comp, a.profiled, a.host_ahead)
            mode = "_host_ahead_ms" if a.host_ahead else "_ms"  # which referee loop drk is compared with
            row = {"kernel": p["name"], "verdict": r.verdict, "drk_ms": r.runtime_ms, "drk_ref_ms": r.ref_eager_ms,
                   "drk_speedup": r.speedup, "referee_ms": ref.get("candidate" + mode),
                   "referee_ref_ms": ref.get("reference" + mode), "referee_error": ref.get("error"),
                   "referee": {k: v for k, v in ref.items() if k != "error"},
                   "timing_gate": r.protocol.get("timing_gate"), "reference_timing": r.protocol.get("reference_timing"),
                   "runtime_stats": r.runtime_stats, "flags": r.flags, "seconds": round(time.time() - t0, 1),
                   "shapes": (r.shapes or {}).get("constants"),
                   "drk_seconds": round(drk_s, 1),
                   "drk_reference_timing_s": round(r.phase_seconds.get("reference_timing", 0.0), 1),
                   **{k: v for k, v in ref.items() if k.endswith("_under_profiler_ms")}}
            if comp:
                row.update(drk_compile_ms=r.ref_compile_ms, referee_compile_ms=ref.get("compiled_reference_ms"))
                if r.ref_compile_ms and row["referee_compile_ms"]:
                    row["compile_ref_time_ratio"] = r.ref_compile_ms / row["referee_compile_ms"]
            if row["referee_ms"] and row["referee_ref_ms"] and r.runtime_ms:
                row["referee_speedup"] = row["referee_ref_ms"] / row["referee_ms"]
                row["time_ratio"] = r.runtime_ms / row["referee_ms"]
                row["ref_time_ratio"] = (r.ref_eager_ms or 0) / row["referee_ref_ms"]
                row["speedup_ratio"] = (r.speedup or 0) / row["referee_speedup"]
            rows.append(row)
            dump()
            print(f"{p['name']:44s} {r.verdict:10s} drk {r.runtime_ms or 0:9.4f} ms  referee "
                  f"{row['referee_ms'] or 0:9.4f} ms  speedup drk {r.speedup or 0:6.2f} referee "
                  f"{row.get('referee_speedup') or 0:6.2f}  ratio {row.get('speedup_ratio') or 0:5.3f}"
                  + (f"  compile-ref ratio {row.get('compile_ref_time_ratio') or 0:5.3f}" if comp else "")
                  + (f"  referee under a profiler: candidate {ref.get('candidate_under_profiler_ms') or 0:.4f} ms"
                     if a.profiled else ""), flush=True)
        for name in REPEAT[: (1 if a.quick else None)] if a.repeat > 1 else []:
            p = by_name[name]
            task, src = task_from_file(p["task"]), p["solution"].read_text()
            ms = [pool.evaluate(EvalRequest(task, src + f"\n# repeat {i}\n", opts)).runtime_ms
                  for i in range(a.repeat)]
            ms = [m for m in ms if m]
            repeat[name] = {"runtime_ms": ms, "cv": statistics.pstdev(ms) / statistics.fmean(ms) if ms else None}
            print(f"repeat {name}: cv {repeat[name]['cv']}", flush=True)
            dump()
    within = [r for r in rows if r.get("time_ratio") is not None]
    summary = {"pairs": len(rows), "compared": len(within),
               "candidate_within_5pct": sum(abs(r["time_ratio"] - 1) <= 0.05 for r in within),
               "reference_within_5pct": sum(abs(r["ref_time_ratio"] - 1) <= 0.05 for r in within),
               "speedup_within_5pct": sum(abs(r["speedup_ratio"] - 1) <= 0.05 for r in within),
               "short_under_0.2ms": sum(1 for r in within if (r["referee_ms"] or 1) < 0.2),
               "compile_ref_within_5pct": sum(abs(r["compile_ref_time_ratio"] - 1) <= 0.05
                                              for r in rows if r.get("compile_ref_time_ratio") is not None),
               "compile_ref_compared": sum(1 for r in rows if r.get("compile_ref_time_ratio") is not None),
               "max_repeat_cv": max((v["cv"] for v in repeat.values() if v["cv"] is not None), default=None)}
    dump(summary)
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
