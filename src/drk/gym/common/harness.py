"""Mechanics shared by the judge and the runner: loading programs, seeding, inputs, forwards, timing and
profiling. Nothing here decides a verdict; the judge does.

Timing (GPU) is CUDA events around each call, with an L2 flush before every timed call (outside the
timed region), `warmup` untimed calls first, and a device-wide check: after the end event the host
synchronises the whole device and records a third event, so work left running on a side stream shows up
as the gap between "stream" and "device" time (see `drk.gym.judge.evaluation` for how that gap is used).
"""
from __future__ import annotations

import contextlib
import linecache
import math
import os
import random
import statistics
import sys
import time
import traceback
import types
from typing import Any, Callable

import torch
from torch.autograd import DeviceType

from drk.gym.common.tensors import flatten_outputs, tensors_of, to_device

L2_FLUSH_BYTES = 256 * 2**20  # several times the L2 of any current GPU (H100/H200: 50/60 MB)


def seed_all(seed: int) -> None:
    random.seed(seed)
    torch.manual_seed(seed)
    try:
        import numpy as np

        np.random.seed(seed % 2**32)
    except ImportError:
        pass


def load_module(source: str, name: str, path: str | None = None) -> types.ModuleType:
    """Execute `source` as a fresh module. With `path` the source is written there first: Triton's
    `@jit` reads kernel source through `inspect`, which needs a real file."""
    filename = path or f"<{name}>"
    if path:
        with open(path, "w") as f:
            f.write(source)
    else:
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    mod = types.ModuleType(name)
    mod.__file__ = filename
    sys.modules[name] = mod
    try:
        exec(compile(source, filename, "exec"), mod.__dict__)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return mod


def unload_module(name: str) -> None:
    mod = sys.modules.pop(name, None)
    if mod is not None:
        linecache.cache.pop(getattr(mod, "__file__", ""), None)


def make_inputs(module: types.ModuleType, seed: int, device: str) -> list:
    """`get_inputs()` under `seed`, created directly on `device` (factories honour the device context),
    anything still elsewhere moved there."""
    seed_all(seed)
    with torch.device(device):
        inputs = module.get_inputs()
    return to_device(list(inputs), device)


def make_init_inputs(module: types.ModuleType, seed: int) -> list:
    seed_all(seed)
    return list(module.get_init_inputs())


def build_model(module: types.ModuleType, cls_name: str, init_inputs: list, seed: int, device: str) -> torch.nn.Module:
    cls = getattr(module, cls_name, None)
    if cls is None:
        raise NameError(f"{cls_name} is not defined")
    seed_all(seed)
    model = cls(*init_inputs)
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"{cls_name} is not a torch.nn.Module")
    return model.to(device)


# Modules that draw random numbers in train mode only (`forward_mode`'s random_modules)
RANDOM_MODULES = (torch.nn.modules.dropout._DropoutNd, torch.nn.RReLU)


@contextlib.contextmanager
def forward_mode(model: torch.nn.Module, train: bool, grad: bool, random_modules: bool = True):
    """`random_modules=False`: in train mode, the modules that draw random numbers compute as in eval mode."""
    model.train(train)
    if train and not random_modules:
        for m in model.modules():
            if isinstance(m, RANDOM_MODULES):
                m.train(False)
    with torch.set_grad_enabled(grad):
        yield


class Refused(Exception):
    """A forward broke the calling convention in a way only a hack needs: the verdict is `hacked`."""


class SubclassOutput(Refused, TypeError):
    """A forward returned a tensor subclass: its methods run the subclass's own code whenever anyone touches
    the output (a detach, a copy), so work can be deferred past the timer or an answer swapped in late."""


class StreamChanged(Refused):
    """A forward left another stream current: the caller's next reads would be ordered after work the caller
    never asked to wait for (how a race with an unjoined side stream would hide from the stream-ordered read)."""


PLAIN_TENSOR_TYPES = (torch.Tensor, torch.nn.Parameter)


def plain_outputs(out: Any) -> list[torch.Tensor]:
    """The forward's outputs as a flat list, refused unless every one is a plain tensor. Only `type()` is
    read, never a tensor method, so a subclass's hooks do not run before it is refused."""
    flat = flatten_outputs(out)
    for t in flat:
        if type(t) not in PLAIN_TENSOR_TYPES:
            raise SubclassOutput(f"forward returned a tensor subclass ({type(t).__name__[:80]}), not a plain "
                                 "tensor; return the tensors the kernels wrote")
    return flat


def forward(model: torch.nn.Module, inputs: list, *, train: bool = True, grad: bool = True,
            plain: bool = False, roots: list | None = None, random_modules: bool = True) -> list[torch.Tensor]:
    """`plain`: the candidate's forward, whose outputs must be plain tensors (`plain_outputs`) and which must
    leave the caller's current stream current. `roots`, when given, gets each output as the forward returned it
    (the tensor it is a view of, if any), before the detached copies this returns."""
    stream = _current_stream_handle() if plain else None
    with forward_mode(model, train, grad, random_modules):
        out = model(*inputs)
    if stream is not None and _current_stream_handle() != stream:
        raise StreamChanged("forward left another CUDA stream current; restore the caller's stream (and make it "
                            "wait for any side stream) before returning")
    flat = plain_outputs(out) if plain else flatten_outputs(out)
    if roots is not None:
        roots.extend(t._base if t._base is not None else t for t in flat)
    return [t.detach() for t in flat]


def _current_stream_handle() -> int | None:
    """The current device's current stream (None before CUDA is initialised: no stream to leave)."""
    return torch.cuda.current_stream().cuda_stream if torch.cuda.is_initialized() else None


@contextlib.contextmanager
def buffers_kept(model: torch.nn.Module):
    """Every buffer of `model` (BatchNorm's running statistics, a counter) put back as it was when the block
    began, however the block ends: for a call whose updates no later call may read (the ablation probe's, whose
    kernels were skipped; the judge's extra reference calls)."""
    kept = [(b, b.detach().clone()) for b in model.buffers()]
    try:
        yield
    finally:
        with torch.no_grad():
            for b, was in kept:
                try:
                    b.copy_(was)
                except (RuntimeError, TypeError):  # resized or freed by the block: nothing to put back into
                    pass


def sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize(device)


def stream_sync(device: str) -> None:
    """Wait for the caller's stream only: what a caller of the module may read next, and no more."""
    if device.startswith("cuda"):
        torch.cuda.current_stream(device).synchronize()


PERTURB = 1.0 + 2.0 ** -10


def floating_tensors(x: Any) -> list[torch.Tensor]:
    return [t for t in tensors_of(x) if t.is_floating_point()]


WARMUP_MS = 25.0    # do_bench's warm-up and timed spans: a short kernel is called until the GPU's and the
REP_MS = 100.0      # host's clocks have left their idle states (an H200 idles at 345 MHz), not 5 times
MAX_CALLS = 1000    # bound on warm-up and on timed calls each, whatever the estimate says


def call_counts(estimate_ms: float, warmup: int, trials: int) -> tuple[int, int]:
    """(warm-up calls, timed back-to-back calls) for calls estimated at `estimate_ms` each: WARMUP_MS and
    REP_MS worth, at least `warmup` and `trials`, at most MAX_CALLS (or the minimum asked for, if more)."""
    est = max(float(estimate_ms), 1e-4)
    return (max(warmup, min(MAX_CALLS, math.ceil(WARMUP_MS / est))),
            max(trials, min(MAX_CALLS, math.ceil(REP_MS / est))))


GATE_CHUNK = 32        # timed calls enqueued behind one gate: few enough launches to stay within a stream's queue
GATE_MARGIN = 1.25     # a gate lasts this many times the host's enqueue time for its calls (doubled on a miss,
                       # back towards this after each chunk that held): small, since the judge's clock bound
                       # counts the holds, and a forward whose host time dominates is charged about that much
GATE_MAX_MS = 200.0    # one gate's ceiling
GATE_MISSES = 3        # chunks in a row the host still fell behind (a forward that synchronises): stop gating
GATE_FIRST_MS = 0.2    # host ms per call assumed before anything is measured
_CALIBRATION_CYCLES = 2_000_000


def gate_ms(host_ms_per_call: float, calls: int, margin: float, device_ms_before: float = 0.0) -> float:
    """How long the GPU is held for `calls` calls the host enqueues at `host_ms_per_call` each, when the
    GPU still has `device_ms_before` of earlier calls to run once the host starts on these (the previous
    chunk, enqueued behind its own gate): the hold covers only what that head start does not."""
    need = margin * max(host_ms_per_call, 1e-3) * calls - 0.9 * max(device_ms_before, 0.0)
    return min(GATE_MAX_MS, max(0.0, need) + 0.02)


def chunks(order: list[bool], size: int = GATE_CHUNK) -> list[tuple[bool, int]]:
    """The timed pass's shuffled order (True: an idle-start call) as runs: (True, 1) per idle-start call,
    (False, n) for up to `size` back-to-back calls in a row, in the same order."""
    out: list[tuple[bool, int]] = []
    for is_idle in order:
        if is_idle or not out or out[-1][0] or out[-1][1] >= size:
            out.append((is_idle, 1))
        else:
            out[-1] = (False, out[-1][1] + 1)
    return out


class HostAhead:
    """Keeps the host ahead of the GPU in the back-to-back pass: before each chunk of calls the current
    stream is held by a spin kernel (`torch.cuda._sleep`) long enough for the host to enqueue the whole
    chunk, so every call's events time the device's work only, never a wait for the host's next launch.

    Why: without it a call whose device time is close to the host's cost of enqueueing it (flush, rescaling,
    events and the forward's launches) times the device in some loops and the host's launch latency in
    others, and for short kernels the two modes differ several-fold, for do_bench as for drk
    (docs/measurements/timing-fidelity.md). The rule is checked, not assumed: after a chunk is enqueued the
    gate's end event must still be pending; if the GPU had already passed it the host fell behind, the
    chunk's calls are marked and the next gates are made twice as long; after GATE_MISSES such chunks in a
    row (a forward that waits for the device itself) gating stops and the pass says so. The idle-start
    pass is never gated: work a forward leaves on a side stream would run under the gate and escape it.
    A forward can tell a gated call by its busy stream; that buys nothing, since the time op's own device
    activity must show the source's kernels doing a profiled forward's work per call (`timed_work_problem`)."""

    def __init__(self, device: str, host_ms_per_call: float | None = None, device_ms_per_call: float = 0.0) -> None:
        self.device = device
        self.host_ms = host_ms_per_call or GATE_FIRST_MS
        self.device_ms = device_ms_per_call  # the 5-call estimate: what a chunk gives the next one as head start
        self.behind = 0  # calls of the previous chunk, still ahead of the GPU when the next gate is enqueued
        self.margin = GATE_MARGIN
        self.in_a_row = self.missed = self.chunks = 0
        self.held_ms = 0.0
        self.off = False
        torch.cuda.synchronize(device)
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        torch.cuda._sleep(_CALIBRATION_CYCLES)
        b.record()
        torch.cuda.synchronize(device)
        self.cycles_per_ms = _CALIBRATION_CYCLES / max(a.elapsed_time(b), 1e-3)

    def hold(self, calls: int):
        if self.off:
            return None
        ms = gate_ms(self.host_ms, calls, self.margin, self.device_ms * self.behind)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        torch.cuda._sleep(int(ms * self.cycles_per_ms))
        end.record()
        self.held_ms += ms
        return end, time.perf_counter(), start, ms

    def release(self, held, calls: int) -> bool:
        """After a chunk's calls are enqueued: True if the GPU was still held (every call device-bound)."""
        if held is None:
            return False
        end, t0 = held[:2]
        self.host_ms = (time.perf_counter() - t0) * 1000.0 / calls
        self.chunks += 1
        if end.query():  # the gate had ended before the host finished: some calls waited for the host
            self._recalibrate(held)
            self.missed += 1
            self.in_a_row += 1
            self.margin *= 2
            self.off = self.in_a_row >= GATE_MISSES
            self.behind = 0
            return False
        self.in_a_row = 0
        self.margin = max(GATE_MARGIN, self.margin * 0.8)
        self.behind = calls
        return True

    def _recalibrate(self, held) -> None:
        """A gate the GPU passed early may have been shorter than planned: the spin counts SM cycles, and a
        GPU calibrated near idle speeds its clock up under the timed pass. The gate's measured length
        (it has ended, so its events have times) resets the cycles per millisecond; a gate that lasted as
        planned leaves them, the host was simply slower."""
        if len(held) < 4:
            return
        end, _, start, planned_ms = held
        actual_ms = start.elapsed_time(end)
        if 0 < actual_ms < 0.95 * planned_ms:
            self.cycles_per_ms *= planned_ms / actual_ms

    def idle_start(self) -> None:
        """An idle-start call synchronised the device: the next chunk has no head start."""
        self.behind = 0

    def report(self) -> dict:
        return {"chunks": self.chunks, "missed": self.missed, "held_ms": round(self.held_ms, 3), "off": self.off}


def time_calls(fn: Callable[[int], Any], device: str, *, warmup: int, trials: int, l2_flush: bool,
               n_inputs: int = 1, perturb: list[torch.Tensor] = (), host_ahead: bool = False) -> dict:
    """Time `fn(k)` (k = index of the input set to use, rotating) on a CUDA device, in two passes.

    Call counts follow do_bench: 5 calls estimate the time of one (flush included), then warm-up calls
    fill WARMUP_MS and the back-to-back pass REP_MS (at least `warmup` and `trials` calls, at most
    MAX_CALLS each), so a 10 us kernel is timed over thousands of calls on a GPU at its working clocks.
    Pass 1, the runtime, is do_bench's protocol: before each call, outside its events, the float inputs in
    `perturb` are scaled in place by (1 + 2^-10) alternately up and down (new values at the same
    addresses, so an output cache keyed on pointers, shapes or sampled contents never hits) and the L2 is
    flushed; calls are enqueued back to back, so host launch latency overlaps the previous call's device
    work and short kernels are not charged for the host (the harness's own launch overhead stays out).
    Pass 2 is the idle-start check: each call starts on a synchronised device and the device is
    synchronised again after it, so work left on a side stream or in a thread shows up as the gap between
    the stream's end event and device idle (`runtime_of` uses it). Both passes' call counts are drawn at
    random around their targets and interleaved in random order, so a candidate cannot tell the timed calls
    from the check calls by position. With `host_ahead`, pass 1 is enqueued in chunks behind a gate
    (`HostAhead`), so its calls time the device's work even where the host is slower than the GPU; calls of
    chunks the host fell behind in are left out when at least half of the pass remains.

    Returns milliseconds per call: `b2b` (pass 1), `stream` and `device` (pass 2), `sync_gap_ms` (what
    `device` adds for an empty region), `calls` (both passes), `warmup_calls` (the estimate's and the
    warm-up's), `gate` (with `host_ahead`) and the protocol used."""
    rng = random.Random()
    flush = torch.empty(L2_FLUSH_BYTES // 4, dtype=torch.int32, device=device) if l2_flush else None
    call = 0

    def prepare() -> None:
        for t in perturb:
            t.mul_(PERTURB) if call % 2 == 0 else t.div_(PERTURB)
        if flush is not None:
            flush.zero_()

    torch.cuda.synchronize(device)
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    e0.record()
    for i in range(5):  # the estimate: like do_bench's, flush and all
        prepare()
        fn(i % n_inputs)
        call += 1
    e1.record()
    torch.cuda.synchronize(device)
    n_warm, target = call_counts(e0.elapsed_time(e1) / 5, warmup, trials)
    t_warm = time.perf_counter()
    for i in range(n_warm):
        prepare()
        fn(i % n_inputs)
        call += 1
    gate = (HostAhead(device, (time.perf_counter() - t_warm) * 1000.0 / max(1, n_warm), e0.elapsed_time(e1) / 5)
            if host_ahead else None)
    warmup_calls, call = call, 0
    gaps = []
    for _ in range(10):  # calibration: an empty region
        torch.cuda.synchronize(device)
        g1, g2 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        g1.record()
        torch.cuda.synchronize(device)
        g2.record()
        torch.cuda.synchronize(device)
        gaps.append(g1.elapsed_time(g2))
    n_b2b = target + rng.randrange(0, max(1, target // 5) + 1)
    n_idle = max(10, trials // 4) + rng.randrange(0, 4)
    order = [True] * n_idle + [False] * n_b2b
    rng.shuffle(order)
    b2b, idle = [], []

    for is_idle, n in chunks(order):
        if is_idle:
            prepare()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            done = torch.cuda.Event(enable_timing=True)
            torch.cuda.synchronize(device)
            start.record()
            fn(call % n_inputs)
            end.record()
            torch.cuda.synchronize(device)
            done.record()
            idle.append((start, end, done))
            call += 1
            if gate is not None:
                gate.idle_start()
            continue
        held = gate.hold(n) if gate is not None else None
        run = []
        for _ in range(n):
            prepare()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn(call % n_inputs)
            end.record()
            run.append((start, end))
            call += 1
        ahead = gate.release(held, n) if gate is not None else True
        b2b += [(s, e, ahead) for s, e in run]
    torch.cuda.synchronize(device)
    kept = [(s, e) for s, e, ahead in b2b if ahead]
    if len(kept) * 2 < len(b2b):
        kept = [(s, e) for s, e, _ in b2b]
    out = {"b2b": [s.elapsed_time(e) for s, e in kept], "stream": [s.elapsed_time(e) for s, e, _ in idle],
           "device": [s.elapsed_time(d) for s, _, d in idle], "sync_gap_ms": statistics.median(gaps),
           "calls": call, "warmup_calls": warmup_calls,
           "flush_bytes": L2_FLUSH_BYTES if l2_flush else 0}
    if gate is not None:
        out["gate"] = {**gate.report(), "b2b_kept": len(kept), "b2b_all": len(b2b)}
    return out


def gate_held(ms: dict) -> bool:
    """Whether a `time_calls` pass timed the device, not the host: True without a gate (nothing to hold),
    else when gating never stopped and at least half the back-to-back calls came from chunks that held
    (below that the pass falls back to every call, host-bound ones included)."""
    gate = ms.get("gate")
    if not isinstance(gate, dict):
        return True
    return not gate.get("off") and 2 * int(gate.get("b2b_kept") or 0) >= int(gate.get("b2b_all") or 0)


SIDE_STREAM_MIN_GAP_MS = 0.01
# Part of the reference-time cache key: a new protocol, new times. "reference-first": references timed before
# the candidate process has code, so times cached by earlier versions (timed beside a live candidate) are not reused.
TIMING_PROTOCOL = "b2b-median+idle-check+candidate-profiled+gpu-exclusive+reference-first+warmup-25ms-rep-100ms/7"


def runtime_of(ms: dict) -> tuple[float, dict, bool]:
    """(runtime in ms, its stats, work escaped the current stream) from `time_calls` output.

    The runtime is the back-to-back median (do_bench's number). When the idle-start pass shows device work
    outliving the stream's end event (median device time - sync gap over the median stream time by more
    than SIDE_STREAM_MIN_GAP_MS and 25%), that work is counted instead: runtime = the idle-start pass's
    device median, which includes it."""
    stream = ms.get("stream") or [0.0]
    gap = float(ms.get("sync_gap_ms") or 0.0)
    device = [max(0.0, d - gap) for d in (ms.get("device") or stream)]
    s_med, d_med = statistics.median(stream), statistics.median(device)
    if d_med - s_med > max(SIDE_STREAM_MIN_GAP_MS, 0.25 * s_med):
        return max(d_med, statistics.median(ms.get("b2b") or [0.0])), summarize(device), True
    b2b = ms.get("b2b") or stream
    return statistics.median(b2b), summarize(b2b), False


def summarize(ms: list[float]) -> dict[str, float]:
    if not ms:
        return {}
    q = statistics.quantiles(ms, n=20) if len(ms) > 1 else [ms[0]] * 19
    return {"median": statistics.median(ms), "mean": statistics.fmean(ms),
            "std": statistics.pstdev(ms) if len(ms) > 1 else 0.0, "min": min(ms), "max": max(ms),
            "p05": q[0], "p95": q[-1], "n": len(ms)}


# Numeric settings both the reference and the candidate run under (torch's defaults). The judge and each
# candidate process pin them at start; a candidate that changes them (a TF32 matmul against an fp32
# reference is a free 3-7x "speedup") is `forbidden`.
NUMERICS = {"matmul_tf32": False, "cudnn_tf32": True, "float32_matmul_precision": "highest",
            "cudnn_benchmark": False, "deterministic": False, "default_dtype": "torch.float32"}


def numerics() -> dict:
    return {"matmul_tf32": torch.backends.cuda.matmul.allow_tf32, "cudnn_tf32": torch.backends.cudnn.allow_tf32,
            "float32_matmul_precision": torch.get_float32_matmul_precision(),
            "cudnn_benchmark": torch.backends.cudnn.benchmark,
            "deterministic": torch.are_deterministic_algorithms_enabled(),
            "default_dtype": str(torch.get_default_dtype())}


def pin_numerics() -> dict:
    torch.backends.cuda.matmul.allow_tf32 = NUMERICS["matmul_tf32"]
    torch.backends.cudnn.allow_tf32 = NUMERICS["cudnn_tf32"]
    torch.set_float32_matmul_precision(NUMERICS["float32_matmul_precision"])
    torch.backends.cudnn.benchmark = NUMERICS["cudnn_benchmark"]
    torch.use_deterministic_algorithms(NUMERICS["deterministic"])
    torch.set_default_dtype(torch.float32)
    return numerics()


@contextlib.contextmanager
def tf32_matmuls():
    """Matmuls and convolutions at TF32 (the precision of Triton's default tl.dot) for the block; the
    pinned numerics are restored after it."""
    try:
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
        torch.set_float32_matmul_precision("high")
        yield
    finally:
        pin_numerics()


def numerics_changed(pinned: dict) -> str:
    now = numerics()
    return ", ".join(f"{k}: {pinned[k]} -> {now[k]}" for k in pinned if now.get(k) != pinned[k])


def profiler_factory() -> Callable[[], Any]:
    """A function that returns a started profiler of device activity (kernels, copies, fills), with the
    profiler class bound now: made before a candidate loads, so a candidate that rebinds
    torch.profiler.profile does not hand the evaluator its own. The runner keeps one running around every
    op of a CUDA candidate, so whether a profiler is on never tells a candidate which calls feed the
    coverage (the profile op), the verdict or the timer."""
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CUDA]

    def start():
        prof = profile(activities=activities)
        prof.start()
        return prof
    return start


def device_rows(prof) -> list[dict]:
    """Device-side activity of a stopped profiler: one row per kernel/memcpy/memset name with summed time.

    Only device events are read (never CPU ops' inclusive device totals), so nothing is counted twice."""
    rows: dict[str, dict] = {}
    for evt in prof.events():
        if evt.device_type == DeviceType.CPU:
            continue
        us = evt.time_range.elapsed_us()
        r = rows.setdefault(evt.name, {"name": evt.name, "ms": 0.0, "calls": 0})
        r["ms"] += us / 1000.0
        r["calls"] += 1
    return sorted(rows.values(), key=lambda r: -r["ms"])


def short_error(exc: BaseException, prefer_file: str | None = None, limit: int = 1500) -> str:
    """The last frames of a traceback, trimmed to what a model can act on: frames in the candidate's file
    first, then the exception line."""
    tb = traceback.extract_tb(exc.__traceback__)
    frames = [f for f in tb if prefer_file and f.filename == prefer_file] or tb[-2:]
    lines = []
    for f in frames[-3:]:
        where = "solution" if prefer_file and f.filename == prefer_file else os.path.basename(f.filename)
        lines.append(f"  {where}, line {f.lineno}, in {f.name}: {(f.line or '').strip()}")
    msg = "".join(traceback.format_exception_only(type(exc), exc)).strip()
    if len(msg) > limit:
        msg = msg[: limit // 2] + " ... " + msg[-limit // 2:]
    text = ("Traceback (most recent call last):\n" + "\n".join(lines) + "\n" if lines else "") + msg
    return text[-limit * 2:]


WARMUP_KERNEL = ("import triton\nimport triton.language as tl\n@triton.jit\n"
                 "def drk_warmup_kernel(x_ptr, n, BLOCK: tl.constexpr):\n"
                 "    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n"
                 "    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 1, mask=offs < n)\n")


def warm_triton(device: str, workdir: str, cache_dir: str | None = None) -> None:
    """Compile and launch one tiny kernel, so Triton's driver utilities and launcher stub are built (into
    `cache_dir` when given) before anything is timed."""
    import triton

    old = os.environ.get("TRITON_CACHE_DIR")
    if cache_dir:
        os.environ["TRITON_CACHE_DIR"] = cache_dir
    try:
        mod = load_module(WARMUP_KERNEL, "drk_warmup", os.path.join(workdir, "drk_warmup.py"))
        x = torch.zeros(1000, device=device)
        mod.drk_warmup_kernel[(triton.cdiv(1000, 256),)](x, 1000, BLOCK=256)
        torch.cuda.synchronize()
        unload_module("drk_warmup")
    finally:
        if cache_dir:
            if old is None:
                os.environ.pop("TRITON_CACHE_DIR", None)
            else:
                os.environ["TRITON_CACHE_DIR"] = old


def versions() -> dict[str, str]:
    out = {"python": sys.version.split()[0], "torch": torch.__version__}
    try:
        import triton

        out["triton"] = triton.__version__
    except ImportError:
        pass
    if torch.cuda.is_available():
        out["cuda"] = str(torch.version.cuda)
        out["gpu"] = torch.cuda.get_device_name()
    return out


def gpu_clocks() -> str:
    """SM clock now / its maximum and the memory clock, as NVML reads them ('' without NVML): part of what a
    reader needs to trust a timing, and never part of a cache key (clocks move)."""
    try:
        import pynvml

        pynvml.nvmlInit()
        h = pynvml.nvmlDeviceGetHandleByIndex(torch.cuda.current_device())
        return (f"sm {pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM)}/"
                f"{pynvml.nvmlDeviceGetMaxClockInfo(h, pynvml.NVML_CLOCK_SM)} MHz, mem "
                f"{pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_MEM)} MHz")
    except Exception:  # no NVML: the record says nothing rather than something wrong
        return ""
