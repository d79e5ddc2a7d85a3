"""drk.gym — KernelGym: the one sandboxed evaluator every stage uses.

    from drk.gym import EvalRequest, EvalOptions, LocalPool
    with LocalPool(device="cpu", workers=2) as pool:
        results = pool.evaluate_batch([EvalRequest(task, source)])

One entry point per backend (`evaluate(request) -> EvalResult`, `evaluate_batch(requests)`), one result type
(`drk.gym.types.EvalResult`) whose `verdict` is the outcome taxonomy and whose `flags` are named findings.

Threat model, in short (details in `drk.gym.sandbox`, `drk.gym.judge`, `drk.gym.integrity`): candidate
code is untrusted and may be adversarial. It runs only in a sandboxed runner process; the reference, the
expected outputs and every comparison live in a judge process that never runs candidate code; the
timing path is checked for tampering; Triton must do the work (launch hooks, an ablation probe, profiler
coverage); outputs of timed calls are checked against fresh references after inputs change in place.
Not protected: escapes from Python itself (bugs in torch/Triton/the driver) and timing side channels.
"""
from drk.gym.pool import LocalPool, detect_device
from drk.gym.types import EvalOptions, EvalRequest, EvalResult

__all__ = ["EvalOptions", "EvalRequest", "EvalResult", "LocalPool", "detect_device", "evaluate"]


def evaluate(request: EvalRequest, pool: LocalPool | None = None) -> EvalResult:
    """Evaluate one request (on `pool`, or on a temporary local pool with one worker)."""
    if pool is not None:
        return pool.evaluate(request)
    with LocalPool(device=request.options.device, workers=1) as p:
        return p.evaluate(request)
