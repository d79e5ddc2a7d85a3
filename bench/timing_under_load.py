"""Does a busy GPU change drk's numbers, with the GPU lock and without it? (a benchmark, not a test)

    DRK_GPU_LOCK=on|off PYTHONPATH=src python3 bench/timing_under_load.py --kernelbench DIR --out OUTDIR \
        [--only short/19_ReLU@0.05,level1/19_ReLU] [--neighbours 3] [--budget-s 250]

Each pair (names as in bench/timing_referee.py) is evaluated by drk alone (one worker, an empty reference
cache), then again while --neighbours workers of another pool on the same GPU evaluate the shipped level 1-2
solutions over and over (a second empty cache, so the references are timed under load too). Reports, per
pair, the loaded/alone ratio of the candidate's runtime and of the eager reference's time, and what the
neighbours did meanwhile (evaluations, verdicts: a verdict must not depend on them). Both pools take the lock
setting from the environment (DRK_GPU_LOCK, recorded in every result). Writes OUTDIR/timing_under_load.json.
"""
from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))
DEVICE = os.environ.get("DRK_BENCH_DEVICE", "cuda")
DEFAULT = "short/19_ReLU@0.05,short/23_Softmax@0.1,level1/19_ReLU,level1/1_Square_matrix_multiplication_"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kernelbench", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--only", default=DEFAULT, help="comma-separated pair names (bench/timing_referee.py's)")
    ap.add_argument("--neighbours", type=int, default=3, help="workers of the loading pool")
    ap.add_argument("--budget-s", type=float, default=250, help="stop starting loaded evaluations after this")
    a = ap.parse_args()
    from timing_referee import pairs

    from drk.gym import EvalOptions, EvalRequest, LocalPool
    from drk.tasks import task_from_file

    start = time.time()
    a.out.mkdir(parents=True, exist_ok=True)
    wanted = [x for x in a.only.split(",") if x]
    by_name = {p["name"]: p for p in pairs(a.kernelbench)}
    chosen = [by_name[n] for n in wanted if n in by_name]
    opts = (EvalOptions(device=DEVICE, compile_baseline=False, scale=1.0) if DEVICE != "cpu" else
            EvalOptions(device="cpu", input_budget_mb=0.25))  # DRK_BENCH_DEVICE=cpu: only to dry-run this script
    cache = lambda: tempfile.mkdtemp(prefix="drk-load-cache-")  # noqa: E731
    req = lambda p, label: EvalRequest(task_from_file(p["task"]), p["solution"].read_text(), opts,  # noqa: E731
                                       solution=label)
    rows: dict[str, dict] = {}
    failures: list[dict] = []  # the neighbours' results that were not `ok`, with their evidence

    def evidence(r) -> dict:  # what a reader needs to tell a neighbour's effect from the candidate's own
        return {"verdict": r.verdict, "runtime_ms": r.runtime_ms, "ref_ms": r.ref_eager_ms, "task": r.task,
                "error": (r.error or "")[:600], "flags": list(r.flags), "shapes": r.shapes,
                "reference_timing": r.protocol.get("reference_timing"),
                "phases": {k: round(v, 3) for k, v in r.phase_seconds.items() if isinstance(v, (int, float))}}

    def dump(extra=None):
        (a.out / "timing_under_load.json").write_text(json.dumps(
            {"gpu_lock": os.environ.get("DRK_GPU_LOCK", "on"), "neighbours": a.neighbours, "rows": rows,
             "neighbour_failures": failures, **(extra or {})}, indent=1))

    with LocalPool(device=DEVICE, workers=1, cache_dir=cache()) as pool:
        for p in chosen:
            r = pool.evaluate(req(p, p["name"]))
            rows[p["name"]] = {"alone": dict(evidence(r), gpu_lock=r.protocol.get("gpu_lock", "on"))}
            print(f"alone  {p['name']:44s} {r.verdict:8s} {r.runtime_ms or 0:9.4f} ms  ref {r.ref_eager_ms or 0:9.4f}",
                  flush=True)
            dump()
    load = [q for name, q in by_name.items() if not name.startswith("short/")]
    stop, done, verdicts = threading.Event(), [0], {}

    def neighbours(npool) -> None:  # keeps --neighbours evaluations in flight until told to stop
        feed = itertools.cycle(load)
        inflight = [npool.submit(req(next(feed), "neighbour")) for _ in range(a.neighbours)]
        while inflight:
            fut = inflight.pop(0)
            r = fut.result()
            done[0] += 1
            verdicts[r.verdict] = verdicts.get(r.verdict, 0) + 1
            if r.verdict != "ok" and len(failures) < 20:
                failures.append(evidence(r))
            if not stop.is_set():
                inflight.append(npool.submit(req(next(feed), "neighbour")))

    with LocalPool(device=DEVICE, workers=a.neighbours, cache_dir=cache()) as npool:
        t = threading.Thread(target=neighbours, args=(npool,), daemon=True)
        t.start()
        time.sleep(float(os.environ.get("DRK_LOAD_SETTLE_S", 20.0)))  # neighbours started: load, not idle, when measuring
        with LocalPool(device=DEVICE, workers=1, cache_dir=cache()) as pool:
            for p in chosen:
                if time.time() - start > a.budget_s:
                    print("budget: loaded evaluations stopped", flush=True)
                    break
                n0 = done[0]
                r = pool.evaluate(req(p, p["name"]))
                row = rows[p["name"]]
                row["loaded"] = dict(evidence(r), neighbour_evals_meanwhile=done[0] - n0,
                                     lock_wait_s=r.phase_seconds.get("gpu_lock_wait"))
                al = row["alone"]
                if al["runtime_ms"] and r.runtime_ms:
                    row["runtime_ratio"] = r.runtime_ms / al["runtime_ms"]
                if al["ref_ms"] and r.ref_eager_ms:
                    row["ref_ratio"] = r.ref_eager_ms / al["ref_ms"]
                print(f"loaded {p['name']:44s} {r.verdict:8s} {r.runtime_ms or 0:9.4f} ms  ref {r.ref_eager_ms or 0:9.4f}"
                      f"  ratios {row.get('runtime_ratio') or 0:.3f} / {row.get('ref_ratio') or 0:.3f}"
                      f"  ({done[0] - n0} neighbour evaluations meanwhile)", flush=True)
                dump()
        stop.set()
        t.join(timeout=300)
    summary = {"neighbour_evals": done[0], "neighbour_verdicts": verdicts, "seconds": round(time.time() - start, 1),
               "max_runtime_dev": max((abs(r["runtime_ratio"] - 1) for r in rows.values() if "runtime_ratio" in r),
                                      default=None),
               "max_ref_dev": max((abs(r["ref_ratio"] - 1) for r in rows.values() if "ref_ratio" in r), default=None)}
    dump({"summary": summary})
    print(json.dumps(summary), flush=True)


if __name__ == "__main__":
    main()
