"""A candidate's Triton compile lets the GPU's shared hold go (DRK_COMPILE_HOLD=release).

Why: a measurement (an exclusive hold) waits for every shared holder in flight; a candidate's first forward
holds the GPU shared through its Triton compile (host work), so every measurement queued behind it
waits that long and every other worker's GPU work waits behind the measurement. The candidate process says
when a compile starts and ends; the judge lets go and takes the hold back before the kernel is launched.
Properties: the hold is really let go (an exclusive holder gets in meanwhile), it is back before the op's
reply is read (and the compiled kernel's launch waits for it), the wait to take it back is never charged to
the candidate, nothing is let go inside a measurement's exclusive hold, and an event that is not the op's
(a forged nonce, or any event when the switch is off) is a protocol violation (`forbidden`)."""
from __future__ import annotations

import threading
import time

import pytest

from drk.gym import types as T
from drk.gym.common import wire
from drk.gym.judge import devicelock
from drk.gym.judge.evaluation import Budget, Judge, RunnerGone, compile_hold


class FakeRunner:
    """The judge's view of a candidate process (`RunnerHandle`), served by a thread that follows `script`."""

    def __init__(self) -> None:
        self.conn, fd = wire.socket_pair()
        self.peer = wire.connection_from_fd(fd)
        self.killed = False

    def usage(self) -> dict:
        return {"ok": False}

    def kill(self) -> bool:
        self.killed = True
        wire.close_quietly(self.conn)
        return True

    def death_reason(self) -> str:
        return "the fake runner died"


def judge_with(runner: FakeRunner, lock, release: bool = True) -> Judge:
    j = Judge.__new__(Judge)  # only what `call` uses: no fork server, no device
    j.runner, j.spare, j.gpu, j.compile_release = runner, None, lock, release
    return j


def serve(runner: FakeRunner, events: list[str], *, nonce: str | None = None, during=None, log: list | None = None):
    """One op: read it, send `events` (answering each gpu_enter's go), run `during()` after the first event,
    then reply."""
    def run():
        try:
            script()
        except (EOFError, BrokenPipeError):  # the judge killed the process (a verdict of `forbidden`): a real
            pass                              # one would be gone before its next write

    def script():
        header, _ = wire.recv(runner.peer)
        n = header["nonce"] if nonce is None else nonce
        for i, ev in enumerate(events):
            wire.send(runner.peer, {"op": ev, "nonce": n})
            if ev == "gpu_enter":
                go, _ = wire.recv(runner.peer, timeout=30)
                if log is not None:
                    log.append(("go", time.monotonic(), go))
            if i == 0 and during is not None:
                during()
        wire.send(runner.peer, {"op": header["op"], "nonce": header["nonce"], "ok": True})
    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


def budget(s: float = 60.0) -> Budget:
    return Budget(left_s=s, hard_deadline=time.monotonic() + 10 * s)


def test_a_suspended_shared_hold_lets_a_measurement_in_and_resuming_waits_for_it(tmp_path):
    lock = devicelock.DeviceLock("gpu-test", str(tmp_path))
    other = devicelock.DeviceLock("gpu-test", str(tmp_path))  # another judge on the same GPU
    got, release = threading.Event(), threading.Event()

    def measure():
        with other.exclusive():
            got.set()
            release.wait(10)

    with lock.shared():
        t = threading.Thread(target=measure, daemon=True)
        t.start()
        assert not got.wait(0.3), "an exclusive hold got in while a shared one was held"
        assert lock.suspend()
        assert got.wait(5), "the suspended shared hold still kept the measurement out"
        threading.Timer(0.4, release.set).start()  # the measurement ends 0.4 s from now
        t0 = time.monotonic()
        lock.resume()
        assert time.monotonic() - t0 > 0.3, "the shared hold came back while the measurement ran"
        assert release.is_set()
        t.join(5)
    with lock.exclusive():  # suspend inside an exclusive hold lets nothing go
        assert not lock.suspend()


def test_a_compile_lets_the_hold_go_and_the_reply_is_read_holding_it(tmp_path):
    lock = devicelock.DeviceLock("gpu-test", str(tmp_path))
    other = devicelock.DeviceLock("gpu-test", str(tmp_path))
    inside, log = [], []

    def during():  # while the candidate "compiles", another judge measures for 0.5 s
        def m():
            with other.exclusive():
                inside.append(time.monotonic())
                time.sleep(0.5)
                inside.append(time.monotonic())
        th = threading.Thread(target=m, daemon=True)
        th.start()
        deadline = time.monotonic() + 5
        while not inside and time.monotonic() < deadline:
            time.sleep(0.01)

    r = FakeRunner()
    j = judge_with(r, lock)
    t = serve(r, ["gpu_leave", "gpu_enter"], during=during, log=log)
    b = budget()
    reply, _ = j.call({"op": "forward"}, deadline=b)
    t.join(5)
    assert reply["ok"] and len(inside) == 2, "the measurement never got in during the compile"
    go_at = log[0][1]
    assert go_at >= inside[1], "the kernel's launch (after gpu_go) overlapped another judge's measurement"
    assert b.left_s > 60.0 - 0.45, f"the wait to hold the GPU again was charged to the candidate ({60 - b.left_s:.2f} s)"
    assert not r.killed


def test_a_forged_event_or_one_the_judge_did_not_ask_for_is_forbidden(tmp_path):
    lock = devicelock.DeviceLock("gpu-test", str(tmp_path))
    r = FakeRunner()
    t = serve(r, ["gpu_leave"], nonce="0" * 16)
    with pytest.raises(RunnerGone) as e:
        judge_with(r, lock).call({"op": "forward"}, deadline=budget())
    assert e.value.verdict == T.FORBIDDEN and r.killed
    t.join(5)
    r = FakeRunner()
    t = serve(r, ["gpu_leave", "gpu_enter"])
    with pytest.raises(RunnerGone) as e:
        judge_with(r, lock, release=False).call({"op": "forward"}, deadline=budget())
    assert e.value.verdict == T.FORBIDDEN
    t.join(5)


def test_the_switch_is_explicit(monkeypatch):
    monkeypatch.delenv("DRK_COMPILE_HOLD", raising=False)
    assert compile_hold() == "hold"
    monkeypatch.setenv("DRK_COMPILE_HOLD", "Release")
    assert compile_hold() == "release"
    monkeypatch.setenv("DRK_COMPILE_HOLD", "sometimes")
    with pytest.raises(ValueError, match="DRK_COMPILE_HOLD"):
        compile_hold()


def test_the_runner_brackets_only_its_op_threads_compiles(monkeypatch):
    """The candidate process's side: Triton's `compile` on the op's thread is bracketed by gpu_leave and
    gpu_enter, also when it fails; a compile on another thread (Triton's async mode) keeps the hold."""
    import triton.compiler

    from drk.gym.sandbox import triton_hooks

    calls = []

    def fake_compile(src, **kw):
        calls.append(("compile", src))
        if src == "bad":
            raise RuntimeError("compile error")
        return src

    monkeypatch.setattr(triton.compiler, "compile", fake_compile)
    rec = triton_hooks.LaunchRecorder()
    triton_hooks.compile_outside_hold(rec, lambda op: calls.append(op))
    assert triton.compiler.compile("k") == "k"
    with pytest.raises(RuntimeError):
        triton.compiler.compile("bad")
    th = threading.Thread(target=lambda: triton.compiler.compile("async"))
    th.start()
    th.join()
    assert calls == ["gpu_leave", ("compile", "k"), "gpu_enter", "gpu_leave", ("compile", "bad"), "gpu_enter",
                     ("compile", "async")]


def test_compiles_past_the_bound_keep_the_hold(tmp_path, monkeypatch):
    """Each resume waits behind the neighbours' measurements without charging the candidate, so a process that
    leaves and enters in a loop would stretch its evaluation without bound: past MAX_SUSPENDS compiles in one
    op the hold is kept (the events are still answered, the op still succeeds)."""
    from drk.gym.judge import evaluation

    monkeypatch.setattr(evaluation, "MAX_SUSPENDS", 2)
    lock = devicelock.DeviceLock("gpu-test", str(tmp_path))
    suspends = []
    real = lock.suspend
    monkeypatch.setattr(lock, "suspend", lambda: suspends.append(real()) or suspends[-1])
    r = FakeRunner()
    t = serve(r, ["gpu_leave", "gpu_enter"] * 5)
    reply, _ = judge_with(r, lock).call({"op": "forward"}, deadline=budget())
    t.join(5)
    assert reply["ok"] and suspends == [True, True]


def test_the_fork_server_leaves_triton_s_own_key_computed_for_every_candidate():
    """Triton's cache key of its own sources hashes all of libtriton; a candidate process would compute it in its
    start-up's warm-up, inside the GPU's shared hold. The fork server computes it before forking, so a child
    finds it computed."""
    import os

    from triton.runtime.cache import triton_key

    from drk.gym.sandbox.zygote import warm_triton_key

    assert warm_triton_key()
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: one more call must be a cache hit
        os.write(w, b"1" if triton_key.cache_info().currsize == 1 else b"0")
        os._exit(0)
    os.waitpid(pid, 0)
    assert os.read(r, 1) == b"1"
