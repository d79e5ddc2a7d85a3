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


def test_a_short_kernel_is_warmed_and_timed_for_do_benchs_spans():
    # a 10 us kernel with the 256 MB flush: about 60 us a call. Five warm-up calls (0.3 ms) leave an idle GPU
    # at its idle clocks; do_bench warms up for 25 ms and times for 100 ms
    from drk.gym.common.harness import MAX_CALLS, REP_MS, WARMUP_MS, call_counts

    warm, timed = call_counts(0.06, warmup=5, trials=100)
    assert warm * 0.06 >= WARMUP_MS and warm <= MAX_CALLS
    assert timed == min(MAX_CALLS, round(REP_MS / 0.06 + 0.5))  # REP_MS worth, within the bound


def test_a_long_kernel_keeps_the_minimum_counts_and_its_cost():
    from drk.gym.common.harness import call_counts

    assert call_counts(100.0, warmup=5, trials=100) == (5, 100)


def test_the_untimed_call_count_a_candidate_reports_is_bounded():
    # the candidate's process reports how many untimed calls it made; an inflated count would spread the
    # judge's wall time over more calls and loosen the clock bound
    from drk.gym.common.harness import MAX_CALLS
    from drk.gym.judge.checks import warmup_calls

    assert warmup_calls({"warmup_calls": 10**9}, 5) == 5 + MAX_CALLS
    assert warmup_calls({"warmup_calls": 420}, 5) == 420
    assert warmup_calls({}, 5) == 5
    assert warmup_calls({"warmup_calls": 1}, 5) == 5
