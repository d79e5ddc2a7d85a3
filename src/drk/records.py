"""JSON Lines records on disk: every stage's outputs (results, trajectories, rollouts, metrics).

Each record is written with one `write` of a complete line followed by a flush, so a run killed at any
moment leaves at most one partial last line, which readers skip. Existing files are never truncated:
`start_fresh` moves an old file aside instead of overwriting it.
"""
from __future__ import annotations

import json
import math
import os
import time
from pathlib import Path
from typing import Any, Iterator


def _clean(x: Any) -> Any:
    """Replace NaN/inf (not valid JSON) with None, recursively."""
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, dict):
        return {k: _clean(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_clean(v) for v in x]
    return x


def dumps(record: Any) -> str:
    return json.dumps(_clean(record), ensure_ascii=False, allow_nan=False)


class JsonlWriter:
    """Append records to a JSON Lines file (line-buffered, flushed after every record)."""

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._f = open(self.path, "a", encoding="utf-8")

    def write(self, record: Any) -> None:
        self._f.write(dumps(record) + "\n")
        self._f.flush()

    def close(self) -> None:
        self._f.close()

    def __enter__(self) -> "JsonlWriter":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def read_jsonl(path: str | os.PathLike) -> Iterator[dict]:
    """Records of a JSON Lines file; malformed lines (a torn last line) are skipped."""
    p = Path(path)
    if not p.exists():
        return
    with open(p, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(rec, dict):
                yield rec


def start_fresh(path: str | os.PathLike) -> Path | None:
    """If `path` exists, rename it to `<stem>.<timestamp><suffix>` and return the new name."""
    p = Path(path)
    if not p.exists():
        return None
    dest = p.with_name(f"{p.stem}.{time.strftime('%Y%m%d-%H%M%S')}{p.suffix}")
    n = 1
    while dest.exists():
        dest = p.with_name(f"{p.stem}.{time.strftime('%Y%m%d-%H%M%S')}-{n}{p.suffix}")
        n += 1
    p.rename(dest)
    return dest


def write_json(path: str | os.PathLike, obj: Any) -> None:
    """Write a JSON document atomically (temp file + rename)."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(p.name + ".tmp")
    tmp.write_text(json.dumps(_clean(obj), indent=2, ensure_ascii=False, allow_nan=False) + "\n")
    tmp.replace(p)
