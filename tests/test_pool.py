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
