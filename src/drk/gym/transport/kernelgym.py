"""KernelGYM's HTTP protocol over drk's evaluator: its request translated into an `EvalRequest`, and an
`EvalResult` translated into its result fields, so that KernelGYM's released reward client and trainer
work against `drk gym serve` unchanged.

It is: pure translation (no HTTP, no state). It isn't: the routes and the job store (`drk.gym.transport.server`),
or the reward (KernelGYM's trainer computes it from these fields). `docs/kernelgym-compat.md` lists what
is supported and what differs.

Mapping rules, and why:
- `status` is `completed` when the candidate ran (correct or not, decoy or not), `failed` when it did not
  build or its process died, `timeout` when it ran out of time: KernelGYM's client gives anything but
  `completed` the failure reward, as KernelGYM's own server does for kernels that do not compile.
- `speedup` is positive only for a correct, non-decoy kernel; 0.0 otherwise, so no failure can earn the
  speedup term.
- `decoy_kernel` is drk's `no_triton` and `hacked` verdicts (Triton did not do the work, or a hack
  defence caught it); the client turns it into the failure reward.
- `infra_error` (the evaluator's machinery failed, not the candidate) is `failed` with SYSTEM_ERROR: the
  protocol cannot say "not the model's fault" otherwise; drk's own clients see the verdict itself.
- On CPU there are no CUDA events or profiler: times are CPU wall times of the forward and say so
  (`metadata.timing`), coverage is the Triton launches' share of the forward's wall time.
"""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass

from drk.gym import types as T
from drk.gym.transport import limits as L
from drk.tasks import Task

# KernelGYM request field -> EvalOptions field
OPTION_FIELDS = {"num_correct_trials": "trials", "num_perf_trials": "timing_trials", "timeout": "timeout_s",
                 "enable_profiling": "profile"}
# fields of KernelGYM's request that drk accepts and does not need (see docs/kernelgym-compat.md)
ACCEPTED_FIELDS = {"task_id", "reference_code", "kernel_code", "entry_point", "backend", "priority", "is_valid",
                   "verbose_errors", "detect_decoy_kernel", "reference_backend", "uuid", "use_reference_cache",
                   "toolkit", "backend_adapter", "workflow", "num_warmup", "force_refresh", "device_preference",
                   "enable_triton_detection", "run_correctness", "run_triton_detection", "measure_performance",
                   "run_performance", "resources", *OPTION_FIELDS}
COMPILE_REFERENCES = ("torch_compile", "compile", "inductor")
TASK_ID = re.compile(r"^[A-Za-z0-9_.:@+=-]{1,200}$")
ERROR_CHARS = 2000  # the result is fed back to the model as next-turn feedback: keep it short


class SourceTooLarge(ValueError):
    """A source over the server's limit (answered with 413)."""


@dataclass
class Submission:
    task_id: str
    request: T.EvalRequest
    applied: L.Applied
    compile_ref: bool
    fingerprint: str   # what makes two submissions "the same request" for a repeated task_id


def _sources(body: dict, limits: L.Limits) -> tuple[str, str, str]:
    ref, ker = body.get("reference_code"), body.get("kernel_code")
    if not isinstance(ref, str) or not isinstance(ker, str) or not ref.strip() or not ker.strip():
        raise ValueError("reference_code and kernel_code (non-empty strings) are required")
    if max(len(ref), len(ker)) > limits.max_source_chars:
        raise SourceTooLarge(f"a source is over the server's limit of {limits.max_source_chars} characters")
    entry = body.get("entry_point") or "Model"
    if not isinstance(entry, str) or not entry.isidentifier():
        raise ValueError("entry_point must be a Python class name")
    if entry != "Model":  # KernelGYM names the candidate `<entry_point>New`; drk's harness expects ModelNew
        ref = ref.replace(f"class {entry}(", "class Model(")
        ker = ker.replace(f"class {entry}New(", "class ModelNew(")
    return ref, ker, entry


def _task_id(body: dict) -> str:
    tid = body.get("task_id")
    if tid is None:
        raise ValueError("task_id is required")
    tid = str(tid)
    if not TASK_ID.match(tid):
        raise ValueError("task_id must be 1-200 characters of letters, digits and _ . : @ + = -")
    return tid


def parse(body: dict, defaults: T.EvalOptions, limits: L.Limits) -> Submission:
    """KernelGYM's /evaluate body -> Submission. ValueError (422) or SourceTooLarge (413) when unusable.
    Unknown fields are accepted and named in `applied.ignored`; nulls mean the server's defaults."""
    tid = _task_id(body)
    ref, ker, entry = _sources(body, limits)
    compile_ref = str(body.get("reference_backend") or "").lower() in COMPILE_REFERENCES
    asked = {opt: body.get(field) for field, opt in OPTION_FIELDS.items()}
    if compile_ref:
        asked["compile_baseline"] = True
    applied = L.apply(defaults, asked, limits)
    applied.ignored = sorted(k for k in body if k not in ACCEPTED_FIELDS)
    ref_hash = hashlib.sha256(ref.encode()).hexdigest()[:12]
    name = str(body.get("uuid") or ref_hash)[:100]
    task = Task(id=f"kernelgym/{name}", name=name, source=ref, origin="kernelgym-api")
    req = T.EvalRequest(task=task, source=ker, options=applied.options, solution=tid, request_id=tid)
    key = json.dumps([ref, ker, entry, compile_ref, applied.options.to_dict()], sort_keys=True)
    return Submission(tid, req, applied, compile_ref, hashlib.sha256(key.encode()).hexdigest())


# ---- results ---------------------------------------------------------------------------------------
DECOYS = (T.NO_TRITON, T.HACKED)
OUTCOMES = {  # verdict -> (status, error_code)
    T.OK: ("completed", None), T.NO_TRITON: ("completed", None), T.HACKED: ("completed", None),
    T.INCORRECT: ("completed", "CORRECTNESS_ERROR"), T.RUNTIME_ERROR: ("completed", "RUNTIME_ERROR"),
    T.COMPILE_ERROR: ("failed", "COMPILATION_ERROR"), T.CRASHED: ("failed", "RUNTIME_ERROR"),
    T.FORBIDDEN: ("failed", "VALIDATION_ERROR"), T.TIMEOUT: ("timeout", "TIMEOUT_ERROR"),
    T.INFRA_ERROR: ("failed", "SYSTEM_ERROR"),
}


def outcome(res: T.EvalResult) -> tuple[str, str | None]:
    """(status, error_code) in KernelGYM's vocabulary, refined from the error text where it says more."""
    status, code = OUTCOMES.get(res.verdict, ("failed", "UNKNOWN_ERROR"))
    err = res.error or ""
    if res.verdict == T.COMPILE_ERROR:
        if err.startswith("SyntaxError") or "IndentationError" in err:
            code = "SYNTAX_ERROR"
        elif "ImportError" in err or "ModuleNotFoundError" in err:
            code = "IMPORT_ERROR"
        elif "does not define" in err:
            code = "VALIDATION_ERROR"
    elif res.verdict == T.RUNTIME_ERROR and not res.compiled:
        status, code = "failed", "INSTANTIATION_ERROR"  # ModelNew(...) itself raised
    elif res.verdict == T.CRASHED and "memory" in err.lower():
        code = "RESOURCE_ERROR"
    return status, code


def _forward_ms(res: T.EvalResult) -> float | None:
    """The forward's time per call from the profile rows (each row: its ms per forward and its share of
    the forward), i.e. ms / share; None without rows."""
    for row in res.kernels:
        if row.get("share") and row.get("ms") is not None:
            return float(row["ms"]) / float(row["share"])
    return None


def _cpu_reference_ms(res: T.EvalResult, candidate_ms: float) -> tuple[float | None, str]:
    """The reference forward's CPU wall time, and where it came from.

    The judge measures it (`EvalResult.cpu_times["reference_ms"]`); results from an evaluator that did not
    are estimated from the correctness phase: each trial after the first runs one reference forward and
    one candidate forward, so per-trial wall time minus the candidate's forward bounds the reference's from
    above (the bound also holds input generation, transfer and comparison)."""
    measured = (getattr(res, "cpu_times", None) or {}).get("reference_ms")
    if measured:
        return float(measured), "measured"
    trials, spent = res.trials_passed, res.phase_seconds.get("correctness")
    if trials < 2 or not spent:
        return None, "unavailable"
    est = spent * 1000.0 / (trials - 1) - candidate_ms
    return (est, "upper-bound estimate from the correctness phase") if est > 0 else (None, "unavailable")


def timings(res: T.EvalResult, compile_ref: bool) -> dict:
    """reference_ms, kernel_ms, speedup (None where not measured) and how they were measured."""
    if res.runtime_ms is not None:  # GPU: CUDA-event medians
        ref = res.ref_compile_ms if compile_ref else res.ref_eager_ms
        speedup = res.speedup_compile if compile_ref else res.speedup
        return {"reference_ms": ref, "kernel_ms": res.runtime_ms, "speedup": speedup, "clock": "cuda_events",
                "reference": "torch_compile" if compile_ref else "eager"}
    # the judge's clock when it measured one (the candidate's own report can be forged)
    kernel = (res.cpu_times or {}).get("candidate_ms") or _forward_ms(res)
    if kernel is None:
        return {"reference_ms": None, "kernel_ms": None, "speedup": None, "clock": "none"}
    ref, source = _cpu_reference_ms(res, kernel)
    return {"reference_ms": ref, "kernel_ms": kernel, "speedup": ref / kernel if ref else None,
            "clock": "cpu_wall", "reference": "eager", "reference_source": source,
            "note": "CPU figures (Triton interpreter, scaled shapes): not GPU performance"}


def coverage_fields(res: T.EvalResult, t: dict) -> dict:
    """KernelGYM's four profiling fields. Totals are per forward: the forward's device time on GPU, its
    wall time on CPU; the custom part is drk's Triton coverage of it. CPU sees only Triton launches, so
    there every counted kernel is a Triton kernel."""
    total_ms = _forward_ms(res) or t.get("kernel_ms") or 0.0
    cov = res.coverage or 0.0
    return {"num_custom_kernels": sum(1 for k in res.kernels if k.get("triton")),
            "num_total_kernels": len(res.kernels),
            "custom_kernel_cuda_time_in_profiling_us": round(total_ms * 1000.0 * cov, 3),
            "total_kernel_run_time_in_profiling_us": round(total_ms * 1000.0, 3) if cov else 0.0}


NO_COVERAGE = {"num_custom_kernels": 0, "num_total_kernels": 0, "custom_kernel_cuda_time_in_profiling_us": 0.0,
               "total_kernel_run_time_in_profiling_us": 0.0}  # KernelGYM rewards coverage only when correct


def result_of(res: T.EvalResult, sub: Submission) -> dict:
    """The full KernelGYM result for a finished evaluation (compact and JSON-serialisable)."""
    status, code = outcome(res)
    ok = res.verdict == T.OK
    t = timings(res, sub.compile_ref)
    speedup = float(t["speedup"]) if ok and t["speedup"] else 0.0
    error = (res.error or "")[:ERROR_CHARS] or None
    meta = {**(coverage_fields(res, t) if ok else NO_COVERAGE),
            "error_message": error, "error_code": code, "device": res.device, "timing": t,
            "drk_verdict": res.verdict, "drk_flags": res.flags, "coverage": res.coverage,
            "limits": sub.applied.report()}
    return {"task_id": sub.task_id, "status": status, "compiled": bool(res.compiled), "correctness": ok,
            "decoy_kernel": res.verdict in DECOYS, "speedup": speedup,
            "reference_runtime": t["reference_ms"] if t["reference_ms"] is not None else -1.0,
            "kernel_runtime": t["kernel_ms"] if t["kernel_ms"] is not None else -1.0,
            "metadata": meta, "error_message": error, "error_code": code}


def unfinished(task_id: str, status: str) -> dict:
    """The answer for a task still queued or running."""
    return {"task_id": task_id, "status": status, "compiled": None, "correctness": None, "decoy_kernel": None,
            "speedup": None, "reference_runtime": None, "kernel_runtime": None, "metadata": None,
            "error_message": None, "error_code": None}
