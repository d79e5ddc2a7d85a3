"""Evaluator backends behind one interface (`submit`, `evaluate`, `evaluate_batch`, `close`), and the
factory every stage uses for `--gym`:

- `local` (default): `LocalPool`, warm workers on this machine's GPUs or CPU;
- `http://HOST:PORT`: a `drk gym serve` instance (`HttpGym`);
- `ray` / `ray://HOST:PORT`: evaluation actors on a Ray cluster (`drk.gym.transport.ray_backend.RayGym`).

Optionally wrapped by the SQLite evaluation cache (`drk.gym.transport.cache.CachedGym`).
"""
from __future__ import annotations

import os
import time
from concurrent.futures import Future, ThreadPoolExecutor

from drk.gym import types as T
from drk.gym.transport.base import GymUnavailable, SubmitBackend

TOKEN_ENV = "DRK_GYM_TOKEN"  # the bearer token for a service started with --token-env


class HttpGym(SubmitBackend):
    """Client of `drk gym serve`: submit, then poll for results; every wait has a deadline. Sends the
    bearer token from $DRK_GYM_TOKEN when set; 429 and 503 mean "retry later", like 5xx."""

    def __init__(self, url: str, slack_s: float = 600.0, poll_s: float = 0.1, max_waiting: int = 128) -> None:
        import httpx

        self.url = url.rstrip("/")
        self.slack_s, self.poll_s = slack_s, poll_s
        # a bounded set of waiting threads (not one per request); the service queues the rest anyway
        self._threads = ThreadPoolExecutor(max_workers=max_waiting, thread_name_prefix="drk-http-gym")
        token = os.environ.get(TOKEN_ENV)
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.client = httpx.Client(timeout=httpx.Timeout(30.0, connect=10.0), headers=headers)
        try:
            h = self.client.get(f"{self.url}/health")
            h.raise_for_status()
        except Exception as e:
            raise GymUnavailable(f"no drk gym service at {self.url} ({type(e).__name__})") from None
        health = h.json()
        if health.get("authorized") is False:  # /health is open; everything else would answer 401/403
            raise GymUnavailable(f"the drk gym service at {self.url} does not admit this client: set "
                                 f"{TOKEN_ENV} to its token, or ask for this address to be on its --allow list")
        self.device, self.workers = health.get("device", ""), health.get("workers")
        self._environments = set(health.get("environments") or [])

    def environment(self) -> set[str]:
        """The service's worker environments, as its /health reported them (for the evaluation cache)."""
        return set(self._environments)

    def close(self) -> None:
        self._threads.shutdown(wait=False, cancel_futures=True)
        self.client.close()

    def _post(self, path: str, body: dict, patience_s: float) -> dict:
        """POST, retrying connection errors, 5xx, 429 and 503 (the service is busy or restarting) with
        backoff for up to `patience_s`; any other 4xx is the request's own fault and raises at once."""
        delay, deadline = 0.5, time.monotonic() + patience_s
        while True:
            try:
                r = self.client.post(f"{self.url}{path}", json=body)
            except Exception:
                if time.monotonic() + delay > deadline:
                    raise
            else:
                if r.status_code < 500 and r.status_code != 429:
                    r.raise_for_status()
                    return r.json()
                if time.monotonic() + delay > deadline:
                    raise GymUnavailable(f"{self.url}{path} keeps answering {r.status_code}")
            time.sleep(delay)
            delay = min(8.0, delay * 2)

    def _wait(self, job_id: str, req: T.EvalRequest) -> T.EvalResult:
        deadline = time.monotonic() + req.options.timeout_s + self.slack_s
        delay = self.poll_s
        while time.monotonic() < deadline:
            try:
                r = self.client.get(f"{self.url}/v1/result/{job_id}")
                if r.status_code == 200:
                    return T.EvalResult.from_dict(r.json())
            except Exception:
                pass  # the service restarting or a network hiccup: keep trying until the deadline
            time.sleep(delay)
            delay = min(2.0, delay * 1.5)  # hundreds of pending jobs must not flood the service with polls
        return T.EvalResult(task=req.task.id, solution=req.solution, verdict=T.TIMEOUT, request_id=req.request_id,
                            error=f"no result from {self.url} within {req.options.timeout_s + self.slack_s:.0f} s")

    def _run(self, req: T.EvalRequest) -> T.EvalResult:
        try:
            job = self._post("/v1/submit", {"request": req.to_dict()}, self.slack_s)["job_id"]
            return self._wait(job, req)
        except Exception as e:  # the service failed or refused: not the candidate's doing
            return T.EvalResult(task=req.task.id, solution=req.solution, verdict=T.INFRA_ERROR,
                                request_id=req.request_id, error=f"evaluator service error: {e}"[:300])

    def submit(self, req: T.EvalRequest) -> Future:
        return self._threads.submit(self._run, req)


def make_gym(spec: str = "local", *, device: str = "auto", workers: int | None = None,
             cache_path: str | None = None) -> T.Gym:
    """The backend named by `spec`, optionally behind the evaluation cache."""
    spec = spec or "local"
    if spec == "local":
        from drk.gym.transport.pool import LocalPool

        gym = LocalPool(device=device, workers=workers)
    elif spec.startswith(("http://", "https://")):
        gym = HttpGym(spec)
    elif spec == "ray" or spec.startswith("ray://"):
        from drk.gym.transport.ray_backend import RayGym

        gym = RayGym(None if spec == "ray" else spec, device=device, workers=workers)
    else:
        raise GymUnavailable(f"unknown --gym {spec!r}: use local, http://HOST:PORT, ray or ray://HOST:PORT")
    if cache_path:
        from drk.gym.transport.cache import CachedGym

        gym = CachedGym(gym, cache_path)
    return gym
