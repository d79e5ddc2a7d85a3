"""Record every Triton kernel launch in the runner process (and optionally skip them).

The hook wraps the class-level `run` of `triton.runtime.jit.JITFunction` (compiled path) and of
`triton.runtime.interpreter.InterpretedFunction` (`TRITON_INTERPRET=1`). Every launch goes through one of
them: `kernel[grid](...)` directly, and `@triton.autotune` / `@triton.heuristics` wrappers, which end in
their inner function's `run`. `@triton.jit` helpers called from inside a kernel are inlined by the
compiler (or called as plain functions by the interpreter), so they are never counted as launches. A
launch counts only when it returns without raising: a kernel that fails and is caught by a torch fallback
does no work.

Launches come from the thread that runs the evaluator's op (the one that made the recorder): a launch from
any other thread is refused and counted (`foreign`). A thread of the candidate's that launches the source's
kernels while the op runs would put their device time into the profiled window without the forward doing
the work (attack q03).

Also here: making `@triton.autotune` usable under the interpreter, which cannot benchmark configs (it
asks for a GPU driver); there the first config that survives pruning is used.
"""
from __future__ import annotations

import _thread
import threading
import time
from collections import Counter
from dataclasses import dataclass, field


@dataclass
class Launch:
    name: str          # the @triton.jit function's __name__ (the profiler's kernel name on GPU)
    seconds: float     # host wall time of the launch call (interpreter: the kernel's whole execution)


@dataclass
class LaunchRecorder:
    launches: list[Launch] = field(default_factory=list)
    skip: bool = False   # when set, launches return without running (the "is Triton doing the work?" probe)
    skipped: int = 0
    stores: list = field(default_factory=list)  # interpreter only: arrays of addresses Triton stored to
    owner: int = field(default_factory=threading.get_ident)  # the only thread whose launches run
    foreign: int = 0     # launches refused because another thread made them (never reset)

    def reset(self) -> None:
        self.launches.clear()
        self.skipped = 0
        self.stores.clear()

    def written_share(self, outputs: list) -> float | None:
        """Interpreter only: the share of the outputs' elements whose last-level memory Triton stored to
        (a kernel that gates or pads a torch computation writes next to none of them)."""
        import numpy as np

        total = sum(o.numel() for o in outputs)
        if not total:
            return None
        addrs = np.unique(np.concatenate(self.stores)) if self.stores else np.empty(0, dtype=np.uint64)
        hit = 0
        for o in outputs:
            if o.numel():
                lo = o.untyped_storage().data_ptr()
                hi = lo + o.untyped_storage().nbytes()
                inside = addrs[(addrs >= lo) & (addrs < hi)]
                hit += min(o.numel(), len(inside))
        return hit / total

    def names(self) -> list[str]:
        return sorted({launch.name for launch in self.launches})

    def counts(self) -> dict[str, int]:
        """Launches per kernel name since the last reset: the judge counts no more of a kernel's executions
        in the profiler's rows than this (a launch that bypassed the hook did no work of the forward's)."""
        return dict(Counter(launch.name for launch in self.launches))

    def seconds(self) -> float:
        return sum(launch.seconds for launch in self.launches)


_installed: dict[str, object] = {}


def _kernel_name(fn_obj) -> str:
    inner = getattr(fn_obj, "fn", None)
    return getattr(inner, "__name__", None) or getattr(fn_obj, "__name__", "triton_kernel")


def _wrap(orig, recorder: LaunchRecorder):
    thread_id = _thread.get_ident  # bound here: candidate code that rebinds threading.get_ident changes nothing

    def run(self, *args, grid=None, warmup=False, **kwargs):
        if warmup:
            return orig(self, *args, grid=grid, warmup=warmup, **kwargs)
        if thread_id() != recorder.owner:
            recorder.foreign += 1
            raise RuntimeError("a Triton kernel was launched from a thread other than the one the evaluator "
                               "called the forward on: launch every kernel from the forward itself")
        if recorder.skip:
            recorder.skipped += 1
            return None
        t0 = time.perf_counter()
        out = orig(self, *args, grid=grid, warmup=warmup, **kwargs)
        recorder.launches.append(Launch(_kernel_name(self), time.perf_counter() - t0))
        return out

    run.__drk_hook__ = True  # type: ignore[attr-defined]
    return run


def _first_config_run(self, *args, **kwargs):
    """Autotuner.run for the interpreter: no benchmarking, the first config left after pruning."""
    self.nargs = dict(zip(self.arg_names, args))
    configs = self.prune_configs(kwargs) if len(self.configs) > 1 else self.configs
    config = configs[0]
    self.best_config = config
    if config.pre_hook is not None:
        config.pre_hook({**self.nargs, **kwargs, **config.all_kwargs()})
    try:
        return self.fn.run(*args, **kwargs, **config.all_kwargs())
    finally:
        self.nargs = None


def _fix_interpreter_index() -> None:
    """Triton 3.6's interpreter turns a runtime loop bound into an int with `int(ndarray of shape (1,))`,
    which NumPy >= 2.4 rejects ("only 0-dimensional arrays can be converted to Python scalars"), so any
    kernel with `for k in range(0, K, BLOCK)` fails on CPU (triton-lang/triton#9171). Convert through
    `.item()` instead."""
    from triton.runtime import interpreter

    orig = interpreter._patch_lang_tensor
    if getattr(orig, "__drk_fixed__", False):
        return

    def _index(self):
        data = self.handle.data
        return int(data.item() if getattr(data, "size", 0) == 1 else data)

    def patched(tensor, scope):
        orig(tensor, scope)
        scope.set_attr(tensor, "__index__", _index)

    patched.__drk_fixed__ = True  # type: ignore[attr-defined]
    interpreter._patch_lang_tensor = patched


def _record_stores(recorder: LaunchRecorder) -> None:
    """Interpreter: note every address a kernel stores to (masked stores and atomics)."""
    from triton.runtime.interpreter import InterpreterBuilder

    store, rmw = InterpreterBuilder.create_masked_store, InterpreterBuilder.create_atomic_rmw

    def masked_store(self, ptrs, value, mask, *a):
        recorder.stores.append(ptrs.data[mask.data].ravel())
        return store(self, ptrs, value, mask, *a)

    def atomic_rmw(self, op, ptr, val, mask, *a):
        recorder.stores.append(ptr.data[mask.data].ravel())
        return rmw(self, op, ptr, val, mask, *a)

    InterpreterBuilder.create_masked_store = masked_store
    InterpreterBuilder.create_atomic_rmw = atomic_rmw


def compile_outside_hold(recorder: LaunchRecorder, event) -> None:
    """Wrap Triton's `compile` (what a JIT function calls on a cache miss, the compile alone: the binary is
    loaded and launched after it returns) so that a compile on the op's thread is bracketed by
    `event("gpu_leave")` and `event("gpu_enter")`: the judge lets the GPU's shared hold go meanwhile
    (`drk.gym.judge.evaluation.Judge._gpu_event`). Compiles on other threads (Triton's async mode) keep the
    hold. Nothing the verdict rests on depends on this wrapper: candidate code that removes it only keeps the
    GPU held through its compiles."""
    import triton.compiler as compiler

    orig = compiler.compile

    def compile(*args, **kwargs):
        if threading.get_ident() != recorder.owner:
            return orig(*args, **kwargs)
        event("gpu_leave")
        try:
            return orig(*args, **kwargs)
        finally:
            event("gpu_enter")

    compile.__wrapped__ = orig
    compiler.compile = compile


def install(recorder: LaunchRecorder, interpret: bool) -> dict[str, object]:
    """Patch Triton's launch path once per process; returns {qualified name: hooked object} so the
    integrity check can verify later that nobody replaced the hooks."""
    from triton.runtime.jit import JITFunction

    JITFunction.run = _wrap(JITFunction.run, recorder)
    _installed["triton.runtime.jit.JITFunction.run"] = JITFunction.run
    from triton.runtime.interpreter import InterpretedFunction

    InterpretedFunction.run = _wrap(InterpretedFunction.run, recorder)
    _installed["triton.runtime.interpreter.InterpretedFunction.run"] = InterpretedFunction.run
    if interpret:
        _record_stores(recorder)
        from triton.runtime.autotuner import Autotuner

        Autotuner.run = _first_config_run
        _installed["triton.runtime.autotuner.Autotuner.run"] = Autotuner.run
        _fix_interpreter_index()
    return dict(_installed)
