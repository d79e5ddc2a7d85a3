"""Evaluate a folder of candidate kernel files against their tasks (`drk eval --solutions DIR`).

File naming: `DIR/levelN/<id>_<anything>.py` or `DIR/levelN/<id>.py` is a candidate for problem <id> of
level N; files directly in DIR apply to the only selected level (or, for a task directory, match the task
file names' numeric prefix). Several candidates per task are allowed (`19_ReLU.py`, `19_v2.py`).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from drk.gym.types import EvalOptions, EvalRequest, EvalResult
from drk.records import JsonlWriter, start_fresh
from drk.tasks import Task, TaskError

_ID = re.compile(r"^(\d+)(?:_.*)?\.py$")


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
                        on_result: Callable[[EvalResult], None] | None = None) -> list[dict]:
    """Evaluate on `pool`, appending each result to OUT/results.jsonl as it finishes."""
    writer = None
    if out_dir is not None:
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        start_fresh(out / "results.jsonl")
        writer = JsonlWriter(out / "results.jsonl")
    reqs = []
    for c in cands:
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
        results = pool.evaluate_batch(reqs, on_result=done)
    finally:
        if writer is not None:
            writer.close()
    return [rows[i] if i in rows else r.to_dict() for i, r in enumerate(results)]
