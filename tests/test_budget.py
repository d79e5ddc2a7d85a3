"""The candidate's time budget: a loaded host extends it, the candidate's own threads never do.

The judge charges wall time less the time the candidate's main thread sat runnable without a CPU, but never
less than the CPU the candidate's own threads and processes got over the cores it may use. Driven here by a
scripted clock and scripted scheduler statistics (what the fork server reads from /proc), so the two cases
are exact: a host loaded by others ends at the hard deadline as `infra_error` (evaluate again), a candidate
that crowds its own main thread with busy threads (attack l03) uses its budget and gets `timeout`.
"""
from __future__ import annotations

import pytest

from drk.gym import types as T
from drk.gym.judge import evaluation
from drk.gym.judge.evaluation import Budget, Judge, RunnerGone


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now


class Runner:
    """Never answers; each poll lets `step` seconds pass, during which the main thread waits `wait_rate`
    of the time and the candidate's threads together get `cpu_rate` CPU-seconds per second."""

    def __init__(self, clock: Clock, wait_rate: float, cpu_rate: float, cores: int) -> None:
        self.clock, self.wait_rate, self.cpu_rate, self.cores = clock, wait_rate, cpu_rate, cores
        self.t0 = clock.now
        self.conn = self

    def poll(self, step: float) -> bool:
        self.clock.now += step
        return False

    def usage(self) -> dict:
        dt = self.clock.now - self.t0
        return {"ok": True, "wait_s": self.wait_rate * dt, "cpu_s": self.cpu_rate * dt, "cores": self.cores}


class FakeJudge:
    cuda = False  # a CPU judge (its timeout text speaks of the interpreter)

    def recycle(self) -> None:
        pass


def _run(monkeypatch, wait_rate: float, cpu_rate: float, cores: int = 2) -> tuple[str, float]:
    clock = Clock()
    monkeypatch.setattr(evaluation.time, "monotonic", clock.monotonic)
    budget = Budget(left_s=10.0, hard_deadline=clock.now + 3 * 10.0 + 60.0)
    with pytest.raises(RunnerGone) as e:
        Judge._wait(FakeJudge(), Runner(clock, wait_rate, cpu_rate, cores), budget)
    return e.value.verdict, clock.now - 1000.0


def test_a_host_loaded_by_others_extends_the_budget_up_to_the_hard_deadline(monkeypatch):
    # the main thread waits 90% of the time and the candidate gets little CPU: the others' load
    verdict, wall = _run(monkeypatch, wait_rate=0.9, cpu_rate=0.1)
    assert verdict == T.INFRA_ERROR and wall >= 90.0


def test_an_unloaded_host_charges_wall_time(monkeypatch):
    verdict, wall = _run(monkeypatch, wait_rate=0.0, cpu_rate=1.0)
    assert verdict == T.TIMEOUT and 10.0 <= wall < 16.0


def test_the_candidates_own_threads_are_its_load_not_the_hosts(monkeypatch):
    # 16 busy threads of its own on 2 cores: its main thread waits almost always, but its threads got the
    # cores (attack l03 made a hang look like a loaded host this way, and was never punished)
    verdict, wall = _run(monkeypatch, wait_rate=0.95, cpu_rate=2.0, cores=2)
    assert verdict == T.TIMEOUT and wall < 16.0
    # sharing the host with another job, it still uses its budget well before the hard deadline
    verdict, wall = _run(monkeypatch, wait_rate=0.97, cpu_rate=1.0, cores=2)
    assert verdict == T.TIMEOUT and wall < 26.0
