"""Measurements own the GPU: a host-wide shared/exclusive lock per GPU.

A kernel timed while another process has work on the same GPU is time-sliced with that work, and a
launch-bound one also waits for a host busy with someone else's CUDA start-up: its number then says how
busy the neighbours were, not how fast it is. So every judge on a host holds its GPU's lock *shared* while
anything of its own runs there (each candidate op, the reference's forwards, a candidate process starting
CUDA), and *exclusive* while it measures (the candidate's timing and profile ops, the reference's timing).
Exclusive holders go first: a turnstile that shared holders pass through, and an exclusive one holds while
it waits, stops new shared holders from starving it. A shared hold can be suspended while its holder does host
work only (a candidate's Triton compile) and resumed like a new shared hold, behind any waiting measurement.

The lock is `flock(2)` on two files per GPU (keyed by the GPU's UUID) in `DRK_LOCK_DIR` (default: the
system's temporary directory), so it joins every drk process on the host (an `eval` beside an `rl`), and
is released by the kernel when a holder dies. Processes that see different temporary directories
(containers sharing a GPU) must be given one `DRK_LOCK_DIR`.
"""
from __future__ import annotations

import contextlib
import fcntl
import os
import tempfile
import threading
import time
from collections.abc import Iterator


def lock_dir() -> str:
    return os.environ.get("DRK_LOCK_DIR") or tempfile.gettempdir()


class DeviceLock:
    """One GPU's lock, as one holder (a judge's main thread) sees it: `shared()` around work on the GPU,
    `exclusive()` around measurements; `exclusive()` inside `shared()` trades the shared hold for the
    exclusive one and back. `waited_s()`: the seconds the calling thread has waited for it, in all;
    `waited_s("exclusive")`: of those, the waits for exclusive holds (for a measurement: the other holders
    draining), the rest being waits for shared ones (work held up by another's measurement)."""

    def __init__(self, key: str, directory: str | None = None) -> None:
        safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in key)[:80]
        base = os.path.join(directory or lock_dir(), f"drk-gpu-{safe}")
        self.path, self.turnstile_path = base + ".lock", base + ".turnstile"
        self._local = threading.local()  # each thread holds through its own descriptor (flock is per descriptor)
        for path in (self.path, self.turnstile_path):  # a lock that cannot be taken fails the judge's start,
            try:                                         # never an evaluation (which would read as the candidate's)
                os.close(self._open(path))
            except OSError as e:
                raise OSError(f"cannot open the GPU lock file {path} ({e.strerror}); set DRK_LOCK_DIR to a "
                              "writable folder shared by every drk evaluator on this host") from None

    def _open(self, path: str) -> int:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
        with contextlib.suppress(OSError):  # another user's file: its mode is theirs to keep
            os.fchmod(fd, 0o666)
        return fd

    def _flock(self, fd: int, op: int, kind: str = "shared") -> None:
        t0 = time.monotonic()
        fcntl.flock(fd, op)
        dt = time.monotonic() - t0
        self._local.waited = getattr(self._local, "waited", 0.0) + dt
        if kind == "exclusive":
            self._local.waited_exclusive = getattr(self._local, "waited_exclusive", 0.0) + dt

    def waited_s(self, kind: str | None = None) -> float:
        return getattr(self._local, "waited_exclusive" if kind == "exclusive" else "waited", 0.0)

    def _pass_turnstile(self) -> None:
        fd = self._open(self.turnstile_path)
        try:
            self._flock(fd, fcntl.LOCK_EX)  # waits while an exclusive holder is waiting for the lock
        finally:
            os.close(fd)  # closing releases it

    @contextlib.contextmanager
    def shared(self) -> Iterator[None]:
        if getattr(self._local, "mode", None):  # already held by this thread (shared or exclusive)
            yield
            return
        self._pass_turnstile()
        fd = self._open(self.path)
        try:
            self._flock(fd, fcntl.LOCK_SH)
            self._local.fd, self._local.mode = fd, "shared"
            yield
        finally:
            self._local.fd = self._local.mode = None
            os.close(fd)

    @contextlib.contextmanager
    def exclusive(self) -> Iterator[None]:
        mode, fd = getattr(self._local, "mode", None), getattr(self._local, "fd", None)
        if mode == "exclusive":
            yield
            return
        own = fd is None
        if own:
            fd = self._open(self.path)
        else:
            fcntl.flock(fd, fcntl.LOCK_UN)  # give the shared hold up first: ours would block our own request
        gate = self._open(self.turnstile_path)
        try:
            self._flock(gate, fcntl.LOCK_EX, "exclusive")  # new shared holders now queue behind us
            try:
                self._flock(fd, fcntl.LOCK_EX, "exclusive")
            finally:
                os.close(gate)
            self._local.fd, self._local.mode = fd, "exclusive"
            yield
        finally:
            if own:
                self._local.fd = self._local.mode = None
                os.close(fd)
            else:
                self._flock(fd, fcntl.LOCK_SH)
                self._local.fd, self._local.mode = fd, "shared"


    def suspend(self) -> bool:
        """Inside `shared()`: let the shared hold go for a while (a candidate compiling a kernel: host work only),
        so a measurement queued behind it need not wait for the compile. False (nothing let go) outside a
        shared hold, in an exclusive one (a measurement keeps the GPU) or when already suspended."""
        if getattr(self._local, "mode", None) != "shared":
            return False
        fcntl.flock(self._local.fd, fcntl.LOCK_UN)
        self._local.mode = "suspended"
        return True

    def resume(self) -> None:
        """Take the shared hold `suspend` let go back, as a new shared holder would (behind any measurement that
        is waiting or running): the time it waits counts in `waited_s()`."""
        if getattr(self._local, "mode", None) != "suspended":
            return
        self._pass_turnstile()
        self._flock(self._local.fd, fcntl.LOCK_SH)
        self._local.mode = "shared"


class NoLock:
    """Where nothing is measured against a shared device (the CPU path: its figures come from the judge's
    clock and CPU accounting): holds nothing."""

    def waited_s(self, kind: str | None = None) -> float:
        return 0.0

    @contextlib.contextmanager
    def shared(self) -> Iterator[None]:
        yield

    @contextlib.contextmanager
    def exclusive(self) -> Iterator[None]:
        yield

    def suspend(self) -> bool:
        return False

    def resume(self) -> None:
        pass


def enabled() -> bool:
    """False when the evaluator's environment says DRK_GPU_LOCK=off: an operator's switch for measuring what
    the lock costs (every result then records `gpu_lock: off`), never a default."""
    return os.environ.get("DRK_GPU_LOCK", "on") != "off"


def for_device(device: str) -> DeviceLock | NoLock:
    """The lock of the CUDA device `device` (this process's view of it) by its UUID; NoLock on CPU and
    where the operator turned the lock off."""
    if not device.startswith("cuda") or not enabled():
        return NoLock()
    import torch

    props = torch.cuda.get_device_properties(torch.device(device))
    key = str(getattr(props, "uuid", "") or f"{props.name}-{getattr(props, 'pci_bus_id', device)}")
    return DeviceLock(key)
