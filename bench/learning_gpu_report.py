"""Does the pipeline learn on a GPU with a real-size model? (issue 16 part 3; a benchmark, not a test)

Reads the run folders `bash bench/gpu_session.sh learn` leaves (one per seed: R/collect, R/sft, R/heldout-sft,
R/rl, R/heldout-rl) and writes, next to OUT:
- OUT.png: reward_mean and the share of correct turns per RL step, one line per seed;
- OUT.json and a printed table: held-out correct@1 (turn 1, one sample per episode) and geomean speedup of
  the correct ones, and the held-out tasks solved at least once, before RL (the SFT policy) and after RL, per seed.

    python3 bench/learning_gpu_report.py RUN_SEED0 RUN_SEED1 --out docs/measurements/learning-gpu
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ENDS = 5  # steps averaged at each end of the RL curve


def _rows(path: Path) -> list[dict]:
    try:
        return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    except (OSError, ValueError):
        return []


def _heldout(run: Path, name: str) -> dict:
    try:
        s = json.loads((run / name / "summary.json").read_text())["per_turn"]["turn_1"]
    except (OSError, ValueError, KeyError):
        return {}
    rows = _rows(run / name / "results.jsonl")
    return {"n": s.get("n"), "correct_at_1": s.get("correct"), "compiled": s.get("compiled"),
            "geomean_speedup": s.get("geomean_speedup"), "infra_errors": s.get("infra_errors"),
            "tasks": len({r.get("task") for r in rows}),
            "tasks_solved": len({r.get("task") for r in rows if r.get("correct")})}


def _ends(steps: list[dict], k: int = ENDS) -> dict:
    """Held-in reward and correct share, mean of the first and of the last `k` RL steps (the smoke run's
    criterion, over more steps: each GPU step draws 8 of 72 tasks, so one step's mean is mostly the draw)."""
    if len(steps) < 2 * k:
        return {}
    mean = lambda rows, key: sum(r[key] for r in rows) / len(rows)  # noqa: E731
    return {f"{key}_{end}": mean(rows, key) for key in ("reward_mean", "correct")
            for end, rows in (("first", steps[:k]), ("last", steps[-k:]))}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="+", type=Path)
    ap.add_argument("--out", type=Path, required=True, help="path stem of the .png and .json written")
    a = ap.parse_args(argv)
    report = {}
    for run in a.runs:
        steps = _rows(run / "rl" / "metrics.jsonl")
        report[run.name] = {"before_rl": _heldout(run, "heldout-sft"), "after_rl": _heldout(run, "heldout-rl"),
                            "steps": [{k: s.get(k) for k in ("step", "reward_mean", "correct", "coverage_mean",
                                                             "speedup_mean")} for s in steps],
                            "held_in": _ends(steps)}
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.with_suffix(".json").write_text(json.dumps(report, indent=1))
    print(f"{'run':16s} {'correct@1 before':>17s} {'after':>6s} {'speedup before':>15s} {'after':>6s} {'steps':>6s} "
          f"{'held-in reward first/last ' + str(ENDS):>28s} {'correct first/last':>19s}")
    for name, r in report.items():
        b, f, h = r["before_rl"], r["after_rl"], r["held_in"]
        fmt = lambda x: "-" if x is None else f"{x:.3f}"  # noqa: E731
        print(f"{name:16s} {fmt(b.get('correct_at_1')):>17s} {fmt(f.get('correct_at_1')):>6s} "
              f"{fmt(b.get('geomean_speedup')):>15s} {fmt(f.get('geomean_speedup')):>6s} {len(r['steps']):>6d} "
              f"{fmt(h.get('reward_mean_first')) + ' / ' + fmt(h.get('reward_mean_last')):>28s} "
              f"{fmt(h.get('correct_first')) + ' / ' + fmt(h.get('correct_last')):>19s}")
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib missing: no plot", file=sys.stderr)
        return 0
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    for name, r in report.items():
        xs = [s["step"] for s in r["steps"]]
        for ax, key in zip(axes, ("reward_mean", "correct")):
            ys = [s[key] for s in r["steps"]]
            line, = ax.plot(xs, ys, marker=".", alpha=0.35, label=name)
            if len(ys) >= ENDS:  # the trend under the draw's noise: a centred moving mean of ENDS steps
                h = ENDS // 2
                ax.plot(xs[h:len(xs) - h], [sum(ys[i - h:i + h + 1]) / ENDS for i in range(h, len(ys) - h)],
                        color=line.get_color(), label=f"{name}, mean of {ENDS}")
    for ax, title in zip(axes, ("reward_mean per RL step", "share of correct turns per RL step")):
        ax.set_title(title)
        ax.set_xlabel("step")
        ax.grid(alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(a.out.with_suffix(".png"), dpi=120)
    return 0


if __name__ == "__main__":
    sys.exit(main())
