"""The host-ahead gate of the timed pass (`harness.HostAhead`): chunks, gate lengths, and the check that
the host really was ahead. The GPU test runs where there is a CUDA device (bench/gpu_session.sh verify)."""
from __future__ import annotations

import statistics

import pytest
import torch

from drk.gym.common import harness
from drk.gym.common.harness import GATE_CHUNK, GATE_MAX_MS, GATE_MISSES, HostAhead, chunks, gate_ms


def test_chunks_keep_the_shuffled_order_and_put_each_idle_start_call_alone():
    order = [False] * 70 + [True] + [False] * 3 + [True, True] + [False]
    runs = chunks(order, size=32)
    assert runs == [(False, 32), (False, 32), (False, 6), (True, 1), (False, 3), (True, 1), (True, 1), (False, 1)]
    flat = [is_idle for is_idle, n in runs for _ in range(n)]
    assert flat == order


def test_no_chunk_is_longer_than_a_streams_queue_allows():
    assert all(n <= GATE_CHUNK for _, n in chunks([False] * 1000))


def test_a_gate_covers_the_hosts_enqueue_time_with_margin_and_is_capped():
    assert gate_ms(0.1, 32, 1.5) == pytest.approx(1.5 * 0.1 * 32 + 0.02)
    assert gate_ms(100.0, 32, 1.5) == GATE_MAX_MS


def test_the_previous_chunks_device_time_is_a_head_start_the_gate_does_not_repeat():
    # 32 calls at 0.1 ms of host each, the GPU still busy with 32 x 0.08 ms of the previous chunk
    assert gate_ms(0.1, 32, 1.5, 32 * 0.08) == pytest.approx(1.5 * 3.2 - 0.9 * 2.56 + 0.02)
    # a device-bound kernel needs no hold at all once the first chunk is running
    assert gate_ms(0.1, 32, 1.5, 32 * 1.0) == pytest.approx(0.02)


class _Gate:
    def __init__(self, passed: bool) -> None:
        self.passed = passed

    def query(self) -> bool:  # CUDA event semantics: True once the GPU has passed it
        return self.passed


def _gate() -> HostAhead:
    g = HostAhead.__new__(HostAhead)  # no CUDA here: the bookkeeping only
    g.device, g.host_ms, g.device_ms, g.behind, g.margin = "cuda", 0.1, 0.05, 0, 1.5
    g.in_a_row = g.missed = g.chunks = 0
    g.held_ms, g.off = 0.0, False
    return g


def test_a_chunk_enqueued_while_the_gpu_was_held_counts_as_host_ahead():
    g = _gate()
    assert g.release((_Gate(passed=False), 0.0), 32) is True
    assert (g.missed, g.margin, g.behind) == (0, max(harness.GATE_MARGIN, 1.5 * 0.8), 32)


def test_a_chunk_the_gpu_reached_before_the_host_finished_is_marked_and_the_next_gates_grow():
    g = _gate()
    assert g.release((_Gate(passed=True), 0.0), 32) is False
    assert (g.missed, g.margin, g.behind, g.off) == (1, 3.0, 0, False)
    assert g.release((_Gate(passed=False), 0.0), 32) is True and g.in_a_row == 0
    assert g.margin == pytest.approx(3.0 * 0.8)  # back towards GATE_MARGIN once the host holds again
    for _ in range(10):
        g.release((_Gate(passed=False), 0.0), 32)
    assert g.margin == harness.GATE_MARGIN


def test_a_forward_that_keeps_the_host_behind_ends_gating_and_says_so():
    g = _gate()
    for _ in range(GATE_MISSES):
        assert g.release((_Gate(passed=True), 0.0), 8) is False
    assert g.off and g.hold(8) is None
    assert g.report() == {"chunks": GATE_MISSES, "missed": GATE_MISSES, "held_ms": 0.0, "off": True}


class _Timed(_Gate):
    def __init__(self, passed: bool, t: float) -> None:
        super().__init__(passed)
        self.t = t

    def elapsed_time(self, other) -> float:
        return other.t - self.t


def test_a_gate_the_gpu_passed_early_because_its_clock_rose_recalibrates_the_spin():
    """The spin counts SM cycles, calibrated near idle clocks: under load the clock rises and a planned 2 ms
    hold lasts 0.5 ms. The missed gate's measured length sets the cycles per ms four times higher."""
    g = _gate()
    g.cycles_per_ms = 1000.0
    g.release((_Timed(passed=True, t=10.5), 0.0, _Timed(passed=True, t=10.0), 2.0), 32)
    assert g.cycles_per_ms == pytest.approx(4000.0) and g.missed == 1
    g.release((_Timed(passed=True, t=12.0), 0.0, _Timed(passed=True, t=10.0), 2.0), 32)  # lasted as planned:
    assert g.cycles_per_ms == pytest.approx(4000.0)  # the host was slow, the spin is left as it is


def test_an_idle_start_call_leaves_the_next_chunk_no_head_start():
    g = _gate()
    g.release((_Gate(passed=False), 0.0), 32)
    g.idle_start()
    assert g.behind == 0


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_gated_timing_of_a_short_kernel_is_its_device_time_not_the_hosts():
    x = torch.randn(1 << 16, device="cuda")

    def call(i: int):  # a few launches per call, ~2 us each on an H200: host-bound without the gate
        y = x
        for _ in range(4):
            y = torch.relu(y)
        return y

    gated = harness.time_calls(call, "cuda", warmup=5, trials=100, l2_flush=True, host_ahead=True)
    assert gated["gate"]["chunks"] > 0 and harness.gate_held(gated)
    assert gated["gate"]["missed"] * 2 <= gated["gate"]["chunks"]
    # graph replay has no host in it: the device time of the same launches
    g = torch.cuda.CUDAGraph()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        call(0)
        with torch.cuda.graph(g):
            call(0)
    torch.cuda.current_stream().wait_stream(s)
    replay = []
    for _ in range(50):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        g.replay()
        b.record()
        torch.cuda.synchronize()
        replay.append(a.elapsed_time(b))
    assert statistics.median(gated["b2b"]) <= 2.0 * statistics.median(replay) + 0.01


class _FakeCuda:
    """Just enough of torch.cuda for `time_calls`' bookkeeping on a machine without a GPU: a clock that a
    call advances by its cost; events read it; the gate's end event reads as passed when `behind` says so."""

    def __init__(self, call_ms: float, behind=lambda chunk: False) -> None:
        self.now, self.call_ms, self.behind, self.gates, self.slept = 0.0, call_ms, behind, 0, []
        self.after_gate_sleep = False
        fake = self

        class Event:
            def __init__(self, enable_timing: bool = False) -> None:
                self.t = None

            def record(self) -> None:
                self.t = fake.now
                if fake.after_gate_sleep:  # the event recorded right after a gate's spin is its end
                    fake.after_gate_sleep = False
                    fake.gates += 1
                    self.index = fake.gates

            def elapsed_time(self, other) -> float:
                return other.t - self.t

            def query(self) -> bool:
                return fake.behind(self.index)

        self.Event = Event

    def synchronize(self, device=None) -> None:
        pass

    def _sleep(self, cycles: int) -> None:
        self.slept.append(cycles)
        self.after_gate_sleep = len(self.slept) > 1  # the first is the calibration's
        self.now += 1.0  # 1 ms at any length here


def test_time_calls_gates_every_back_to_back_chunk_and_keeps_only_calls_the_host_was_ahead_of(monkeypatch):
    fake = _FakeCuda(call_ms=0.5, behind=lambda gate: gate == 2)  # the second chunk's gate had passed
    monkeypatch.setattr(harness.torch, "cuda", fake)

    def call(i: int) -> None:
        fake.now += fake.call_ms

    out = harness.time_calls(call, "cuda", warmup=5, trials=100, l2_flush=False, host_ahead=True)
    gate = out["gate"]
    assert gate["chunks"] >= 4 and gate["missed"] == 1 and not gate["off"]
    assert gate["b2b_kept"] == len(out["b2b"]) < gate["b2b_all"] == out["calls"] - len(out["stream"])  # missed chunk out
    assert harness.gate_held(out)
    assert all(abs(ms - 0.5) < 1e-9 for ms in out["b2b"])
    assert len(fake.slept) == gate["chunks"] + 1  # one hold per chunk, after the calibration


def test_a_pass_whose_gating_stopped_has_not_held(monkeypatch):
    fake = _FakeCuda(call_ms=0.5, behind=lambda gate: True)  # every gate had passed: the host never got ahead
    monkeypatch.setattr(harness.torch, "cuda", fake)

    def call(i: int) -> None:
        fake.now += fake.call_ms

    out = harness.time_calls(call, "cuda", warmup=5, trials=100, l2_flush=False, host_ahead=True)
    assert out["gate"]["off"] and not harness.gate_held(out)
    assert len(out["b2b"]) == out["gate"]["b2b_all"]  # fell back to every call
    assert harness.gate_held({"b2b": [1.0]})  # no gate asked for: nothing to hold


def test_without_host_ahead_nothing_is_gated_and_every_call_is_kept(monkeypatch):
    fake = _FakeCuda(call_ms=0.5)
    monkeypatch.setattr(harness.torch, "cuda", fake)

    def call(i: int) -> None:
        fake.now += fake.call_ms

    out = harness.time_calls(call, "cuda", warmup=5, trials=100, l2_flush=False)
    assert "gate" not in out and not fake.slept
    assert len(out["b2b"]) + len(out["stream"]) == out["calls"]
