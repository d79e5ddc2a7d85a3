"""Tasks: reference programs in KernelBench format, from wherever they live.

A task is a PyTorch reference program that defines `Model`, `get_inputs()` and `get_init_inputs()`; a
candidate solution defines `ModelNew` with the same constructor and forward signature. Sources:

- a KernelBench checkout (`--kernelbench DIR` or `DRK_KERNELBENCH`; folders `level1/`, `level2/`, ...),
- the Hugging Face dataset `ScalingIntelligence/KernelBench` (through `datasets`, when online),
- one task file (`task.py`),
- a directory of task files or a JSON Lines / parquet query set (see `drk.tasks.queries`).

This module only reads sources; it never imports or runs them (that happens in the evaluator's worker
processes). Shape scaling lives in `drk.tasks.scaling`.
"""
from __future__ import annotations

import hashlib
import os
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Iterable

HF_DATASET = "ScalingIntelligence/KernelBench"
_PROBLEM_FILE = re.compile(r"^(\d+)_(.+)\.py$")


class TaskError(ValueError):
    """A task source is missing, malformed or selects nothing (shown to the user as one line)."""


@dataclass(frozen=True)
class Task:
    """One reference program.

    `id` is stable and human readable (`level1/19_ReLU`, `queries/007_rms_scale`, `file/my_task`); results,
    caches and trajectories are keyed by it together with `source_hash`.
    """

    id: str
    name: str
    source: str
    level: int | None = None
    problem_id: int | None = None
    origin: str = ""
    meta: dict = field(default_factory=dict, compare=False, hash=False)

    @property
    def source_hash(self) -> str:
        return hashlib.sha256(self.source.encode()).hexdigest()[:16]

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "Task":
        return cls(**{k: d[k] for k in ("id", "name", "source", "level", "problem_id", "origin", "meta") if k in d})


def parse_problem_ids(spec: str | None) -> set[int] | None:
    """`"1,2,19"`, `"1-10"`, `"1-5,40"` -> a set of ids; None or "" -> None (all)."""
    if not spec:
        return None
    out: set[int] = set()
    for part in str(spec).split(","):
        part = part.strip()
        if not part:
            continue
        m = re.fullmatch(r"(\d+)\s*-\s*(\d+)", part)
        try:
            if m:
                lo, hi = int(m.group(1)), int(m.group(2))
                if hi < lo:
                    raise TaskError(f"bad problem range {part!r}: end before start")
                out.update(range(lo, hi + 1))
            else:
                out.add(int(part))
        except ValueError:
            raise TaskError(f"bad problem selection {spec!r}: use ids and ranges like 1,2,19 or 1-10") from None
    return out


def parse_levels(spec: str | int | None) -> list[int] | None:
    if spec is None or spec == "":
        return None
    try:
        return sorted({int(x) for x in str(spec).split(",") if x.strip()})
    except ValueError:
        raise TaskError(f"bad level {spec!r}: use 1, 2, 3 or a list like 1,2") from None


def find_kernelbench(path: str | os.PathLike | None = None) -> Path | None:
    """The KernelBench problems folder: `path`, else `$DRK_KERNELBENCH`; None when neither is set.

    Accepts the repository root too (`KernelBench/KernelBench/level1`).
    """
    cand = path or os.environ.get("DRK_KERNELBENCH")
    if not cand:
        return None
    p = Path(cand).expanduser()
    if (p / "KernelBench" / "level1").is_dir():
        p = p / "KernelBench"
    if not p.is_dir():
        raise TaskError(f"KernelBench directory not found: {p}")
    if not any((p / f"level{i}").is_dir() for i in range(1, 5)):
        raise TaskError(f"{p} has no level1/ level2/ ... folders; is it a KernelBench checkout?")
    return p


def task_from_file(path: str | os.PathLike, *, id_prefix: str = "file", level: int | None = None) -> Task:
    p = Path(path)
    try:
        src = p.read_text()
    except FileNotFoundError:
        raise TaskError(f"task file not found: {p}") from None
    except (OSError, UnicodeDecodeError) as e:
        raise TaskError(f"cannot read task file {p}: {e}") from None
    m = _PROBLEM_FILE.match(p.name)
    pid = int(m.group(1)) if m else None
    name = m.group(2) if m else p.stem
    return Task(id=f"{id_prefix}/{p.stem}", name=name, source=src, level=level, problem_id=pid, origin=f"file:{p}")


def load_kernelbench_dir(root: Path, levels: Iterable[int] | None = None,
                         problems: set[int] | None = None) -> list[Task]:
    tasks: list[Task] = []
    for lvl in levels or (1, 2, 3):
        d = root / f"level{lvl}"
        if not d.is_dir():
            raise TaskError(f"KernelBench level {lvl} not found under {root}")
        for f in d.iterdir():
            m = _PROBLEM_FILE.match(f.name)
            if not m or (problems is not None and int(m.group(1)) not in problems):
                continue
            tasks.append(Task(id=f"level{lvl}/{f.stem}", name=m.group(2), source=f.read_text(), level=lvl,
                              problem_id=int(m.group(1)), origin=f"kernelbench-dir:{root}"))
    return sorted(tasks, key=lambda t: (t.level or 0, t.problem_id or 0))


def tasks_from_hf_rows(rows: Iterable[dict], level: int, problems: set[int] | None = None) -> list[Task]:
    """Convert rows of the HF KernelBench dataset (columns code, level, name, problem_id)."""
    tasks = []
    for r in rows:
        pid = int(r["problem_id"])
        if problems is not None and pid not in problems:
            continue
        stem = Path(r["name"]).stem
        m = _PROBLEM_FILE.match(stem + ".py")
        name = m.group(2) if m else stem
        stem = stem if m else f"{pid}_{stem}"
        tasks.append(Task(id=f"level{level}/{stem}", name=name, source=r["code"], level=int(r.get("level") or level),
                          problem_id=pid, origin=f"kernelbench-hf:{HF_DATASET}"))
    return sorted(tasks, key=lambda t: t.problem_id or 0)


def load_kernelbench_hf(levels: Iterable[int], problems: set[int] | None = None) -> list[Task]:
    try:
        import datasets  # heavy; only when the hub is used
    except ImportError:
        raise TaskError("loading KernelBench from the hub needs the `datasets` package") from None
    tasks: list[Task] = []
    for lvl in levels:
        try:
            ds = datasets.load_dataset(HF_DATASET, split=f"level_{lvl}")
        except Exception as e:  # offline, missing split, hub errors: one clear line
            raise TaskError(f"cannot load {HF_DATASET} level {lvl} from the Hugging Face hub "
                            f"({type(e).__name__}); pass --kernelbench DIR or set DRK_KERNELBENCH") from None
        tasks += tasks_from_hf_rows(ds, lvl, problems)
    return tasks


def load_kernelbench(levels: str | int | None = "1", problems: str | None = None,
                     kernelbench: str | os.PathLike | None = None) -> list[Task]:
    """KernelBench tasks from a local checkout (preferred) or the HF dataset; raises TaskError if none match."""
    lv = parse_levels(levels) or [1]
    pids = parse_problem_ids(problems)
    root = find_kernelbench(kernelbench)
    tasks = load_kernelbench_dir(root, lv, pids) if root else load_kernelbench_hf(lv, pids)
    if not tasks:
        raise TaskError(f"no KernelBench task matches level {levels} problems {problems}")
    return tasks
