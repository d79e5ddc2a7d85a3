"""Each judge's share of its GPU's memory, and whose fault an out-of-memory is.

A task's shapes and a candidate's out-of-memory must not depend on what the neighbours hold at that
moment: sized by the free memory, the same task ran at full shape in one worker and scaled in the next,
and a correct kernel that ran out of memory while sibling workers held most of the GPU was judged
`runtime_error`. So every judge sizes its work by a fixed budget, its share of the device (SHARE of the
device's memory, or the operator's DRK_GPU_MEMORY_SHARE where training holds part of the GPU, over the
judges of its pool on that GPU), and an out-of-memory in a candidate stands only
if, read by the judge once the candidate's process is gone, the memory others held left this judge less
than its budget: then it is the neighbours' failure (`infra_error`, evaluated again), never the kernel's.
The other way round too: when the judge itself runs out while the candidate's process held more than its
part of the evaluation's share (half, or less where the judge's own left less; what that process's end gives
back to the driver), the failure is the candidate's (`runtime_error`), never an `infra_error` a wrong kernel
could hide behind.
The readings come from the driver, outside the candidate's process. A neighbour that frees memory between
the two readings makes the candidate look larger; a pool re-runs every out-of-memory alone before it stands.
"""
from __future__ import annotations

import os
import time

SHARE = 0.9  # of a device's memory, split over the judges on it: room for the driver and CUDA contexts
SHARE_ENV = "DRK_GPU_MEMORY_SHARE"  # the operator's: the part left to the evaluators (training on the same GPU)
OOM_MARKERS = ("out of memory", "cublas_status_alloc_failed", "cudaerrormemoryallocation")
CANDIDATE_PART = 0.5  # of an evaluation's share, the most its candidate's process may hold (`candidate_part`)
RELEASE_WAIT_S = 1.0  # a dead process's device memory is freed by the driver shortly after it exits


def share_from_env(env: dict | None = None) -> float:
    """The part of each GPU's memory the evaluators on it may plan for: DRK_GPU_MEMORY_SHARE (a number in
    (0, 0.95]; lower it where training shares the GPU, e.g. 0.5 for `drk rl` on one GPU), else SHARE.
    ValueError with a one-line reason for anything else."""
    raw = (os.environ if env is None else env).get(SHARE_ENV, "").strip()
    if not raw:
        return SHARE
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if not 0.0 < value <= 0.95:  # nan fails too
        raise ValueError(f"{SHARE_ENV}={raw!r}: give the part of each GPU's memory the evaluators may use, a number "
                         "above 0 and at most 0.95 (the rest is the driver's and the CUDA contexts')")
    return value


def budget_bytes(total_bytes: int, judges_on_device: int, share: float = SHARE) -> int:
    """One judge's memory budget on a device of `total_bytes` shared by `judges_on_device` judges, the
    evaluators together planning for `share` of it."""
    return int(total_bytes * share / max(1, int(judges_on_device)))


def is_device_oom(error: str | None) -> bool:
    """An error text that says the device ran out of memory (torch's, cuBLAS's or the CUDA runtime's)."""
    text = (error or "").lower()
    return any(m in text for m in OOM_MARKERS)


def held_by_others(total: int, free: int, own_reserved: int) -> int:
    """Device bytes that neither this judge's allocator nor free memory accounts for: other processes'
    (with the candidate's process gone, that is the neighbours and every CUDA context, ours included)."""
    return max(0, int(total) - int(free) - int(own_reserved))


def starved(total: int, free: int, own_reserved: int, budget: int) -> bool:
    """Whether the neighbours held so much that this judge could not have had its budget."""
    return total - held_by_others(total, free, own_reserved) < budget


def held_by_candidate(free_beside: int, free_after: int) -> int:
    """Device bytes the candidate's process held: what its end gave back to the driver."""
    return max(0, int(free_after) - int(free_beside))


def candidate_part(own_reserved: int, budget: int) -> int:
    """The device bytes a candidate's process may hold while the judge works: half the evaluation's share,
    and never more than the judge's own left of it. Half, because a task is sized so that its inputs x 10
    (`DEVICE_MEMORY_FACTOR`) fit the share and a correct evaluation holds at most ~6x its inputs, judge and
    candidate together: any correct kernel (its inputs, outputs, poison block, the caching allocator's
    intermediates and its CUDA context) fits in its half. Without the half, a candidate that guessed the
    share could hold just under what the judge's own left and make the judge's next allocation fail, a
    task's failure (attack r01's variant)."""
    return max(0, min(budget - own_reserved, int(budget * CANDIDATE_PART)))


def over_share(candidate: int, own_reserved: int, budget: int) -> bool:
    """Whether the candidate's process held more than its part of the evaluation's share (`candidate_part`)."""
    return candidate > candidate_part(own_reserved, budget)


def settled_free(read, wait_s: float = RELEASE_WAIT_S, step_s: float = 0.1) -> tuple[int, int]:
    """(free, total) from `read()` once it stops growing (a killed process's memory takes a moment to come
    back), at most `wait_s` later."""
    free, total = read()
    end = time.monotonic() + wait_s
    while time.monotonic() < end:
        time.sleep(step_s)
        again, total = read()
        if again <= free:
            break
        free = again
    return free, total


def contention_message(total: int, others: int, budget: int) -> str:
    gib = 2 ** 30
    return (f"this evaluation ran out of device memory while other processes held {others / gib:.1f} GiB of the "
            f"GPU's {total / gib:.1f} GiB, leaving this evaluator less than its {budget / gib:.1f} GiB share: the "
            "neighbours' failure, not the kernel's; evaluate it again")


def hog_message(candidate: int, own: int, budget: int) -> str:
    gib = 2 ** 30
    return (f"the candidate's process held {candidate / gib:.1f} GiB of device memory between its calls, more than the "
            f"{candidate_part(own, budget) / gib:.1f} GiB it may hold of this evaluation's {budget / gib:.1f} GiB "
            "share (half, or what the evaluator's own left), and the evaluator's work ran out of memory: free what the "
            "forward allocates (no tensors kept in globals or caches beyond its outputs)")
