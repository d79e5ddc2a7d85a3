"""The local evaluator pool: persistent judge processes (one per slot), each with its sandboxed fork server.

This is the embedded default backend. Slots: one per visible GPU (or `workers` slots spread over the
GPUs), or `workers` on CPU. A slot's judge stays warm across evaluations (torch and Triton imported, CUDA
context up, references prepared); every candidate gets a fresh process from the slot's fork server
(`drk.gym.sandbox.zygote`). A judge that stops answering is killed with its whole process group and restarted,
and its request gets a `crashed`/`timeout` result. No request waits forever. A failure that a busy
neighbour can cause (timeout, out of memory, a dead worker) is evaluated again with nothing else running
before it stands. Without OS isolation the pool refuses to start unless `unsafe_no_sandbox`.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from collections import deque
from concurrent.futures import Future

from drk.gym import types as T
from drk.gym.common import wire
from drk.gym.judge import static
from drk.gym.sandbox import isolation
from drk.gym.sandbox.audit import redact, scrubbed_env, secret_values
from drk.gym.transport.base import SubmitBackend

JUDGE_START_TIMEOUT_S = 300.0


def default_cache_dir() -> str:
    return os.environ.get("DRK_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "drk")


def detect_device(device: str = "auto") -> str:
    if device not in ("auto", "", None):
        return device
    try:
        import torch

        return "cuda" if torch.cuda.is_available() else "cpu"
    except ImportError:
        return "cpu"


def visible_gpus() -> list[str]:
    """Physical ids of the GPUs this process may use (respecting CUDA_VISIBLE_DEVICES)."""
    vis = os.environ.get("CUDA_VISIBLE_DEVICES")
    if vis is not None:
        return [v.strip() for v in vis.split(",") if v.strip() and v.strip() != "-1"]
    import torch

    return [str(i) for i in range(torch.cuda.device_count())]


def plan_slots(device: str, workers: int | None, gpus: list[str] | None = None) -> list[tuple[str, dict]]:
    """(device string inside the slot, extra env) for each slot. On GPUs each slot sees exactly one GPU
    as cuda:0 (CUDA_VISIBLE_DEVICES), so a candidate is evaluated and timed on exactly one GPU."""
    if not device.startswith("cuda"):
        n = workers or max(1, min(4, (os.cpu_count() or 2) // 2))
        return [("cpu", {"OMP_NUM_THREADS": "1"}) for _ in range(n)]
    gpus = gpus if gpus is not None else visible_gpus()
    if ":" in device:  # cuda:N is the N-th *visible* GPU (respects the parent's CUDA_VISIBLE_DEVICES)
        n = int(device.split(":", 1)[1])
        if n >= len(gpus):
            raise RuntimeError(f"{device}: only {len(gpus)} CUDA device(s) visible")
        gpus = [gpus[n]]
    if not gpus:
        raise RuntimeError("no CUDA device visible; use --device cpu")
    n = workers or len(gpus)
    return [("cuda:0", {"CUDA_VISIBLE_DEVICES": gpus[i % len(gpus)]}) for i in range(n)]


def gpu_share(plan: list[tuple[str, dict]], env: dict) -> int:
    """How many of the pool's slots share this slot's GPU: they split its memory (drk.gym.judge.devicememory)."""
    gpu = env.get("CUDA_VISIBLE_DEVICES")
    return sum(1 for _, e in plan if e.get("CUDA_VISIBLE_DEVICES") == gpu) if gpu is not None else 1


class SandboxError(RuntimeError):
    """The evaluator refuses to run candidate code: no OS isolation and no explicit unsafe switch, or an
    operator's setting it cannot use (the user's to fix, one line)."""


class Slot:
    """One judge process and the thread that feeds it."""

    def __init__(self, index: int, device: str, env: dict, root: str, cache_path: str, unsafe: bool,
                 share: int = 1) -> None:
        self.index, self.device, self.env, self.cache_path, self.unsafe = index, device, env, cache_path, unsafe
        self.share = share
        self.dir = os.path.join(root, f"slot{index}")
        os.makedirs(self.dir, exist_ok=True)
        self.proc: subprocess.Popen | None = None
        self.conn = None
        self.hello: dict = {}
        self.last_task = ""
        self._start_lock = threading.Lock()  # its dispatcher thread and LocalPool.environment() may both start it

    def ensure_started(self) -> None:
        with self._start_lock:
            if self.proc is None or self.proc.poll() is not None:
                self.stop()
                self.start()

    def start(self) -> None:
        self.conn, child_fd = wire.socket_pair()
        cmd = [sys.executable, *isolation.NO_CWD_ON_PATH, "-m", "drk.gym.judge.evaluation", "--fd", str(child_fd), "--device", self.device,
               "--slot-dir", self.dir, "--slot-index", str(self.index), "--gpu-share", str(self.share),
               "--cache", self.cache_path] + (
               ["--unsafe-no-sandbox"] if self.unsafe else [])
        log = open(os.path.join(self.dir, "judge.log"), "ab")
        self.proc = subprocess.Popen(cmd, env=scrubbed_env(**self.env), pass_fds=(child_fd,), stdin=subprocess.DEVNULL,
                                     stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        log.close()
        os.close(child_fd)
        try:
            self.hello, _ = wire.recv(self.conn, timeout=JUDGE_START_TIMEOUT_S)
        except (TimeoutError, EOFError, OSError, wire.ProtocolError):
            tail = self.log_tail()
            self.stop()
            raise RuntimeError(f"evaluator worker {self.index} failed to start: {tail[-500:] or 'no output'}") from None
        if self.hello.get("error"):
            why = self.hello["error"]
            self.stop()
            raise SandboxError(why)

    def log_tail(self, n: int = 2000) -> str:
        return wire.file_tail(os.path.join(self.dir, "judge.log"), n)

    def stop(self) -> None:
        if self.conn is not None:
            try:
                wire.send(self.conn, {"op": "bye"})
            except OSError:
                pass
        if self.proc is not None:
            try:
                self.proc.wait(timeout=5)  # a judge told "bye" exits on its own
            except subprocess.TimeoutExpired:
                pass
            wire.kill_group(self.proc)
        wire.close_quietly(self.conn)
        self.proc, self.conn = None, None

    def evaluate(self, req: T.EvalRequest, slack_s: float) -> T.EvalResult:
        self.ensure_started()
        deadline = (T.HARD_WALL_FACTOR + 1) * req.options.timeout_s + slack_s
        try:
            wire.send(self.conn, {"op": "evaluate", "request": req.to_dict()})
            reply, _ = wire.recv(self.conn, timeout=deadline)
            self.last_task = req.task.id
            return T.EvalResult.from_dict(reply["result"])
        except TimeoutError:
            verdict, why = T.TIMEOUT, f"the evaluator did not answer within {deadline:.0f} s; worker restarted"
        except (EOFError, OSError, wire.ProtocolError, KeyError, TypeError):
            tail = self.log_tail(600).strip().splitlines()[-3:]
            verdict, why = T.CRASHED, ("the evaluator worker died during this evaluation; worker restarted"
                                       + (f" (last log lines: {' | '.join(tail)})" if tail else ""))
        self.stop()
        return T.EvalResult(task=req.task.id, solution=req.solution, device=self.device, verdict=verdict, error=why,
                            request_id=req.request_id, task_hash=req.task.source_hash)


class LocalPool(SubmitBackend):
    """Warm local workers behind `submit` (a Future per request), `evaluate` and `evaluate_batch`.

    One dispatcher thread per slot takes requests from a shared queue (preferring requests for the task
    its judge prepared last) and runs them on its slot. Use as a context manager or call close()."""

    def __init__(self, device: str = "auto", workers: int | None = None, cache_dir: str | None = None,
                 unsafe_no_sandbox: bool | None = None, slack_s: float = 600.0) -> None:
        self.device = detect_device(device)
        if unsafe_no_sandbox is None:  # the CLI's --unsafe-no-sandbox; never a request option
            unsafe_no_sandbox = os.environ.get("DRK_UNSAFE_NO_SANDBOX", "") not in ("", "0")
        from drk.gym.sandbox import isolation

        try:  # refuse here, once, with the reason, rather than in every evaluation
            self.isolation = isolation.detect(allow_unsafe=unsafe_no_sandbox)
        except isolation.SandboxUnavailable as e:
            raise SandboxError(str(e)) from None
        if self.device.startswith("cuda"):  # an operator's setting the judges would refuse, refused here once
            from drk.gym.judge.devicememory import share_from_env

            try:
                share_from_env()
            except ValueError as e:
                raise SandboxError(str(e)) from None
        self.cache_dir = cache_dir or default_cache_dir()
        os.makedirs(self.cache_dir, exist_ok=True)
        self.root = tempfile.mkdtemp(prefix="drk-gym-")
        self.slack_s = slack_s
        self.secrets = secret_values()
        cache_path = os.path.join(self.cache_dir, "reference_times.jsonl")
        plan = plan_slots(self.device, workers)
        self.slots = [Slot(i, dev, env, self.root, cache_path, unsafe_no_sandbox, share=gpu_share(plan, env))
                      for i, (dev, env) in enumerate(plan)]
        self._alone = _SharedExclusive()
        self._running: dict[int, bool] = {}  # evaluations in flight -> whether another one overlapped them
        self._pending: deque[tuple[T.EvalRequest, Future]] = deque()
        self._cv = threading.Condition()
        self._threads: list[threading.Thread] = []
        self._closed = False

    @property
    def workers(self) -> int:
        return len(self.slots)

    def __enter__(self) -> "LocalPool":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def environment(self, start: bool = True) -> set[str]:
        """Where this pool's results are measured (`drk.gym.cache.environment_of` of each started worker's
        device and versions). With `start`, starts the first worker when none has (empty if it cannot start)."""
        from drk.gym.transport.cache import environment_of

        if start and not any(s.hello for s in self.slots):
            try:
                self.slots[0].ensure_started()
            except RuntimeError:
                return set()  # the evaluations themselves report why
        return {environment_of(s.hello.get("device", ""), s.hello.get("versions", {})) for s in self.slots if s.hello}

    def close(self) -> None:
        if self._closed:
            return
        with self._cv:
            self._closed = True
            pending, self._pending = list(self._pending), deque()
            self._cv.notify_all()
        for req, fut in pending:
            # the evaluator's shutdown, never the candidate's doing: no verdict on it
            fut.set_result(T.EvalResult(task=req.task.id, solution=req.solution, verdict=T.INFRA_ERROR,
                                        error="the evaluator was shut down before this request ran",
                                        request_id=req.request_id))
        for t in self._threads:
            t.join(timeout=5)
        for s in self.slots:
            s.stop()
        if not os.environ.get("DRK_KEEP_GYM_DIR"):
            shutil.rmtree(self.root, ignore_errors=True)

    def queued(self) -> int:
        return len(self._pending)

    def _finish(self, req: T.EvalRequest, res: T.EvalResult) -> T.EvalResult:
        res.error = redact(res.error or "", self.secrets)
        res.solution = res.solution or req.solution
        res.request_id = res.request_id or req.request_id
        return res

    def submit(self, req: T.EvalRequest) -> Future:
        """Queue one request; the Future resolves to its EvalResult (never raises for candidate problems)."""
        fut: Future = Future()
        rep = static.check_source(req.source)
        if not rep.ok:  # fails before any worker is involved
            fut.set_result(self._finish(req, T.EvalResult(
                task=req.task.id, solution=req.solution, verdict=rep.verdict, error=rep.error,
                request_id=req.request_id, task_hash=req.task.source_hash, device=self.device,
                phase_seconds={"total": 0.0})))
            return fut
        with self._cv:
            if self._closed:
                raise RuntimeError("the evaluator pool is closed")
            self._pending.append((req, fut))
            if not self._threads:
                for slot in self.slots:
                    t = threading.Thread(target=self._serve_slot, args=(slot,), daemon=True,
                                         name=f"drk-slot-{slot.index}")
                    t.start()
                    self._threads.append(t)
            self._cv.notify()
        return fut

    def _take(self, slot: Slot) -> tuple[T.EvalRequest, Future] | None:
        with self._cv:
            while not self._pending and not self._closed:
                self._cv.wait()
            if self._closed:
                return None
            for item in self._pending:  # task affinity: the judge keeps its last reference loaded
                if item[0].task.id == slot.last_task:
                    self._pending.remove(item)
                    return item
            return self._pending.popleft()

    def _serve_slot(self, slot: Slot) -> None:
        while (item := self._take(slot)) is not None:
            req, fut = item
            if not fut.set_running_or_notify_cancel():
                continue
            res, overlapped = self._evaluate_on(slot, req, alone=False)
            if _suspect(res) and overlapped:
                # A failure that sibling evaluations can cause (time, memory, a disbelieved time): it stands
                # only if it repeats with nothing else running.
                res, _ = self._evaluate_on(slot, req, alone=True)
                res.flags.append(T.RERUN_ALONE)
            fut.set_result(self._finish(req, res))

    def _evaluate_on(self, slot: Slot, req: T.EvalRequest, alone: bool) -> tuple[T.EvalResult, bool]:
        """(result, whether another evaluation ran at the same time)."""
        me = threading.get_ident()
        with self._alone.hold(exclusive=alone):
            with self._cv:
                for k in self._running:
                    self._running[k] = True
                self._running[me] = bool(self._running)
            try:
                res = slot.evaluate(req, self.slack_s)
            except Exception as e:  # no sandbox, or a slot that cannot start: never a verdict on the candidate
                res = T.EvalResult(task=req.task.id, verdict=T.INFRA_ERROR, error=str(e)[:500])
            finally:
                with self._cv:
                    overlapped = self._running.pop(me, False)
        return res, overlapped


def _suspect(res: T.EvalResult) -> bool:
    """Failures a busy neighbour can cause: out of time, out of memory, a dead or unstartable worker, and a
    time the judge's clock disbelieved (`timing_inconsistent`): another process's GPU work time-slices with
    the timed loop (the GPU lock binds the judges, not candidates' threads: attack q02) and stretches the
    judge's wall clock around it, so the bound meant for forged times would replace a correct kernel's."""
    text = (res.error or "").lower()
    return res.verdict in (T.TIMEOUT, T.CRASHED, T.INFRA_ERROR) or T.TIMING_INCONSISTENT in res.flags or (
        res.verdict == T.RUNTIME_ERROR and ("out of memory" in text or "cuda error" in text))


class _SharedExclusive:
    """Many shared holders or one exclusive one (a re-run alone waits for the others to finish)."""

    def __init__(self) -> None:
        self._cv = threading.Condition()
        self._shared = 0
        self._exclusive = False
        self._waiting = 0  # exclusive holders waiting: new shared holders queue behind them

    @contextlib.contextmanager
    def hold(self, exclusive: bool):
        with self._cv:
            if exclusive:
                self._waiting += 1
                while self._exclusive or self._shared:
                    self._cv.wait()
                self._waiting -= 1
                self._exclusive = True
            else:
                while self._exclusive or self._waiting:
                    self._cv.wait()
                self._shared += 1
        try:
            yield
        finally:
            with self._cv:
                if exclusive:
                    self._exclusive = False
                else:
                    self._shared -= 1
                self._cv.notify_all()
