"""The evaluator against its corpus: every candidate in tests/corpus/ (CPU-runnable ones) must get the
verdict and flags written in its header, and the project's own correct kernels must all stay `ok`.

    .venv/bin/python -m pytest tests/test_corpus.py -q
"""
from __future__ import annotations

from pathlib import Path

import pytest

from conftest import ROOT, read_corpus_header
from drk.gym import EvalOptions, EvalRequest
from drk.tasks import task_from_file

CORPUS = sorted((ROOT / "tests" / "corpus").glob("*.py"))
CPU_CORPUS = [p for p in CORPUS if read_corpus_header(p).get("device", "any") in ("cpu", "any")]
QUERY_SOLUTIONS = sorted((ROOT / "data" / "query_solutions").glob("*.py"))
# every test here reads one module fixture that evaluates the whole corpus, so the module is marked as a whole
pytestmark = pytest.mark.slow


def options(timeout: float = 120.0) -> EvalOptions:
    return EvalOptions(device="cpu", input_budget_mb=0.25, timeout_s=timeout)


@pytest.fixture(scope="module")
def corpus_results(cpu_pool):
    reqs = []
    for p in CPU_CORPUS:
        h = read_corpus_header(p)
        reqs.append(EvalRequest(task_from_file(ROOT / h["task"]), p.read_text(),
                                options(float(h.get("timeout", 120))), solution=p.name))
    for p in QUERY_SOLUTIONS:
        reqs.append(EvalRequest(task_from_file(ROOT / "data" / "queries" / p.name), p.read_text(), options(),
                                solution=f"query_solutions/{p.name}"))
    return {r.solution: r for r in cpu_pool.evaluate_batch(reqs)}


@pytest.mark.parametrize("path", CPU_CORPUS, ids=[p.stem for p in CPU_CORPUS])
def test_corpus_verdict(corpus_results, path: Path):
    h = read_corpus_header(path)
    r = corpus_results[path.name]
    expected = h["expect"].split("|")
    assert r.verdict in expected, f"{path.name}: got {r.verdict} ({r.error[:300]}), expected {h['expect']}"
    for flag in h["flags"] if r.verdict == expected[0] else []:
        assert flag in r.flags, f"{path.name}: flag {flag} missing from {r.flags}"
    if r.verdict != "ok":
        assert r.error, "a failing verdict must come with an error text the model can act on"


@pytest.mark.parametrize("path", QUERY_SOLUTIONS, ids=[p.stem for p in QUERY_SOLUTIONS])
def test_own_kernels_stay_ok(corpus_results, path: Path):
    r = corpus_results[f"query_solutions/{path.name}"]
    assert r.verdict == "ok", f"false positive on a correct kernel: {r.verdict}: {r.error[:400]}"
    assert r.correct and r.trials_passed == r.trials == 5
    assert r.flags == ["scaled_shapes"] or set(r.flags) <= {"scaled_shapes", "low_coverage"}
    assert r.coverage is not None and r.coverage > 0.5
    assert r.triton_kernels, "the kernels that ran must be recorded"


@pytest.mark.parametrize("path", QUERY_SOLUTIONS[:2], ids=[p.stem for p in QUERY_SOLUTIONS[:2]])
def test_the_probe_steps_time_is_split_by_who_spent_it(corpus_results, path: Path):
    """To find what makes one task's checks slow, every probe step's time is split into the judge's inputs and
    reference, the candidate's forward with its exchange, and within that the call itself; none can exceed the
    steps' own time (trial 1's, in `compile`, and the rest's, in `correctness`)."""
    ph = corpus_results[f"query_solutions/{path.name}"].phase_seconds
    parts = [ph.get(f"correctness_{k}") for k in ("reference", "candidate", "candidate_call")]
    assert all(isinstance(x, float) and x > 0 for x in parts), ph
    reference, candidate, call = parts
    assert call <= candidate <= ph["compile"] + ph["correctness"] + 0.05
    assert reference <= ph["compile"] + ph["correctness"] + 0.05


@pytest.mark.parametrize("path", QUERY_SOLUTIONS[:2], ids=[p.stem for p in QUERY_SOLUTIONS[:2]])
def test_an_evaluations_phases_account_for_its_total(corpus_results, path: Path):
    """The figure the issue bounds (time beyond compile and the required work) is the total less the named
    phases, so every step of an evaluation must have one: on CPU (no timing) the reference's build, the load,
    trial 1, the other probe steps, the output-caching probe and the teardown add up to the total."""
    ph = corpus_results[f"query_solutions/{path.name}"].phase_seconds
    named = ("reference", "load", "compile", "correctness", "caching", "teardown")
    assert all(isinstance(ph.get(k), float) for k in named), ph
    assert ph["caching"] > 0 and ph["teardown"] >= 0
    assert abs(ph["total"] - sum(ph[k] for k in named)) < 0.1, ph


@pytest.mark.parametrize("path", QUERY_SOLUTIONS[:1], ids=[p.stem for p in QUERY_SOLUTIONS[:1]])
def test_the_candidate_process_start_is_split_by_step(corpus_results, path: Path):
    """What holds the GPU while a candidate process starts is found from its steps (the fork and sandbox set-up,
    the runner's imports and hooks, on CUDA the context, Triton's warm-up and CUPTI, the tamper snapshot): each
    a non-negative share of `runner_start`, together adding up to it."""
    ph = corpus_results[f"query_solutions/{path.name}"].phase_seconds
    steps = {k: v for k, v in ph.items() if k.startswith("runner_start_")}
    assert {"runner_start_forked", "runner_start_sandboxed", "runner_start_runner", "runner_start_snapshot",
            "runner_start_hello"} <= set(steps), ph
    assert all(v >= 0 for v in steps.values()), steps
    assert abs(sum(steps.values()) - ph["runner_start"]) < 0.01, (steps, ph["runner_start"])


def test_the_ablation_probe_leaves_no_running_statistics_behind(cpu_pool):
    """A correct BatchNorm with its batch statistics in Triton: the ablation probe's call (kernels skipped)
    updates the running statistics with garbage, which every later eval-mode call reads. Seeds 11, 12 and 14
    put an eval-mode trial after the probe; before both sides' buffers were put back, each read
    `eval_mode_mismatch` for a kernel that matches the reference in both modes."""
    path = ROOT / "tests" / "corpus" / "ok_batchnorm_stats_in_triton.py"
    task = task_from_file(ROOT / "tests" / "corpus" / "tasks" / "batchnorm_relu.py")
    reqs = [EvalRequest(task, path.read_text(), EvalOptions(device="cpu", input_budget_mb=0.25, timeout_s=120,
                                                            input_seed=s), solution=str(s)) for s in (11, 12, 14)]
    for r in cpu_pool.evaluate_batch(reqs):
        assert r.verdict == "ok" and "eval_mode_mismatch" not in r.flags, (r.solution, r.verdict, r.flags, r.error)


EVAL_MODE_SEEDS = (2, 5, 6, 11, 12, 14)


def test_an_eval_mode_check_is_never_vacuous(cpu_pool):
    """BatchNorm's eval mode reads the running statistics that train-mode calls update. A probe's shifted
    inputs (200-2000 standard deviations up) in a running mean left the reference's eval-mode output all zero
    after its ReLU, so a kernel returning zeros in eval mode (attack t03) passed on the seeds whose plan put
    an eval-mode trial after such a probe (5 of these). Every eval-mode trial now comes before those probes
    (`checks.eval_trials_first`); the kernel that is right in both modes and the one that ignores the mode stay
    `ok`."""
    task = task_from_file(ROOT / "tests" / "corpus" / "tasks" / "batchnorm_relu.py")
    files = {"t03": ROOT / "tests" / "attacks" / "t03_batchnorm_eval_mode_zeros.py",
             "both_modes": ROOT / "tests" / "corpus" / "ok_batchnorm_stats_in_triton.py",
             "ignores_mode": ROOT / "tests" / "corpus" / "ok_batchnorm_batch_stats_in_every_mode.py"}
    reqs = [EvalRequest(task, p.read_text(), EvalOptions(device="cpu", input_budget_mb=0.25, timeout_s=120,
                                                         input_seed=s), solution=f"{name}@{s}")
            for name, p in files.items() for s in EVAL_MODE_SEEDS]
    got = {r.solution: r for r in cpu_pool.evaluate_batch(reqs)}
    for s in EVAL_MODE_SEEDS:
        r = got[f"t03@{s}"]
        assert r.verdict == "incorrect" and "eval mode" in r.error, (s, r.verdict, r.flags, r.error)
        r = got[f"both_modes@{s}"]
        assert r.verdict == "ok" and "eval_mode_mismatch" not in r.flags, (s, r.verdict, r.flags, r.error)
        r = got[f"ignores_mode@{s}"]
        assert r.verdict == "ok" and "eval_mode_mismatch" in r.flags, (s, r.verdict, r.flags, r.error)
