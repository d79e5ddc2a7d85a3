"""Evaluate a folder of candidate kernel files against their tasks (`drk eval --solutions DIR`).

File naming: `DIR/levelN/<id>_<anything>.py` or `DIR/levelN/<id>.py` is a candidate for problem <id> of
level N; files directly in DIR apply to the only selected level (or, for a task directory, match the task
file names' numeric prefix). Several candidates per task are allowed (`19_ReLU.py`, `19_v2.py`).
KernelBench's own naming, `level_1_problem_19_sample_0_kernel.py`, is accepted anywhere in DIR: the name
carries the level and the problem id.

Resume: results are appended to OUT/results.jsonl as they finish; a rerun with the same OUT evaluates only the
candidates not there yet (OUT/eval_config.json holds the protocol: another protocol is refused unless
`overwrite`). Results with verdict infra_error (the evaluator failed, not the candidate) are dropped at the
start of the next run and evaluated again.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from drk.gym.types import INFRA_ERROR, EvalOptions, EvalRequest, EvalResult
from drk.records import JsonlWriter, claim_run_dir, read_jsonl, rewrite_jsonl
from drk.tasks import Task, TaskError

_ID = re.compile(r"^(\d+)(?:_.*)?\.py$")
_KB_NAME = re.compile(r"^level_(\d+)_problem_(\d+)(?:_sample_\d+)?(?:_.*)?\.py$")  # KernelBench's runs


@dataclass
class Candidate:
    task: Task
    path: Path

    def request(self, options: EvalOptions) -> EvalRequest:
        return EvalRequest(task=self.task, source=self.path.read_text(), options=options, solution=str(self.path))


def find_candidates(tasks: list[Task], directory: str | Path) -> list[Candidate]:
    """Match solution files to tasks by level folder and problem id."""
    root = Path(directory)
    if not root.is_dir():
        raise TaskError(f"solutions directory not found: {root}")
    by_level: dict[int | None, dict[int, Task]] = {}
    for t in tasks:
        if t.problem_id is not None:
            by_level.setdefault(t.level, {})[t.problem_id] = t
    levels = sorted(k for k in by_level if k is not None)
    out: list[Candidate] = []
    for f in sorted(root.rglob("*.py")):
        kb = _KB_NAME.match(f.name)
        if kb:
            task = by_level.get(int(kb.group(1)), {}).get(int(kb.group(2)))
            if task is None and len(levels) == 0:  # a task directory (no levels): match by problem id
                task = by_level.get(None, {}).get(int(kb.group(2)))
            if task is not None:
                out.append(Candidate(task, f))
            continue
        m = _ID.match(f.name)
        if not m:
            continue
        rel = f.relative_to(root).parts
        lvl_dir = next((int(p[5:]) for p in rel[:-1] if re.fullmatch(r"level\d+", p)), None)
        if lvl_dir is not None:
            table = by_level.get(lvl_dir, {})
        elif len(levels) <= 1:
            table = by_level.get(levels[0] if levels else None, {})
        else:
            raise TaskError(f"{f}: several levels selected; put solutions in level1/, level2/ ... subfolders")
        task = table.get(int(m.group(1)))
        if task is not None:
            out.append(Candidate(task, f))
    return out


def evaluate_candidates(cands: list[Candidate], pool, options: EvalOptions, out_dir: str | Path | None,
                        on_result: Callable[[EvalResult], None] | None = None, *, overwrite: bool = False,
                        on_start: Callable[[int, int], None] | None = None) -> list[dict]:
    """Evaluate on `pool` the candidates OUT/results.jsonl does not hold yet, appending each result as it
    finishes; returns the results of all `cands` (earlier runs' included), in order."""
    writer = None
    old: dict[str, dict] = {}
    if out_dir is not None:
        out = Path(out_dir)
        claim_run_dir(out, "eval_config.json", {"protocol": {k: v for k, v in options.to_dict().items()}},
                      overwrite=overwrite, outputs=("results.jsonl", "summary.json"))
        rewrite_jsonl(out / "results.jsonl", lambda r: r.get("verdict") != INFRA_ERROR)  # redo infra failures
        old = {r.get("solution"): r for r in read_jsonl(out / "results.jsonl")}
        writer = JsonlWriter(out / "results.jsonl")
    todo = [c for c in cands if str(c.path) not in old]
    if on_start is not None:
        on_start(len(todo), len(cands) - len(todo))
    reqs = []
    for c in todo:
        try:
            reqs.append(c.request(options))
        except OSError as e:
            raise TaskError(f"cannot read {c.path}: {e}") from None

    rows: dict[int, dict] = {}

    def done(i: int, r: EvalResult) -> None:
        rows[i] = r.to_dict()
        if writer is not None:
            writer.write(rows[i])
        if on_result is not None:
            on_result(r)

    try:
        results = pool.evaluate_batch(reqs, on_result=done) if reqs else []
    finally:
        if writer is not None:
            writer.close()
    new = {str(c.path): rows[i] if i in rows else r.to_dict() for i, (c, r) in enumerate(zip(todo, results))}
    return [old.get(str(c.path)) or new[str(c.path)] for c in cands]
