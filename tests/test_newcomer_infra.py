"""Issue 18: infrastructure is not the model. Endpoint/auth/server/evaluator failures are retried with
backoff, then recorded as infra_error, never scored or trained on, exit 3 with one line naming the endpoint
and the cause, and retried (not skipped) by the next run. Endpoints are local scripted servers (127.0.0.1)."""
from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from drk.cli import app
from drk.testing.scripted_server import ScriptedServer
from newcomer_helpers import CPU, QUERIES, SOLS, assert_short_error, read_jsonl, solution_for, task_of

runner = CliRunner()


@pytest.fixture(autouse=True)
def fast_backoff(monkeypatch):
    monkeypatch.setenv("DRK_BACKOFF_BASE_S", "0.01")


def collect_args(out, url, problems="1"):
    return ["collect", "--queries", str(QUERIES), "--problems", problems, "--turns", "1", *CPU[:6],
            "--out", str(out), "--model", "teacher", "--base-url", url, "--max-retries", "2"]


def test_rejected_key_401_is_infra_error_exit_3_naming_endpoint(tmp_path):
    with ScriptedServer(lambda m, r, i: 401) as srv:
        res = runner.invoke(app, collect_args(tmp_path / "c", srv.base_url))
        out = assert_short_error(res, 3)
        assert srv.base_url in out and "HTTP 401" in out
        assert len(srv.requests) == 1, "a 401 cannot change by retrying: no retries"
    assert read_jsonl(tmp_path / "c/trajectories.jsonl") == []  # never training data
    assert read_jsonl(tmp_path / "c/infra_errors.jsonl")[0]["verdict"] == "infra_error"


def test_server_error_500_is_retried_with_backoff_then_succeeds(tmp_path):
    def script(m, r, i):
        return 500 if i < 2 else solution_for(m)

    with ScriptedServer(script) as srv:
        res = runner.invoke(app, collect_args(tmp_path / "c", srv.base_url))
        assert res.exit_code == 0, res.output
        assert len(srv.requests) == 3
    assert len(read_jsonl(tmp_path / "c/trajectories.jsonl")) == 1


def test_infra_failed_episodes_are_retried_not_skipped_by_the_next_run(tmp_path):
    out = tmp_path / "c"
    with ScriptedServer(lambda m, r, i: 500) as down:
        assert runner.invoke(app, collect_args(out, down.base_url)).exit_code == 3
    with ScriptedServer(lambda m, r, i: solution_for(m)) as up:
        res = runner.invoke(app, collect_args(out, up.base_url))
        assert res.exit_code == 0, res.output
        assert len(up.requests) == 1, "the failed episode must be redone"
    recs = read_jsonl(out / "trajectories.jsonl")
    assert len(recs) == 1 and recs[0]["turns"][0]["result"]["verdict"] == "ok"


def test_eval_model_infra_error_is_recorded_and_left_out_of_scores(tmp_path):
    """Task 1 gets a correct kernel, task 3's requests fail: results.jsonl says infra_error for task 3,
    summary.json scores only task 1, the command exits 3."""
    def script(m, r, i):
        return 500 if task_of(m) == "003_sigmoid_gated_product" else solution_for(m)

    out = tmp_path / "e"
    with ScriptedServer(script) as srv:
        res = runner.invoke(app, ["eval", "--tasks", str(QUERIES), "--problems", "1,3", "--turns", "1", *CPU,
                                  "--model", "m", "--base-url", srv.base_url, "--max-retries", "1", "--out", str(out)])
        assert_short_error(res, 3)
    verdicts = sorted(r["verdict"] for r in read_jsonl(out / "results.jsonl"))
    assert verdicts == ["infra_error", "ok"]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["per_turn"]["turn_1"]["n"] == 1 and summary["per_turn"]["turn_1"]["correct"] == 1.0
    assert summary["infra_errors"] == 1 and summary["complete"] is False


def test_eval_unreachable_endpoint_exits_3_naming_it(tmp_path):
    res = runner.invoke(app, ["eval", "--tasks", str(QUERIES), "--problems", "1", "--turns", "1", *CPU,
                              "--model", "m", "--base-url", "http://127.0.0.1:9/v1", "--max-retries", "1",
                              "--out", str(tmp_path / "e")])
    out = assert_short_error(res, 3)
    assert "http://127.0.0.1:9/v1" in out and "connection error" in out


def test_evaluator_that_cannot_be_reached_is_an_infra_error(tmp_path):
    res = runner.invoke(app, ["eval", "--tasks", str(QUERIES), "--problems", "1", "--solutions", str(SOLS),
                              "--gym", "http://127.0.0.1:9", "--out", str(tmp_path / "e")])
    out = assert_short_error(res, 3)
    assert "evaluator http://127.0.0.1:9" in out


def test_metrics_count_infra_errors_but_never_score_them():
    from drk.metrics import best_per_task, summarize

    rs = [{"task": "a", "verdict": "ok", "compiled": True}, {"task": "b", "verdict": "infra_error"}]
    s = summarize(rs)
    assert s["n"] == 1 and s["correct"] == 1.0 and s["compiled"] == 1.0 and s["infra_errors"] == 1
    assert [r["task"] for r in best_per_task(rs)] == ["a"]
