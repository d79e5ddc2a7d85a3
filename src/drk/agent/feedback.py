"""Feedback text: a compact, deterministic summary of one evaluator result, written for a model to act on.

Verdict first, then what to fix: the useful part of the error, correctness numbers, speed against eager
and torch.compile, the top kernels by device time and the Triton coverage, and a plain explanation when
a hack defence fired. Same result in, same text out; never longer than `max_chars`.
"""
from __future__ import annotations

from drk.gym.types import EvalResult

EXPLAIN = {
    "ok": "Your kernel is correct.",
    "incorrect": "Your kernel ran but its outputs do not match the reference.",
    "compile_error": "Your code failed to load or its Triton kernel failed to compile.",
    "runtime_error": "Your code raised an error while running.",
    "timeout": "Your code did not finish within the time limit.",
    "crashed": "The process running your code crashed.",
    "no_triton": "Your forward does not let Triton kernels do the work.",
    "forbidden": "Your code did something the evaluator does not allow in a kernel file.",
    "hacked": "Your code tried to game the measurement instead of computing the result.",
}
FLAG_TEXT = {
    "low_coverage": "Triton kernels are only a small share of the forward's GPU time; move more of the work "
                    "(fuse the surrounding torch ops) into your kernels.",
    "input_mutated": "The forward wrote into its input tensors; allocate outputs instead of modifying inputs.",
    "excessive_speedup": "The measured speedup is implausibly high; check the kernel really computes everything.",
    "side_stream": "Work ran outside the current stream; use the current stream so timing sees all of it.",
    "triton_unused": "Outputs were correct even with all Triton launches skipped.",
    "output_cached": "Outputs did not change when the inputs changed; recompute on every call.",
    "eval_mode_mismatch": "Outputs differ from the reference in eval mode (model.eval()).",
    "degenerate_task": "Note: this task's expected output is (nearly) constant, so correctness is weak evidence.",
}


def _fmt(x, spec=".3g") -> str:
    return "n/a" if x is None else format(x, spec)


def feedback_text(result: EvalResult, max_chars: int = 2000, top_kernels: int = 5) -> str:
    r = result
    lines = [f"Verdict: {r.verdict}. {EXPLAIN.get(r.verdict, '')}".rstrip()]
    if r.error:
        err = r.error.strip()
        if len(err) > 900:
            err = err[:300] + "\n...\n" + err[-560:]
        lines.append("Error:\n" + err)
    if r.trials:
        lines.append(f"Correctness: {r.trials_passed}/{r.trials} trials passed"
                     + (f", max abs diff {_fmt(r.max_abs_diff)}" if r.max_abs_diff is not None else "")
                     + f" (tolerance {_fmt((r.protocol or {}).get('tolerance'))}).")
    if r.ok:
        if r.runtime_ms is not None:
            lines.append(f"Speed: {_fmt(r.runtime_ms, '.4g')} ms; speedup {_fmt(r.speedup)}x vs eager PyTorch "
                         f"({_fmt(r.ref_eager_ms, '.4g')} ms), {_fmt(r.speedup_compile)}x vs torch.compile "
                         f"({_fmt(r.ref_compile_ms, '.4g')} ms).")
        else:
            lines.append("Speed: not measured on this device (CPU interpreter); correctness only.")
        if r.coverage is not None:
            lines.append(f"Triton coverage: {r.coverage:.0%} of the forward's "
                         f"{'GPU' if r.runtime_ms is not None else 'wall'} time is in your Triton kernels.")
        kernels = r.kernels or []
        if kernels:
            rows = [f"  {k.get('name', '?')[:60]}: {_fmt(k.get('ms'), '.4g')} ms"
                    + (f" ({k['share']:.0%})" if k.get("share") is not None else "")
                    + (" [triton]" if k.get("triton") else "") for k in kernels[:top_kernels]]
            lines.append("Top kernels by time:\n" + "\n".join(rows))
    for f in r.flags or []:
        if f in FLAG_TEXT:
            lines.append(FLAG_TEXT[f])
    text = "\n".join(lines)
    if len(text) > max_chars:
        text = text[: max_chars - 20].rstrip() + "\n[feedback truncated]"
    return text
