"""Tamper detection in the runner: capture what the harness relies on before candidate code is imported,
verify it is unchanged after every step that ran candidate code.

Covered: the identity of torch / time / Triton functions and classes the timing, comparison and recording
use (`torch.cuda.Event`, `synchronize`, `perf_counter`, tensor copy/clone/to, the launch hooks, ...), the
module objects in `sys.modules` for torch, triton, time and drk, and global torch state a candidate could
use to intercept the harness (torch function / dispatch modes, grad mode, deterministic flags).

Not covered: patches in C memory (ctypes is blocked statically and at run time), or state the candidate
restores before the check runs. The outputs themselves are compared in the judge, a process that never
runs candidate code, so tampering can only target timing and recording; this check makes that visible
as verdict `forbidden`.
"""
from __future__ import annotations

import sys
from typing import Any

WATCHED = [
    "torch.allclose", "torch.equal", "torch.isclose", "torch.testing.assert_close", "torch.empty", "torch.empty_like",
    "torch.zeros", "torch.rand", "torch.randn", "torch.manual_seed", "torch.no_grad", "torch.enable_grad",
    "torch.is_grad_enabled", "torch.set_grad_enabled",
    "torch.Tensor.copy_", "torch.Tensor.clone", "torch.Tensor.detach", "torch.Tensor.contiguous", "torch.Tensor.to",
    "torch.Tensor.cpu", "torch.Tensor.numpy", "torch.Tensor.view", "torch.Tensor.fill_", "torch.Tensor.zero_",
    "torch.Tensor.__eq__", "torch.Tensor.data_ptr", "torch.Tensor.numel", "torch.Tensor.element_size",
    "torch.nn.Module.__call__", "torch.nn.Module._call_impl", "torch.nn.Module.train", "torch.nn.Module.eval",
    "torch.cuda.Event", "torch.cuda.Event.record", "torch.cuda.Event.elapsed_time", "torch.cuda.Event.synchronize",
    "torch.cuda.synchronize", "torch.cuda.current_stream", "torch.cuda.Stream", "torch.cuda.max_memory_allocated",
    "torch.cuda.reset_peak_memory_stats", "torch.cuda.empty_cache", "torch._C._cuda_synchronize",
    "torch.profiler.profile", "torch.autograd.profiler.profile",
    "time.perf_counter", "time.perf_counter_ns", "time.time", "time.monotonic", "time.monotonic_ns", "time.sleep",
    "json.dumps", "json.loads",
    "triton.testing.do_bench", "triton.runtime.jit.JITFunction.run",
    "triton.runtime.interpreter.InterpretedFunction.run", "triton.runtime.autotuner.Autotuner.run",
    "multiprocessing.connection.Connection.send_bytes", "multiprocessing.connection.Connection.recv_bytes",
    "multiprocessing.connection.Connection.poll",
]
WATCHED_MODULES = ["torch", "torch.cuda", "torch.nn", "triton", "triton.language", "time", "json", "drk", "drk.gym",
                   "drk.gym.sandbox.runner", "drk.gym.common.harness", "drk.gym.common.tensors",
                   "drk.gym.sandbox.integrity", "drk.gym.common.wire", "drk.gym.sandbox.triton_hooks",
                   "drk.gym.sandbox.audit", "multiprocessing.connection", "builtins"]


def _resolve(dotted: str) -> Any:
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        mod = sys.modules.get(".".join(parts[:i]))
        if mod is not None:
            obj = mod
            for p in parts[i:]:
                obj = obj.__dict__[p] if isinstance(obj, type) and p in obj.__dict__ else getattr(obj, p)
            return obj
    raise LookupError(dotted)


def _global_state() -> dict[str, Any]:
    import torch

    state: dict[str, Any] = {"grad_enabled": torch.is_grad_enabled(),
                             "deterministic": torch.are_deterministic_algorithms_enabled()}
    try:
        state["torch_function_modes"] = torch._C._len_torch_function_stack()
    except AttributeError:
        pass
    try:
        from torch.utils._python_dispatch import _len_torch_dispatch_stack
        state["dispatch_modes"] = _len_torch_dispatch_stack()
    except ImportError:
        pass
    return state


class Snapshot:
    """Identities captured at one moment; `changes()` lists what differs now."""

    def __init__(self, extra: dict[str, Any] | None = None) -> None:
        self.ids: dict[str, int] = {}
        self.keep: list[Any] = []  # hold references so ids cannot be recycled
        for name in WATCHED:
            try:
                obj = _resolve(name)
            except (LookupError, AttributeError, KeyError):
                continue
            self.ids[name] = id(obj)
            self.keep.append(obj)
        for name in WATCHED_MODULES:
            mod = sys.modules.get(name)
            if mod is not None:
                self.ids[f"sys.modules[{name}]"] = id(mod)
                self.keep.append(mod)
        for name, obj in (extra or {}).items():
            self.ids[name] = id(obj)
            self.keep.append(obj)
        self.state = _global_state()

    def changes(self) -> list[str]:
        changed = []
        for name, ident in self.ids.items():
            if name.startswith("sys.modules["):
                cur = sys.modules.get(name[len("sys.modules["):-1])
            else:
                try:
                    cur = _resolve(name)
                except (LookupError, AttributeError, KeyError):
                    changed.append(f"{name} (removed)")
                    continue
            if id(cur) != ident:
                changed.append(name)
        now = _global_state()
        for k, v in self.state.items():
            if now.get(k) != v:
                changed.append(f"torch state {k}: {v} -> {now.get(k)}")
        return changed
