"""Device assignment of evaluation slots, with fake GPU lists (the multi-GPU layouts without GPUs).

    .venv/bin/python -m pytest tests/test_pool.py -q
"""
from __future__ import annotations

from drk.gym.transport.pool import plan_slots


def test_one_slot_per_gpu_each_sees_exactly_one():
    slots = plan_slots("cuda", None, gpus=["0", "1"])
    assert [s[0] for s in slots] == ["cuda:0", "cuda:0"]
    assert [s[1]["CUDA_VISIBLE_DEVICES"] for s in slots] == ["0", "1"]


def test_several_workers_share_gpus_round_robin():
    slots = plan_slots("cuda", 5, gpus=["2", "3"])
    assert [s[1]["CUDA_VISIBLE_DEVICES"] for s in slots] == ["2", "3", "2", "3", "2"]


def test_split_layout_pins_evaluation_to_one_gpu():
    # training on GPU 0, evaluation on GPU 1: --eval-device cuda:1
    slots = plan_slots("cuda:1", 2, gpus=["0", "1"])
    assert [s[1]["CUDA_VISIBLE_DEVICES"] for s in slots] == ["1", "1"]
    # cuda:1 is the second *visible* GPU when the parent already restricts CUDA_VISIBLE_DEVICES
    assert plan_slots("cuda:1", None, gpus=["4", "5"])[0][1]["CUDA_VISIBLE_DEVICES"] == "5"


def test_cpu_slots_and_no_gpu_error():
    assert [s[0] for s in plan_slots("cpu", 3)] == ["cpu"] * 3
    import pytest

    with pytest.raises(RuntimeError, match="no CUDA device"):
        plan_slots("cuda", None, gpus=[])


def _fake_slots(pool, result_of):
    """Every slot of `pool` answers through `result_of(overlapping)` instead of a judge: `overlapping` tells
    whether another fake evaluation was running while this one ran."""
    import threading
    import time

    lock, running = threading.Lock(), [0]

    def evaluate(req, slack_s):
        with lock:
            running[0] += 1
        time.sleep(0.3)
        with lock:
            overlapping = running[0] > 1
        time.sleep(0.05)
        with lock:
            running[0] -= 1
        return result_of(req, overlapping)

    for s in pool.slots:
        s.evaluate = evaluate


def test_a_time_the_judges_clock_disbelieved_beside_neighbours_is_measured_again_alone(tmp_path):
    """Attack q02 (GPU): a neighbour's thread keeps the GPU busy, the time-slicing stretches this candidate's
    timed loop on the judge's clock, and the clock bound (meant for forged times) replaced a correct kernel's
    0.07 ms by 1.3 ms. A disbelieved time is what a neighbour can cause, so, like a timeout, it stands only if
    it repeats with no other evaluation running."""
    from drk.gym import EvalOptions, EvalRequest, LocalPool
    from drk.gym import types as T
    from drk.tasks import task_from_file
    from conftest import ROOT

    task = task_from_file(ROOT / "data/queries/001_scaled_tanh_bias.py")
    src = (ROOT / "data/query_solutions/001_scaled_tanh_bias.py").read_text()

    def honest(req, overlapping):  # its time is disbelieved only while a neighbour runs
        return T.EvalResult(task=req.task.id, verdict=T.OK, runtime_ms=1.3 if overlapping else 0.07,
                            flags=[T.TIMING_INCONSISTENT] if overlapping else [])

    def forger(req, overlapping):  # disbelieved whatever runs beside it
        return T.EvalResult(task=req.task.id, verdict=T.OK, runtime_ms=2.0, flags=[T.TIMING_INCONSISTENT])

    for result_of, runtime, flags in ((honest, 0.07, [T.RERUN_ALONE]),
                                      (forger, 2.0, [T.TIMING_INCONSISTENT, T.RERUN_ALONE])):
        with LocalPool(device="cpu", workers=2, cache_dir=str(tmp_path)) as pool:
            _fake_slots(pool, result_of)
            results = pool.evaluate_batch([EvalRequest(task, src, EvalOptions(device="cpu"))] * 2)
        assert [(r.runtime_ms, r.flags) for r in results] == [(runtime, flags)] * 2, result_of.__name__
