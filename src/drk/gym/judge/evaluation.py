"""The judge: the trusted half of an evaluation slot (`python -m drk.gym.judge.evaluation`).

One judge per device slot. It builds the reference from the task (never from candidate code), makes the
seeded inputs, computes the expected outputs, and has the slot's fork server (`drk.gym.sandbox.zygote`,
inside the OS sandbox) start a fresh candidate process for each evaluation (`drk.gym.sandbox.runner` runs
there). Inputs and outputs travel as bytes (CPU) or through one sealed memory file per forward (CUDA,
`drk.gym.common.shm`); the judge compares them here, keeps the candidate's time budget (charged only for CPU
time it got), and checks what the candidate process reports against its own clock, so nothing the candidate
does inside its own interpreter can change a verdict. The judge also times the reference (eager and
torch.compile, cached per task, shapes, GPU and protocol) on the same GPU, and turns everything into one
`EvalResult`.

Protocol of one evaluation (`Judge.evaluate`): static check → reference at the right scale → a fresh
candidate process loads the candidate → correctness trials with fresh seeded inputs (train/eval ×
grad/no-grad), the wide-input and offset probes and the Triton-ablation probe in random order
(`drk.gym.judge.checks`) → GPU: candidate and reference timing, output-caching check after timing (inputs
changed in place), profile of one forward and Triton coverage; CPU: coverage from interpreter time and the
outputs Triton wrote → verdict and flags → the candidate process is killed with everything it started.
"""
from __future__ import annotations

import argparse
import contextlib
import copy
import gc
import os
import pickle
import secrets
import select
import socket
import threading
import time
import traceback
from dataclasses import dataclass

import torch

from drk.gym import types as T
from drk.gym.common import compare, harness, wire
from drk.gym.common.shm import Exchange, HostMemoryError
from drk.gym.common.tensors import nbytes
from drk.gym.judge import devicelock, devicememory, replies, static
from drk.gym.judge.checks import ExchangeOutgrown, PreparedTask, TrialChecks, claimed_failure, fresh_copy
from drk.gym.judge.forkserver import ForkServer, ForkServerGone
from drk.gym.judge.refcache import RefTimeCache
from drk.gym.sandbox import isolation
from drk.gym.sandbox import audit as sandbox_audit
from drk.gym.sandbox.audit import candidate_env
from drk.gym.sandbox.isolation import Isolation
from drk.tasks.scaling import ScalingError, fit_budget, follow, scale_source

CPU_INPUT_BUDGET_MB = 2.0
CPU_ADDRESS_SPACE_GB = 24.0   # CPU path only: CUDA reserves huge virtual ranges
# A candidate's own work folder and /dev/shm (root mode: tmpfs of its own, `zygote.own_tmp`): memory the host
# gives it outside its resident size, so bounded; enough for Triton's cache and torch.compile's files
CANDIDATE_TMP_MB, CANDIDATE_SHM_MB = 1024, 256
RUNNER_START_TIMEOUT_S = 300.0
# No reply carries frames (tensors travel in the exchange file): whatever frames a reply brings, one or many,
# are bounded together by 1 MiB, so a candidate process cannot make the judge hold more (attack m11)
MAX_REPLY_FRAME_BYTES = 1 << 20


class RunnerGone(Exception):
    def __init__(self, verdict: str, message: str) -> None:
        super().__init__(message)
        self.verdict, self.message = verdict, message


DEVICE_MEMORY_FACTOR = 10
REPLY_READ_FLOOR_S = 10.0  # a reply that has begun may take this long to arrive whatever budget is left
MAX_EXCHANGE_RESTARTS = 2  # an evaluation restarted with a larger exchange file (checks.ExchangeOutgrown)
PROFILERS = ("per-op", "ambient")


def profiler_mode() -> str:
    """DRK_PROFILER, how a CUDA candidate's ops are profiled: `per-op` (the default: a device profiler
    started and stopped around every op) or `ambient` (one kept across the ops whose activity is not read,
    a fresh one around the time and profile ops): a switch to measure what the per-op starts cost."""
    mode = os.environ.get("DRK_PROFILER", "per-op")
    if mode not in PROFILERS:
        raise ValueError(f"DRK_PROFILER={mode!r} is not one of {', '.join(PROFILERS)}")
    return mode


GPU_EVENTS = ("gpu_leave", "gpu_enter")  # a candidate process's compile, mid-op (`Judge._gpu_event`)
MAX_GPU_EVENTS = 4096                   # per op: two per compiled kernel (autotuning compiles each config)
MAX_SUSPENDS = 64                       # per op: compiles after these keep the hold (each resume's wait is
                                        # uncharged, so a candidate leaving and entering in a loop would stretch
                                        # its evaluation by the neighbours' measurements without bound)


def compile_hold() -> str:
    """DRK_COMPILE_HOLD: "hold" (default) keeps the GPU's shared hold through a candidate's Triton compiles;
    "release" lets it go while the compile runs (host work), so a measurement queued behind it starts sooner.
    Every result of a "release" judge records it (`protocol.compile_hold`)."""
    v = os.environ.get("DRK_COMPILE_HOLD", "hold").strip().lower()
    if v not in ("hold", "release"):
        raise ValueError(f"DRK_COMPILE_HOLD must be 'hold' or 'release', not {v!r}")
    return v


START_STEPS = ("forked", "sandboxed", "cuda_early", "runner", "cuda", "triton", "profiler", "snapshot")


def start_phases(r: "RunnerHandle") -> dict[str, float]:
    """A candidate process's start-up (`runner_start`) and its steps (`runner_start_<step>`: seconds from the
    step before), from the monotonic times its hello reports (sent by the runner before any candidate code
    exists); `hello` is its last step to the judge's reading of the hello. What holds the GPU longest while it
    starts, in the figures. Empty for a process not yet ready."""
    if r.ready_at is None:
        return {}
    out = {"runner_start": round(r.ready_at - r.spawned_at, 3)}
    stamps = (r.hello or {}).get("stamps")
    if not isinstance(stamps, dict):
        return out
    last = r.spawned_at
    for key in START_STEPS:
        t = stamps.get(key)
        if isinstance(t, (int, float)) and last <= t <= r.ready_at:
            out[f"runner_start_{key}"], last = round(t - last, 3), t
    out["runner_start_hello"] = round(r.ready_at - last, 3)
    return out


class RunnerHandle:
    """One fresh candidate process (forked by the slot's fork server, sandboxed) and its channel."""

    def __init__(self, fork: ForkServer, device: str, slot_dir: str, limits: dict,
                 compile_release: bool = False) -> None:
        self.fork = fork
        spawned_at = time.monotonic()  # before the fork server's reply: the child's first step may come first
        self.log_path = os.path.join(slot_dir, f"runner-{secrets.token_hex(4)}.log")
        self.conn, child_fd = wire.socket_pair()
        log_fd = os.open(self.log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        opts: dict = {"device": device, "compile_release": compile_release}
        modules = theirs = None
        self.modules = None  # its channel to the launcher builder (drk.gym.judge.launchers), if it has one
        if fork.launchers is not None:  # its Triton asks the judge for launchers, on a channel of its own
            modules, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            opts["module_folders"] = fork.module_folders()
        try:
            self.cid, self.uid = fork.spawn(child_fd, log_fd, opts, limits,
                                            modules_fd=theirs.fileno() if theirs is not None else None)
        except BaseException:
            wire.close_quietly(modules)
            raise
        finally:
            os.close(child_fd)
            os.close(log_fd)
            wire.close_quietly(theirs)
        if modules is not None:
            self.modules = fork.launchers.serve(modules)  # ends when the candidate's end closes
        self.hello: dict | None = None
        self.spawned_at, self.ready_at = spawned_at, None  # its start-up, inside the GPU hold

    def log_tail(self, n: int = 800) -> str:
        return wire.file_tail(self.log_path, n).strip()

    def usage(self) -> dict:
        return self.fork.usage(self.cid)

    def kill(self) -> bool:
        """Kill the process and everything it started; False when the fork server saw survivors."""
        ok = self.fork.kill(self.cid)
        wire.close_quietly(self.conn)
        try:
            os.unlink(self.log_path)
        except OSError:
            pass
        return ok

    def death_reason(self) -> str:
        tail = self.log_tail()
        return "the process running the candidate died" + (f"; its last output:\n{tail[-600:]}" if tail else "")


@dataclass
class Budget:
    """The candidate's time budget for one evaluation. A candidate is charged for wall time while the
    judge waits on it, less the time its main thread sat runnable without a CPU (host load, read from the
    kernel's scheduler statistics by the fork server), so a loaded host extends the wall budget instead
    of producing a false `timeout`; but never less than the CPU its own threads and processes got over
    the cores it may use, so its own threads are never taken for the host's load. `hard_deadline` bounds
    the extension; reaching it without the candidate having used its budget is the infrastructure's
    failure (`infra_error`)."""

    left_s: float
    hard_deadline: float


class SpareStart:
    """The next candidate process, started on a thread while the current one works (its CUDA start-up then
    overlaps the evaluation instead of adding to the next one)."""

    def __init__(self, judge: "Judge") -> None:
        self.judge = judge
        self.runner: RunnerHandle | None = None
        self._thread = threading.Thread(target=self._run, name="drk-spare", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self.runner = self.judge._start_runner()
        except (RunnerGone, ForkServerGone, OSError):
            self.runner = None  # the next evaluation starts one itself and reports what fails

    def wait(self) -> None:
        self._thread.join(RUNNER_START_TIMEOUT_S + 30.0)

    def take(self) -> RunnerHandle | None:
        """The started process, or None when it failed to start."""
        self.wait()
        return self.runner

    def discard(self) -> None:
        self.wait()
        if self.runner is not None:
            self.runner.kill()
            self.runner = None


class Judge:
    def __init__(self, device: str, slot_dir: str, cache_path: str | None, iso: Isolation, slot_index: int = 0,
                 env: dict | None = None, gpu_share: int = 1) -> None:
        self.device = device
        self.cuda = device.startswith("cuda")
        self.gpu_share = max(1, int(gpu_share))  # judges of this pool on this GPU: they split its memory
        self.slot_dir = slot_dir
        self.iso = iso
        self.runner: RunnerHandle | None = None
        self.runner_start: dict[str, float] = {}  # the current candidate process's start-up (`start_phases`)
        self.exchange = Exchange()  # tensors to and from candidate processes; poisoned between candidates
        self.spare: SpareStart | None = None
        self.keep_spare = self.cuda  # CPU candidates start in milliseconds: nothing to overlap
        self._spawn_lock = threading.Lock()  # the spare starts on a thread of its own
        self.tasks: dict[tuple, PreparedTask] = {}
        self.ref_times = RefTimeCache(cache_path)
        self.memory_budget = 0  # bytes of the device this judge and its candidate may use (drk.gym.judge.devicememory)
        if self.cuda:
            torch.cuda.set_device(torch.device(device))
            self.memory_budget = devicememory.budget_bytes(torch.cuda.mem_get_info()[1], self.gpu_share,
                                                           devicememory.share_from_env())
        self.gpu = devicelock.for_device(device)  # measurements own the GPU (drk.gym.judge.devicelock)
        self.profiler = profiler_mode()
        # a candidate's Triton compiles (host work) let the GPU's shared hold go (`GPU_EVENTS`)
        self.compile_release = (self.cuda and not isinstance(self.gpu, devicelock.NoLock)
                                and compile_hold() == "release")
        base_cache = os.path.join(slot_dir, "triton-base")
        os.makedirs(base_cache, exist_ok=True)
        overrides = {} if self.cuda else {"TRITON_INTERPRET": "1"}
        self.limits = {"file_mb": 512, "nproc": 4096, "tmp_mb": CANDIDATE_TMP_MB, "shm_mb": CANDIDATE_SHM_MB,
                       "address_space_gb": None if self.cuda else CPU_ADDRESS_SPACE_GB}
        self.fork = ForkServer(iso, device, slot_dir, base_cache, slot_index, candidate_env(env, **overrides),
                               self.limits, exec_guard=isolation.exec_guard_wanted(device))
        # The fork server's start (importing torch and Triton in the sandbox, seconds) runs beside the judge's
        # own set-up below. It reads nothing of the base cache until its first candidate, which copies it (the
        # folder is bound, not copied, into the sandbox): the warm-up fills it before any spawn.
        self.fork.launch()
        harness.pin_numerics()
        self.versions = dict(harness.versions(), sandbox=iso.label)  # results from another isolation never mix
        if self.cuda:  # Triton's launcher utilities built once by trusted code; candidates get a copy
            harness.warm_triton(self.device, slot_dir, cache_dir=base_cache)
            os.environ["TRITON_CACHE_DIR"] = os.path.join(slot_dir, "triton-judge")
        self.fork.wait_started()
        gap, notes = self.fork.exec_guard_gap, []
        if iso.sandboxed and gap:  # results from a weaker sandbox never mix with others
            # Landlock missing: noexec and the seccomp rules hold, /proc/self/mem stays writable
            notes.append(("exec guard without Landlock" if gap.startswith("Landlock") else "no exec guard") + f": {gap}")
        if iso.mode == isolation.ROOT and self.fork.pid_namespace_gap:  # elsewhere structural (README)
            notes.append(f"shared pid namespace: {self.fork.pid_namespace_gap}")
        if notes:
            self.versions["sandbox"] = f"{iso.label} ({'; '.join(notes)})"

    # ---- runner management -------------------------------------------------------------------------
    def _spawn(self) -> RunnerHandle:
        with self._spawn_lock:
            if not self.fork.alive():
                self.fork.stop()
                self.fork.start()
            return RunnerHandle(self.fork, self.device, self.slot_dir, self.limits, self.compile_release)

    def _start_runner(self) -> RunnerHandle:
        """A new candidate process, ready (its hello read). Its start (a CUDA context, CUPTI, a warm-up
        kernel) is work on the GPU, so it holds the GPU shared like any other."""
        with self.gpu.shared():
            r = self._spawn()
            try:
                r.hello, _ = wire.recv(r.conn, timeout=RUNNER_START_TIMEOUT_S)
                r.ready_at = time.monotonic()
            except (TimeoutError, EOFError, OSError, wire.ProtocolError):
                reason = r.death_reason()
                r.kill()
                raise RunnerGone(T.INFRA_ERROR,
                                 f"the evaluator could not start a candidate process: {reason}") from None
            return r

    def _runner(self, budget: Budget) -> RunnerHandle:
        """The current candidate's process: a fresh one per evaluation. On CUDA a spare is started while
        this one works, so its CUDA start-up overlaps the evaluation instead of adding to the next one."""
        if self.runner is not None:
            return self.runner
        spare, self.spare = self.spare, None
        r = spare.take() if spare is not None else None
        if r is None:
            try:
                r = self._start_runner()
            except ForkServerGone as e:
                raise RunnerGone(T.INFRA_ERROR, str(e)) from None
        self.runner = r
        self.runner_start = start_phases(r)  # how long its start held the GPU shared (on its own thread if a spare)
        if self.keep_spare:
            self.spare = SpareStart(self)
        return r

    @contextlib.contextmanager
    def on_gpu(self, budget: Budget | None = None, *, measure: bool = False):
        """Hold this judge's GPU shared (work) or exclusive (`measure`: timing, profiling). Time spent waiting
        for the lock is the neighbours', never the candidate's: it moves the budget's hard deadline. The
        spare's start holds the GPU shared on its own thread, so it never overlaps a measurement either: it
        started before (the measurement waits for it) or waits for the measurement."""
        w0 = self.gpu.waited_s()
        with (self.gpu.exclusive() if measure else self.gpu.shared()):
            if budget is not None:
                budget.hard_deadline += self.gpu.waited_s() - w0
            yield

    def recycle(self) -> None:
        if self.runner is not None:
            self.runner.kill()
            self.runner = None

    def close(self) -> None:
        self.recycle()
        self.exchange.close()
        if self.spare is not None:
            self.spare.discard()
            self.spare = None
        self.fork.stop()

    def _wait(self, r: RunnerHandle, budget: Budget) -> None:
        """Wait for the runner's reply, charging the candidate as `Budget` says."""
        t0 = time.monotonic()
        u0 = r.usage()
        start_left = budget.left_s

        def charged(u: dict) -> float:
            """Wall time less the main thread's wait for a CPU, but never less than the CPU the candidate's
            own threads and processes got over the cores it may use: its own threads crowding its main
            thread are its load, not the host's (attack l03)."""
            if not (u.get("ok") and u0.get("ok")):
                return time.monotonic() - t0
            cpu = max(0.0, u["cpu_s"] - u0["cpu_s"]) / max(1, int(u.get("cores") or 1))
            return max((time.monotonic() - t0) - (u["wait_s"] - u0["wait_s"]), cpu)

        while True:
            step = max(0.05, min(budget.left_s, budget.hard_deadline - time.monotonic(), 5.0))
            if r.conn.poll(step):
                break
            now = time.monotonic()
            budget.left_s = start_left - max(0.0, charged(r.usage()))
            if budget.left_s <= 0:
                self.recycle()
                # on CPU a correct kernel can use the budget too: the interpreter runs each program in Python
                slow = ("; on CPU, Triton's interpreter runs every program of every launch in Python, so a small "
                        "block or a launch per step takes minutes: larger blocks, fewer launches, or --timeout"
                        if not self.cuda else "")
                raise RunnerGone(T.TIMEOUT, "timed out (the evaluation exceeded its time budget; look for infinite "
                                            f"loops, sleeps or a kernel that never finishes{slow})")
            if now >= budget.hard_deadline:
                self.recycle()
                raise RunnerGone(T.INFRA_ERROR, "the host was too loaded to give the candidate its time budget "
                                                f"({start_left - budget.left_s:.0f} s of {start_left:.0f} s used); "
                                                "evaluate it again")
        budget.left_s = start_left - max(0.0, charged(r.usage()))

    def call(self, header: dict, payload=None, *, deadline: Budget, fds=()) -> tuple[dict, list[bytes]]:
        """Send one op to the runner and wait for its reply within the candidate's budget, holding the GPU
        (shared, unless the caller holds it exclusive for a measurement)."""
        with self.on_gpu(deadline):
            return self._call(header, payload, deadline=deadline, fds=fds)

    def _call(self, header: dict, payload=None, *, deadline: Budget, fds=()) -> tuple[dict, list[bytes]]:
        r = self._runner(deadline)
        frames = [pickle.dumps(payload)] if payload is not None else []
        nonce = secrets.token_hex(8)  # unguessable per op: a forged reply cannot echo it
        t0 = time.monotonic()
        try:
            wire.send(r.conn, dict(header, pickled=payload is not None, nonce=nonce, nfds=len(fds)), frames)
            if fds:
                wire.send_fds(r.conn, list(fds))
            events = 0
            while True:
                self._wait(r, deadline)
                # The whole reply within what is left of the budget (a floor for copying large outputs): a
                # candidate process can begin a reply and stall mid-frame (attack m13), and that wait is its own.
                t_read = time.monotonic()
                reply, rframes = wire.recv(r.conn, max_frame=MAX_REPLY_FRAME_BYTES, max_total=MAX_REPLY_FRAME_BYTES,
                                           deadline=t_read + max(deadline.left_s, REPLY_READ_FLOOR_S))
                deadline.left_s -= time.monotonic() - t_read
                if not isinstance(reply, dict) or not isinstance(reply.get("op"), str):
                    self.gpu.resume()
                    self.recycle()
                    raise replies.CandidateFault("the candidate process returned a malformed reply (not a mapping)")
                if not (self.compile_release and reply.get("op") in GPU_EVENTS):
                    break
                events += 1
                if reply.get("nonce") != nonce or rframes or events > MAX_GPU_EVENTS:
                    self.gpu.resume()
                    self.recycle()
                    raise RunnerGone(T.FORBIDDEN, "protocol violation: the candidate process wrote to the "
                                                  "evaluator's channel (forged or extra messages)")
                self._gpu_event(r, reply["op"], nonce, deadline, suspend=events <= 2 * MAX_SUSPENDS)
            self.gpu.resume()  # a compile that never said it ended: the op's reply is read holding the GPU again
            extra = r.conn.poll(0)
        except TimeoutError:
            self.recycle()
            raise RunnerGone(T.TIMEOUT, "timed out (the candidate process stopped mid-reply)") from None
        except (EOFError, OSError, wire.ProtocolError) as e:
            reason = r.death_reason() if not isinstance(e, wire.ProtocolError) else f"protocol violation: {e}"
            self.recycle()
            raise RunnerGone(T.CRASHED, reason) from None
        reply["judge_wall_s"] = time.monotonic() - t0
        if reply.get("op") != header["op"] or reply.get("nonce") != nonce or extra:
            self.recycle()
            raise RunnerGone(T.FORBIDDEN, "protocol violation: the candidate process wrote to the evaluator's "
                                          "channel (forged or extra messages)")
        try:
            replies.check(header["op"], reply)
        except replies.CandidateFault:
            self.recycle()  # a process that forges its replies serves no further op
            raise
        tampered = reply.get("integrity") or []
        violations = reply.get("violations") or []
        if tampered or violations:
            self.recycle()
            what = violations[0] if violations else f"tampering detected: {', '.join(map(str, tampered[:5]))} changed"
            raise RunnerGone(T.FORBIDDEN, str(what)[:500])
        return reply, rframes

    def _gpu_event(self, r: RunnerHandle, op: str, nonce: str, deadline: Budget, suspend: bool = True) -> None:
        """The candidate process compiles a Triton kernel (`gpu_leave`) or has compiled it (`gpu_enter`, answered
        with `gpu_go` once the shared hold is back). A compile is host work (Triton's passes, ptxas), and a
        measurement of another judge's queued behind this shared hold would otherwise wait it out; the kernel
        is loaded and launched only after `gpu_go`. In an exclusive hold (a measurement's own op) nothing is
        let go. The time spent waiting to hold the GPU again is the neighbours': it moves the hard deadline
        and is never charged to the candidate (`_wait` counts from its next call). A candidate process that
        says it compiles and runs GPU work meanwhile gains what a thread of its own already could (attack q02:
        the lock binds judges, not candidate threads). Past `MAX_SUSPENDS` compiles in one op the hold is kept."""
        if op == "gpu_leave":
            if suspend:
                self.gpu.suspend()
            return
        w0 = self.gpu.waited_s()
        self.gpu.resume()
        deadline.hard_deadline += self.gpu.waited_s() - w0
        wire.send(r.conn, {"op": "gpu_go", "nonce": nonce})

    # ---- reference ---------------------------------------------------------------------------------
    def prepare(self, task: T.Task, opts: T.EvalOptions) -> PreparedTask:
        budget_mb = opts.input_budget_mb if opts.input_budget_mb is not None else (
            None if self.cuda else CPU_INPUT_BUDGET_MB)
        key = (task.id, task.source_hash, opts.scale, budget_mb, opts.seed)
        if key in self.tasks:
            return self.tasks[key]
        notes = []
        if opts.scale is not None:
            plan = scale_source(task.source, opts.scale)
        elif budget_mb is not None:
            plan = fit_budget(task.source, int(budget_mb * 2**20), self._measure_inputs)
        else:
            plan = scale_source(task.source, 1.0)
        source = plan.source
        if self.cuda:
            source, more = self._fit_device(task.source, source)
            notes += more
        name = f"drk_reference_{abs(hash(key)) % 10**8}"
        module = harness.load_module(source, name)
        for attr in ("Model", "get_inputs", "get_init_inputs"):
            if not hasattr(module, attr):
                raise ValueError(f"task {task.id} does not define {attr}")
        init_inputs = harness.make_init_inputs(module, opts.seed)
        model = harness.build_model(module, "Model", init_inputs, opts.seed, self.device)
        constants = scale_source(source, 1.0).constants  # what the source now says, device scaling included
        prepared = PreparedTask(key, module, source, constants, source != task.source, init_inputs, model, notes,
                                original=dict(plan.original), pristine=copy.deepcopy(model))
        if len(self.tasks) >= 4:
            old = self.tasks.pop(next(iter(self.tasks)))
            harness.unload_module(getattr(old.module, "__name__", ""))
        self.tasks[key] = prepared
        return prepared

    def exchange_device(self) -> torch.device | None:
        return torch.device(self.device) if self.cuda else None

    def _layout_bytes(self, task: PreparedTask, opts: T.EvalOptions) -> int:
        """The exchange file size one forward of this task needs (its inputs and the reference's outputs),
        found once per prepared task by a reference forward on the first trial's inputs; and whether the
        reference keeps state between calls (`_stateful`)."""
        if not task.layout_bytes:
            try:
                inputs = harness.make_inputs(task.module, opts.seed, self.device)
                refs = harness.forward(task.model, inputs, train=True, grad=True)
                task.layout_bytes = Exchange.layout_bytes(inputs, refs)
                del inputs
                task.stateful = self._stateful(task, opts, refs)
            except Exception as e:
                raise TaskSetupError(f"the reference program failed on its inputs: {harness.short_error(e)}") \
                    from None
            del refs
        return task.layout_bytes

    def _stateful(self, task: PreparedTask, opts: T.EvalOptions, first: list) -> bool:
        """Does the reference's output depend on the calls before it (a tensor or buffer the forward updates
        and reads: an RNN's kept hidden state, a running mean it subtracts)? Its second call on the same
        inputs differs from its first, while a copy as built gives the first again (a reference that differs
        from itself as built is nondeterministic, dropout: not state). Such a task's checked calls each start
        from the model as built, on both sides. BatchNorm is not state here: its train-mode output does not
        read the running statistics it updates."""
        again = harness.forward(task.model, harness.make_inputs(task.module, opts.seed, self.device),
                                train=True, grad=True)
        if compare.compare_outputs(again, first, opts.tolerance).ok:
            return False
        del again
        built = harness.forward(fresh_copy(task), harness.make_inputs(task.module, opts.seed, self.device),
                                train=True, grad=True)
        return compare.compare_outputs(built, first, opts.tolerance).ok

    @staticmethod
    def _measure_inputs(source: str) -> int:
        mod = harness.load_module(source, "drk_measure")
        try:
            with torch.device("meta"):
                harness.seed_all(0)
                return nbytes(list(mod.get_inputs()))
        finally:
            harness.unload_module("drk_measure")

    def _fit_device(self, original: str, source: str) -> tuple[str, list[str]]:
        """Scale a task down when its inputs x DEVICE_MEMORY_FACTOR exceed this judge's memory budget (its
        share of the device, never the memory free at the moment: that would size the same task by what
        the neighbours happen to hold). The factor covers
        what one evaluation holds on the device at once: one input set (the candidate runs on the judge's
        own tensors), the timing set kept for the probes, reference outputs and their intermediates, receive
        buffers, and the runner's outputs and poison block. Measured on an H200 at full level-1 shapes
        (2026-12-02): judge + runner peak 2.1-6.1x the inputs (6.1x for elementwise tasks whose output is as
        large as their input); 10x leaves room for references with large intermediates."""
        need = self._measure_inputs(source) * DEVICE_MEMORY_FACTOR
        if need <= self.memory_budget:
            return source, []
        plan = fit_budget(original, int(self.memory_budget / DEVICE_MEMORY_FACTOR), self._measure_inputs)
        return plan.source, [T.SCALED_FOR_MEMORY]

    # ---- one evaluation ----------------------------------------------------------------------------
    def evaluate(self, req: T.EvalRequest, restarts: int = 0) -> T.EvalResult:
        t_start = time.monotonic()
        opts = req.options
        deadline = Budget(left_s=opts.timeout_s, hard_deadline=t_start + T.HARD_WALL_FACTOR * opts.timeout_s + 60.0)
        res = T.EvalResult(task=req.task.id, solution=req.solution, device=self.device, request_id=req.request_id,
                           task_hash=req.task.source_hash, versions=dict(self.versions),
                           protocol=protocol_of(opts, self.cuda))
        if self.cuda:  # what sized the task: this judge's share of the device, not what was free
            res.protocol["device_memory_budget_mb"] = self.memory_budget >> 20
        phases = res.phase_seconds
        failed = outgrown = judge_oom = False
        rep = static.check_source(req.source)
        if not static.rules_enabled():
            res.protocol["static_rules"] = "off"
        if not sandbox_audit.audit_enabled():
            res.protocol["audit_hook"] = "off"
        if self.cuda and isinstance(self.gpu, devicelock.NoLock):  # DRK_GPU_LOCK=off: neighbours may reach its numbers
            res.protocol["gpu_lock"] = "off"
        if self.cuda and self.profiler != "per-op":
            res.protocol["profiler"] = self.profiler
        if self.compile_release:
            res.protocol["compile_hold"] = "release"
        if not rep.ok:
            res.verdict, res.error = rep.verdict, rep.error
            phases["total"] = time.monotonic() - t_start
            return res
        if self.cuda:
            torch.cuda.reset_peak_memory_stats()
        waited0, waited_x0 = self.gpu.waited_s(), self.gpu.waited_s("exclusive")
        self.runner_start = {}
        try:
            self._evaluate(req, res, deadline)
        except RunnerGone as g:
            res.verdict, res.error = g.verdict, g.message
            res.correct = False
        except ExchangeOutgrown as e:  # started again below, with the larger file reserved before load
            outgrown = True
            res.verdict, res.correct, res.error = T.INFRA_ERROR, False, (
                f"the task's inputs and outputs outgrew the exchange file ({e} bytes) {MAX_EXCHANGE_RESTARTS + 1} "
                "times: its output sizes vary with its inputs beyond what the evaluator reserves")
            res.flags.append("task_error")
        except (ScalingError, TaskSetupError) as e:  # the task's fault, never the candidate's
            res.verdict, res.error = T.INFRA_ERROR, f"task cannot be evaluated here: {e}"
            res.flags.append("task_error")
        except HostMemoryError as e:  # siblings' memory or the task's size: never the candidate's failure
            failed = True
            res.verdict, res.correct = T.INFRA_ERROR, False
            res.error = str(e)
        except torch.OutOfMemoryError as e:
            failed = True
            res.verdict, res.correct = T.INFRA_ERROR, False
            judge_oom = True  # the task's shapes at this budget, unless the neighbours held it (below)
            res.error = ("the evaluator ran out of device memory for this task at these shapes (rerun with a "
                         f"smaller --input-budget-mb): {harness.short_error(e)}")
        except replies.CandidateFault as e:  # what its process sent cannot be read as a reply: its failure
            failed = True
            res.verdict, res.correct, res.error = T.CRASHED, False, str(e)
        except Exception as e:  # a bug in the judge: the evaluator's failure, never the candidate's (not trained
            failed = True           # on); report it, and free what the failed evaluation held
            res.verdict, res.correct = T.INFRA_ERROR, False
            res.error = f"evaluator error: {type(e).__name__}: {harness.short_error(e)}"
            traceback.print_exc()
        finally:
            modules = self.runner.modules if self.runner is not None else None
            if modules is not None and modules.infra_error and res.verdict != T.OK:
                res.verdict, res.correct = T.INFRA_ERROR, False  # the judge's compiler failed, not the kernel
                res.error = modules.infra_error
            # The device's free memory with the candidate's process still alive: what it held shows once it is gone
            free_beside = torch.cuda.mem_get_info()[0] if self.cuda and judge_oom else None
            # Every candidate process is thrown away after its one evaluation, with everything it started.
            t_down = time.monotonic()
            if self.runner is not None and not self.runner.kill():
                res.flags.append(T.PROCESS_SURVIVED)
                self.exchange.close()  # a survivor may still map it: the next candidate gets a new file
            self.runner = None
            if self.cuda and (judge_oom or res.verdict in (T.RUNTIME_ERROR, T.CRASHED)
                              and devicememory.is_device_oom(res.error)):
                if self._attribute_oom(res, free_beside) == "task":
                    res.flags.append("task_error")
            self.exchange.fresh()
            phases["teardown"] = round(time.monotonic() - t_down, 3)  # the kill sweep and the memory file's reset
            phases["total"] = time.monotonic() - t_start
            if self.cuda:  # seconds this evaluation waited for other work on its GPU (drk.gym.judge.devicelock)
                phases["gpu_lock_wait"] = round(self.gpu.waited_s() - waited0, 3)
                # of which for its measurements (the others' work draining), the rest its work waiting for theirs
                phases["gpu_lock_wait_measure"] = round(self.gpu.waited_s("exclusive") - waited_x0, 3)
            phases.update(self.runner_start)  # overlapped with the previous evaluation when it was a spare
        if outgrown and restarts < MAX_EXCHANGE_RESTARTS:
            return self.evaluate(req, restarts + 1)
        if restarts:
            res.shapes["exchange_restarts"] = restarts
        res.phase_seconds["candidate_budget_used"] = round(opts.timeout_s - deadline.left_s, 3)
        if self.cuda:
            res.evaluator_peak_memory_mb = round(torch.cuda.max_memory_allocated() / 2**20, 2)
            if failed:
                gc.collect()  # tensors held by the failed evaluation's frames (reference cycles)
            torch.cuda.empty_cache()  # cached blocks back to the device: the neighbours' readings see only real use
        return res

    def _attribute_oom(self, res: T.EvalResult, free_beside: int | None = None) -> str:
        """Whose an out-of-memory is (drk.gym.judge.devicememory), read by the driver once the candidate's
        process is gone. The candidate's, when it was the judge that ran out (`free_beside`: free memory
        with the candidate's process still alive) while that process held more than its part of the
        evaluation's share (`devicememory.candidate_part`): `runtime_error` (attack r01: memory hogged so the
        judge fails, a verdict escaped). Else the neighbours', when what others held left this judge less
        than its budget: `infra_error`. Else the evaluation's own: a candidate's out-of-memory stands, the
        judge's is the task's shapes at this budget. Returns "candidate", "neighbours" or "task" / "own"."""
        torch.cuda.empty_cache()  # our cached blocks are ours to give: only others' holdings count against us
        free, total = devicememory.settled_free(torch.cuda.mem_get_info)
        own = torch.cuda.memory_reserved()
        others = devicememory.held_by_others(total, free, own)
        facts = res.protocol["device_memory_at_failure"] = {"total_mb": total >> 20, "free_mb": free >> 20,
                                                             "others_mb": others >> 20,
                                                             "budget_mb": self.memory_budget >> 20}
        if free_beside is not None:
            held = devicememory.held_by_candidate(free_beside, free)
            facts["candidate_mb"] = held >> 20
            if devicememory.over_share(held, own, self.memory_budget):
                res.verdict, res.correct = T.RUNTIME_ERROR, False
                res.error = devicememory.hog_message(held, own, self.memory_budget)
                return "candidate"
        if devicememory.starved(total, free, own, self.memory_budget):
            res.verdict, res.correct = T.INFRA_ERROR, False
            res.error = f"{devicememory.contention_message(total, others, self.memory_budget)} ({res.error[:300]})"
            res.flags.append(T.DEVICE_MEMORY_CONTENDED)
            return "neighbours"
        return "task" if free_beside is not None else "own"

    def _evaluate(self, req: T.EvalRequest, res: T.EvalResult, deadline: float) -> None:
        opts, phases = req.options, res.phase_seconds
        t0 = time.monotonic()
        try:
            with self.on_gpu(deadline):
                task = self.prepare(req.task, opts)
        except ScalingError:
            raise
        except Exception as e:
            raise TaskSetupError(f"the reference program failed to load: {harness.short_error(e)}") from None
        res.shapes = {"constants": task.constants, "scaled": task.scaled}
        if task.scaled:
            res.flags.append(T.SCALED_SHAPES)
        res.flags += [n for n in task.notes if n not in res.flags]
        phases["reference"] = time.monotonic() - t0

        t0 = time.monotonic()
        if self.cuda:
            self.call({"op": "memory", "reset": True}, deadline=deadline)
        # The exchange file goes to the candidate process before its code exists, sized for every forward
        # of this evaluation, and is never sent again: a descriptor arriving later could be caught by a
        # candidate thread and mapped executable before the runner has mapped and closed it.
        with self.on_gpu(deadline):
            self.exchange.reserve(self._layout_bytes(task, opts), self.exchange_device())
        checks = TrialChecks(self, req, task, res, deadline)
        if self.cuda and opts.timing:  # before any candidate code exists (attack q01)
            checks.time_references()
            t0 += phases["reference_timing"]
        # at the task's scaled sizes, the candidate's copies of its size constants too (`scaling.follow`)
        source = follow(req.source, task.original, task.constants) if task.scaled else req.source
        reply, _ = self.call({"op": "load", "source": source, "seed": opts.seed, "profiler": self.profiler,
                              "inputs_shm": [], "outputs_shm": [], "shm_size": self.exchange.size},
                             {"init_inputs": task.init_inputs}, deadline=deadline, fds=[self.exchange.fd])
        phases["load"] = time.monotonic() - t0
        if not reply.get("ok"):
            res.verdict, res.error = claimed_failure(reply)
            return
        res.compiled = True
        if not checks.correctness():
            return
        if self.cuda and (opts.timing or opts.profile) and res.verdict == T.OK:
            checks.measure(timing=opts.timing, profile=opts.profile)
        if res.verdict == T.OK:
            checks.caching()
        if not self.cuda:
            checks.cpu_coverage()
        if res.verdict == T.OK and res.coverage is not None and res.coverage < opts.low_coverage:
            res.flags.append(T.LOW_COVERAGE)


class TaskSetupError(RuntimeError):
    """The task (not the candidate) cannot run: broken reference, unscalable, too large."""


def protocol_of(opts: T.EvalOptions, cuda: bool) -> dict:
    p = opts.protocol()
    p["timing"] = bool(opts.timing and cuda)
    if p["timing"]:
        p.update(timing_method="do_bench: back-to-back, L2 flush, median; interleaved idle-start check; "
                               "candidate under the device profiler in every op; the GPU held exclusively by "
                               "the measurement (no other drk work on it)",
                 timing_protocol=harness.TIMING_PROTOCOL, warmup_ms=harness.WARMUP_MS, rep_ms=harness.REP_MS,
                 max_calls=harness.MAX_CALLS,
                 l2_flush_bytes=harness.L2_FLUSH_BYTES if opts.l2_flush else 0)
    return p


def _serve(conn, judge: Judge) -> None:
    wire.send(conn, {"op": "hello", "pid": os.getpid(), "device": judge.device, "versions": judge.versions,
                     "sandbox": judge.iso.mode})
    while True:
        try:
            header, _ = wire.recv(conn)
        except (EOFError, OSError):
            break
        if header.get("op") == "bye":
            break
        if header.get("op") != "evaluate":
            wire.send(conn, {"op": "error", "error": f"unknown op {header.get('op')!r}"})
            continue
        try:
            req = T.EvalRequest.from_dict(header["request"])
            result = judge.evaluate(req).to_dict()
        except Exception as e:  # a bug in the judge itself: report it as a crash of this evaluation
            result = T.EvalResult(task=header.get("request", {}).get("task", {}).get("id", "?"), verdict=T.CRASHED,
                                  error=f"evaluator error: {type(e).__name__}: {e}",
                                  phase_seconds={}).to_dict()
            traceback.print_exc()
        wire.send(conn, {"op": "result", "result": result})
    judge.close()


def _exit_with_parent() -> None:
    """End this judge, and with it its fork server and candidates (they die with their parent), as soon as
    the process that started it is gone. A judge busy with a candidate does not read its connection, so a
    parent killed mid-evaluation (SIGKILL, `timeout`) would otherwise leave it running to the end of the
    evaluation, holding the device memory the next evaluator on this GPU sizes its work by."""
    ppid = os.getppid()
    try:
        fd = os.pidfd_open(ppid)
    except OSError:  # no pidfd (old kernel): watch for the re-parenting instead
        fd = None
    if os.getppid() != ppid:  # the parent died before the watch began
        os._exit(3)

    def watch() -> None:
        if fd is not None:
            select.select([fd], [], [])  # readable once the parent has exited
        else:
            while os.getppid() == ppid:
                time.sleep(0.5)
        os._exit(3)

    threading.Thread(target=watch, name="drk-judge-parent-watch", daemon=True).start()


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--fd", type=int, required=True)
    p.add_argument("--device", default="cpu")
    p.add_argument("--slot-dir", required=True)
    p.add_argument("--slot-index", type=int, default=0)
    p.add_argument("--gpu-share", type=int, default=1, help="judges of the pool on this GPU (memory budget)")
    p.add_argument("--cache", default=None)
    p.add_argument("--unsafe-no-sandbox", action="store_true")
    a = p.parse_args()
    # No PR_SET_PDEATHSIG here: the pool starts judges from worker threads, and the signal would fire when
    # that thread ends. The judge exits when its connection closes (the parent said bye or died while the
    # judge was idle) or, mid-evaluation, when the parent process is gone (`_exit_with_parent`).
    _exit_with_parent()
    conn = wire.connection_from_fd(a.fd)
    try:
        iso = isolation.detect(allow_unsafe=a.unsafe_no_sandbox)
        judge = Judge(a.device, a.slot_dir, a.cache, iso, slot_index=a.slot_index, gpu_share=a.gpu_share)
    except (isolation.SandboxUnavailable, ForkServerGone) as e:
        wire.send(conn, {"op": "hello", "error": str(e)})
        os._exit(2)
    try:
        _serve(conn, judge)
    finally:
        judge.close()
    os._exit(0)


if __name__ == "__main__":
    main()
