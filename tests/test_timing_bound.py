"""The judge's own clock as a bound on the runtime a candidate process reports (`judge_clock_bound`)."""
from __future__ import annotations

from drk.gym import types as T
from drk.gym.judge.checks import judge_clock_bound, timed_work_problem


def test_a_memory_bound_kernel_is_believed_when_the_protocol_itself_costs_more_than_the_kernel():
    # A reduction over 4 GB of inputs: 1.04 ms of kernel, but each timed call also rescales the inputs in
    # place and flushes the L2 (2.15 ms the judge measured with no candidate at all): 3.2 ms per call.
    runtime, flags = judge_clock_bound(1.04, calls=150, wall_ms=150 * 3.2, protocol_ms=2.15)
    assert (runtime, flags) == (1.04, [])


def test_a_runtime_far_under_what_the_judge_saw_is_replaced_by_the_bound_and_flagged():
    # the same protocol cost, but the process claims 0.1 ms for calls that kept the device 3 ms busy
    runtime, flags = judge_clock_bound(0.1, calls=150, wall_ms=150 * (2.15 + 3.0), protocol_ms=2.15)
    assert flags == [T.TIMING_INCONSISTENT]
    assert abs(runtime - 3.0) < 1e-9


def test_without_a_measured_protocol_cost_the_whole_wall_time_per_call_is_the_bound():
    runtime, flags = judge_clock_bound(0.1, calls=100, wall_ms=100 * 3.0, protocol_ms=None)
    assert flags == [T.TIMING_INCONSISTENT] and abs(runtime - 3.0) < 1e-9


def test_timed_calls_that_ran_the_kernels_like_a_profiled_forward_pass():
    # 170 calls (warm-up included) of a 20 us kernel, a little slower with the L2 flushed before each
    assert timed_work_problem((0.020, 1), (170 * 0.023, 170), calls=170) == ""


def test_timed_calls_that_skip_the_kernels_are_refused():
    # tests/attacks/d08: back-to-back calls return the previous output, so the kernels ran 3 times in 170 calls
    assert "3 times in 170 calls" in timed_work_problem((0.020, 1), (3 * 0.020, 3), calls=170)


def test_timed_calls_that_launch_only_a_token_kernel_are_refused():
    # the same, with a 1 us token launch in every skipped call to keep the count up
    problem = timed_work_problem((0.020, 1), (3 * 0.020 + 167 * 0.001, 170), calls=170)
    assert "per call" in problem


def test_without_a_profiled_forward_to_compare_with_nothing_is_decided():
    assert timed_work_problem((0.0, 0), (0.0, 0), calls=170) == ""
    assert timed_work_problem((0.020, 1), None, calls=170) == ""
