"""A verdict never depends on the neighbours' memory: each judge sizes its work by a fixed share of its GPU,
and a candidate's out-of-memory while others held that share is the infrastructure's failure, not the
kernel's (drk.gym.judge.devicememory). The GPU run of the same question is bench/timing_under_load.py."""
from types import SimpleNamespace

import pytest
import torch

from drk.gym import types as T
from drk.gym.judge import devicememory as dm
from drk.gym.judge.evaluation import Judge
from drk.gym.transport.pool import gpu_share, plan_slots

GiB = 2 ** 30


def test_budget_is_a_fixed_share_of_the_device_never_the_free_memory():
    assert dm.budget_bytes(80 * GiB, 4) == int(80 * GiB * dm.SHARE / 4)
    assert dm.budget_bytes(80 * GiB, 1) == int(80 * GiB * dm.SHARE)
    assert dm.budget_bytes(80 * GiB, 0) == dm.budget_bytes(80 * GiB, 1)  # never a division by zero


@pytest.mark.parametrize("raw, share", [("", dm.SHARE), ("0.5", 0.5), (" 0.95 ", 0.95)])
def test_the_operator_leaves_training_its_part_of_the_gpu(raw, share):
    assert dm.share_from_env({dm.SHARE_ENV: raw}) == share
    assert dm.budget_bytes(80 * GiB, 2, dm.share_from_env({dm.SHARE_ENV: raw})) == int(80 * GiB * share / 2)


@pytest.mark.parametrize("raw", ["0", "1", "half", "nan", "-0.2"])
def test_a_share_the_evaluators_cannot_use_is_refused_in_one_line(raw):
    with pytest.raises(ValueError, match=dm.SHARE_ENV) as e:
        dm.share_from_env({dm.SHARE_ENV: raw})
    assert "\n" not in str(e.value)


def test_a_gpu_pool_refuses_that_share_before_starting_anything(monkeypatch):
    from drk.gym.transport.pool import LocalPool, SandboxError

    monkeypatch.setenv(dm.SHARE_ENV, "2")
    with pytest.raises(SandboxError, match="DRK_GPU_MEMORY_SHARE='2'"):
        LocalPool(device="cuda", workers=1, unsafe_no_sandbox=True)  # refused before any sandbox or GPU is needed


def test_the_share_reaches_the_judge_and_never_the_candidate():
    from drk.gym.sandbox.audit import candidate_env, scrubbed_env

    env = {dm.SHARE_ENV: "0.5", "PATH": "/usr/bin"}
    assert scrubbed_env(env)[dm.SHARE_ENV] == "0.5"
    assert dm.SHARE_ENV not in candidate_env(env)


def test_slots_sharing_a_gpu_split_it_and_slots_on_other_gpus_do_not_count():
    plan = plan_slots("cuda", 6, gpus=["0", "1"])
    shares = [gpu_share(plan, env) for _, env in plan]
    assert shares == [3] * 6
    plan = plan_slots("cuda", 3, gpus=["0", "1"])
    assert sorted(gpu_share(plan, env) for _, env in plan) == [1, 2, 2]
    assert gpu_share([("cpu", {})], {}) == 1


@pytest.mark.parametrize("text, oom", [
    ("RuntimeError: CUDA out of memory. Tried to allocate 6.00 GiB", True),
    ("torch.OutOfMemoryError: CUDA out of memory.", True),
    ("RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling cublasCreate(handle)", True),
    ("cudaErrorMemoryAllocation", True),
    # Triton's shared-memory limit is the kernel's own choice of block size: never the neighbours'
    ("triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: 262144", False),
    ("IndexError: index 4 is out of bounds", False),
    (None, False),
])
def test_device_out_of_memory_is_told_from_other_errors(text, oom):
    assert dm.is_device_oom(text) is oom


def test_starved_only_when_others_left_less_than_the_budget():
    budget = dm.budget_bytes(80 * GiB, 4)  # 18 GiB
    # three siblings at their full budgets and the CUDA contexts: this judge still had its share
    assert not dm.starved(80 * GiB, free=21 * GiB, own_reserved=2 * GiB, budget=budget)
    # a process outside the pool holds 40 GiB on top of the siblings: the share was not there
    assert dm.starved(80 * GiB, free=3 * GiB, own_reserved=1 * GiB, budget=budget)
    assert dm.held_by_others(80 * GiB, 3 * GiB, 1 * GiB) == 76 * GiB


def test_settled_free_waits_for_a_dead_process_memory_to_come_back():
    readings = iter([(10, 80), (30, 80), (50, 80), (50, 80), (50, 80)])
    assert dm.settled_free(lambda: next(readings), wait_s=2.0, step_s=0.001) == (50, 80)


def _oom_result():
    return T.EvalResult(task="t", verdict=T.RUNTIME_ERROR, error="trial 1/5: RuntimeError: CUDA out of memory.")


@pytest.mark.parametrize("free_gib, verdict", [(2, T.INFRA_ERROR), (30, T.RUNTIME_ERROR)])
def test_a_candidate_oom_is_the_neighbours_failure_only_when_they_held_its_share(monkeypatch, free_gib, verdict):
    """The judge's decision, with the driver's readings stood in for (no GPU here): 80 GiB device, this
    judge's share 18 GiB, 1 GiB its own. Free 2 GiB: others held 77, the kernel never had its share;
    free 30 GiB: it had, and the out-of-memory is its own."""
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: None)
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda *a: (free_gib * GiB, 80 * GiB))
    monkeypatch.setattr(torch.cuda, "memory_reserved", lambda *a: 1 * GiB)
    monkeypatch.setattr(dm, "RELEASE_WAIT_S", 0.0)
    res = _oom_result()
    whose = Judge._attribute_oom(SimpleNamespace(memory_budget=dm.budget_bytes(80 * GiB, 4)), res)
    assert whose == ("neighbours" if verdict == T.INFRA_ERROR else "own")
    assert res.verdict == verdict
    assert res.protocol["device_memory_at_failure"]["free_mb"] == free_gib * 1024
    assert (T.DEVICE_MEMORY_CONTENDED in res.flags) is (verdict == T.INFRA_ERROR)
    if verdict == T.INFRA_ERROR:
        assert "neighbours' failure" in res.error and "out of memory" in res.error


@pytest.mark.parametrize("beside_gib, whose, verdict", [
    (1, "candidate", T.RUNTIME_ERROR),   # its process gave back 29 GiB: more than the 17 GiB its share left it
    (28, "task", T.INFRA_ERROR),         # it held 2 GiB: the task's shapes did not fit this budget
])
def test_the_judge_running_out_beside_a_candidate_that_hogged_memory_is_the_candidate_s_failure(
        monkeypatch, beside_gib, whose, verdict):
    """Attack r01 (GPU): a wrong kernel takes the device's free memory at import, the judge's reference then
    runs out, and an `infra_error` (never trained on) would hide the wrong kernel. Free memory read with the
    candidate's process alive (`beside`) and after it is gone (30 GiB) tells what that process held."""
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: None)
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda *a: (30 * GiB, 80 * GiB))
    monkeypatch.setattr(torch.cuda, "memory_reserved", lambda *a: 1 * GiB)
    monkeypatch.setattr(dm, "RELEASE_WAIT_S", 0.0)
    res = T.EvalResult(task="t", verdict=T.INFRA_ERROR, error="the evaluator ran out of device memory ...")
    judge = SimpleNamespace(memory_budget=dm.budget_bytes(80 * GiB, 4))
    assert Judge._attribute_oom(judge, res, free_beside=beside_gib * GiB) == whose
    assert res.verdict == verdict
    assert res.protocol["device_memory_at_failure"]["candidate_mb"] == (30 - beside_gib) * 1024
    if whose == "candidate":
        assert "held 29.0 GiB" in res.error and "out of memory" in res.error  # the pool re-runs it alone first


@pytest.mark.parametrize("held_gib, own_gib, whose", [
    (15, 1, "candidate"),  # under the 17 GiB beside the judge's own, over the candidate's half (9 GiB)
    (8, 1, "task"),        # within its half: a correct kernel's inputs, outputs and cached intermediates
    (7, 12, "candidate"),  # within its half, but over what the judge's own 12 GiB left of the share
])
def test_a_candidate_holding_just_under_what_the_judge_left_is_still_blamed_past_its_half(
        monkeypatch, held_gib, own_gib, whose):
    """Attack r01's variant: a wrong kernel that guesses the share (90 % of the device over the workers) and
    holds just under what the judge's own leaves of it, so that the judge's next allocation, not its
    reading, runs out (`task_error`, never trained on). A task is sized so that its inputs x 10 fit the
    share and a correct evaluation holds at most ~6x (judge and candidate together), so the candidate's
    half of the share is room for any correct kernel: past it, the judge's out-of-memory is the
    candidate's."""
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: None)
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda *a: (30 * GiB, 80 * GiB))
    monkeypatch.setattr(torch.cuda, "memory_reserved", lambda *a: own_gib * GiB)
    monkeypatch.setattr(dm, "RELEASE_WAIT_S", 0.0)
    res = T.EvalResult(task="t", verdict=T.INFRA_ERROR, error="the evaluator ran out of device memory ...")
    judge = SimpleNamespace(memory_budget=dm.budget_bytes(80 * GiB, 4))  # 18 GiB
    assert Judge._attribute_oom(judge, res, free_beside=(30 - held_gib) * GiB) == whose
    assert res.verdict == (T.RUNTIME_ERROR if whose == "candidate" else T.INFRA_ERROR)
