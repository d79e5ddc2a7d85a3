"""Issue 18 for the training stages. `drk sft` behaves like the other long stages: the same command resumes
from the latest checkpoint in --out, a finished run is not redone, another run's directory is refused unless
--overwrite, Ctrl-C saves a checkpoint and exits 130 with a resume hint. `--report-to tensorboard` writes
scalars under the run directory for `drk sft` and `drk rl`."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import ROOT
from drk.cli import app
from newcomer_helpers import assert_short_error, popen_interruptible

runner = CliRunner()
DEMO = str(ROOT / "data/trajectories/demo.jsonl")


def sft_args(out: Path, limit: int = 4, epochs: int = 2) -> list[str]:
    """The tiny recipe, kept short: `limit` conversations, two per step, so limit/2 * epochs steps."""
    return ["sft", "-c", str(ROOT / "recipes/tiny/sft.yaml"), "--data", DEMO, "--out", str(out),
            "--limit", str(limit), "--batch-size", "2", "--epochs", str(epochs)]


def scalar_tags(run_dir: Path) -> set[str]:
    """Tags of the scalars with at least one value in the tensorboard event files anywhere under run_dir."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    tags = set()
    for f in run_dir.rglob("events.out.tfevents.*"):
        acc = EventAccumulator(str(f))
        acc.Reload()
        tags |= {t for t in acc.Tags()["scalars"] if acc.Scalars(t)}
    return tags


def test_sft_finished_run_rerun_says_so_and_does_nothing(tmp_path):
    out = tmp_path / "sft"
    args = sft_args(out, limit=2, epochs=1)
    assert runner.invoke(app, args).exit_code == 0
    before = {p: p.stat().st_mtime_ns for p in out.rglob("*")}
    res = runner.invoke(app, args)
    assert res.exit_code == 0 and "nothing to do" in res.output, res.output
    assert {p: p.stat().st_mtime_ns for p in out.rglob("*")} == before  # not a file touched


def test_sft_directory_of_another_run_is_refused_unless_overwrite(tmp_path):
    out = tmp_path / "sft"
    (out / "checkpoint-7").mkdir(parents=True)
    (out / "sft_config.json").write_text(json.dumps({"model": "someone-else", "lr": 1.0}))
    (out / "sft_summary.json").write_text(json.dumps({"steps": 7, "losses": []}))
    text = assert_short_error(runner.invoke(app, sft_args(out, limit=2, epochs=1)), 2)
    assert "different run" in text and "--overwrite" in text
    assert json.loads((out / "sft_config.json").read_text())["model"] == "someone-else"
    res = runner.invoke(app, sft_args(out, limit=2, epochs=1) + ["--overwrite"])
    assert res.exit_code == 0 and "nothing to do" not in res.output, res.output
    assert not (out / "checkpoint-7").exists()  # the other run's checkpoint can never be resumed from
    assert json.loads((out / "sft_config.json").read_text())["model"] == "tiny"
    assert json.loads((out / "sft_summary.json").read_text())["steps"] == 1


@pytest.mark.slow
def test_sft_sigint_saves_a_checkpoint_and_the_same_command_resumes_to_the_same_result(tmp_path):
    """SIGINT after the first logged step: exit 130 with a resume hint and a checkpoint before the end; the
    same command then trains only the remaining steps and ends where an uninterrupted run ends."""
    ref = tmp_path / "ref"
    assert runner.invoke(app, sft_args(ref)).exit_code == 0
    out = tmp_path / "sft"
    log = tmp_path / "log"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "PYTHONUNBUFFERED": "1"}
    with open(log, "w") as f:
        proc = popen_interruptible([sys.executable, "-m", "drk", *sft_args(out)], env=env, cwd=ROOT,
                                   stdout=f, stderr=subprocess.PIPE, text=True)
        deadline = time.time() + 300
        while "'loss'" not in log.read_text():  # the trainer prints each step's logs
            assert proc.poll() is None and time.time() < deadline, "training ended before it could be interrupted"
            time.sleep(0.1)
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stderr
    assert "To resume, run the same command" in stderr and str(out) in stderr and "Traceback" not in stderr
    saved = sorted(int(p.name.split("-")[1]) for p in out.glob("checkpoint-*"))
    assert saved and 1 <= saved[-1] < 4 and not (out / "sft_summary.json").exists()
    res = runner.invoke(app, sft_args(out))
    assert res.exit_code == 0 and f"from checkpoint-{saved[-1]}" in res.output, res.output
    assert res.output.count("'loss'") == 4 - saved[-1]  # only the steps after the checkpoint were trained
    done, full = (json.loads((d / "sft_summary.json").read_text()) for d in (out, ref))
    assert done["steps"] == full["steps"] == 4
    assert done["losses"] == full["losses"]


def test_sft_report_to_tensorboard_writes_scalars_under_the_run(tmp_path):
    out = tmp_path / "sft"
    res = runner.invoke(app, sft_args(out, limit=2, epochs=1) + ["--report-to", "tensorboard"])
    assert res.exit_code == 0, res.output
    assert "train/loss" in scalar_tags(out)


def test_rl_report_to_tensorboard_writes_scalars_under_the_run(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)  # the tiny recipe's queries (data/queries) are relative to the repository
    out = tmp_path / "rl"
    res = runner.invoke(app, ["rl", "-c", str(ROOT / "recipes/tiny/rl.yaml"), "--out", str(out), "--steps", "1",
                              "--limit", "2", "--turns", "1", "--report-to", "tensorboard"])
    assert res.exit_code == 0, res.output
    assert {"reward_mean", "loss"} <= scalar_tags(out)
