"""`drk gym serve` driven as KernelGYM's released trainer drives its own server (loopback only; CPU, or a GPU
with DRK_TEST_DEVICE=cuda).

The client below follows the behaviour read in KernelGYM's source (hkust-nlp/KernelGYM,
drkernel/kernel/rewards/reward_client.py and drkernel/kernel/main_kernel.py; not copied): a start-up
`GET /health` that must say `status: healthy`; `POST /evaluate` retried on 429/503 (backoff 2**n s or 5**n s,
capped at 30 s) and on read/connect timeouts, at most `max_retries` times; then `GET /status` every second
until completed/failed/timeout/cancelled, and `GET /results` for a completed task. Rewards use the released
8B RL recipe (reward_func_name=calculate_reward_speedup, correctness and performance weights 0.5, speedup
clipped to [0, 3], penalty 0.0, time-coverage reward weight 0.5) and its coverage rejection (per turn, keep
probability (time_coverage - 0.3) / 0.1 clipped to [0, 1], for correct non-decoy turns).

    .venv/bin/python -m pytest tests/test_server_kernelgym.py -q
    DRK_TEST_DEVICE=cuda python3 -m pytest tests/test_server_kernelgym.py -q      # on a CUDA machine
"""
from __future__ import annotations

import asyncio
import os
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from conftest import ROOT
from test_service import GOOD, HANG, OPTS, TASK, running_server

from drk.gym import EvalOptions, LocalPool
from drk.gym.transport.limits import Limits
from drk.gym.types import HARD_WALL_FACTOR

SYNTAX = (ROOT / "tests/corpus/syntax_error.py").read_text()
TORCH_ONLY = (ROOT / "tests/corpus/hack_torch_only.py").read_text()
DEVICE = os.environ.get("DRK_TEST_DEVICE", "cpu")
SERVE_OPTS = OPTS if DEVICE == "cpu" else {"device": DEVICE}  # a GPU judges the tasks at their own shapes
RECIPE = {"correct_w": 0.5, "perf_w": 0.5, "upper": 3.0, "lower": 0.0, "penalty": 0.0, "coverage_w": 0.5,
          "rs_threshold": 0.3, "rs_factor": 0.1}


@pytest.fixture(scope="module")
def gym(tmp_path_factory):
    from drk.gym.transport.server import make_app

    pool = LocalPool(device=DEVICE, workers=2, cache_dir=str(tmp_path_factory.mktemp("kg")), slack_s=60)
    # two unfinished jobs per client: of the three slow samples submitted at once, one meets a 429 and retries
    with running_server(make_app(pool, EvalOptions(**SERVE_OPTS), Limits(max_inflight_per_client=2))) as url:
        yield url
    pool.close()


class TrainerClient:
    """KernelGYM's reward-client sequence for one sample (see the module docstring)."""

    def __init__(self, url: str, max_retries: int = -1, poll_s: float = 1.0) -> None:
        # -1: retry 429/503 until the client's own timeout (KernelGYM's client allows it; its released
        # script sets 3, which drops a sample when the server stays busy for 1 + 2 + 4 s)
        self.url, self.max_retries, self.poll_s = url, max_retries, poll_s
        self.retries = 0

    def submit_and_poll(self, payload: dict, read_timeout: float, client_timeout: float) -> dict:
        start, attempt = time.time(), 0
        with httpx.Client(timeout=httpx.Timeout(10.0, read=read_timeout)) as c:
            while (self.max_retries < 0 or attempt < self.max_retries) and time.time() - start < client_timeout:
                try:
                    posted = time.time()
                    r = c.post(f"{self.url}/evaluate", json=payload)
                except (httpx.TimeoutException, httpx.ConnectError) as e:
                    if 0 <= self.max_retries - 1 <= attempt:
                        return {"status": "failed", "error_message": str(e)}
                    self.retries += 1
                    time.sleep(min(2 ** attempt, 30))
                    attempt += 1
                    continue
                if r.status_code == 200:
                    break
                if r.status_code in (429, 503):
                    self.retries += 1
                    time.sleep(min((2 if r.status_code == 429 else 5) ** attempt, 30))
                    attempt += 1
                    continue
                return {"status": "failed", "error_message": f"HTTP {r.status_code}"}
            tid = payload["task_id"]
            while time.time() - start < client_timeout:
                s = c.get(f"{self.url}/status/{tid}")
                if s.status_code == 200 and s.json()["status"] in ("completed", "failed", "timeout", "cancelled"):
                    status, took = s.json()["status"], time.time() - posted  # from the admitted submission
                    if status != "completed":
                        return {"status": status, "error_message": s.json().get("error_message"), "took_s": took}
                    return {**c.get(f"{self.url}/results/{tid}").json(), "status": status, "took_s": took}
                time.sleep(self.poll_s)
        return {"status": "timeout", "error_message": "client-side timeout"}


def payload(task_id: str, kernel: str, timeout: int) -> dict:
    """The body KernelGYM's client sends."""
    return {"task_id": task_id, "reference_code": TASK.source, "kernel_code": kernel, "backend": "triton",
            "num_correct_trials": 5, "num_perf_trials": 100, "timeout": timeout, "priority": "normal",
            "entry_point": "Model", "is_valid": False, "verbose_errors": True, "enable_profiling": True,
            "detect_decoy_kernel": True, "reference_backend": None}


def time_coverage(answer: dict) -> float:
    meta = answer.get("metadata") or {}
    total = meta.get("total_kernel_run_time_in_profiling_us") or 0
    return round(meta.get("custom_kernel_cuda_time_in_profiling_us", 0) / total, 2) if total > 0 else 0.0


def reward(answer: dict) -> float:
    """KernelGYM's speedup reward with the released recipe's settings."""
    if answer.get("status") != "completed" or answer.get("decoy_kernel"):
        return RECIPE["penalty"]
    speedup = min(answer.get("speedup") or 0.0, RECIPE["upper"])
    speedup = 0.0 if speedup < RECIPE["lower"] else speedup
    r = RECIPE["correct_w"] * bool(answer.get("correctness")) + RECIPE["perf_w"] * speedup
    return r + (RECIPE["coverage_w"] * time_coverage(answer) if answer.get("correctness") else 0.0)


def keep_probability(answer: dict) -> float:
    """The trainer's coverage rejection: only correct, non-decoy turns can be dropped."""
    if not answer.get("correctness") or answer.get("decoy_kernel"):
        return 1.0
    return min(1.0, max(0.0, (time_coverage(answer) - RECIPE["rs_threshold"]) / RECIPE["rs_factor"]))


@pytest.fixture(scope="module")
def sequence(gym):
    """The trainer's sequence once, four samples at the same time (a correct kernel, a syntax error, a torch-only
    decoy, a hang), each answer read by the tests below: (answers by name, the client's retries)."""
    assert httpx.get(f"{gym}/health", timeout=10).json()["status"] == "healthy"
    client = TrainerClient(gym)
    samples = {"good": (GOOD, 120), "syntax": (SYNTAX, 120), "torch_only": (TORCH_ONLY, 120), "hang": (HANG, 6)}
    with ThreadPoolExecutor(len(samples)) as ex:
        futs = {name: ex.submit(client.submit_and_poll, payload(f"seq-{name}", src, t), t, t + 90)
                for name, (src, t) in samples.items()}
        answers = {name: f.result() for name, f in futs.items()}
    return answers, client.retries


@pytest.mark.slow
def test_trainer_sequence_judges_the_correct_kernel_correct_and_measured(sequence):
    good = sequence[0]["good"]
    assert good["status"] == "completed" and good["correctness"] and not good["decoy_kernel"]
    assert good["kernel_runtime"] > 0
    if DEVICE == "cpu":
        # the reference's CPU time is an estimate until the evaluator measures it; when there is one, so is speedup
        assert (good["speedup"] > 0) == (good["reference_runtime"] > 0)
        assert good["metadata"]["timing"]["clock"] == "cpu_wall" and "CPU" in good["metadata"]["timing"]["note"]
    else:  # measured on the GPU by CUDA events, the reference too
        assert good["speedup"] > 0 and good["reference_runtime"] > 0
        assert good["metadata"]["timing"]["clock"] == "cuda_events"


@pytest.mark.slow
def test_trainer_sequence_pays_the_correct_kernel_the_papers_reward_and_keeps_it(sequence):
    good = sequence[0]["good"]
    assert time_coverage(good) >= 0.9  # the kernel (or on CPU the Triton interpreter) is nearly the whole forward
    expected = 0.5 + 0.5 * min(good["speedup"], 3.0) + 0.5 * time_coverage(good)
    assert reward(good) == pytest.approx(expected) and reward(good) > 0.95
    assert keep_probability(good) == 1.0


@pytest.mark.slow
def test_trainer_sequence_fails_a_syntax_error_with_the_error(sequence):
    answer = sequence[0]["syntax"]
    assert answer["status"] == "failed" and "SyntaxError" in answer["error_message"]


@pytest.mark.slow
def test_trainer_sequence_marks_a_torch_only_module_a_decoy_without_speedup(sequence):
    answer = sequence[0]["torch_only"]
    assert answer["status"] == "completed" and answer["decoy_kernel"] is True
    assert answer["speedup"] == 0.0 and answer["correctness"] is False


@pytest.mark.slow
def test_trainer_sequence_times_out_a_hang_within_the_hard_bound(sequence):
    answer = sequence[0]["hang"]
    assert answer["status"] == "timeout"
    # A terminal answer within its timeout of CPU time actually granted: on a loaded host the evaluator
    # stretches the wall budget (never a false timeout) up to its hard bound, HARD_WALL_FACTOR x + 60 s.
    assert answer["took_s"] < HARD_WALL_FACTOR * 6 + 60 + 15


@pytest.mark.slow
@pytest.mark.parametrize("name", ["syntax", "torch_only", "hang"])
def test_trainer_sequence_gives_every_failure_the_penalty_and_keeps_it(sequence, name):
    assert reward(sequence[0][name]) == RECIPE["penalty"] and keep_probability(sequence[0][name]) == 1.0


@pytest.mark.slow
def test_trainer_sequence_retries_samples_over_the_clients_limit(sequence):
    assert sequence[1] >= 1  # three slow samples against a limit of two: one retried


def test_readme_blocking_example_returns_the_full_result(gym):
    body = {"task_id": "readme-001", "reference_code": TASK.source, "kernel_code": GOOD, "entry_point": "Model",
            "backend": "triton", "num_correct_trials": 5, "num_perf_trials": 100}

    async def evaluate() -> dict:
        async with httpx.AsyncClient(timeout=120) as client:
            return (await client.post(f"{gym}/evaluate", json=body)).json()

    result = asyncio.run(evaluate())
    lines = [f"Compiled: {result['compiled']}", f"Correctness: {result['correctness']}",
             f"Speedup: {result['speedup']:.2f}x", f"Reference Runtime: {result['reference_runtime']:.4f} ms",
             f"Kernel Runtime: {result['kernel_runtime']:.4f} ms"]
    assert result["status"] == "completed" and result["compiled"] and result["correctness"] and len(lines) == 5
    assert result["speedup"] >= 0 and result["metadata"]["error_code"] is None


def test_repeated_task_id_returns_the_stored_result_without_a_second_run(gym):
    body = payload("repeat-1", GOOD, 120)
    first = httpx.post(f"{gym}/evaluate", json=body, timeout=120).json()
    submitted = httpx.get(f"{gym}/metrics").json()["counters"]["submitted"]
    again = httpx.post(f"{gym}/evaluate", json=body, timeout=120).json()
    assert again == first and first["status"] == "completed"
    assert httpx.get(f"{gym}/metrics").json()["counters"]["submitted"] == submitted


def test_unknown_fields_are_accepted_and_nulls_mean_defaults(gym):
    body = {**payload("nulls-1", SYNTAX, 60), "num_correct_trials": None, "num_perf_trials": None,
            "timeout": None, "some_future_field": {"x": 1}}
    r = httpx.post(f"{gym}/evaluate", json=body, timeout=60)
    assert r.status_code == 200
    limits = r.json()["metadata"]["limits"]
    assert limits["used"]["trials"] == EvalOptions().trials and limits["ignored"] == ["some_future_field"]
    assert r.json()["error_code"] == "SYNTAX_ERROR" and r.json()["speedup"] == 0.0


def test_batch_answers_in_kernelgym_batch_shape(gym):
    tasks = [payload("batch-good", GOOD, 120), payload("batch-syntax", SYNTAX, 60), {"task_id": "batch-bad"}]
    b = httpx.post(f"{gym}/evaluate/batch", json={"batch_id": "b1", "tasks": tasks}, timeout=120).json()
    assert {k for k in b} >= {"batch_id", "total_tasks", "completed_tasks", "failed_tasks", "results",
                              "batch_status", "submitted_at", "completed_at"}
    assert (b["batch_id"], b["total_tasks"], b["completed_tasks"], b["failed_tasks"]) == ("b1", 3, 1, 2)
    assert [r["status"] for r in b["results"]] == ["completed", "failed", "failed"]
    assert b["results"][2]["error_code"] == "VALIDATION_ERROR" and b["batch_status"] == "completed"


def test_malformed_submissions_and_unknown_tasks_are_refused(gym):
    assert httpx.post(f"{gym}/evaluate", json={"task_id": "x", "kernel_code": "x"}).status_code == 422
    assert httpx.get(f"{gym}/results/unknown").status_code == 404
    assert httpx.get(f"{gym}/status/unknown").status_code == 404
