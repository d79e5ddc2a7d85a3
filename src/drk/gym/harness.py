"""Mechanics shared by the judge and the runner: loading programs, seeding, inputs, forwards, timing and
profiling. Nothing here decides a verdict; the judge does.

Timing (GPU) is CUDA events around each call, with an L2 flush before every timed call (outside the
timed region), `warmup` untimed calls first, and a device-wide check: after the end event the host
synchronises the whole device and records a third event, so work left running on a side stream shows up
as the gap between "stream" and "device" time (see `drk.gym.judge` for how that gap is used).
"""
from __future__ import annotations

import contextlib
import linecache
import os
import random
import statistics
import sys
import traceback
import types
from typing import Any, Callable

import torch

from drk.gym.tensors import flatten_outputs, tensors_of, to_device

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


@contextlib.contextmanager
def forward_mode(model: torch.nn.Module, train: bool, grad: bool):
    model.train(train)
    with torch.set_grad_enabled(grad):
        yield


def forward(model: torch.nn.Module, inputs: list, *, train: bool = True, grad: bool = True) -> list[torch.Tensor]:
    with forward_mode(model, train, grad):
        out = model(*inputs)
    return [t.detach() for t in flatten_outputs(out)]


def sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize(device)


PERTURB = 1.0 + 2.0 ** -10


def floating_tensors(x: Any) -> list[torch.Tensor]:
    return [t for t in tensors_of(x) if t.is_floating_point()]


def time_calls(fn: Callable[[int], Any], device: str, *, warmup: int, trials: int, l2_flush: bool,
               n_inputs: int = 1, perturb: list[torch.Tensor] = ()) -> dict:
    """Time `fn(k)` (k = index of the input set to use, rotating) on a CUDA device.

    Each timed call starts on an idle device: before it, outside the timed region, every tensor in
    `perturb` (the float inputs) is scaled in place by (1 + 2^-10), alternately up and down (each call
    sees new values at the same addresses, so an output cache keyed on pointers, shapes or sampled
    contents never hits), the L2 is flushed, and the device is synchronised. So the region includes the
    launch overhead, as in KernelBench/KernelGYM's per-trial protocol, and work cannot start early on
    another stream.

    Returns per-call milliseconds: `stream` (events around the call on the current stream) and `device`
    (until the whole device is idle: an event recorded after a device-wide synchronize), plus
    `sync_gap_ms`, what `device` adds for an empty region (host wake-up), measured here. `runtime_of`
    turns these into one number."""
    flush = torch.empty(L2_FLUSH_BYTES // 4, dtype=torch.int32, device=device) if l2_flush else None
    for i in range(warmup):
        fn(i % n_inputs)
    gaps = []
    for _ in range(10):  # calibration: an empty region
        torch.cuda.synchronize(device)
        e1, e2 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e1.record()
        torch.cuda.synchronize(device)
        e2.record()
        torch.cuda.synchronize(device)
        gaps.append(e1.elapsed_time(e2))
    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True),
           torch.cuda.Event(enable_timing=True)) for _ in range(trials)]
    for i, (start, end, idle) in enumerate(ev):
        for t in perturb:
            t.mul_(PERTURB) if i % 2 == 0 else t.div_(PERTURB)
        if flush is not None:
            flush.zero_()
        torch.cuda.synchronize(device)
        start.record()
        fn(i % n_inputs)
        end.record()
        torch.cuda.synchronize(device)
        idle.record()
    torch.cuda.synchronize(device)
    return {"stream": [s.elapsed_time(e) for s, e, _ in ev], "device": [s.elapsed_time(d) for s, _, d in ev],
            "sync_gap_ms": statistics.median(gaps)}


SIDE_STREAM_MIN_GAP_MS = 0.01


def runtime_of(ms: dict) -> tuple[float, dict, bool]:
    """(runtime in ms, its stats, work escaped the current stream) from `time_calls` output.

    runtime = max(median stream time, median device time - sync gap): work left running on a side
    stream is counted, a legit call costs the same either way."""
    stream = ms.get("stream") or [0.0]
    gap = float(ms.get("sync_gap_ms") or 0.0)
    device = [max(0.0, d - gap) for d in (ms.get("device") or stream)]
    s_med, d_med = statistics.median(stream), statistics.median(device)
    if d_med - s_med > max(SIDE_STREAM_MIN_GAP_MS, 0.25 * s_med):
        return d_med, summarize(device), True
    return s_med, summarize(stream), False


def summarize(ms: list[float]) -> dict[str, float]:
    if not ms:
        return {}
    return {"median": statistics.median(ms), "mean": statistics.fmean(ms),
            "std": statistics.pstdev(ms) if len(ms) > 1 else 0.0, "min": min(ms), "max": max(ms), "n": len(ms)}


def profile_forward(fn: Callable[[], Any], device: str) -> list[dict]:
    """Device-side activity of one call: one row per kernel/memcpy/memset name with summed time.

    Only device events are read (never CPU ops' inclusive device totals), so nothing is counted twice."""
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    sync(device)
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        sync(device)
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
