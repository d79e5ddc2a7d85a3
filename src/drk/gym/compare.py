"""Output comparison, run only in the judge (a process that never executes candidate code).

The protocol: same number of outputs, same shapes and dtypes, then `torch.allclose(out, ref, atol, rtol,
equal_nan=True)` per output with the request's tolerance for float32/float64 (default 1e-2 = the Dr.
Kernel protocol), at least 1e-2 for float16/bfloat16, exact equality for integer and boolean outputs.
A NaN where the reference has a number fails (the runner poisons fresh allocations with NaN, so an output
element the candidate never wrote shows up here).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch

HALF_TOLERANCE = 1e-2


@dataclass
class Comparison:
    ok: bool
    message: str = ""
    max_abs_diff: float | None = None
    mean_abs_diff: float | None = None


def tolerance_for(dtype: torch.dtype, tol: float) -> float:
    if dtype in (torch.float16, torch.bfloat16):
        return max(tol, HALF_TOLERANCE)
    return tol


def _diffs(out: torch.Tensor, ref: torch.Tensor) -> tuple[float, float, int]:
    """(max abs diff over positions where both are finite, mean of it, count of NaN/inf mismatches)."""
    if out.is_complex():
        out, ref = torch.view_as_real(out), torch.view_as_real(ref)
    o, r = out.double(), ref.double()
    both = torch.isfinite(o) & torch.isfinite(r)
    same_nonfinite = (torch.isnan(o) & torch.isnan(r)) | ((o == r) & ~torch.isfinite(r))
    bad_nonfinite = int((~both & ~same_nonfinite).sum())
    if both.any():
        d = (o - r).abs()[both]
        return float(d.max()), float(d.mean()), bad_nonfinite
    return 0.0, 0.0, bad_nonfinite


def compare_outputs(outs: list[torch.Tensor], refs: list[torch.Tensor], tol: float) -> Comparison:
    if len(outs) != len(refs):
        return Comparison(False, f"returned {len(outs)} output tensor(s), expected {len(refs)}")
    max_d, mean_ds = 0.0, []
    for i, (o, r) in enumerate(zip(outs, refs)):
        name = f"output {i}" if len(refs) > 1 else "output"
        if tuple(o.shape) != tuple(r.shape):
            return Comparison(False, f"{name} shape mismatch: expected {list(r.shape)}, got {list(o.shape)}")
        if o.dtype != r.dtype:
            return Comparison(False, f"{name} dtype mismatch: expected {r.dtype}, got {o.dtype}".replace("torch.", ""))
        if r.numel() == 0:
            continue
        o = o.to(r.device)
        if not (r.is_floating_point() or r.is_complex()):
            if not torch.equal(o, r):
                n = int((o != r).sum())
                return Comparison(False, f"{name}: {n} of {r.numel()} values differ (exact match required for "
                                         f"{str(r.dtype).removeprefix('torch.')})", None, None)
            mean_ds.append(0.0)
            continue
        t = tolerance_for(r.dtype, tol)
        mx, mean, bad = _diffs(o, r)
        max_d = max(max_d, mx)
        mean_ds.append(mean)
        if bad:
            return Comparison(False, f"{name}: {bad} of {r.numel()} values are NaN/inf where the reference is "
                                     "finite (or differ in NaN/inf position); unwritten output elements show up "
                                     "as NaN", max_d, mean)
        if not torch.allclose(o, r, atol=t, rtol=t, equal_nan=True):
            close = torch.isclose(o, r, atol=t, rtol=t, equal_nan=True)
            n = int((~close).sum())
            return Comparison(False, f"{name}: {n} of {r.numel()} values differ beyond atol=rtol={t:g} "
                                     f"(max abs diff {mx:.4g})", max_d, sum(mean_ds) / len(mean_ds))
    return Comparison(True, "", max_d, sum(mean_ds) / len(mean_ds) if mean_ds else 0.0)


def zeros_pass(refs: list[torch.Tensor], tol: float) -> bool:
    """True when an all-zeros output of the right shapes passes the check against `refs`."""
    floats = [r for r in refs if r.is_floating_point() and r.numel() > 0]
    if not floats or len(floats) != len(refs):
        return False
    return compare_outputs([torch.zeros_like(r) for r in refs], refs, tol).ok


def constant_guess(refs: list[torch.Tensor]) -> list[float] | None:
    """One constant per output (its mean), for `constants_pass` on another trial's expected outputs."""
    if not refs or not all(r.is_floating_point() and r.numel() > 0 for r in refs):
        return None
    out = []
    for r in refs:
        m = float(r.double().mean()) if torch.isfinite(r).all() else 0.0
        out.append(m if math.isfinite(m) else 0.0)
    return out


def constants_pass(consts: list[float], refs: list[torch.Tensor], tol: float) -> bool:
    if len(consts) != len(refs):
        return False
    return compare_outputs([torch.full_like(r, c) for c, r in zip(consts, refs)], refs, tol).ok


def inputs_changed(before: list, after: list) -> bool:
    """True when any input tensor differs bit for bit (NaN in the same place counts as equal)."""
    for b, a in zip(before, after):
        if isinstance(b, torch.Tensor) and isinstance(a, torch.Tensor):
            a = a.to(b.device)
            if b.shape != a.shape:
                return True
            same = (torch.allclose(b, a, rtol=0.0, atol=0.0, equal_nan=True) if b.is_floating_point()
                    else torch.equal(b, a))
            if not same:
                return True
    return False
