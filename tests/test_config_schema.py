"""Issue 19: one configuration schema per stage. A stage's config dataclass declares each option once (name,
type, default, description); its command's flags and its recipe keys come from it. Checked here through the
CLI, in-process, without running a stage (its `run` is replaced by one that only builds the config):

    PYTHONPATH=src .venv/bin/python -m pytest tests/test_config_schema.py -q
"""
from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

from drk.cli import app
from drk.config import load_config, options
from drk.stages.rl_config import RLConfig
from drk.stages.sft import SFTConfig

runner = CliRunner()
GENERATED = {"sft": SFTConfig, "rl": RLConfig}  # the commands whose options are made from their config


def _help_text(cmd: str) -> str:
    """`drk CMD --help` as one line of words: the table's borders and line breaks removed."""
    res = runner.invoke(app, [cmd, "--help"], terminal_width=400, env={"COLUMNS": "400"})
    assert res.exit_code == 0, res.output
    return " ".join(re.sub(r"[│╭╮╰╯─]", " ", res.output).split())


@pytest.mark.parametrize("cmd", sorted(GENERATED))
def test_every_config_field_is_an_option_with_its_description_in_help(cmd):
    text = _help_text(cmd)
    for o in options(GENERATED[cmd]):
        assert o.help, f"{cmd}: {o.key} has no description (its comment)"
        assert f"{o.flag} " in text, (cmd, o.flag)
        assert " ".join(o.help.split()) in text, (cmd, o.key, o.help)


def _captured(monkeypatch, cmd: str) -> list:
    """Replace drk.stages.CMD.run by one that resolves the config as the stage does, and keeps it."""
    import importlib

    stage, seen = importlib.import_module(f"drk.stages.{cmd}"), []

    def run(recipe, overrides, **_):
        cfg = load_config(GENERATED[cmd], recipe, overrides)
        seen.append(cfg)
        return cfg, {"finished_before": True, "steps": 0, "step": 0}

    monkeypatch.setattr(stage, "run", run)
    return seen


@pytest.mark.parametrize("cmd, key, flag, values", [
    ("sft", "lr", "--lr", (0.1, 0.2, 0.3)),
    ("rl", "algo.prs_tau", "--algo.prs-tau", (0.1, 0.2, 0.3)),
    ("rl", "turn_selection.flat_groups", "--turn-selection.flat-groups", ("per-turn", "none", "last-turn")),
])
def test_flag_wins_over_set_over_recipe_over_default(tmp_path, monkeypatch, cmd, key, flag, values):
    seen = _captured(monkeypatch, cmd)
    by_recipe, by_set, by_flag = values
    *parents, last = key.split(".")
    recipe = tmp_path / "r.yaml"
    recipe.write_text("".join(f"{'  ' * i}{p}:\n" for i, p in enumerate(parents)) + f"{'  ' * len(parents)}{last}: "
                      f"{by_recipe}\n")

    def value(cfg):
        for part in key.split("."):
            cfg = getattr(cfg, part)
        return cfg

    out = ["--out", str(tmp_path / "o")]
    default = value(GENERATED[cmd]())
    for args, expected in ([[], default], [["-c", str(recipe)], by_recipe],
                           [["-c", str(recipe), "--set", f"{key}={by_set}"], by_set],
                           [["-c", str(recipe), "--set", f"{key}={by_set}", flag, str(by_flag)], by_flag],
                           [[flag, str(by_flag), "--set", f"{key}={by_set}"], by_flag]):
        res = runner.invoke(app, [cmd, *args, *out])
        assert res.exit_code == 0, (args, res.output)
        assert value(seen[-1]) == expected, args


@pytest.mark.parametrize("cmd, given, closest", [
    ("sft", "lr_schedular", "lr_scheduler"), ("sft", "batchsize", "batch_size"), ("rl", "prompts_per_stp", "prompts_per_step"),
    ("rl", "algo.prs_taux", "prs_tau"), ("eval", "trails", "trials"), ("collect", "turnz", "turns"),
    ("infer", "iteratons", "iterations"),
])
@pytest.mark.parametrize("how", ["recipe", "set"])
def test_an_unknown_key_is_one_line_naming_it_and_the_closest_valid_one(tmp_path, cmd, given, closest, how):
    from newcomer_helpers import QUERIES

    *parents, last = given.split(".")
    recipe = tmp_path / "r.yaml"
    recipe.write_text("".join(f"{'  ' * i}{p}:\n" for i, p in enumerate(parents)) + f"{'  ' * len(parents)}{last}: 1\n")
    args = ["-c", str(recipe)] if how == "recipe" else ["--set", f"{given}=1"]
    first = [str(QUERIES / "001_scaled_tanh_bias.py")] if cmd == "infer" else []
    res = runner.invoke(app, [cmd, *first, *args, "--out", str(tmp_path / "o")])
    assert res.exit_code == 2, res.output
    lines = res.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("drk: error:") and "Traceback" not in res.output, res.output
    assert given.split(".")[-1] in lines[0] and re.search(f"did you mean '?{closest}'?[?)]", lines[0]), lines[0]
