"""Issue 18: nothing finished is lost. Long commands write each finished item as it goes, resume with the
same --out without redoing finished items or renaming files, say so when a finished run is rerun, refuse a
directory holding another run unless --overwrite, and handle Ctrl-C by exiting 130 with a resume hint."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest
from typer.testing import CliRunner

from conftest import ROOT
from drk.cli import app
from drk.testing.scripted_server import ScriptedServer
from newcomer_helpers import CPU, QUERIES, assert_short_error, popen_interruptible, read_jsonl, solution_for

runner = CliRunner()


def eval_args(out, url, problems="1,3", turns="1"):
    return ["eval", "--tasks", str(QUERIES), "--problems", problems, "--turns", turns, *CPU,
            "--model", "m", "--base-url", url, "--out", str(out)]


@pytest.mark.slow
def test_eval_model_resume_runs_only_the_missing_episodes_in_the_same_files(tmp_path):
    out = tmp_path / "e"
    with ScriptedServer(lambda m, r, i: solution_for(m)) as srv:
        assert runner.invoke(app, eval_args(out, srv.base_url)).exit_code == 0
        # as if interrupted before the second episode finished: drop it from the files
        eps = read_jsonl(out / "episodes.jsonl")
        (out / "episodes.jsonl").write_text(json.dumps(eps[0]) + "\n")
        n = len(srv.requests)
        res = runner.invoke(app, eval_args(out, srv.base_url))
        assert res.exit_code == 0, res.output
        assert len(srv.requests) == n + 1 and "resuming: 1 finished" in res.output
    assert sorted(p.name for p in out.glob("*.jsonl")) == ["episodes.jsonl", "results.jsonl"]  # nothing renamed
    assert len(read_jsonl(out / "results.jsonl")) == 2 and len(read_jsonl(out / "episodes.jsonl")) == 2
    assert json.loads((out / "summary.json").read_text())["per_turn"]["turn_1"]["n"] == 2


def test_finished_run_rerun_says_so_and_does_nothing(tmp_path):
    out = tmp_path / "e"
    with ScriptedServer(lambda m, r, i: solution_for(m)) as srv:
        assert runner.invoke(app, eval_args(out, srv.base_url, "1")).exit_code == 0
        before = {p.name: p.stat().st_mtime_ns for p in out.iterdir()}
        n = len(srv.requests)
        res = runner.invoke(app, eval_args(out, srv.base_url, "1"))
        assert res.exit_code == 0 and "nothing to do" in res.output, res.output
        assert len(srv.requests) == n
    assert {p.name: p.stat().st_mtime_ns for p in out.iterdir()} == before  # not a file touched


@pytest.mark.slow
def test_directory_of_another_run_is_refused_unless_overwrite(tmp_path):
    out = tmp_path / "e"
    with ScriptedServer(lambda m, r, i: solution_for(m)) as srv:
        assert runner.invoke(app, eval_args(out, srv.base_url, "1")).exit_code == 0
        res = runner.invoke(app, eval_args(out, srv.base_url, "1", turns="2"))
        out_text = assert_short_error(res, 2)
        assert "different run" in out_text and "--overwrite" in out_text
        res = runner.invoke(app, eval_args(out, srv.base_url, "1", turns="2") + ["--overwrite"])
        assert res.exit_code == 0, res.output
    assert {r["turn"] for r in read_jsonl(out / "results.jsonl")} == {0, 1}


@pytest.mark.slow
def test_sigint_mid_run_keeps_finished_episodes_and_prints_resume_hint(tmp_path):
    """A slow teacher; SIGINT once the first episode is on disk: exit 130 with a resume hint, the finished
    episode kept; the same command then runs only the rest. The teacher holds every later reply until the
    interrupt is sent, so the run cannot finish first however busy the machine is."""
    interrupted = threading.Event()

    def slow(m, r, i):
        time.sleep(1.0)
        if i > 0:  # held until the interrupt: the first episode's evaluation can take minutes on a loaded CI host
            interrupted.wait(600)
        return solution_for(m)

    out = tmp_path / "e"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    with ScriptedServer(slow) as srv:
        args = eval_args(out, srv.base_url, "1,3,7") + ["--wave", "1"]
        proc = popen_interruptible([sys.executable, "-m", "drk", *args], env=env, cwd=tmp_path,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.time() + 600
        while time.time() < deadline and not read_jsonl(out / "episodes.jsonl"):
            time.sleep(0.2)
        proc.send_signal(signal.SIGINT)
        interrupted.set()
        stdout, stderr = proc.communicate(timeout=60)
        assert proc.returncode == 130, stdout + stderr
        assert "To resume, run the same command" in stderr and str(out) in stderr
        assert "Traceback" not in stderr
        kept = read_jsonl(out / "episodes.jsonl")
        assert 1 <= len(kept) < 3
        n = len(srv.requests)
        res = runner.invoke(app, args)
        assert res.exit_code == 0, res.output
        assert len(srv.requests) - n == 3 - len(kept)
    assert len(read_jsonl(out / "episodes.jsonl")) == 3


def test_collect_other_settings_in_the_same_out_are_refused(tmp_path):
    out = tmp_path / "c"
    base = ["collect", "--queries", str(QUERIES), "--problems", "1", *CPU[:6], "--out", str(out), "--model", "t"]
    with ScriptedServer(lambda m, r, i: solution_for(m)) as srv:
        assert runner.invoke(app, base + ["--turns", "1", "--base-url", srv.base_url]).exit_code == 0
        res = runner.invoke(app, base + ["--turns", "1", "--base-url", srv.base_url])
        assert res.exit_code == 0 and "nothing to do" in res.output
        res = runner.invoke(app, base + ["--turns", "2", "--base-url", srv.base_url])
        assert "different run" in assert_short_error(res, 2)


def test_infer_never_leaves_a_stale_best_py(tmp_path):
    out = tmp_path / "i"
    out.mkdir()
    (out / "best.py").write_text("# from an older run\n")
    task = str(QUERIES / "001_scaled_tanh_bias.py")
    with ScriptedServer(lambda m, r, i: "no code today") as srv:
        res = runner.invoke(app, ["infer", task, "--model", "m", "--base-url", srv.base_url, "--iterations", "1",
                                  "--turns", "1", "--device", "cpu", "--input-budget-mb", "0.25", "--out", str(out)])
        assert res.exit_code == 1, res.output
    assert not (out / "best.py").exists()


@pytest.mark.slow
def test_infer_resumes_from_its_last_finished_turn(tmp_path):
    out = tmp_path / "i"
    task = str(QUERIES / "001_scaled_tanh_bias.py")
    args = ["infer", task, "--model", "m", "--iterations", "2", "--turns", "1", "--device", "cpu",
            "--input-budget-mb", "0.25", "--out", str(out)]
    with ScriptedServer(lambda m, r, i: solution_for(m)) as srv:
        assert runner.invoke(app, args + ["--base-url", srv.base_url]).exit_code == 0
        hist = (out / "history.jsonl").read_text().splitlines()
        (out / "history.jsonl").write_text(hist[0] + "\n")   # as if interrupted after turn 1
        (out / "summary.json").unlink()
        n = len(srv.requests)
        res = runner.invoke(app, args + ["--base-url", srv.base_url])
        assert res.exit_code == 0, res.output
        assert len(srv.requests) == n + 1
        res = runner.invoke(app, args + ["--base-url", srv.base_url])
        assert res.exit_code == 0 and "nothing to do" in res.output and len(srv.requests) == n + 1
    assert len((out / "history.jsonl").read_text().splitlines()) == 2 and (out / "best.py").exists()


def test_rl_into_another_runs_directory_is_refused(tmp_path):
    out = tmp_path / "rl"
    out.mkdir()
    (out / "rl_config.json").write_text(json.dumps({"model": "someone-else", "steps": 7}))
    res = runner.invoke(app, ["rl", "-c", str(ROOT / "recipes/tiny/rl.yaml"), "--out", str(out)])
    assert "holds another run" in assert_short_error(res, 2)
    assert json.loads((out / "rl_config.json").read_text())["model"] == "someone-else"
