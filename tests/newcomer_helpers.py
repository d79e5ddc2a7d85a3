"""Shared helpers of the tests/test_newcomer_*.py files (issue 18): scripted teachers and output checks."""
from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path

from conftest import ROOT

QUERIES = ROOT / "data/queries"
SOLS = ROOT / "data/query_solutions"
CPU = ["--device", "cpu", "--workers", "1", "--input-budget-mb", "0.25", "--trials", "1"]


def _body(name: str) -> str:
    src = (QUERIES / f"{name}.py").read_text()
    return src[src.index("class Model"):][:300]


def solution_for(messages: list[dict]) -> str:
    """The shipped correct kernel for the task in the prompt (queries 1, 3, 7 have one)."""
    prompt = messages[1]["content"] if len(messages) > 1 else messages[0]["content"]
    for name in ("001_scaled_tanh_bias", "003_sigmoid_gated_product", "007_rms_scale"):
        if _body(name) in prompt:
            return "Here it is.\n```python\n" + (SOLS / f"{name}.py").read_text() + "\n```\n"
    return "Here it is.\n```python\n" + (SOLS / "001_scaled_tanh_bias.py").read_text() + "\n```\n"


def task_of(messages: list[dict]) -> str:
    prompt = messages[1]["content"] if len(messages) > 1 else messages[0]["content"]
    for name in ("001_scaled_tanh_bias", "003_sigmoid_gated_product", "007_rms_scale"):
        if _body(name) in prompt:
            return name
    return "?"


def assert_short_error(res, code: int = 2) -> str:
    """Exit `code`, at most three lines on the error stream, no traceback; returns the output."""
    out = res.output if hasattr(res, "output") else res.stdout + res.stderr
    rc = res.exit_code if hasattr(res, "exit_code") else res.returncode
    assert rc == code, out
    assert "Traceback" not in out, out
    err = [l for l in out.splitlines() if l.strip() and "━" not in l and not l.startswith(("resuming", "WARNING"))]
    assert 1 <= len(err) <= 3, out
    return out


def read_jsonl(p: Path) -> list[dict]:
    return [json.loads(l) for l in p.read_text().splitlines() if l.strip()] if p.exists() else []


def popen_interruptible(args: list[str], **kw) -> subprocess.Popen:
    """Popen whose child takes Ctrl-C (SIGINT) as a user's terminal would give it. A shell that starts a job in
    the background without job control (`cmd &` in a script, a CI runner) makes it ignore SIGINT, the child
    inherits that, and a test of what Ctrl-C does would read a run that was never interrupted. A Python
    handler in this process is reset to the default at exec, so the child starts with SIGINT's default."""
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        return subprocess.Popen(args, **kw)
    finally:
        signal.signal(signal.SIGINT, old)
