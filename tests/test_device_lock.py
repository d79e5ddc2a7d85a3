"""Property: a measurement owns its GPU (drk.gym.judge.devicelock). A neighbour's work (another judge's
candidate, a candidate process starting CUDA) never runs while a judge times or profiles on that GPU, and a
timing is never starved by a stream of neighbours. Each test holds the lock from separate processes, since
the neighbours that matter are other processes (flock is per open file, so threads would do as well)."""
from __future__ import annotations

import multiprocessing as mp
import os
import time

import pytest

from drk.gym.judge import devicelock
from drk.gym.judge.devicelock import DeviceLock, NoLock, for_device

CTX = mp.get_context("fork")


def _hold(directory: str, mode: str, seconds: float, log, tag: str, go=None) -> None:
    lock = DeviceLock("gpu-test", directory)
    if go is not None:
        go.wait(20)
    with getattr(lock, mode)():
        log.put((tag, "in", time.monotonic()))
        time.sleep(seconds)
        log.put((tag, "out", time.monotonic()))


def _events(log, n: int) -> dict:
    out = {}
    for _ in range(n):
        tag, what, t = log.get(timeout=20)
        out[(tag, what)] = t
    return out


def _start(directory, mode, seconds, log, tag, go=None):
    """A neighbour process. Forked before the caller holds the lock (`go` tells it when to ask): a child
    forked during a hold would inherit the holding descriptor."""
    p = CTX.Process(target=_hold, args=(directory, mode, seconds, log, tag, go))
    p.start()
    return p


def test_shared_holders_run_together(tmp_path):
    log = CTX.Queue()
    ps = [_start(str(tmp_path), "shared", 0.6, log, t) for t in ("a", "b")]
    ev = _events(log, 4)
    for p in ps:
        p.join(10)
    assert ev[("b", "in")] < ev[("a", "out")] and ev[("a", "in")] < ev[("b", "out")]


def test_a_measurement_waits_for_neighbours_work_and_keeps_them_out(tmp_path):
    log = CTX.Queue()
    work = _start(str(tmp_path), "shared", 0.8, log, "work")
    assert log.get(timeout=20)[1] == "in"
    timer = _start(str(tmp_path), "exclusive", 0.8, log, "timer")
    time.sleep(0.3)
    late = _start(str(tmp_path), "shared", 0.1, log, "late")  # arrives while the timer waits
    ev = _events(log, 5)
    for p in (work, timer, late):
        p.join(10)
    assert ev[("timer", "in")] >= ev[("work", "out")]          # never overlaps work already running
    assert ev[("late", "in")] >= ev[("timer", "out")]          # later work waits for the measurement to end


def test_a_stream_of_neighbours_does_not_starve_a_measurement(tmp_path):
    log = CTX.Queue()
    first = _start(str(tmp_path), "shared", 0.5, log, "w0")
    assert log.get(timeout=20)[1] == "in"
    timer = _start(str(tmp_path), "exclusive", 0.2, log, "timer")
    time.sleep(0.2)
    # each newcomer would overlap the one before it: without the turnstile the shared hold never lapses
    followers = []
    for i in range(1, 4):
        followers.append(_start(str(tmp_path), "shared", 0.5, log, f"w{i}"))
        time.sleep(0.15)
    ev = _events(log, 9)
    for p in [first, timer, *followers]:
        p.join(10)
    assert ev[("timer", "in")] < min(ev[(f"w{i}", "in")] for i in range(1, 4))


def test_exclusive_inside_shared_trades_the_hold_and_returns_to_shared(tmp_path):
    lock = DeviceLock("gpu-test", str(tmp_path))
    log, go = CTX.Queue(), CTX.Event()
    timer = _start(str(tmp_path), "exclusive", 0.0, log, "timer", go)
    with lock.shared():
        with lock.exclusive():  # would deadlock on its own shared hold if it kept it
            pass
        go.set()  # back to shared: the neighbour's exclusive request must wait until we leave
        time.sleep(0.4)
        assert log.empty()
    tag, what, _ = log.get(timeout=10)
    assert (tag, what) == ("timer", "in")
    timer.join(10)


def test_a_holder_that_dies_releases_the_gpu(tmp_path):
    def die_holding(directory):
        lock = DeviceLock("gpu-test", directory)
        with lock.exclusive():
            os._exit(0)

    p = CTX.Process(target=die_holding, args=(str(tmp_path),))
    p.start()
    p.join(10)
    lock = DeviceLock("gpu-test", str(tmp_path))
    t0 = time.monotonic()
    with lock.exclusive():
        pass
    assert time.monotonic() - t0 < 2.0


def test_waits_are_counted_for_the_waiting_thread(tmp_path):
    log = CTX.Queue()
    holder = _start(str(tmp_path), "exclusive", 0.5, log, "h")
    assert log.get(timeout=20)[1] == "in"
    lock = DeviceLock("gpu-test", str(tmp_path))
    with lock.shared():
        pass
    holder.join(10)
    assert lock.waited_s() >= 0.3
    assert lock.waited_s("exclusive") == 0.0  # it waited to work, not to measure


def test_a_measurement_s_wait_for_the_others_to_drain_is_counted_apart(tmp_path):
    log = CTX.Queue()
    holder = _start(str(tmp_path), "shared", 0.5, log, "h")
    assert log.get(timeout=20)[1] == "in"
    lock = DeviceLock("gpu-test", str(tmp_path))
    with lock.exclusive():
        pass
    holder.join(10)
    assert lock.waited_s("exclusive") >= 0.3
    assert lock.waited_s() >= lock.waited_s("exclusive")


def test_no_lock_on_cpu():
    assert isinstance(for_device("cpu"), NoLock)


@pytest.mark.gpu
def test_the_lock_is_keyed_by_the_gpu():
    import torch

    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    a, b = for_device("cuda:0"), for_device("cuda")
    assert isinstance(a, DeviceLock) and a.path == b.path and "drk-gpu-" in a.path


def test_a_lock_folder_that_cannot_be_used_fails_at_start_with_its_name(tmp_path):
    missing = tmp_path / "no-such-dir"
    with pytest.raises(OSError, match="DRK_LOCK_DIR"):
        DeviceLock("gpu-test", str(missing))


def test_an_operator_can_turn_the_lock_off_to_measure_its_cost(monkeypatch):
    monkeypatch.setenv("DRK_GPU_LOCK", "off")
    assert not devicelock.enabled()
    assert isinstance(for_device("cuda:0"), NoLock)  # never asks the driver for the GPU
    monkeypatch.setenv("DRK_GPU_LOCK", "on")
    assert devicelock.enabled()
