"""Query sets: the task lists `drk collect` and `drk rl` train on, and `drk eval --tasks` evaluates.

Accepted sources (`load_queries(spec)`):
- a folder of task files (`NNN_name.py`, KernelBench format), e.g. the project's own `data/queries/`;
- one task file;
- JSON Lines or parquet, one task per row, either plain (`code` / `reference` / `source` holding the
  reference program, optional `name` / `id` / `uuid`) or Dr. Kernel's RL-data layout (`prompt` = chat
  messages, `reward_model.ground_truth` = the reference program, optional `extra_info` with an id);
- a Hugging Face dataset id (`org/name`, optionally `org/name:split`), loaded with `datasets` when online.

Rows without a reference program are an error with the row number, not a silent skip.
"""
from __future__ import annotations

import hashlib
import json
import re
import sys
from pathlib import Path
from typing import Iterable

from drk.tasks import Task, TaskError, parse_problem_ids, task_from_file

_CODE_KEYS = ("code", "reference", "reference_code", "source", "ground_truth")
_KB_MARKERS = ("KernelBench", "kernelbench", "ScalingIntelligence")


def _row_source(row: dict) -> str | None:
    rm = row.get("reward_model")
    if isinstance(rm, str):
        try:
            rm = json.loads(rm)
        except json.JSONDecodeError:
            rm = None
    if isinstance(rm, dict) and isinstance(rm.get("ground_truth"), str):
        return rm["ground_truth"]
    for k in _CODE_KEYS:
        if isinstance(row.get(k), str) and row[k].strip():
            return row[k]
    return None


def _row_id(row: dict, index: int, source: str) -> tuple[str, str]:
    extra = row.get("extra_info") if isinstance(row.get("extra_info"), dict) else {}
    for k in ("id", "uuid", "task_id", "name", "problem_id"):
        v = row.get(k, extra.get(k))
        if v not in (None, ""):
            name = re.sub(r"[^A-Za-z0-9_.-]+", "_", str(v))[:80]
            return name, str(row.get("name") or name)
    h = hashlib.sha256(source.encode()).hexdigest()[:10]
    return f"{index:05d}_{h}", f"row{index}"


def tasks_from_rows(rows: Iterable[dict], origin: str, prefix: str) -> list[Task]:
    tasks = []
    for i, row in enumerate(rows):
        if not isinstance(row, dict):
            raise TaskError(f"{origin}: row {i + 1} is not an object")
        src = _row_source(row)
        if src is None:
            raise TaskError(f"{origin}: row {i + 1} has no reference program (expected reward_model.ground_truth "
                            f"or one of {', '.join(_CODE_KEYS)})")
        ident, name = _row_id(row, i, src)
        meta = {}
        if isinstance(row.get("prompt"), list):
            meta["prompt"] = row["prompt"]
        tasks.append(Task(id=f"{prefix}/{ident}", name=name, source=src, origin=origin, meta=meta,
                          problem_id=i + 1))
    return tasks


def _read_jsonl(path: Path) -> list[dict]:
    rows = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as e:
                raise TaskError(f"{path}: line {n} is not valid JSON ({e.msg})") from None
    return rows


def _read_parquet(path: Path) -> list[dict]:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise TaskError("reading parquet needs pyarrow (installed with `datasets`)") from None
    try:
        return pq.read_table(path).to_pylist()
    except Exception as e:
        raise TaskError(f"{path}: not a readable parquet file ({type(e).__name__})") from None


def load_queries(spec: str, problems: str | None = None) -> list[Task]:
    """Tasks from a folder, file, JSONL/parquet, or HF dataset id (see module docstring)."""
    p = Path(spec).expanduser()
    if p.is_dir():
        files = sorted(f for f in p.glob("*.py") if not f.name.startswith("_"))
        if not files:
            raise TaskError(f"no task files (*.py) in {p}")
        tasks = [task_from_file(f, id_prefix=p.name) for f in files]
    elif p.is_file() and p.suffix == ".py":
        tasks = [task_from_file(p)]
    elif p.is_file() and p.suffix in (".jsonl", ".json"):
        tasks = tasks_from_rows(_read_jsonl(p), str(p), p.stem)
    elif p.is_file() and p.suffix == ".parquet":
        tasks = tasks_from_rows(_read_parquet(p), str(p), p.stem)
    elif p.exists():
        raise TaskError(f"{p}: unsupported query file (use a folder of .py files, .jsonl or .parquet)")
    elif re.fullmatch(r"[\w.-]+/[\w.-]+(:[\w.-]+)?", spec) and not spec.startswith((".", "/")):
        tasks = _load_hf(spec)
    else:
        raise TaskError(f"query set not found: {spec}")
    ids = parse_problem_ids(problems)
    if ids is not None:
        tasks = [t for t in tasks if t.problem_id in ids]
    if not tasks:
        raise TaskError(f"no tasks selected from {spec}")
    return tasks


def _load_hf(spec: str) -> list[Task]:
    name, _, split = spec.partition(":")
    try:
        import datasets

        ds = datasets.load_dataset(name, split=split or "train")
    except Exception as e:
        raise TaskError(f"cannot load dataset {name} from the Hugging Face hub ({type(e).__name__}); "
                        "download it and pass the parquet/JSONL file") from None
    return tasks_from_rows(ds, f"hf:{spec}", name.split("/")[-1])


def warn_if_benchmark(tasks: list[Task], spec: str = "") -> None:
    """One warning on stderr when training queries come from KernelBench (see `looks_like_benchmark`)."""
    if looks_like_benchmark(tasks, spec):
        print("drk: warning: these queries come from KernelBench, the evaluation benchmark; training on them "
              "contaminates KernelBench results", file=sys.stderr)


def looks_like_benchmark(tasks: list[Task], spec: str = "") -> bool:
    """True when queries seem to come from KernelBench (evaluation data): a contamination risk for
    training. Checks the source path/id and the tasks' origins."""
    if any(m in spec for m in _KB_MARKERS):
        return True
    return any(m in t.origin for t in tasks for m in _KB_MARKERS)
