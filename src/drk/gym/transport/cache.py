"""Evaluation cache: identical candidates (frequent in RL batches) are evaluated once.

An entry is keyed by the task source, the candidate source, the protocol options that change the numbers,
and the *environment the result was measured in*: device kind, GPU model and the evaluator's torch, Triton,
CUDA and Python versions, exactly as the worker that ran it reported them (`EvalResult.versions`). A lookup
accepts an entry only for an environment this backend has (reported by its workers: `environment()` on the
local pool and the HTTP service, otherwise learned from the results it returns), so a cache file shared
between an H100 and an H200 node, or kept across a torch upgrade, never answers with another machine's
numbers. Results that depend on no hardware (a static-check failure, made before any worker) are stored
under the empty environment and accepted everywhere.

Stored in SQLite (one file, safe for several processes; WAL mode). Results that say more about the moment
than the kernel — `timeout`, `crashed` — are not cached, and neither are results flagged `excessive_speedup`.

`CachedGym(backend, path)` wraps any backend with `submit` and adds hit/miss counters; duplicates in flight
at the same time (inside one batch, say) are evaluated once.
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
from drk.gym.transport.base import SubmitBackend

NOT_CACHED = (T.TIMEOUT, T.CRASHED)


def environment_of(device: str, versions: dict) -> str:
    """The environment a result was measured in ("" when it needs none: no worker ran it)."""
    if not versions:
        return ""
    return json.dumps({"device": (device or "").split(":")[0], **versions}, sort_keys=True)


def content_key(req: T.EvalRequest) -> str:
    proto = req.options.protocol()
    h = hashlib.sha256()
    for part in (req.task.source, req.source, json.dumps(proto, sort_keys=True)):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


def cache_key(content: str, environment: str) -> str:
    return hashlib.sha256(f"{content}\0{environment}".encode()).hexdigest()


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

    def get(self, content: str, environments: Iterable[str]) -> T.EvalResult | None:
        keys = [cache_key(content, e) for e in sorted(environments)]
        row = self._db().execute(f"SELECT result FROM results WHERE key IN ({','.join('?' * len(keys))}) "
                                 "ORDER BY created DESC LIMIT 1", keys).fetchone()
        return T.EvalResult.from_dict(json.loads(row[0])) if row else None

    def put(self, content: str, res: T.EvalResult) -> None:
        if res.verdict in NOT_CACHED or T.EXCESSIVE_SPEEDUP in res.flags:
            return
        key = cache_key(content, environment_of(res.device, res.versions))
        self._db().execute("INSERT OR REPLACE INTO results (key, result, created) VALUES (?, ?, ?)",
                           (key, json.dumps(res.to_dict()), time.time()))


class CachedGym(SubmitBackend):
    """A backend wrapper that answers repeated candidates from the cache (its `submit` is the only path)."""

    def __init__(self, backend, path: str) -> None:
        self.backend = backend
        self.cache = EvalCache(path)
        self.hits = 0
        self.misses = 0
        self._environments: set[str] = {""}
        self._inflight: dict[str, Future] = {}
        self._lock = threading.Lock()

    def __getattr__(self, name):
        return getattr(self.backend, name)

    def environments(self, ask: bool = False) -> set[str]:
        """Environments whose entries may answer here. `ask` asks the backend when none is known yet (the local
        pool starts its first worker for that, so `submit` — called from the server's event loop — never asks)."""
        if ask and self._environments == {""}:
            known = getattr(self.backend, "environment", lambda: set())() or set()
            with self._lock:
                self._environments |= set(known)
        return set(self._environments)

    def evaluate(self, req: T.EvalRequest) -> T.EvalResult:
        return self.evaluate_batch([req])[0]

    def submit(self, req: T.EvalRequest) -> Future:
        """A hit resolves at once; a twin of a request in flight shares its evaluation; a miss goes to the
        backend's own `submit` (never blocks the caller) and is stored before its Future resolves."""
        content = content_key(req)
        out: Future = Future()
        hit = self.cache.get(content, self.environments())
        with self._lock:
            twin = None if hit is not None else self._inflight.get(content)
            if hit is None and twin is None:
                self._inflight[content] = out
                self.misses += 1
            else:
                self.hits += 1
        if hit is not None:
            out.set_result(self._as_hit(hit, req))
            return out
        if twin is not None:
            twin.add_done_callback(lambda f: out.set_result(self._as_hit(f.result(), req)) if f.exception() is None
                                   else out.set_exception(f.exception()))
            return out

        def store(f: Future) -> None:
            if f.exception() is not None:  # no backend should raise, but a waiting twin must not hang if one does
                with self._lock:
                    self._inflight.pop(content, None)
                out.set_exception(f.exception())
                return
            res = f.result()
            self.cache.put(content, res)
            with self._lock:
                self._environments.add(environment_of(res.device, res.versions))  # "" when no worker ran it
                self._inflight.pop(content, None)
            out.set_result(res)

        self.backend.submit(req).add_done_callback(store)
        return out

    def evaluate_batch(self, reqs: Iterable[T.EvalRequest],
                       on_result: Callable[[int, T.EvalResult], None] | None = None) -> list[T.EvalResult]:
        self.environments(ask=True)  # once per batch, where blocking is fine; then SubmitBackend's loop
        return super().evaluate_batch(reqs, on_result)

    @staticmethod
    def _as_hit(res: T.EvalResult, req: T.EvalRequest) -> T.EvalResult:
        d = res.to_dict()
        d.update(solution=req.solution, request_id=req.request_id)
        hit = T.EvalResult.from_dict(d)
        hit.phase_seconds = dict(hit.phase_seconds, cache_hit=1.0)
        return hit
