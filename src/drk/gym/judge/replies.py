"""The judge's one reading of a reply from a candidate's process.

Candidate code can reach the runner object in its own process and rewrite any reply it sends (attacks m05-m09),
so a reply is the candidate's text, not the evaluator's. Every field the judge reads from a reply is checked
here, by op, before any of it is used: a field of a type or value the runner never sends is that process's
malformed reply (`CandidateFault`: verdict `crashed`), never an exception inside the judge's checks, which would
read `infra_error` (never trained on: a forged reply would dodge its penalty). What the fields claim is judged
elsewhere (`drk.gym.judge.checks`); here only that they can be read.
"""
from __future__ import annotations

import math


class CandidateFault(Exception):
    """A reply of the candidate's process that is not a well-formed reply (frames where none belong, fields of the
    wrong type): that process's failure (`crashed`), unlike an exception of the judge's own code (`infra_error`)."""


def _number(v: object) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _count(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def _numbers(v: object) -> bool:
    return isinstance(v, list) and all(_number(x) for x in v)


def _texts(v: object) -> bool:
    return isinstance(v, list) and all(isinstance(x, str) for x in v)


def _output(d: object) -> bool:
    """One output's description (`tensors.describe` and the runner's additions)."""
    return (isinstance(d, dict) and isinstance(d.get("shape", []), list) and all(_count(x) for x in d.get("shape", []))
            and all(isinstance(d.get(k, ""), str) for k in ("dtype", "subclass", "device")))


def _launches(v: object) -> bool:
    """A forward's launches: (kernel name, host seconds) pairs."""
    return isinstance(v, list) and all(isinstance(x, (list, tuple)) and len(x) == 2 and isinstance(x[0], str)
                                       and _number(x[1]) for x in v)


def _rows(v: object) -> bool:
    """The device profiler's rows: a name, its device ms and its executions."""
    return isinstance(v, list) and all(isinstance(r, dict) and isinstance(r.get("name", ""), str)
                                       and _number(r.get("ms", 0.0)) and _count(r.get("calls", 0)) for r in v)


def _seconds(v: object) -> bool:
    """Seconds by step (an account for the reader)."""
    return isinstance(v, dict) and len(v) <= 16 and all(isinstance(k, str) and _number(x) for k, x in v.items())


def _counts(v: object) -> bool:
    """Launches per kernel name."""
    return isinstance(v, dict) and all(isinstance(k, str) and _count(n) for k, n in v.items())


# Fields of every reply, then of each op's, with the check each must pass when present and not None (a field
# left out or None is read as absent everywhere).
COMMON = {"integrity": _texts, "violations": _texts}
FIELDS = {
    "forward": {"outputs": lambda v: isinstance(v, list) and all(_output(d) for d in v), "n_outputs": _count,
                "launches": _launches, "wall_s": _number, "written_share": _number,
                "inputs_changed": lambda v: isinstance(v, bool), "outputs_overwritten": lambda v: isinstance(v, bool),
                "spent": _seconds},
    "time": {"calls": _count, "warmup_calls": _count, "b2b": _numbers, "stream": _numbers, "device": _numbers,
             "sync_gap_ms": _number, "launches": _count, "launch_counts": _counts,
             "gate": lambda v: isinstance(v, dict)},
    "profile": {"launch_counts": _counts, "triton": _texts},
    "rows": {"rows": _rows},
    "memory": {"peak_bytes": _number},
}


def check(op: str, reply: object) -> dict:
    """`reply` to op `op`, whole, when every field the judge reads is well-formed; else CandidateFault."""
    if not isinstance(reply, dict):
        raise CandidateFault(f"the candidate process returned a malformed {op} reply (not a mapping)")
    for field, ok in (COMMON | FIELDS.get(op, {})).items():
        v = reply.get(field)
        if v is not None and not ok(v):
            raise CandidateFault(f"the candidate process returned a malformed {op} reply (its {field!r})")
    return reply
