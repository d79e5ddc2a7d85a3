"""What a remote client of `drk gym serve` may ask of the evaluator, and how much.

It is: the server's maxima (`Limits`) and the allow-list of `EvalOptions` fields a request may set, each
numeric one clamped to those maxima, with a record of what was clamped or ignored so that the answer can
say which values were used.
It isn't: access control (`drk.gym.transport.access`) or back-pressure (`drk.gym.transport.server` counts jobs in
flight).

The rule: a request may tune the measurement protocol of its own evaluation (trials, tolerance, timing),
never how or where the evaluator runs. Anything not on the allow-list (the device, and any future switch of
the sandbox or the pool) is ignored and named in the answer; the sandbox is set up by the pool the server
was started with, and no request option reaches it.
"""
from __future__ import annotations

from dataclasses import dataclass

from drk.gym import types as T


@dataclass
class Limits:
    """Server-side maxima (each a `drk gym serve` option). Defaults follow KernelGYM's own request bounds
    (trials <= 20, timing trials <= 1000, sources <= 100 KB) with room for drk's longer default timeout."""

    max_timeout_s: float = 900.0          # most seconds a request may ask for
    max_trials: int = 20                  # most correctness trials a request may ask for
    max_timing_trials: int = 1000         # most timed calls a request may ask for
    max_warmup: int = 100                 # most warm-up calls a request may ask for
    max_input_mb: float | None = None     # cap on a request's input budget; None: the evaluator's own default
    max_source_kb: int = 200              # largest reference or candidate source, in KiB (413 above)
    max_body_mb: float = 4.0              # largest request body, in MiB (413 before it is read whole)
    max_inflight_per_client: int = 256    # unfinished jobs of one client address (429 above)
    max_queue: int = 4096                 # unfinished jobs in all (503 above)
    max_batch: int = 100                  # requests in one batch call (KernelGYM's bound)

    @property
    def max_source_chars(self) -> int:
        return self.max_source_kb * 1024

    @property
    def max_body_bytes(self) -> int:
        return int(self.max_body_mb * 2**20)

    def to_dict(self) -> dict:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


# option -> (type, lower bound, name of the Limits field that bounds it above, or a constant)
INTS = {"trials": (1, "max_trials"), "timing_trials": (1, "max_timing_trials"), "warmup": (0, "max_warmup"),
        "seed": (0, 2**31 - 1)}
FLOATS = {"timeout_s": (1.0, "max_timeout_s"), "tolerance": (0.0, 1.0), "scale": (1e-6, 1.0),
          "input_budget_mb": (1e-3, "max_input_mb"), "max_plausible_speedup": (1.0, 1e6),
          "low_coverage": (0.0, 1.0)}
BOOLS = ("timing", "l2_flush", "compile_baseline", "profile", "fp64_check")
CLIENT_OPTIONS = frozenset(INTS) | frozenset(FLOATS) | frozenset(BOOLS)


@dataclass
class Applied:
    """The options an evaluation runs with, and how they came from the request."""

    options: T.EvalOptions
    clamped: dict          # option -> the value asked for, where the server used less
    ignored: list          # options the request named that clients may not set

    def report(self) -> dict:
        used = {k: getattr(self.options, k) for k in ("trials", "timing_trials", "timeout_s", "input_budget_mb")}
        return {"used": used, "clamped": self.clamped, "ignored": self.ignored}


def _upper(limits: Limits, bound):
    return getattr(limits, bound) if isinstance(bound, str) else bound


def _coerce(name: str, value):
    """The value as the option's type; ValueError (a 422) for a wrong type, never a silent default."""
    if name in BOOLS:
        if not isinstance(value, bool):
            raise ValueError(f"option {name} must be true or false")
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"option {name} must be a number")
    if value != value or value in (float("inf"), float("-inf")):
        raise ValueError(f"option {name} must be finite")
    return int(value) if name in INTS else float(value)


def _clamp(name: str, value, limits: Limits):
    lo, hi_name = INTS.get(name) or FLOATS.get(name) or (None, None)
    if lo is None:
        return value
    hi = _upper(limits, hi_name)
    value = max(lo, value)
    return value if hi is None else min(hi, value)


def apply(defaults: T.EvalOptions, requested: dict | None, limits: Limits) -> Applied:
    """The server's defaults overlaid with the allow-listed, clamped part of `requested` (None values mean
    "the default"). The defaults themselves are clamped too: `--timeout` above `--max-timeout` is capped."""
    opts = T.EvalOptions.from_dict(defaults.to_dict())
    opts.timeout_s = min(opts.timeout_s, limits.max_timeout_s)
    clamped, ignored = {}, []
    for name, value in (requested or {}).items():
        if value is None:
            continue
        if name not in CLIENT_OPTIONS:
            ignored.append(name)
            continue
        value = _coerce(name, value)
        used = _clamp(name, value, limits)
        if used != value:
            clamped[name] = value
        setattr(opts, name, used)
    if limits.max_input_mb is not None and opts.input_budget_mb is None:
        opts.input_budget_mb = limits.max_input_mb  # no budget on GPU means the full task: cap it
    return Applied(opts, clamped, sorted(ignored))
