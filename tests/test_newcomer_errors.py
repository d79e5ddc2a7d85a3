"""Issue 18: errors a user can cause get at most three lines naming the problem and the fix, a non-zero
exit and no traceback; unknown devices and unknown recipe keys are refused by name."""
from __future__ import annotations

import sys

import pytest
from typer.testing import CliRunner

from conftest import ROOT
from drk.cli import app
from newcomer_helpers import QUERIES, SOLS, assert_short_error

runner = CliRunner()
TASK = str(QUERIES / "001_scaled_tanh_bias.py")
SOL = str(SOLS / "001_scaled_tanh_bias.py")


def test_out_naming_an_existing_file_is_refused(tmp_path):
    f = tmp_path / "results.txt"
    f.write_text("mine\n")
    for args in (["eval", "--tasks", str(QUERIES), "--problems", "1", "--solutions", str(SOLS), "--device", "cpu"],
                 ["collect", "--queries", str(QUERIES), "--problems", "1", "--model", "m",
                  "--base-url", "http://127.0.0.1:9/v1", "--device", "cpu"],
                 ["infer", TASK, "--model", "m", "--base-url", "http://127.0.0.1:9/v1", "--device", "cpu"]):
        out = assert_short_error(runner.invoke(app, args + ["--out", str(f)]))
        assert "is an existing file" in out
    assert f.read_text() == "mine\n"


def test_unknown_device_is_refused_by_name():
    out = assert_short_error(runner.invoke(app, ["eval", TASK, "--solution", SOL, "--device", "gpu"]))
    assert "unknown device 'gpu'" in out and "cpu" in out


def test_cuda_without_a_gpu_is_a_short_error():
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    out = assert_short_error(runner.invoke(app, ["eval", TASK, "--solution", SOL, "--device", "cuda"]))
    assert "no CUDA GPU" in out and "--device cpu" in out


def test_gym_serve_without_the_serve_extra_says_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "fastapi", None)   # as if fastapi were not installed
    out = assert_short_error(runner.invoke(app, ["gym", "serve", "--device", "cpu"]))
    assert "pip install 'drk[serve]'" in out


def test_broken_task_file_is_blamed_on_the_task_not_the_candidate(tmp_path):
    broken = tmp_path / "task.py"
    broken.write_text("import torch\nclass Model(torch.nn.Module:\n    pass\n")
    out = assert_short_error(runner.invoke(app, ["eval", str(broken), "--solution", SOL, "--device", "cpu"]))
    assert "task" in out and "broken" in out and "compile_error" not in out
    missing = tmp_path / "task2.py"
    missing.write_text("import torch\nclass Model(torch.nn.Module):\n    pass\n")
    out = assert_short_error(runner.invoke(app, ["eval", str(missing), "--solution", SOL, "--device", "cpu"]))
    assert "get_inputs" in out


def test_missing_local_model_path_is_not_taken_for_a_hub_id(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "runs").mkdir()
    for model in ("./checkpoints/rl", "runs/sft", str(tmp_path / "nope")):
        res = runner.invoke(app, ["infer", TASK, "--model", model, "--device", "cpu", "--out", "o"])
        assert "not an existing local directory" in assert_short_error(res), model


def test_unknown_recipe_and_set_keys_are_refused_by_name(tmp_path):
    out = assert_short_error(runner.invoke(app, ["eval", TASK, "--solution", SOL, "--set", "trails=2"]))
    assert "trails" in out
    bad = tmp_path / "r.yaml"
    bad.write_text("lrr: 0.1\n")
    out = assert_short_error(runner.invoke(app, ["sft", "-c", str(bad), "--out", str(tmp_path / "o")]))
    assert "'lrr'" in out
    out = assert_short_error(runner.invoke(app, ["rl", "--set", "algo.nope=1", "--out", str(tmp_path / "r")]))
    assert "algo.nope" in out


def test_unknown_or_missing_tracker_is_refused(tmp_path):
    import importlib.util

    out = assert_short_error(runner.invoke(app, ["sft", "--report-to", "mlflow", "--out", str(tmp_path / "o")]))
    assert "mlflow" in out and "tensorboard" in out
    if importlib.util.find_spec("tensorboard") is None:
        out = assert_short_error(runner.invoke(app, ["rl", "--report-to", "tensorboard", "--out", str(tmp_path)]))
        assert "pip install tensorboard" in out
