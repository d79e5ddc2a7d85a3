"""drk.gym — KernelGym: the one sandboxed evaluator every stage uses.

    from drk.gym import EvalRequest, EvalOptions, LocalPool
    with LocalPool(device="cpu", workers=2) as pool:
        results = pool.evaluate_batch([EvalRequest(task, source)])

One interface for every backend (`drk.gym.types.Gym`: `submit`, `evaluate(request) -> EvalResult`,
`evaluate_batch(requests)`, `close`; `drk.gym.transport.backends.make_gym` builds one), one result type
(`drk.gym.types.EvalResult`) whose `verdict` is the outcome taxonomy and whose `flags` are named findings.

Layout: the packages are the trust boundary. `drk.gym.sandbox` is what runs next to candidate code
(inside the OS sandbox); `drk.gym.judge` is the trusted process that never runs it and decides every
verdict; `drk.gym.transport` carries requests and results (local pool, HTTP service, Ray, cache);
`drk.gym.common` is code both sides use in their own processes (framing, tensors, harness, comparison).
`drk.gym.types` and `drk.gym.reward` are what the stages import.

Threat model. Candidate code is written by a policy searching for any way to score without doing the
work, and it has the whole Python language inside its own process. So no fact the reward depends on rests
on the integrity of that process:

- Isolation is the operating system's (`drk.gym.sandbox.isolation`, `drk.gym.sandbox.zygote`): each
  candidate runs in a process forked for it alone from a fork server that never ran candidate code, inside bubblewrap
  (no network, a read-only view of only what Python/torch/Triton need, private /tmp), as an unprivileged uid of
  its own, and is killed with everything it started after its one evaluation. Without bubblewrap the
  evaluator refuses to run candidate code unless the user passes the unsafe switch (`LocalPool(
  unsafe_no_sandbox=True)`, CLI `--unsafe-no-sandbox`); results then record `versions.sandbox = none`.
- Evidence comes from outside the candidate's process: the judge (`drk.gym.judge.evaluation`,
  `drk.gym.judge.checks`) builds the reference, makes every input, compares outputs it received as bytes, holds the time
  budget (charging only CPU the candidate got), checks self-reported times against its own clock, and counts
  only kernels the candidate's source declares with `@triton.jit` (parsed by the judge).
- Probes cannot be told apart: correctness trials, the wide-input and offset probes and the Triton-ablation
  probe run at random positions with the task's shapes and fresh inputs; timing interleaves its two passes
  at random.
- What stays inside the candidate's process, and can be forged there, is a hint, never the reward alone:
  launch records, the profiler's kernel times (GPU coverage), the in-process timer (bounded by the judge's
  clock). The audit hook (`drk.gym.sandbox.audit`) and static rules (`drk.gym.judge.static`) are an early,
  cheap layer with clear messages; nothing depends on them.

Not protected: escapes from the kernel or the GPU driver, timing side channels, and a candidate that
forges the in-process profiler or timer by less than the judge's clock can see (see docs/hack-defences.md).
"""
from drk.gym.transport.pool import LocalPool, detect_device
from drk.gym.types import EvalOptions, EvalRequest, EvalResult, Gym

__all__ = ["EvalOptions", "EvalRequest", "EvalResult", "Gym", "LocalPool", "detect_device", "evaluate", "gpu_work_hold"]


def evaluate(request: EvalRequest, pool: LocalPool | None = None) -> EvalResult:
    """Evaluate one request (on `pool`, or on a temporary local pool with one worker)."""
    if pool is not None:
        return pool.evaluate(request)
    with LocalPool(device=request.options.device, workers=1) as p:
        return p.evaluate(request)


def gpu_work_hold(device: str):
    """For a process that runs its own work on a GPU where evaluators measure (a policy generating while its
    kernels are judged): a factory of context managers to run that work in. Each holds the GPU's evaluator
    lock shared (`drk.gym.judge.devicelock`), so a measurement waits for the work in flight and the work
    waits for the measurement, as the evaluators' own work does. Holds nothing on CPU or with
    DRK_GPU_LOCK=off."""
    from drk.gym.judge import devicelock

    return devicelock.for_device(device).shared
