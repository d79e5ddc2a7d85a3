"""Does the CPU smoke run learn? Reads a `drk rl` run's metrics.jsonl and checks the issue's criterion:

    mean reward_mean over the last 3 steps >= mean over the first 3 steps + 0.2, and
    the share of correct turns (`correct`) higher over the last 3 steps than over the first 3.

Prints one row per step and the two comparisons; exit status 0 when both hold, 1 when not, 2 when the file
is missing or has fewer than 6 steps. `make smoke` runs it after the three stages.

    python bench/learning_smoke_check.py runs/smoke/rl/metrics.jsonl [--min-gain 0.2]
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("metrics", type=Path)
    ap.add_argument("--min-gain", type=float, default=0.2, help="required rise of reward_mean (last 3 - first 3)")
    a = ap.parse_args(argv)
    try:
        rows = [json.loads(line) for line in a.metrics.read_text().splitlines() if line.strip()]
    except (OSError, ValueError) as e:
        print(f"learning_smoke_check: cannot read {a.metrics}: {e}", file=sys.stderr)
        return 2
    if len(rows) < 6:
        print(f"learning_smoke_check: {a.metrics} has {len(rows)} steps; need at least 6", file=sys.stderr)
        return 2
    print("step  reward_mean  correct  coverage_mean  seconds(rollout/train)")
    for r in rows:
        cov = r.get("coverage_mean")
        sec = r.get("seconds", {})
        print(f"{r['step']:>4}  {r['reward_mean']:>11.3f}  {r['correct']:>7.3f}  "
              f"{'n/a' if cov is None else format(cov, '.3f'):>13}  {sec.get('rollout', 0):.1f}/{sec.get('train', 0):.1f}")
    mean = lambda rs, k: sum(r[k] for r in rs) / len(rs)  # noqa: E731
    r0, r1 = mean(rows[:3], "reward_mean"), mean(rows[-3:], "reward_mean")
    c0, c1 = mean(rows[:3], "correct"), mean(rows[-3:], "correct")
    gain_ok, correct_ok = r1 - r0 >= a.min_gain, c1 > c0
    print(f"reward_mean: first 3 steps {r0:.3f}, last 3 steps {r1:.3f}, gain {r1 - r0:+.3f} "
          f"(need >= {a.min_gain:+.2f}): {'ok' if gain_ok else 'NOT MET'}")
    print(f"correct share: first 3 steps {c0:.3f}, last 3 steps {c1:.3f}: {'rising' if correct_ok else 'NOT RISING'}")
    return 0 if gain_ok and correct_ok else 1


if __name__ == "__main__":
    sys.exit(main())
