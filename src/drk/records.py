"""JSON Lines records on disk: every stage's outputs (results, trajectories, rollouts, metrics).

Each record is written with one `write` of a complete line followed by a flush, so a run killed at any
moment leaves at most one partial last line, which readers skip. Existing files are never truncated:
`start_fresh` moves an old file aside instead of overwriting it.
"""
from __future__ import annotations

import json
import math
import os
import shutil
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


def rewrite_jsonl(path: str | os.PathLike, keep) -> int:
    """Atomically rewrite a JSON Lines file with only the records for which `keep(record)` is true (resume
    drops records of items that must be redone, e.g. infrastructure failures). Returns how many were dropped."""
    p = Path(path)
    if not p.exists():
        return 0
    rows = list(read_jsonl(p))
    kept = [r for r in rows if keep(r)]
    if len(kept) == len(rows):
        return 0  # nothing to drop: the file is left untouched
    tmp = p.with_name(p.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        for r in kept:
            f.write(dumps(r) + "\n")
    tmp.replace(p)
    return len(rows) - len(kept)


class RunDirError(ValueError):
    """`--out` holds a different run (or is not a directory): shown to the user as one line."""


def claim_run_dir(out: str | os.PathLike, config_name: str, config: dict, *, overwrite: bool = False,
                  outputs: tuple[str, ...] = ()) -> bool:
    """Make `out` this run's directory; returns True when it already held this very run (a resume).

    The run is identified by `config` (the settings that decide its results), stored as OUT/`config_name`.
    A directory holding a run with another config is refused: mixing two runs' records would silently
    corrupt both. With `overwrite`, the old run's `outputs` (files or folders, e.g. checkpoints) and its config
    are deleted first."""
    p = Path(out)
    if p.exists() and not p.is_dir():
        raise RunDirError(f"--out {p} is a file; give a directory (it will be created)")
    cfg_path = p / config_name
    saved = None
    if cfg_path.exists():
        try:
            saved = json.loads(cfg_path.read_text())
        except (OSError, json.JSONDecodeError):
            saved = None
    fresh = json.loads(dumps(config))  # the config as it will read back from disk
    # only this run's keys are compared: a config written by an older drk may hold extra keys
    diff = sorted(k for k in fresh if saved is not None and saved.get(k) != fresh[k])
    if diff and not overwrite:
        # a few keys only: the message is one line, and a long list would push the fix out of it
        shown = ", ".join(diff[:4]) + (f" and {len(diff) - 4} more" if len(diff) > 4 else "")
        raise RunDirError(f"{p} holds a different run ({config_name} differs in: {shown}); "
                          "use another --out, or --overwrite to replace it")
    if overwrite:
        for name in (*outputs, config_name):
            q = p / name
            if q.is_dir() and not q.is_symlink():
                shutil.rmtree(q)
            else:
                q.unlink(missing_ok=True)
        saved = None
    p.mkdir(parents=True, exist_ok=True)
    if saved != fresh:
        write_json(cfg_path, config)
    return saved is not None
