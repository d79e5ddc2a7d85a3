"""Metrics over evaluator results: one code path for `drk eval --solutions`, `drk eval --model`, `drk infer`
and the RL logs.

Definitions (KernelBench / Dr. Kernel):
- compile rate: share of candidates that loaded and built (`compiled`).
- correctness: share with verdict `ok`.
- hack rate: share with verdict `no_triton`, `hacked` or `forbidden` (decoys, cheating, sandbox breaks).
- fast_p: share of candidates (or tasks, for best-of) that are `ok` AND run more than p times faster than
  the baseline (`speedup` vs eager, `speedup_compile` vs torch.compile). CPU results have no speedup, so
  fast_p is None there.
- geomean speedup: geometric mean of speedups over the `ok` candidates that have one.
Results flagged `degenerate_task` are left out of the headline group and reported under "degenerate".
Results with verdict `infra_error` (the endpoint or the evaluator failed, not the candidate) are never scored:
they are left out of every denominator and only counted (`infra_errors`).
"""
from __future__ import annotations

import math
import statistics
from collections import defaultdict
from typing import Iterable

FAST_P = (1.0, 1.2, 1.5, 2.0)
HACK_VERDICTS = ("no_triton", "hacked", "forbidden")
INFRA_ERROR = "infra_error"  # drk.gym.types.INFRA_ERROR (not imported: this module stays import-light)


def is_infra(r) -> bool:
    return _get(r, "verdict") == INFRA_ERROR


def _get(r, k, d=None):
    return r.get(k, d) if isinstance(r, dict) else getattr(r, k, d)


def fast_p(results: list, p: float, key: str = "speedup") -> float | None:
    if not results:
        return None
    vals = [_get(r, key) for r in results]
    if all(v is None for v in vals):
        return None
    return sum(1 for r, v in zip(results, vals) if _get(r, "verdict") == "ok" and v is not None and v > p) / len(results)


def geomean(xs: Iterable[float]) -> float | None:
    xs = [x for x in xs if x is not None and x > 0 and math.isfinite(x)]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def summarize(results: list) -> dict:
    """Headline numbers for one group of results (infra_error results are counted, never scored)."""
    infra = sum(1 for r in results if is_infra(r))
    results = [r for r in results if not is_infra(r)]
    n = len(results)
    if n == 0:
        return {"n": 0, "infra_errors": infra} if infra else {"n": 0}
    ok = [r for r in results if _get(r, "verdict") == "ok"]
    verdicts: dict[str, int] = defaultdict(int)
    for r in results:
        verdicts[_get(r, "verdict", "?")] += 1
    out = {
        "n": n,
        "compiled": sum(bool(_get(r, "compiled")) for r in results) / n,
        "correct": len(ok) / n,
        "hack_rate": sum(_get(r, "verdict") in HACK_VERDICTS for r in results) / n,
        "geomean_speedup": geomean(_get(r, "speedup") for r in ok),
        "geomean_speedup_compile": geomean(_get(r, "speedup_compile") for r in ok),
        "mean_coverage": (sum(_get(r, "coverage") for r in ok if _get(r, "coverage") is not None)
                          / max(1, sum(_get(r, "coverage") is not None for r in ok))) if ok else None,
        "verdicts": dict(sorted(verdicts.items())),
        "infra_errors": infra,
    }
    for p in FAST_P:
        out[f"fast_{p:g}"] = fast_p(results, p, "speedup")
        out[f"fast_{p:g}_compile"] = fast_p(results, p, "speedup_compile")
    return out


def phase_medians(results: list) -> dict:
    """Where a batch of evaluations spent its time: `n` evaluated (cache hits left out: they cost nothing), each
    phase's median seconds over them (a phase an evaluation lacks counts 0: it did not run there), and
    `total_sum`, the evaluations' totals added (over the workers' count, the batch's floor)."""
    runs = [ph for ph in (_get(r, "phase_seconds") or {} for r in results)
            if isinstance(ph, dict) and "total" in ph and not ph.get("cache_hit")]
    if not runs:
        return {"n": 0}
    keys = sorted({k for ph in runs for k, v in ph.items() if isinstance(v, (int, float))})
    out: dict = {"n": len(runs), "total_sum": round(sum(float(ph["total"]) for ph in runs), 3)}
    for k in keys:
        out[k] = round(statistics.median(float(ph.get(k) or 0.0) for ph in runs), 3)
    return out


def group_key(r) -> str:
    task = str(_get(r, "task", ""))
    return task.split("/")[0] if "/" in task else "tasks"


def best_per_task(results: list) -> list:
    """For each task, its best result: ok before not ok, then higher speedup, then higher coverage."""
    best: dict[str, object] = {}

    def score(r):
        sp = _get(r, "speedup")
        return (_get(r, "verdict") == "ok", sp if sp is not None else -1.0, _get(r, "coverage") or 0.0)

    for r in results:
        if is_infra(r):
            continue
        t = _get(r, "task")
        if t not in best or score(r) > score(best[t]):
            best[t] = r
    return list(best.values())


def summarize_by_group(results: list) -> dict:
    """{"level1": {...}, "degenerate": {...}, "all": {...}} — degenerate-task results kept apart."""
    groups: dict[str, list] = defaultdict(list)
    headline = []
    for r in results:
        if "degenerate_task" in (_get(r, "flags") or []):
            groups["degenerate"].append(r)
        else:
            groups[group_key(r)].append(r)
            headline.append(r)
    out = {g: summarize(rs) for g, rs in sorted(groups.items())}
    out["all"] = summarize(headline)
    return out
