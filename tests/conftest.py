"""Shared fixtures. Run everything with `make test` (CPU; Triton kernels run in the interpreter).

KernelBench-backed tests look for the problems in $DRK_KERNELBENCH, then ../shared/kernelbench, and skip
when neither exists (the project never ships KernelBench files).
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

if os.environ.get("PYTEST_XDIST_WORKER"):
    # Test processes running side by side (make test: pytest-xdist) share the cores: each gets its part for
    # torch's threads, set before torch is imported, or OpenMP's waiting threads of one slow down the other's
    # many times over (docs/measurements/test-suite-time.md)
    _share = (os.cpu_count() or 1) // int(os.environ.get("PYTEST_XDIST_WORKER_COUNT") or 1)
    os.environ.setdefault("OMP_NUM_THREADS", str(max(1, _share)))


def kernelbench_dir() -> Path | None:
    for cand in (os.environ.get("DRK_KERNELBENCH"), ROOT.parent / "shared" / "kernelbench"):
        if cand and (Path(cand) / "level1").is_dir():
            return Path(cand)
    return None


@pytest.fixture(scope="session")
def kb() -> Path:
    d = kernelbench_dir()
    if d is None:
        pytest.skip("KernelBench problems not found (set DRK_KERNELBENCH)")
    return d


@pytest.fixture(scope="session")
def cpu_pool(tmp_path_factory):
    """Two warm CPU evaluation workers shared by the whole test session."""
    from drk.gym import LocalPool

    cache = tmp_path_factory.mktemp("drk-cache")
    with LocalPool(device="cpu", workers=2, cache_dir=str(cache)) as pool:
        yield pool


@pytest.fixture(scope="module")
def cpu_judge(tmp_path_factory):
    """One CPU judge in the test's own process (no pool), for tests that reach into its state; one per module."""
    from drk.gym.judge.evaluation import Judge
    from drk.gym.sandbox import isolation

    j = Judge("cpu", str(tmp_path_factory.mktemp("slot")), None, isolation.detect())
    yield j
    j.close()


def read_corpus_header(path: Path) -> dict:
    first = path.read_text().splitlines()[0]
    assert first.startswith("# drk-corpus:"), f"{path} lacks a drk-corpus header"
    fields = dict(kv.split("=", 1) for kv in first.split(":", 1)[1].split())
    fields["flags"] = [f for f in fields.get("flags", "").split(",") if f]
    return fields
