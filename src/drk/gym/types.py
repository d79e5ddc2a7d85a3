"""Request and result types of the evaluator: the one interface every stage and backend shares.

Both are plain dataclasses that round-trip through JSON (`to_dict` / `from_dict`), so the same records go
over pipes to worker processes, over HTTP to a remote gym, and into `results.jsonl`.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from drk.tasks import Task

# The outcome taxonomy. Exactly one verdict per result; named findings go into `flags`.
OK = "ok"                        # correct on every trial, Triton did the work, nothing forbidden seen
INCORRECT = "incorrect"          # ran, but outputs (or shapes/dtypes) differ from the reference, or inputs were mutated
COMPILE_ERROR = "compile_error"  # does not parse / define ModelNew / import / build / compile its kernels
RUNTIME_ERROR = "runtime_error"  # raised while running (including a Triton launch error)
TIMEOUT = "timeout"              # exceeded the request's time budget; the worker was killed
CRASHED = "crashed"              # the worker process died (segfault, os._exit, out of memory, CUDA error)
NO_TRITON = "no_triton"          # correct, but no Triton kernel did the work in some forward
FORBIDDEN = "forbidden"          # static or runtime sandbox rule violated (reason in `error`)
HACKED = "hacked"                # passed the plain check but a hack defence caught it (e.g. output caching)
# The infrastructure failed, not the candidate: an unreachable or refusing endpoint, a worker that could not
# start, a host too loaded to give the candidate its budget, memory held by sibling workers. Never a kernel
# verdict: excluded from scores and training data, and retried (not skipped) by the next run.
INFRA_ERROR = "infra_error"
# Wall time one evaluation may take on a loaded host, as a multiple of its time budget (plus 60 s): the judge
# charges the candidate only for CPU it got, so its wall clock stretches up to this bound, never further.
HARD_WALL_FACTOR = 3.0
VERDICTS = (OK, INCORRECT, COMPILE_ERROR, RUNTIME_ERROR, TIMEOUT, CRASHED, NO_TRITON, FORBIDDEN, HACKED, INFRA_ERROR)

# Named findings (a result may carry several).
LOW_COVERAGE = "low_coverage"            # Triton kernels are a small share of the forward's device time
DEGENERATE_TASK = "degenerate_task"      # a constant/zero output of the right shape passes this task's check
EXCESSIVE_SPEEDUP = "excessive_speedup"  # speedup over the plausibility bound (re-measured, kept flagged)
INPUT_MUTATED = "input_mutated"          # the candidate wrote into its inputs
SCALED_SHAPES = "scaled_shapes"          # ran at scaled-down sizes (CPU path, memory limit or request)
SCALED_FOR_MEMORY = "scaled_for_memory"  # scaled because the full task does not fit the device
SIDE_STREAM = "side_stream"              # device work outlived the timed stream; device-wide time used
TRITON_UNUSED = "triton_unused"          # outputs stay correct with every Triton launch skipped
OUTPUT_CACHED = "output_cached"          # timed calls returned stale outputs for changed inputs
TIMED_WORK_SKIPPED = "timed_work_skipped"  # the timed calls ran less of the kernels than a profiled forward
NONDETERMINISTIC_REFERENCE = "nondeterministic_reference"  # the reference disagrees with itself
WIDE_INPUTS_FAILED = "wide_inputs_failed"  # right on get_inputs()' distribution, wrong on wider inputs
OFFSET_INPUTS_FAILED = "offset_inputs_failed"  # right near zero, wrong on inputs shifted far from it
EDGE_INPUTS_FAILED = "edge_inputs_failed"  # wrong at exact zeros, an all-zero item or one far outlier
OUTPUT_REUSED = "output_reused"  # a call wrote into a tensor the call before returned
INPUT_INDEPENDENT = "input_independent"  # bitwise the same outputs for inputs whose expected outputs differ
TIMING_INCONSISTENT = "timing_inconsistent"  # self-reported time far under the judge's clock: bound used
PROCESS_SURVIVED = "process_survived"    # a process of the candidate outlived the kill sweep (never seen: a bug)
DEVICE_MEMORY_CONTENDED = "device_memory_contended"  # out of memory while others held this judge's share
RERUN_ALONE = "rerun_alone"              # re-evaluated with no sibling evaluation running before a failure stood


@dataclass
class EvalOptions:
    """How to evaluate. Every field is part of the protocol and is recorded with the result."""

    device: str = "auto"           # "cpu" (Triton interpreter, scaled shapes), "cuda", "cuda:N", "auto"
    trials: int = 5                # correctness trials, each with fresh inputs (input_seed)
    tolerance: float = 1e-2        # atol = rtol for float32/float64 (the paper's protocol: 1e-2)
    seed: int = 42                 # Model's and ModelNew's weights (and the task's init inputs) come from it
    input_seed: int | None = None  # trial k's inputs from input_seed + k, probes after them. None: drawn
    #                                    afresh for every evaluation (recorded as protocol.input_seed), so no
    #                                    input can be recognised from an earlier episode (attack n04); a
    #                                    number replays an evaluation's inputs exactly
    timeout_s: float = 300.0       # wall budget for one evaluation (load + compile + checks + timing)
    timing: bool = True            # measure runtime on GPU (always off on CPU)
    warmup: int = 5                # untimed calls before timing
    timing_trials: int = 100       # timed calls; median reported
    l2_flush: bool = True          # overwrite a buffer larger than L2 between timed calls
    host_ahead: bool = True        # time short kernels without the host's launch latency: the GPU
    #                                    waits while each chunk of timed calls is enqueued (harness.HostAhead)
    compile_baseline: bool = True  # also time the reference under torch.compile (GPU)
    profile: bool = True           # per-kernel device times of one forward and Triton coverage (GPU)
    input_budget_mb: float | None = None  # scale size constants so inputs fit; default: 2 MB on CPU, none on GPU
    scale: float | None = None     # explicit size-constant scale factor (overrides the budget)
    fp64_check: bool = False       # also compare against a float64 reference (precision study)
    max_plausible_speedup: float = 20.0   # above this: re-measure and flag `excessive_speedup`
    low_coverage: float = 0.3      # Triton share of device time under which `low_coverage` is flagged

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    def protocol(self) -> dict:
        """The options that change what a result says: all but the wall budget. The cache keys on exactly
        these and the judge records them in the result (with what it resolved from them)."""
        return {k: v for k, v in self.to_dict().items() if k != "timeout_s"}

    @classmethod
    def from_dict(cls, d: dict | None) -> "EvalOptions":
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in (d or {}).items() if k in names})


@dataclass
class EvalRequest:
    """One candidate for one task. `solution` is a label for reports (file name, turn id, ...)."""

    task: Task
    source: str
    options: EvalOptions = field(default_factory=EvalOptions)
    solution: str = ""
    request_id: str = ""

    def to_dict(self) -> dict:
        return {"task": self.task.to_dict(), "source": self.source, "options": self.options.to_dict(),
                "solution": self.solution, "request_id": self.request_id}

    @classmethod
    def from_dict(cls, d: dict) -> "EvalRequest":
        return cls(task=Task.from_dict(d["task"]), source=d["source"], options=EvalOptions.from_dict(d.get("options")),
                   solution=d.get("solution", ""), request_id=d.get("request_id", ""))


@dataclass
class EvalResult:
    """The evaluator's verdict on one candidate; JSON-serialisable, one line of `results.jsonl`."""

    task: str
    solution: str = ""
    device: str = ""
    verdict: str = CRASHED
    compiled: bool = False
    correct: bool = False
    flags: list[str] = field(default_factory=list)
    error: str = ""                       # short text fit to show a model: last frames of a traceback, a reason
    shapes: dict[str, Any] = field(default_factory=dict)  # size constants and input/output shapes actually used
    trials_passed: int = 0
    trials: int = 0
    max_abs_diff: float | None = None
    mean_abs_diff: float | None = None
    max_abs_diff_fp64: float | None = None
    runtime_ms: float | None = None       # candidate median
    runtime_stats: dict[str, float] = field(default_factory=dict)  # mean, std, min, max, n
    ref_eager_ms: float | None = None
    ref_compile_ms: float | None = None
    speedup: float | None = None          # ref_eager_ms / runtime_ms
    speedup_compile: float | None = None  # ref_compile_ms / runtime_ms
    coverage: float | None = None         # Triton share of the forward's device time (CPU: wall time)
    kernels: list[dict[str, Any]] = field(default_factory=list)  # top profile rows: name, ms, share, triton
    triton_kernels: list[str] = field(default_factory=list)      # names of Triton kernels launched in the forward
    peak_memory_mb: float | None = None   # the candidate process's peak device allocation (its outputs, scratch)
    evaluator_peak_memory_mb: float | None = None  # the judge's peak: inputs, references, receive buffers
    phase_seconds: dict[str, float] = field(default_factory=dict)  # load/compile/correctness/timing/profile/total
    # CPU path only: median wall time of a reference forward and of a candidate forward op (input transfer
    # included), both by the judge's clock; interpreter figures, never comparable with GPU times
    cpu_times: dict[str, float] = field(default_factory=dict)
    versions: dict[str, str] = field(default_factory=dict)
    protocol: dict[str, Any] = field(default_factory=dict)  # the options that define the numbers
    request_id: str = ""
    task_hash: str = ""

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "EvalResult":
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in names})

    @property
    def ok(self) -> bool:
        return self.verdict == OK


@runtime_checkable
class Gym(Protocol):
    """The one interface every stage uses for evaluation, whatever the backend (`drk.gym.transport.backends
    .make_gym`: local pool, HTTP service, Ray, cached). Results never raise for a candidate's failure: a
    verdict says it; infrastructure failures come back as `infra_error` results."""

    def submit(self, req: EvalRequest) -> Future: ...

    def evaluate(self, req: EvalRequest) -> EvalResult: ...

    def evaluate_batch(self, reqs: Iterable[EvalRequest],
                       on_result: Callable[[int, EvalResult], None] | None = None) -> list[EvalResult]: ...

    def close(self) -> None: ...
