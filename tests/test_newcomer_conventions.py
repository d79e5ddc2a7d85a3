"""Issue 18: the conventions people expect — KernelBench solution names, recipe paths relative to the
recipe, --version and -h, grouped --help with an example per group, --limit/--seed/--set on every stage,
README examples that do not assume our folder layout."""
from __future__ import annotations

import json
import shutil

from typer.testing import CliRunner

from conftest import ROOT
from drk.cli import app
from drk.testing.scripted_server import ScriptedServer
from newcomer_helpers import CPU, QUERIES, SOLS, read_jsonl, solution_for

runner = CliRunner()
STAGES = ("eval", "collect", "infer", "sft", "rl")


def fake_kernelbench(tmp_path):
    kb = tmp_path / "kb"
    (kb / "level1").mkdir(parents=True)
    shutil.copy(QUERIES / "001_scaled_tanh_bias.py", kb / "level1/19_ScaledTanh.py")
    return kb


def test_kernelbench_solution_names_are_accepted(tmp_path):
    kb = fake_kernelbench(tmp_path)
    sols = tmp_path / "sols"
    sols.mkdir()
    shutil.copy(SOLS / "001_scaled_tanh_bias.py", sols / "level_1_problem_19_sample_0_kernel.py")
    res = runner.invoke(app, ["eval", "--level", "1", "--kernelbench", str(kb), "--solutions", str(sols), *CPU,
                              "--out", str(tmp_path / "o")])
    assert res.exit_code == 0, res.output
    [rec] = read_jsonl(tmp_path / "o/results.jsonl")
    assert rec["task"] == "level1/19_ScaledTanh" and rec["verdict"] == "ok"


def test_recipe_paths_are_relative_to_the_recipe(tmp_path, monkeypatch):
    d = tmp_path / "project"
    (d / "sols").mkdir(parents=True)
    shutil.copy(SOLS / "001_scaled_tanh_bias.py", d / "sols/001_scaled_tanh_bias.py")
    shutil.copytree(QUERIES, d / "tasks")
    (d / "r.yaml").write_text("tasks_path: tasks\nsolutions: sols\nproblems: '1'\ndevice: cpu\n"
                              "input_budget_mb: 0.25\ntrials: 1\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    res = runner.invoke(app, ["eval", "-c", str(d / "r.yaml"), "--workers", "1", "--out", "o"])
    assert res.exit_code == 0, res.output
    assert read_jsonl(elsewhere / "o/results.jsonl")[0]["verdict"] == "ok"  # outputs: where the command runs


def test_version_and_short_help():
    from drk import __version__

    res = runner.invoke(app, ["--version"])
    assert res.exit_code == 0 and __version__ in res.output
    for args in (["-h"], ["eval", "-h"], ["rl", "-h"]):
        res = runner.invoke(app, args)
        assert res.exit_code == 0 and "Usage" in res.output


def test_help_groups_options_with_an_example_per_group():
    for cmd in ("eval", "collect", "infer"):
        text = runner.invoke(app, [cmd, "--help"], terminal_width=200).output
        for group in ("Inputs (e.g.", "Model (e.g.", "Evaluation (e.g.", "Output (e.g."):
            assert group in text, (cmd, group)


def test_every_stage_has_limit_seed_and_set():
    for cmd in STAGES:
        text = runner.invoke(app, [cmd, "--help"], terminal_width=200).output
        for opt in ("--limit", "--seed", "--set"):
            assert opt in text, (cmd, opt)


def test_limit_seed_and_set_reach_the_run(tmp_path):
    out = tmp_path / "e"
    with ScriptedServer(lambda m, r, i: solution_for(m)) as srv:
        res = runner.invoke(app, ["eval", "--tasks", str(QUERIES), "--problems", "1,3,7", "--limit", "1",
                                  "--seed", "7", "--set", "turns=1", "--set", "max-tokens=99", *CPU, "--model", "m",
                                  "--base-url", srv.base_url, "--out", str(out)])
        assert res.exit_code == 0, res.output
        assert len(srv.requests) == 1  # one task, one turn
        assert srv.requests[0]["seed"] == 7 and srv.requests[0]["max_tokens"] == 99
    cfg = json.loads((out / "eval_config.json").read_text())
    assert cfg["episode"]["eval_options"]["seed"] == 7


def test_set_reaches_nested_training_config():
    from drk.cli import command_overrides
    from drk.config import build
    from drk.stages.rl import RLConfig

    cfg = build(RLConfig, command_overrides(RLConfig, {"steps": 3, "limit": 2},
                                              ["algo.use_mrs=false", "steps=9", "eval_device=cpu"]))
    assert cfg.algo.use_mrs is False and cfg.steps == 3 and cfg.limit == 2  # flags win over --set
    assert cfg.eval_options.device == "cpu"  # a flat section's field by its recipe key


def test_readme_examples_work_wherever_kernelbench_lives():
    text = (ROOT / "README.md").read_text()
    assert "--kernelbench ../shared" not in text and 'export DRK_KERNELBENCH=' in text
    assert "Resume" in text and "infra_error" in text
