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
from drk.config import ConfigError, load_config, options
from drk.stages.collect import CollectConfig
from drk.stages.eval import EvalConfig
from drk.stages.infer import InferConfig
from drk.stages.rl_config import RLConfig
from drk.stages.sft import SFTConfig
from drk.gym.transport.serve_config import ServeConfig
from drk.tasks.synth import SynthConfig
from newcomer_helpers import QUERIES

runner = CliRunner()
CONFIGS = {"eval": EvalConfig, "collect": CollectConfig, "infer": InferConfig, "sft": SFTConfig, "rl": RLConfig,
           "gym serve": ServeConfig, "tasks synth": SynthConfig}
RECIPE_COMMAND = {"serve": "gym serve"}  # a recipe's stem -> the command it is for (default: the stem)
NO_OUT = ("gym serve",)  # commands without --out
TASK = str(QUERIES / "001_scaled_tanh_bias.py")
FIRST = {"infer": [TASK]}  # a command's positional arguments


def _help_text(cmd: str) -> str:
    """`drk CMD --help` as one line of words: the table's borders and line breaks removed."""
    res = runner.invoke(app, [*cmd.split(), "--help"], terminal_width=400, env={"COLUMNS": "400"})
    assert res.exit_code == 0, res.output
    return " ".join(re.sub(r"[│╭╮╰╯─]", " ", res.output).split())


@pytest.mark.parametrize("cmd", sorted(CONFIGS))
def test_every_config_field_is_an_option_with_its_description_in_help(cmd):
    text = _help_text(cmd)
    for o in options(CONFIGS[cmd]):
        if o.cli.get("hidden"):  # a positional argument (TASK_FILE), or a recipe-only key (episode.reward)
            assert o.path[-1] != "task_file" or cmd == "collect" or o.help in text, (cmd, o.key)
            continue
        assert o.help, f"{cmd}: {o.key} has no description (its comment)"
        assert f"{o.flag} " in text, (cmd, o.flag)
        assert " ".join(o.help.split()) in text, (cmd, o.key, o.help)


def _captured(monkeypatch, cmd: str) -> list:
    """Replace drk.stages.CMD.run by one that only keeps the config it is given (sft, rl: resolves it from the
    recipe and overrides as the stage does) and stops."""
    import importlib

    stage, seen = importlib.import_module(f"drk.stages.{cmd}"), []

    def run(*args, **_):
        seen.append(load_config(CONFIGS[cmd], *args) if cmd in ("sft", "rl") else args[0])
        raise ConfigError("stopped by the test")

    monkeypatch.setattr(stage, "run", run)
    return seen


def _value(cfg, key: str):
    for part in key.split("."):
        cfg = getattr(cfg, part)
    return cfg


@pytest.mark.parametrize("cmd, key, recipe_key, flag, values", [
    ("sft", "lr", "lr", "--lr", (0.1, 0.2, 0.3)),
    ("rl", "algo.prs_tau", "algo.prs_tau", "--algo.prs-tau", (0.1, 0.2, 0.3)),
    ("rl", "algo.reward.w_c", "algo.w_c", "--algo.w-c", (0.1, 0.2, 0.3)),
    ("rl", "turn_selection.flat_groups", "turn_selection.flat_groups", "--turn-selection.flat-groups",
     ("per-turn", "none", "last-turn")),
    ("rl", "sampling.temperature", "temperature", "--temperature", (0.1, 0.2, 0.3)),
    ("rl", "eval_options.timeout_s", "eval_timeout_s", "--eval-timeout-s", (10.0, 20.0, 30.0)),
    ("collect", "episode.sampling.temperature", "temperature", "--temperature", (0.1, 0.2, 0.3)),
    ("collect", "episode.sampling.max_new_tokens", "episode.sampling.max_new_tokens", "--max-tokens", (7, 8, 9)),
    ("eval", "options.trials", "trials", "--trials", (1, 2, 3)),
    ("eval", "tasks.queries", "tasks_path", "--tasks", ("a", "b", "c")),
    ("infer", "episode.history", "select", "--select", ("window", "all", "topw")),
])
def test_flag_wins_over_set_over_recipe_over_default(tmp_path, monkeypatch, cmd, key, recipe_key, flag, values):
    seen = _captured(monkeypatch, cmd)
    by_recipe, by_set, by_flag = values
    *parents, last = recipe_key.split(".")
    recipe = tmp_path / "r.yaml"
    recipe.write_text("".join(f"{'  ' * i}{p}:\n" for i, p in enumerate(parents)) + f"{'  ' * len(parents)}{last}: "
                      f"{by_recipe}\n")
    default = _value(CONFIGS[cmd](**({"out": "o"} if cmd == "collect" else {"out": "o", "task_file": TASK}
                                     if cmd == "infer" else {})), key)
    for args, expected in ([[], default], [["-c", str(recipe)], by_recipe],
                           [["-c", str(recipe), "--set", f"{recipe_key}={by_set}"], by_set],
                           [["-c", str(recipe), "--set", f"{recipe_key}={by_set}", flag, str(by_flag)], by_flag],
                           [[flag, str(by_flag), "--set", f"{recipe_key}={by_set}"], by_flag]):
        runner.invoke(app, [cmd, *FIRST.get(cmd, []), *args, "--out", str(tmp_path / "o")])
        assert _value(seen.pop(), key) == expected, args


@pytest.mark.parametrize("cmd, given, closest", [
    ("sft", "lr_schedular", "lr_scheduler"), ("sft", "batchsize", "batch_size"), ("rl", "prompts_per_stp", "prompts_per_step"),
    ("rl", "algo.prs_taux", "prs_tau"), ("eval", "trails", "trials"), ("collect", "turnz", "turns"),
    ("infer", "iteratons", "iterations"), ("gym serve", "max_trails", "max_trials"),
    ("tasks synth", "per_compositon", "per_composition"),
])
@pytest.mark.parametrize("how", ["recipe", "set"])
def test_an_unknown_key_is_one_line_naming_it_and_the_closest_valid_one(tmp_path, cmd, given, closest, how):
    *parents, last = given.split(".")
    recipe = tmp_path / "r.yaml"
    recipe.write_text("".join(f"{'  ' * i}{p}:\n" for i, p in enumerate(parents)) + f"{'  ' * len(parents)}{last}: 1\n")
    args = ["-c", str(recipe)] if how == "recipe" else ["--set", f"{given}=1"]
    out = [] if cmd in NO_OUT else ["--out", str(tmp_path / "o")]
    res = runner.invoke(app, [*cmd.split(), *FIRST.get(cmd, []), *args, *out])
    assert res.exit_code == 2, res.output
    lines = res.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("drk: error:") and "Traceback" not in res.output, res.output
    assert given.split(".")[-1] in lines[0] and re.search(f"did you mean '?{closest}'?[?)]", lines[0]), lines[0]


def test_every_recipe_in_the_repository_loads_into_its_stage_config():
    from conftest import ROOT
    from drk.cli import config_from

    recipes = sorted((ROOT / "recipes").rglob("*.yaml"))
    assert len(recipes) >= 10
    for recipe in recipes:
        required = {"collect": {"out": "o"}, "infer": {"out": "o", "task_file": TASK}}.get(recipe.stem, {})
        cls = CONFIGS[RECIPE_COMMAND.get(recipe.stem, recipe.stem)]
        assert isinstance(config_from(cls, recipe, [], required), cls), recipe


def test_rl_nests_the_samplers_and_the_evaluators_options_whole(tmp_path):
    """RLConfig holds SamplingParams and EvalOptions themselves (flat: the keys RL recipes always had keep
    working), so every evaluator option reaches the rollouts, not a copied subset."""
    from drk.config import load_config
    from drk.engines.base import SamplingParams
    from drk.gym import EvalOptions
    from drk.stages.rl_config import RLConfig

    recipe = tmp_path / "rl.yaml"
    recipe.write_text("temperature: 0.7\neval_device: cpu\ntrials: 3\nseed: 5\n")
    cfg = load_config(RLConfig, recipe)
    assert isinstance(cfg.sampling, SamplingParams) and isinstance(cfg.eval_options, EvalOptions)
    assert (cfg.sampling.temperature, cfg.eval_options.device, cfg.eval_options.trials) == (0.7, "cpu", 3)
    assert cfg.seed == 5 and cfg.eval_options.seed == EvalOptions().seed and cfg.sampling.seed is None


def test_a_run_saved_with_the_flat_rl_config_of_earlier_versions_reads_the_same(tmp_path):
    import json

    from drk.stages.rl import saved_config

    flat = {"model": "tiny", "out": str(tmp_path), "steps": 2, "temperature": 0.6, "top_p": 1.0,
            "max_new_tokens": 400, "eval_device": "cpu", "eval_timeout_s": 120.0, "eval_input_budget_mb": 0.25,
            "algo": {"w_c": 0.4, "speedup_cap": 2.0, "use_mrs": False}}
    (tmp_path / "rl_config.json").write_text(json.dumps(flat))
    cfg = saved_config(tmp_path / "rl_config.json")
    assert (cfg.sampling.temperature, cfg.sampling.max_new_tokens) == (0.6, 400)
    assert (cfg.eval_options.device, cfg.eval_options.timeout_s, cfg.eval_options.input_budget_mb) == ("cpu", 120.0, 0.25)
    assert (cfg.algo.reward.w_c, cfg.algo.reward.speedup_cap, cfg.algo.use_mrs) == (0.4, 2.0, False)
