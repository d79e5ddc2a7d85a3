"""Shared helpers of the tests/test_newcomer_*.py files (issue 18): scripted teachers and output checks."""
from __future__ import annotations

import json
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
