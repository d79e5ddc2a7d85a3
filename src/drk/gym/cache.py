"""Evaluation cache: identical candidates (frequent in RL batches) are evaluated once.

Key = sha256 of (task source, candidate source, the protocol options that change the numbers, device
kind, GPU model, torch and Triton versions). Stored in SQLite (one file, safe for several processes;
WAL mode). Results that say more about the moment than the kernel — `timeout`, `crashed` — are not
cached, and neither are results flagged `excessive_speedup`.

`CachedGym(backend, path)` wraps any backend with `evaluate_batch` and adds hit/miss counters; duplicates
inside one batch are evaluated once too.
"""
from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from concurrent.futures import Future
from typing import Callable, Iterable

from drk.gym import types as T

NOT_CACHED = (T.TIMEOUT, T.CRASHED)
PROTOCOL_KEYS = ("device", "trials", "tolerance", "seed", "timing", "warmup", "timing_trials", "l2_flush",
                 "compile_baseline", "profile", "input_budget_mb", "scale", "fp64_check", "max_plausible_speedup",
                 "low_coverage")


def cache_key(req: T.EvalRequest, hardware: str) -> str:
    opts = req.options.to_dict()
    proto = {k: opts.get(k) for k in PROTOCOL_KEYS}
    h = hashlib.sha256()
    for part in (req.task.source, req.source, json.dumps(proto, sort_keys=True), hardware):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


class EvalCache:
    def __init__(self, path: str) -> None:
        self.path = path
        self._local = threading.local()
        with self._db() as db:
            db.execute("CREATE TABLE IF NOT EXISTS results (key TEXT PRIMARY KEY, result TEXT NOT NULL, "
                       "created REAL NOT NULL)")

    def _db(self) -> sqlite3.Connection:
        db = getattr(self._local, "db", None)
        if db is None:
            db = sqlite3.connect(self.path, timeout=30, isolation_level=None)
            db.execute("PRAGMA journal_mode=WAL")
            self._local.db = db
        return db

    def get(self, key: str) -> T.EvalResult | None:
        row = self._db().execute("SELECT result FROM results WHERE key = ?", (key,)).fetchone()
        return T.EvalResult.from_dict(json.loads(row[0])) if row else None

    def put(self, key: str, res: T.EvalResult) -> None:
        if res.verdict in NOT_CACHED or T.EXCESSIVE_SPEEDUP in res.flags:
            return
        self._db().execute("INSERT OR REPLACE INTO results (key, result, created) VALUES (?, ?, ?)",
                           (key, json.dumps(res.to_dict()), time.time()))


class CachedGym:
    """A backend wrapper that answers repeated candidates from the cache."""

    def __init__(self, backend, path: str, hardware: str | None = None) -> None:
        self.backend = backend
        self.cache = EvalCache(path)
        self.hardware = hardware
        self.hits = 0
        self.misses = 0

    def _hardware(self) -> str:
        if self.hardware is None:
            gpu = getattr(self.backend, "gpu_model", lambda: "")()
            import torch

            self.hardware = f"{getattr(self.backend, 'device', '')}|{gpu}|torch {torch.__version__}"
        return self.hardware

    def __getattr__(self, name):
        return getattr(self.backend, name)

    def evaluate(self, req: T.EvalRequest) -> T.EvalResult:
        return self.evaluate_batch([req])[0]

    def submit(self, req: T.EvalRequest) -> Future:
        """A hit resolves at once; a miss goes to the backend's own `submit` (never blocks the caller —
        the HTTP server calls this from its event loop) and is stored when it finishes."""
        key = cache_key(req, self._hardware())
        hit = self.cache.get(key)
        if hit is not None:
            self.hits += 1
            fut: Future = Future()
            fut.set_result(self._as_hit(hit, req))
            return fut
        self.misses += 1
        outer: Future = Future()

        def store(f: Future) -> None:  # stored before the caller sees the result, so a resubmit hits
            self.cache.put(key, f.result())
            outer.set_result(f.result())

        self.backend.submit(req).add_done_callback(store)
        return outer

    def evaluate_batch(self, reqs: Iterable[T.EvalRequest],
                       on_result: Callable[[int, T.EvalResult], None] | None = None) -> list[T.EvalResult]:
        reqs = list(reqs)
        hw = self._hardware()
        keys = [cache_key(r, hw) for r in reqs]
        out: list[T.EvalResult | None] = [None] * len(reqs)
        first: dict[str, int] = {}
        todo: list[int] = []
        for i, k in enumerate(keys):
            hit = self.cache.get(k)
            if hit is not None:
                out[i] = self._as_hit(hit, reqs[i])
                self.hits += 1
                if on_result:
                    on_result(i, out[i])
            elif k in first:
                self.hits += 1  # a duplicate inside this batch: filled in from its twin below
            else:
                first[k] = i
                todo.append(i)
        self.misses += len(todo)

        def done(j: int, res: T.EvalResult) -> None:
            i = todo[j]
            self.cache.put(keys[i], res)
            out[i] = res
            if on_result:
                on_result(i, res)

        if todo:
            results = self.backend.evaluate_batch([reqs[i] for i in todo], on_result=done)
            for j, res in enumerate(results):
                if out[todo[j]] is None:  # a backend that does not report as it goes
                    done(j, res)
        for i, k in enumerate(keys):
            if out[i] is None:
                out[i] = self._as_hit(out[first[k]], reqs[i])
                if on_result:
                    on_result(i, out[i])
        return out  # type: ignore[return-value]

    @staticmethod
    def _as_hit(res: T.EvalResult, req: T.EvalRequest) -> T.EvalResult:
        d = res.to_dict()
        d.update(solution=req.solution, request_id=req.request_id)
        hit = T.EvalResult.from_dict(d)
        hit.phase_seconds = dict(hit.phase_seconds, cache_hit=1.0)
        return hit
