"""Sandbox and worker-lifecycle properties of the evaluator (CPU path).

    .venv/bin/python -m pytest tests/test_sandbox.py -q
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import psutil  # noqa: F401  (only to fail loudly if the test environment lacks it)
import pytest

from conftest import ROOT
from drk.gym import EvalOptions, EvalRequest, LocalPool
from drk.gym.isolation import SANDBOX_UID_BASE
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


def _candidate_pids() -> list[int]:
    """Processes running as a sandbox candidate uid (the fork server's children)."""
    lo = SANDBOX_UID_BASE
    return [p.pid for p in psutil.process_iter(["uids"]) if lo <= p.info["uids"].real < lo + 64]


@pytest.mark.skipif(os.geteuid() != 0, reason="candidate uids exist only when the evaluator runs as root")
def test_a_candidate_process_killed_mid_evaluation_is_crashed_and_the_next_runs_fresh(tmp_path):
    slow = GOOD.replace("return scaled_tanh_bias(x, self.bias, self.scale)",
                        "out = scaled_tanh_bias(x, self.bias, self.scale)\n"
                        "        for _ in range(200):\n            out = out + 0\n"
                        "        import math\n        [math.factorial(3000) for _ in range(300)]\n        return out")
    with LocalPool(device="cpu", workers=1, cache_dir=str(tmp_path)) as pool:
        assert pool.evaluate(EvalRequest(TASK, GOOD, opts())).verdict == "ok"  # warm: judge + fork server up
        assert _candidate_pids() == [], "a candidate process outlived its evaluation"
        seen: list[int] = []

        def assassin():
            for _ in range(200):
                time.sleep(0.05)
                if pids := _candidate_pids():
                    time.sleep(1.0)
                    seen.extend(pids)
                    for p in pids:
                        os.kill(p, signal.SIGKILL)
                    return

        t = threading.Thread(target=assassin)
        t.start()
        r = pool.evaluate(EvalRequest(TASK, slow, opts(trials=50)))
        t.join()
        assert seen and r.verdict == "crashed" and "died" in r.error
        assert pool.evaluate(EvalRequest(TASK, GOOD, opts())).verdict == "ok"
        assert _candidate_pids() == []


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


def _drk(args: list[str], env_extra: dict) -> subprocess.CompletedProcess:
    env = dict(os.environ, **env_extra)
    return subprocess.run([sys.executable, "-m", "drk", *args], capture_output=True, text=True, env=env,
                          timeout=600, cwd=ROOT)


def test_without_a_sandbox_drk_refuses_unless_the_user_says_unsafe(tmp_path):
    task = "data/queries/001_scaled_tanh_bias.py"
    sol = "data/query_solutions/001_scaled_tanh_bias.py"
    no_bwrap = {"DRK_BWRAP": str(tmp_path / "no-such-bwrap")}
    r = _drk(["eval", task, "--solution", sol, "--device", "cpu", "--out", str(tmp_path / "a")], no_bwrap)
    assert r.returncode == 2 and "cannot isolate candidate code" in r.stderr and "Traceback" not in r.stderr
    r = _drk(["--unsafe-no-sandbox", "eval", task, "--solution", sol, "--device", "cpu", "--out",
              str(tmp_path / "b")], no_bwrap)
    assert r.returncode == 0, r.stderr[-800:]
    import json

    res = [json.loads(x) for x in (tmp_path / "b" / "results.jsonl").read_text().splitlines()]
    assert [x["verdict"] for x in res] == ["ok"] and res[0]["versions"]["sandbox"] == "none"
