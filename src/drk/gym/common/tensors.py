"""Tensor plumbing shared by the judge and the runner: flattening outputs, by-value frames, poisoning.

By-value frames carry raw bytes plus a JSON description (dtype, shape); decoding never executes anything,
so the judge can accept frames from the untrusted candidate process. Used on the CPU path; on GPUs the
data travels in a sealed memory file instead (`drk.gym.common.shm`).
"""
from __future__ import annotations

from typing import Any

import torch

DTYPES = {str(d).removeprefix("torch."): d for d in (
    torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int8, torch.int16, torch.int32,
    torch.int64, torch.uint8, torch.bool, torch.complex64)}


def dtype_name(dt: torch.dtype) -> str:
    return str(dt).removeprefix("torch.")


def flatten_outputs(out: Any) -> list[torch.Tensor]:
    """A forward's return value as a flat list of tensors (tuples/lists nested; Python numbers become 0-d
    tensors). Raises TypeError for anything else so the caller can report it."""
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, (tuple, list)):
        flat: list[torch.Tensor] = []
        for o in out:
            flat += flatten_outputs(o)
        return flat
    if isinstance(out, (bool, int, float)):
        return [torch.tensor(out)]
    raise TypeError(f"forward returned {type(out).__name__}; expected a tensor or a tuple of tensors")


def describe(t: torch.Tensor) -> dict:
    return {"dtype": dtype_name(t.dtype), "shape": list(t.shape)}


def to_frame(t: torch.Tensor) -> tuple[dict, bytes]:
    """(description, raw bytes) of a tensor, copied to the CPU and made contiguous."""
    c = t.detach().to("cpu").contiguous()
    if c.dtype == torch.complex64:
        c = torch.view_as_real(c)
    raw = c.reshape(-1).view(torch.uint8).numpy().tobytes() if c.numel() else b""
    return describe(t), raw


def from_frame(desc: dict, raw: bytes) -> torch.Tensor:
    """Inverse of `to_frame`; validates the description against the byte count."""
    dt = DTYPES.get(str(desc.get("dtype")))
    shape = desc.get("shape")
    if dt is None or not isinstance(shape, list) or not all(isinstance(s, int) and s >= 0 for s in shape):
        raise ValueError(f"bad tensor description {desc!r}")
    numel = 1
    for s in shape:
        numel *= s
    store = torch.float32 if dt == torch.complex64 else dt
    itemsize = torch.empty((), dtype=store).element_size() * (2 if dt == torch.complex64 else 1)
    if len(raw) != numel * itemsize:
        raise ValueError(f"tensor frame holds {len(raw)} bytes, description needs {numel * itemsize}")
    if numel == 0:
        return torch.empty(shape, dtype=dt)
    t = torch.frombuffer(bytearray(raw), dtype=torch.uint8).view(store)
    if dt == torch.complex64:
        return torch.view_as_complex(t.reshape(*shape, 2))
    return t.reshape(shape)


def nbytes(x: Any) -> int:
    return sum(t.numel() * t.element_size() for t in tensors_of(x))


def tensors_of(x: Any) -> list[torch.Tensor]:
    """Every tensor in `x` (a tensor, or nested lists/tuples), in order."""
    if isinstance(x, torch.Tensor):
        return [x]
    if isinstance(x, (list, tuple)):
        return [t for o in x for t in tensors_of(o)]
    return []


def to_device(x: Any, device: str) -> Any:
    if isinstance(x, torch.Tensor):
        return x.to(device)
    if isinstance(x, list):
        return [to_device(o, device) for o in x]
    if isinstance(x, tuple):
        return tuple(to_device(o, device) for o in x)
    return x


def shapes_of(x: Any) -> list:
    """JSON-friendly shapes of inputs: tensors as [dims...] with dtype, other values as repr."""
    out = []
    for o in (x if isinstance(x, (list, tuple)) else [x]):
        if isinstance(o, torch.Tensor):
            out.append({"shape": list(o.shape), "dtype": dtype_name(o.dtype)})
        else:
            out.append({"value": repr(o)[:80]})
    return out


def fill_poison(t: torch.Tensor) -> torch.Tensor:
    """Fill with a value no correct kernel leaves behind: NaN for floats, the dtype's extreme for ints."""
    if t.is_floating_point() or t.is_complex():
        return t.fill_(float("nan"))
    if t.dtype == torch.bool:
        return t.fill_(True)
    return t.fill_(torch.iinfo(t.dtype).min)
