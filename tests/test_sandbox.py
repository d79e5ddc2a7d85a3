"""Sandbox and worker-lifecycle properties of the evaluator (CPU path).

    .venv/bin/python -m pytest tests/test_sandbox.py -q
"""
from __future__ import annotations

import os
import signal
import threading
import time

import psutil  # noqa: F401  (only to fail loudly if the test environment lacks it)
import pytest

from conftest import ROOT
from drk.gym import EvalOptions, EvalRequest, LocalPool
from drk.gym.sandbox import redact, scrubbed_env, secret_values
from drk.tasks import task_from_file

TASK = task_from_file(ROOT / "data/queries/001_scaled_tanh_bias.py")
GOOD = (ROOT / "data/query_solutions/001_scaled_tanh_bias.py").read_text()
SECRET = "sk-drk-test-0123456789abcdef"


def opts(**kw) -> EvalOptions:
    return EvalOptions(device="cpu", input_budget_mb=0.25, **kw)


def test_scrubbed_env_drops_secrets():
    env = scrubbed_env({"OPENAI_API_KEY": SECRET, "HF_TOKEN": "hf_x" * 4, "PATH": "/usr/bin", "AWS_SECRET": "x" * 9,
                        "TRITON_CACHE_DIR": "/tmp/t", "MY_PASSWORD": "p" * 9, "HOME": "/root"})
    assert SECRET not in env.values() and "HF_TOKEN" not in env and "MY_PASSWORD" not in env and "HOME" not in env
    assert env["PATH"] == "/usr/bin" and env["TRITON_CACHE_DIR"] == "/tmp/t"
    assert redact(f"key={SECRET}!", secret_values({"OPENAI_API_KEY": SECRET})) == "key=[redacted]!"


def test_secrets_never_reach_the_candidate_or_the_result(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    leak = (ROOT / "tests/corpus/hack_leak_env_in_error.py").read_text()
    probe = GOOD.replace("return scaled_tanh_bias(x, self.bias, self.scale)",
                         "raise RuntimeError('K=' + str(torch.serialization.os.environ.get('OPENAI_API_KEY')))")
    with LocalPool(device="cpu", workers=1, cache_dir=str(tmp_path)) as pool:
        r1, r2 = pool.evaluate_batch([EvalRequest(TASK, leak, opts()), EvalRequest(TASK, probe, opts())])
    assert r1.verdict == "runtime_error" and "ENV" in r1.error
    assert SECRET not in r1.error and "OPENAI_API_KEY" not in r1.error
    assert r2.verdict == "runtime_error" and "K=None" in r2.error


def _runner_pids(pool: LocalPool) -> list[int]:
    kids = []
    for s in pool.slots:
        if s.proc is not None:
            kids += [c.pid for c in psutil.Process(s.proc.pid).children() if "drk.gym.runner" in " ".join(c.cmdline())]
    return kids


def test_killed_runner_gives_crashed_and_the_pool_goes_on(tmp_path):
    slow = GOOD.replace("return scaled_tanh_bias(x, self.bias, self.scale)",
                        "out = scaled_tanh_bias(x, self.bias, self.scale)\n"
                        "        for _ in range(200):\n            out = out + 0\n"
                        "        import math\n        [math.factorial(3000) for _ in range(300)]\n        return out")
    with LocalPool(device="cpu", workers=1, cache_dir=str(tmp_path)) as pool:
        assert pool.evaluate(EvalRequest(TASK, GOOD, opts())).verdict == "ok"  # warm: judge + runner up
        pids = _runner_pids(pool)
        assert len(pids) == 1

        def assassin():
            time.sleep(1.5)
            os.kill(pids[0], signal.SIGKILL)

        threading.Thread(target=assassin).start()
        r = pool.evaluate(EvalRequest(TASK, slow, opts(trials=50)))
        assert r.verdict == "crashed" and "SIGKILL" in r.error
        assert pool.evaluate(EvalRequest(TASK, GOOD, opts())).verdict == "ok"
        assert _runner_pids(pool) and _runner_pids(pool) != pids


def test_timeout_kills_the_process_group_and_the_slot_recovers(tmp_path):
    hang = (ROOT / "tests/corpus/hang_loop.py").read_text()
    with LocalPool(device="cpu", workers=1, cache_dir=str(tmp_path)) as pool:
        t0 = time.time()
        r = pool.evaluate(EvalRequest(TASK, hang, opts(timeout_s=8)))
        assert r.verdict == "timeout" and time.time() - t0 < 60
        assert pool.evaluate(EvalRequest(TASK, GOOD, opts())).verdict == "ok"


def test_dead_judge_is_restarted(tmp_path):
    with LocalPool(device="cpu", workers=1, cache_dir=str(tmp_path), slack_s=30) as pool:
        assert pool.evaluate(EvalRequest(TASK, GOOD, opts())).verdict == "ok"
        judge = pool.slots[0].proc
        os.killpg(judge.pid, signal.SIGKILL)
        judge.wait()
        assert pool.evaluate(EvalRequest(TASK, GOOD, opts())).verdict == "ok"
        assert pool.slots[0].proc.pid != judge.pid
