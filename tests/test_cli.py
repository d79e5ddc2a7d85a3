"""The CLI end to end, driven in-process (typer's CliRunner) on the CPU path.

    .venv/bin/python -m pytest tests/test_cli.py -q
"""
from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest
from typer.testing import CliRunner

from conftest import ROOT
from drk.cli import app

runner = CliRunner()


def test_help_is_instant_and_lists_commands():
    t0 = time.time()
    out = subprocess.run([sys.executable, "-m", "drk", "--help"], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0 and "eval" in out.stdout
    assert time.time() - t0 < 5.0, "drk --help must not import torch"
    r = subprocess.run([sys.executable, "-c", "import drk.cli, sys; print('torch' in sys.modules)"],
                       capture_output=True, text=True)
    assert r.stdout.strip() == "False"


def test_eval_pair_prints_feedback(tmp_path):
    res = runner.invoke(app, ["eval", str(ROOT / "data/queries/001_scaled_tanh_bias.py"), "--solution",
                              str(ROOT / "data/query_solutions/001_scaled_tanh_bias.py"), "--device", "cpu",
                              "--input-budget-mb", "0.25", "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    assert "Verdict: ok" in res.output and "Triton coverage" in res.output
    rec = json.loads((tmp_path / "results.jsonl").read_text().splitlines()[0])
    for key in ("task", "solution", "device", "shapes", "compiled", "correct", "verdict", "flags", "error",
                "trials_passed", "max_abs_diff", "runtime_ms", "ref_eager_ms", "ref_compile_ms", "speedup",
                "speedup_compile", "coverage", "kernels", "phase_seconds", "versions"):
        assert key in rec
    assert rec["verdict"] == "ok" and rec["speedup"] is None and rec["shapes"]["scaled"] is True


def test_eval_pair_wrong_kernel_exits_nonzero():
    res = runner.invoke(app, ["eval", str(ROOT / "data/queries/001_scaled_tanh_bias.py"), "--solution",
                              str(ROOT / "tests/corpus/wrong_scale.py"), "--device", "cpu", "--input-budget-mb", "0.25"])
    assert res.exit_code == 1 and "Verdict: incorrect" in res.output


@pytest.mark.slow
def test_eval_solutions_folder_writes_results_and_summary(tmp_path):
    out = tmp_path / "run"
    res = runner.invoke(app, ["eval", "--tasks", str(ROOT / "data/queries"), "--problems", "1,3,7",
                              "--solutions", str(ROOT / "data/query_solutions"), "--device", "cpu", "--workers", "2",
                              "--input-budget-mb", "0.25", "--out", str(out)])
    assert res.exit_code == 0, res.output
    lines = (out / "results.jsonl").read_text().splitlines()
    assert len(lines) == 3 and all(json.loads(l)["verdict"] == "ok" for l in lines)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["summary"]["all"]["correct"] == 1.0 and summary["n_candidates"] == 3
    # a second run over finished candidates does nothing: no file renamed, nothing evaluated again
    res = runner.invoke(app, ["eval", "--tasks", str(ROOT / "data/queries"), "--problems", "1",
                              "--solutions", str(ROOT / "data/query_solutions"), "--device", "cpu",
                              "--workers", "2", "--input-budget-mb", "0.25", "--out", str(out)])
    assert res.exit_code == 0 and "nothing to do" in res.output, res.output
    assert [p.name for p in out.glob("results*.jsonl")] == ["results.jsonl"]
    assert len((out / "results.jsonl").read_text().splitlines()) == 3


def test_user_errors_are_one_line(tmp_path):
    cases = [
        ["eval", "--level", "1", "--solutions", str(tmp_path / "nope"), "--kernelbench", str(tmp_path / "kb")],
        ["eval", str(tmp_path / "missing_task.py"), "--solution", str(tmp_path / "x.py")],
        ["eval", "--tasks", str(ROOT / "data/queries"), "--solutions", str(tmp_path)],
        ["eval", "--tasks", str(ROOT / "data/queries"), "--problems", "x-y", "--solutions", str(tmp_path)],
    ]
    for args in cases:
        res = runner.invoke(app, args)
        assert res.exit_code == 2, (args, res.output)
        assert "drk: error:" in res.output and "Traceback" not in res.output


@pytest.mark.slow
def test_recipes_set_defaults_and_flags_win(tmp_path):
    from drk.config import load_yaml

    for name in ("eval", "infer", "collect"):
        assert load_yaml(ROOT / f"recipes/{name}.yaml")  # parse
    rec = tmp_path / "r.yaml"
    rec.write_text("trials: 2\ninput_budget_mb: 0.25\ndevice: cpu\n")
    res = runner.invoke(app, ["eval", str(ROOT / "data/queries/001_scaled_tanh_bias.py"), "-c", str(rec), "--solution",
                              str(ROOT / "data/query_solutions/001_scaled_tanh_bias.py"), "--json"])
    assert res.exit_code == 0, res.output
    rec_out = json.loads([l for l in res.output.splitlines() if l.startswith("{")][0])
    assert rec_out["trials"] == 2 and rec_out["device"] == "cpu"
    res = runner.invoke(app, ["eval", str(ROOT / "data/queries/001_scaled_tanh_bias.py"), "-c", str(rec), "--trials",
                              "3", "--solution", str(ROOT / "data/query_solutions/001_scaled_tanh_bias.py"), "--json"])
    assert json.loads([l for l in res.output.splitlines() if l.startswith("{")][0])["trials"] == 3
    bad = tmp_path / "bad.yaml"
    bad.write_text("turnz: 3\n")
    res = runner.invoke(app, ["infer", str(ROOT / "data/queries/001_scaled_tanh_bias.py"), "-c", str(bad), "--out",
                              str(tmp_path / "o")])
    assert res.exit_code == 2 and "unknown option 'turnz' (did you mean 'turns'?" in res.output


def test_a_misspelt_recipe_key_names_the_closest_valid_one():
    from drk.config import ConfigError, build
    from drk.stages.rl import RLConfig

    with pytest.raises(ConfigError, match=r"unknown option 'promts_per_step' \(did you mean 'prompts_per_step'\?"):
        build(RLConfig, {"promts_per_step": 4})
