"""Each judge's share of its GPU's memory, and whose fault an out-of-memory is.

A task's shapes and a candidate's out-of-memory must not depend on what the neighbours hold at that
moment: sized by the free memory, the same task ran at full shape in one worker and scaled in the next,
and a correct kernel that ran out of memory while sibling workers held most of the GPU was judged
`runtime_error`. So every judge sizes its work by a fixed budget, its share of the device (SHARE of the
device's memory over the judges of its pool on that GPU), and an out-of-memory in a candidate stands only
if, read by the judge once the candidate's process is gone, the memory others held left this judge less
than its budget: then it is the neighbours' failure (`infra_error`, evaluated again), never the kernel's.
Both readings come from the driver, outside the candidate's process, after that process has ended.
"""
from __future__ import annotations

import time

SHARE = 0.9  # of a device's memory, split over the judges on it: room for the driver and CUDA contexts
OOM_MARKERS = ("out of memory", "cublas_status_alloc_failed", "cudaerrormemoryallocation")
RELEASE_WAIT_S = 1.0  # a dead process's device memory is freed by the driver shortly after it exits


def budget_bytes(total_bytes: int, judges_on_device: int) -> int:
    """One judge's memory budget on a device of `total_bytes` shared by `judges_on_device` judges."""
    return int(total_bytes * SHARE / max(1, int(judges_on_device)))


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
    return (f"the candidate ran out of device memory while other processes held {others / gib:.1f} GiB of the "
            f"GPU's {total / gib:.1f} GiB, leaving this evaluator less than its {budget / gib:.1f} GiB share: the "
            "neighbours' failure, not the kernel's; evaluate it again")
