"""What every evaluator backend shares: `evaluate` and `evaluate_batch` on top of its own `submit`
(`SubmitBackend`, which makes a backend a `drk.gym.types.Gym`), and the error for a backend that cannot be
reached or started (`GymUnavailable`)."""
from __future__ import annotations

from collections.abc import Callable, Iterable
from concurrent.futures import Future, as_completed

from drk.gym import types as T


class GymUnavailable(RuntimeError):
    """The requested evaluator backend cannot be reached or started (shown to the user as one line)."""


class SubmitBackend:
    """`evaluate` and `evaluate_batch` for any backend that implements `submit(request) -> Future`."""

    def submit(self, req: T.EvalRequest) -> Future:  # pragma: no cover - implemented by subclasses
        raise NotImplementedError

    def evaluate(self, req: T.EvalRequest) -> T.EvalResult:
        return self.submit(req).result()

    def evaluate_batch(self, reqs: Iterable[T.EvalRequest],
                       on_result: Callable[[int, T.EvalResult], None] | None = None) -> list[T.EvalResult]:
        """Evaluate all requests in parallel; results in input order. `on_result(i, r)` is called (from this
        thread) as each finishes."""
        futs = [self.submit(r) for r in reqs]
        index = {id(f): i for i, f in enumerate(futs)}
        for f in as_completed(futs):
            if on_result is not None:
                on_result(index[id(f)], f.result())
        return [f.result() for f in futs]
