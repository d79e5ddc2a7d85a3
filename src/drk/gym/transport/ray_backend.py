"""Ray backend: evaluation slots as Ray actors, scheduled across a cluster (`pip install drk[ray]`).

Each actor owns one evaluation slot — the same judge process and sandboxed runner as the local pool, so
a candidate never runs in a process that outlives a crash, a timeout or a CUDA error. On GPUs every actor
reserves one GPU (`num_gpus=1`), and Ray sets CUDA_VISIBLE_DEVICES for it, so each candidate is evaluated
and timed on exactly one GPU. The driver enforces every request's deadline itself: a request that does
not come back in time is answered `timeout` and its actor killed and replaced; an actor lost with its
node is replaced and the request retried (up to `retries` times).

`RayGym(None)` starts or joins a local Ray instance; `RayGym("ray://HOST:PORT")` connects to a cluster.
"""
from __future__ import annotations

import threading
from concurrent.futures import Future, ThreadPoolExecutor

from drk.gym import types as T
from drk.gym.transport.base import SubmitBackend


def _slot_actor_class():
    import ray

    @ray.remote(max_restarts=0)
    class SlotActor:
        """One judge (and its runner) inside a Ray worker process."""

        def __init__(self, device: str, cache_dir: str | None) -> None:
            import os
            import tempfile

            from drk.gym.transport.pool import Slot, default_cache_dir

            cache_dir = cache_dir or default_cache_dir()
            os.makedirs(cache_dir, exist_ok=True)
            # the judge inherits the GPU Ray gave this actor: scrubbed_env keeps CUDA_VISIBLE_DEVICES
            self.slot = Slot(0, "cuda:0" if device.startswith("cuda") else "cpu", {"OMP_NUM_THREADS": "1"},
                             tempfile.mkdtemp(prefix="drk-ray-"), os.path.join(cache_dir, "reference_times.jsonl"),
                             True)

        def evaluate(self, req: dict, slack_s: float) -> dict:
            return self.slot.evaluate(T.EvalRequest.from_dict(req), slack_s).to_dict()

        def stop(self) -> None:
            self.slot.stop()

    return SlotActor


class RayGym(SubmitBackend):
    def __init__(self, address: str | None = None, device: str = "auto", workers: int | None = None,
                 cache_dir: str | None = None, slack_s: float = 120.0, retries: int = 2, num_cpus: int | None = None) -> None:
        try:
            import ray
        except ImportError:
            from drk.gym.transport.base import GymUnavailable

            raise GymUnavailable("the Ray backend needs ray: pip install 'drk[ray]'") from None
        self.ray = ray
        if not ray.is_initialized():
            ray.init(address=address, num_cpus=num_cpus, include_dashboard=False, log_to_driver=False,
                     ignore_reinit_error=True)
        gpus = int(ray.cluster_resources().get("GPU", 0))
        self.device = device if device != "auto" else ("cuda" if gpus else "cpu")
        self.workers = workers or (gpus if self.device.startswith("cuda") else max(1, int(ray.cluster_resources().get("CPU", 2)) // 2))
        self.cache_dir, self.slack_s, self.retries = cache_dir, slack_s, retries
        self._cls = _slot_actor_class()
        self._actors: set = set()  # every live actor, free or busy: close() must stop them all
        self._free: list = [self._new_actor() for _ in range(self.workers)]
        self._cv = threading.Condition()
        self._threads = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="drk-ray-gym")  # one per actor
        self._closed = False

    def _new_actor(self):
        opts = {"num_gpus": 1} if self.device.startswith("cuda") else {"num_cpus": 1}
        actor = self._cls.options(**opts).remote(self.device, self.cache_dir)
        self._actors.add(actor)
        return actor

    def _wait_dead(self, actor, timeout_s: float) -> bool:
        """Whether `actor` is known dead within `timeout_s` (a call on it fails with RayActorError)."""
        import time

        from ray.exceptions import GetTimeoutError, RayActorError

        end = time.monotonic() + timeout_s
        while time.monotonic() < end:
            try:
                self.ray.get(actor.__ray_ready__.remote(), timeout=max(0.1, min(5.0, end - time.monotonic())))
            except RayActorError:
                return True
            except GetTimeoutError:  # a busy actor still being killed
                pass
            except Exception:  # any other failure to reach it also means it is not serving
                return True
            time.sleep(0.1)
        return False

    def _acquire(self):
        """A free actor, or None once the backend is closed."""
        with self._cv:
            while not self._free and not self._closed:
                self._cv.wait()
            return None if self._closed else self._free.pop()

    def _release(self, actor) -> None:
        with self._cv:
            self._free.append(actor)
            self._cv.notify()

    def _replace(self, actor) -> None:
        self._actors.discard(actor)
        try:
            self.ray.kill(actor, no_restart=True)
        except Exception:
            pass
        if not self._closed:
            self._release(self._new_actor())

    def _run(self, req: T.EvalRequest) -> T.EvalResult:
        from ray.exceptions import GetTimeoutError, RayActorError

        for attempt in range(self.retries + 1):
            actor = self._acquire()
            if actor is None:
                # the evaluator's shutdown, never the candidate's doing: no verdict on it
                return T.EvalResult(task=req.task.id, solution=req.solution, verdict=T.INFRA_ERROR,
                                    request_id=req.request_id, error="the evaluator was shut down before this request ran")
            ref = actor.evaluate.remote(req.to_dict(), self.slack_s)
            deadline = req.options.timeout_s + self.slack_s + 300.0  # + a fresh actor's start-up
            try:
                res = T.EvalResult.from_dict(self.ray.get(ref, timeout=deadline))
                self._release(actor)
                return res
            except GetTimeoutError:
                self._replace(actor)
                return T.EvalResult(task=req.task.id, solution=req.solution, verdict=T.TIMEOUT,
                                    request_id=req.request_id, error=f"no result within {deadline:.0f} s (Ray)")
            except RayActorError:
                self._replace(actor)  # node or worker lost: retry on a new actor
        return T.EvalResult(task=req.task.id, solution=req.solution, verdict=T.CRASHED, request_id=req.request_id,
                            error=f"the evaluation actor died {self.retries + 1} times")

    def submit(self, req: T.EvalRequest) -> Future:
        return self._threads.submit(self._run, req)

    def evaluate(self, req: T.EvalRequest) -> T.EvalResult:
        return self._run(req)

    def close(self) -> None:
        if self._closed:
            return
        with self._cv:
            self._closed = True
            self._cv.notify_all()  # threads waiting for an actor give up
        self._threads.shutdown(wait=False, cancel_futures=True)
        free = set(self._free)
        for a in list(self._actors):
            if a in free:  # idle: let its judge and runner exit cleanly
                try:
                    self.ray.get(a.stop.remote(), timeout=30)
                except Exception:  # a slow or dead actor is killed below all the same
                    pass
            try:
                self.ray.kill(a)  # busy ones are killed mid-evaluation (their GPUs would stay taken otherwise)
            except Exception:
                pass
        # ray.kill only asks; close() returns once every actor is gone, so a caller that starts a new gym (or
        # reads the GPUs as free) right after never races the old actors
        for a in list(self._actors):
            self._wait_dead(a, timeout_s=30.0)
        self._actors.clear()
