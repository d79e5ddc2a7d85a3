"""Task loading and shape scaling.

    .venv/bin/python -m pytest tests/test_tasks.py -q
"""
from __future__ import annotations

import json

import pytest
import torch

from conftest import ROOT
from drk.tasks import TaskError, load_kernelbench, parse_problem_ids, task_from_file, tasks_from_hf_rows
from drk.tasks.queries import load_queries, looks_like_benchmark
from drk.tasks.scaling import ScalingError, fit_budget, scale_source, size_constants

RELU_LIKE = """import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)

batch_size = 4096
dim = 393216
groups = 8; height = width = 256
D, H, W = 16, 32, 64
input_shape = (32768,)
total = batch_size * 2

def get_inputs():
    return [torch.rand(batch_size, dim)]

def get_init_inputs():
    return []
"""


def input_bytes(source: str) -> int:
    ns: dict = {}
    exec(compile(source, "t", "exec"), ns)
    with torch.device("meta"):
        xs = ns["get_inputs"]()
    return sum(x.numel() * x.element_size() for x in xs if isinstance(x, torch.Tensor))


def test_parse_problem_ids():
    assert parse_problem_ids("1,2,19") == {1, 2, 19}
    assert parse_problem_ids("1-3,7") == {1, 2, 3, 7}
    assert parse_problem_ids(None) is None
    with pytest.raises(TaskError):
        parse_problem_ids("3-1")
    with pytest.raises(TaskError):
        parse_problem_ids("abc")


def test_kernelbench_dir_selection(kb):
    tasks = load_kernelbench("1", "1-3,19", kb)
    assert [t.id for t in tasks] == ["level1/1_Square_matrix_multiplication_", "level1/2_Standard_matrix_multiplication_",
                                     "level1/3_Batched_matrix_multiplication", "level1/19_ReLU"]
    t = tasks[-1]
    assert (t.level, t.problem_id, t.name) == (1, 19, "ReLU") and "class Model" in t.source
    assert len(load_kernelbench("1,2", None, kb)) == 200
    with pytest.raises(TaskError):
        load_kernelbench("1", "999", kb)


def test_kernelbench_missing_dir_is_clear(tmp_path):
    with pytest.raises(TaskError, match="not found"):
        load_kernelbench("1", None, tmp_path / "nope")
    with pytest.raises(TaskError, match="level1"):
        load_kernelbench("1", None, tmp_path)


def test_hf_rows_conversion():
    rows = [{"code": "class Model: pass", "level": 1, "name": "19_ReLU.py", "problem_id": 19},
            {"code": "x", "level": 1, "name": "20_LeakyReLU", "problem_id": 20}]
    tasks = tasks_from_hf_rows(rows, 1, {19, 20})
    assert [t.id for t in tasks] == ["level1/19_ReLU", "level1/20_LeakyReLU"]
    assert tasks[0].origin.startswith("kernelbench-hf")


def test_single_file_and_query_folder(tmp_path):
    t = task_from_file(ROOT / "data/queries/001_scaled_tanh_bias.py")
    assert t.id == "file/001_scaled_tanh_bias" and t.problem_id == 1
    qs = load_queries(str(ROOT / "data/queries"))
    assert len(qs) >= 20 and all(q.id.startswith("queries/") for q in qs)
    assert [q.problem_id for q in load_queries(str(ROOT / "data/queries"), problems="1-3")] == [1, 2, 3]
    assert not looks_like_benchmark(qs, str(ROOT / "data/queries"))
    with pytest.raises(TaskError, match="not found"):
        task_from_file(tmp_path / "missing.py")


def test_drkernel_rl_layout_and_plain_jsonl(tmp_path):
    src = (ROOT / "data/queries/001_scaled_tanh_bias.py").read_text()
    f = tmp_path / "rl.jsonl"
    f.write_text(json.dumps({"prompt": [{"role": "user", "content": "write a kernel"}],
                             "reward_model": {"ground_truth": src}, "extra_info": {"uuid": "abc-1"}}) + "\n"
                 + json.dumps({"code": src, "name": "plain"}) + "\n")
    tasks = load_queries(str(f))
    assert [t.id for t in tasks] == ["rl/abc-1", "rl/plain"]
    assert tasks[0].source == src and tasks[0].meta["prompt"][0]["role"] == "user"
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"prompt": []}\n')
    with pytest.raises(TaskError, match="row 1 has no reference program"):
        load_queries(str(bad))
    torn = tmp_path / "torn.jsonl"
    torn.write_text('{"code": "x"')
    with pytest.raises(TaskError, match="line 1 is not valid JSON"):
        load_queries(str(torn))


def test_parquet_queries(tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    src = (ROOT / "data/queries/002_clamp_then_square.py").read_text()
    pq.write_table(pa.table({"prompt": [[{"role": "user", "content": "q"}]],
                             "reward_model": [{"ground_truth": src, "style": "rule"}]}), tmp_path / "d.parquet")
    (t,) = load_queries(str(tmp_path / "d.parquet"))
    assert t.source == src


def test_size_constants_forms():
    consts = {c.name: c.value for c in size_constants(RELU_LIKE)}
    assert consts == {"batch_size": 4096, "dim": 393216, "groups": 8, "height": 256, "width": 256, "D": 16,
                      "H": 32, "W": 64, "input_shape": (32768,), "total": 8192}


def test_scaling_rewrites_and_keeps_divisibility():
    plan = scale_source(RELU_LIKE, 1 / 64)
    c = plan.constants
    assert c["batch_size"] == 64 and c["dim"] == 6144
    assert c["groups"] == 8                       # protected name: never scaled
    assert c["height"] == c["width"] and c["height"] % 8 == 0
    assert c["total"] == c["batch_size"] * 2      # derived constants are recomputed
    assert c["input_shape"][0] < 32768
    ns: dict = {}
    exec(plan.source, ns)                         # the rewritten file is still a valid task
    assert ns["batch_size"] == 64 and ns["height"] == ns["width"] == c["height"]


def test_a_candidate_follows_its_tasks_scaled_sizes_and_keeps_its_own_constants():
    """A candidate that copied `batch_size` from its task reads it where the task does (a state built in
    __init__, level 3's RNNs): at the task's scaled sizes it must see the size the reference sees. Its own
    constants (a block size) and a constant it declares with another value stay as written; a multi-line
    assignment keeps every later line's number."""
    from drk.tasks.scaling import follow

    plan = scale_source(RELU_LIKE, 1 / 64)
    cand = ("import torch\nBLOCK = 1024\nbatch_size = 4096\ndim = 100\ntotal = (\n    batch_size * 2\n)\n"
            "def f():\n    return 1 / 0\n")
    out = follow(cand, plan.original, plan.constants)
    ns: dict = {}
    exec(out, ns)
    assert ns["batch_size"] == plan.constants["batch_size"] == 64 and ns["total"] == 128
    assert ns["BLOCK"] == 1024 and ns["dim"] == 100       # its own name; its own value of the task's name
    assert out.splitlines()[7:] == cand.splitlines()[7:]  # `def f` still on line 8
    assert follow(cand, plan.original, plan.original) == cand  # unscaled: untouched
    assert follow("def (:", plan.original, plan.constants) == "def (:"  # its load reports the syntax error


def test_fit_budget_and_clear_failure():
    plan = fit_budget(RELU_LIKE, 2 * 2**20, input_bytes)
    assert plan.input_bytes <= 2 * 2**20 and plan.input_bytes > 2**20  # the largest scale that fits
    assert input_bytes(plan.source) == plan.input_bytes
    fixed = "import torch\ndef get_inputs():\n    return [torch.rand(4096, 4096)]\n"
    with pytest.raises(ScalingError, match="no module-level size constants"):
        fit_budget(fixed, 2**20, input_bytes)


def test_every_kernelbench_level1_2_task_scales_or_says_why(kb):
    ok = failed = 0
    for t in load_kernelbench("1,2", None, kb):
        try:
            plan = fit_budget(t.source, 8 * 2**20, input_bytes)
            assert plan.input_bytes <= 8 * 2**20
            ok += 1
        except ScalingError as e:
            assert "MB" in str(e)
            failed += 1
    assert ok >= 190, f"only {ok} of 200 level-1/2 tasks scale under 8 MB"


def test_scale_above_one_grows_sizes_and_keeps_protected_names():
    src = "batch_size = 64\nseq_len = 256\ndim = 1024\ngroups = 8\n"
    plan = scale_source(src, 3.0)
    assert plan.constants == {"batch_size": 192, "seq_len": 768, "dim": 3072, "groups": 8}
    ns: dict = {}
    exec(plan.source, ns)
    assert ns["dim"] == 3072
