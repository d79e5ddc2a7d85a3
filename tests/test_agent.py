"""The multi-turn loop end to end: `drk collect` and `drk infer` against a scripted OpenAI-compatible server
on loopback (real HTTP, real `openai` client, real CPU evaluator), plus extraction and history policies.

    .venv/bin/python -m pytest tests/test_agent.py -q
"""
from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import ROOT
from drk.agent.episode import Turn, select_turns
from drk.agent.extract import extract_code
from drk.agent.prompts import EXAMPLE_REFERENCE, EXAMPLE_SOLUTION, first_prompt
from drk.cli import app
from drk.testing.scripted_server import ScriptedServer
from drk.gym import EvalOptions, EvalRequest
from drk.tasks import Task

runner = CliRunner()
GOOD = (ROOT / "data/query_solutions/001_scaled_tanh_bias.py").read_text()
BROKEN = (ROOT / "tests/corpus/wrong_scale.py").read_text()
GOOD3 = (ROOT / "data/query_solutions/003_sigmoid_gated_product.py").read_text()


def reply_with(code: str, note: str = "Here is the kernel.") -> str:
    return f"<think>scratch work ```python\nnot this```</think>{note}\n```python\n{code}```\nDone."


@pytest.mark.parametrize("reply, code", [
    (reply_with("x = 1\n"), "x = 1\n"),                                          # after prose
    ("```python\na = 1\n```\ntext\n```python\nb = 2\n```", "b = 2\n"),        # the last python block
    ("```answer\nc = 3\n```", "c = 3\n"),                                       # the paper's answer block
    ("```\nclass ModelNew: pass\n```", "class ModelNew: pass\n"),              # an unlabelled block
])
def test_extract_code_takes_the_last_code_block(reply, code):
    assert extract_code(reply) == (code, "")


@pytest.mark.parametrize("reply, reason", [
    ("no code here", "no ```python"),
    ("<think>only thinking</think>", "the reply is empty"),
    ("```python\nx = 1", "unterminated"),
])
def test_extract_code_without_a_block_gives_the_reason(reply, reason):
    code, why = extract_code(reply)
    assert code is None and reason in why


def test_history_policies():
    turns = [Turn(index=i, completion="", reward=r) for i, r in enumerate([0.2, 1.0, 0.0, 0.9, 0.9, 0.1])]
    assert [t.index for t in select_turns(turns, "all", 2)] == [0, 1, 2, 3, 4, 5]
    assert [t.index for t in select_turns(turns, "topw", 3)] == [1, 3, 4]     # chronological order
    assert [t.index for t in select_turns(turns, "topw", 2)] == [1, 4]        # ties: the later turn
    assert [t.index for t in select_turns(turns, "window", 2)] == [3, 4]      # best consecutive pair (1.8)
    assert [t.index for t in select_turns(turns, "window", 3)] == [3, 4, 5] or \
        [t.index for t in select_turns(turns, "window", 3)] == [1, 2, 3]
    with pytest.raises(ValueError):
        select_turns(turns, "bogus", 2)


def test_one_shot_example_is_correct(cpu_pool):
    task = Task(id="example/bias_gelu", name="bias_gelu", source=EXAMPLE_REFERENCE)
    r = cpu_pool.evaluate(EvalRequest(task, EXAMPLE_SOLUTION, EvalOptions(device="cpu", input_budget_mb=0.25)))
    assert r.verdict == "ok", r.error
    assert "Here is a PyTorch program" in first_prompt(task.source) and "ModelNew" in first_prompt(task.source)


def turn_of(messages: list[dict]) -> int:
    return sum(m["role"] == "assistant" for m in messages)


@pytest.fixture(scope="module")
def collected(tmp_path_factory):
    """One `drk collect` of two tasks over three scripted turns (turn 1 broken, turn 2 no code, turn 3 correct;
    a 500 on the first request, retried), the teacher's server kept up for the tests that run it again:
    (the command's arguments, the server, the trajectories written)."""
    first_call = threading.Event()

    def script(messages, req, i):
        if not first_call.is_set():
            first_call.set()
            return 500
        t = turn_of(messages)
        good = GOOD3 if "a * torch.sigmoid(b)" in messages[1]["content"] else GOOD
        return [reply_with(BROKEN if good is GOOD else GOOD3.replace("torch.empty_like", "torch.zeros_like")
                           .replace("return out", "return out * 0"), "first try"),
                "I am not sure what to write.", reply_with(good)][min(t, 2)]

    out = tmp_path_factory.mktemp("collect") / "traj"
    args = ["collect", "--queries", str(ROOT / "data/queries"), "--problems", "1,3", "--turns", "3",
            "--device", "cpu", "--workers", "2", "--input-budget-mb", "0.25", "--out", str(out), "--model", "teacher"]
    with ScriptedServer(script) as srv:
        args += ["--base-url", srv.base_url]
        res = runner.invoke(app, args)
        assert res.exit_code == 0, res.output
        yield args, srv, [json.loads(x) for x in (out / "trajectories.jsonl").read_text().splitlines()]


@pytest.mark.slow
def test_collect_judges_every_turn_and_rewards_the_correct_one(collected):
    recs = collected[2]
    assert len(recs) == 2
    for rec in recs:
        verdicts = [(t["result"] or {}).get("verdict") for t in rec["turns"]]
        assert verdicts == ["incorrect", None, "ok"]
        assert rec["best_round"] == 2 and rec["rewards"][2] > 0.9 and rec["rewards"][0] == 0.0


@pytest.mark.slow
def test_collect_writes_the_whole_conversation(collected):
    for rec in collected[2]:
        assert [m["role"] for m in rec["messages"]] == ["system", "user", "assistant", "user", "assistant", "user",
                                                       "assistant"]


@pytest.mark.slow
def test_collect_sends_each_turns_feedback_in_the_next_request(collected):
    _, srv, recs = collected
    assert all("no ```python code block" in rec["turns"][1]["feedback"] for rec in recs)
    later = [r["messages"] for r in srv.requests if turn_of(r["messages"]) == 1]
    assert later and all("Verdict: incorrect" in m[-1]["content"] for m in later)
    third = [r["messages"] for r in srv.requests if turn_of(r["messages"]) == 2]
    assert third and all("no ```python code block" in m[-1]["content"] for m in third)


@pytest.mark.slow
def test_collect_writes_no_secret(collected):
    out = Path(collected[0][collected[0].index("--out") + 1])
    assert "secret" not in (out / "trajectories.jsonl").read_text()


@pytest.mark.slow
def test_collect_run_again_redoes_only_missing_episodes(collected):
    args, srv, _ = collected
    out = Path(args[args.index("--out") + 1])
    n_requests = len(srv.requests)
    res = runner.invoke(app, args)  # everything is done: nothing is requested
    assert res.exit_code == 0 and "skipped 2" in res.output and len(srv.requests) == n_requests
    lines = (out / "trajectories.jsonl").read_text().splitlines()
    (out / "trajectories.jsonl").write_text(lines[0] + "\n" + lines[1][: len(lines[1]) // 2])  # interrupted
    res = runner.invoke(app, args)
    assert res.exit_code == 0 and "skipped 1" in res.output and len(srv.requests) == n_requests + 3


def test_collect_unreachable_endpoint_is_not_a_traceback(tmp_path, monkeypatch):
    monkeypatch.setenv("DRK_BACKOFF_BASE_S", "0.01")
    res = runner.invoke(app, ["collect", "--queries", str(ROOT / "data/queries"), "--problems", "1", "--turns", "1",
                              "--device", "cpu", "--out", str(tmp_path), "--model", "m",
                              "--base-url", "http://127.0.0.1:9/v1"])
    # issue 18: an endpoint failure is infra_error (exit 3, one line), never a trajectory
    assert res.exit_code == 3 and "Traceback" not in res.output, res.output
    assert "http://127.0.0.1:9/v1" in res.output
    assert not (tmp_path / "trajectories.jsonl").read_text().strip()
    rec = json.loads((tmp_path / "infra_errors.jsonl").read_text().splitlines()[0])
    assert rec["verdict"] == "infra_error" and rec["error"]


def test_infer_stts_keeps_top_turns_and_writes_best(tmp_path):
    """Alternating broken/correct replies; every later context must hold the top-w turns by reward."""
    def script(messages, req, i):
        n = len(script.calls)
        script.calls.append(messages)
        return reply_with(GOOD if n % 3 != 1 else BROKEN)
    script.calls = []
    out = tmp_path / "infer"
    with ScriptedServer(script) as srv:
        res = runner.invoke(app, ["infer", str(ROOT / "data/queries/001_scaled_tanh_bias.py"), "--base-url",
                                  srv.base_url, "--model", "m", "--device", "cpu", "--iterations", "4",
                                  "--turns", "3", "--keep", "2", "--input-budget-mb", "0.25", "--out", str(out)])
    assert res.exit_code == 0, res.output
    hist = [json.loads(x) for x in (out / "history.jsonl").read_text().splitlines()]
    assert len(hist) == 3 + 3  # first iteration of 3 turns, then 3 iterations of 1 turn
    for k, rec in enumerate(hist):
        prev = hist[:k]
        expect = sorted(sorted(prev, key=lambda r: (r["reward"], r["index"]), reverse=True)[:2],
                        key=lambda r: r["index"])
        assert rec["context_turns"] == [r["index"] for r in expect], (k, rec["context_turns"])
        # the request actually carried those turns' feedback
        assert turn_of(script.calls[k]) == len(expect)
    ok = [r for r in hist if (r["result"] or {}).get("verdict") == "ok"]
    best = max(ok, key=lambda r: (r["reward"], r["index"]))
    assert (out / "best.py").read_text() == best["code"]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["best_turn"] == best["index"]


def test_eval_model_with_tiny_local_model(tmp_path):
    from drk.engines import build_tiny_model

    model_dir = tmp_path / "tiny"
    build_tiny_model(model_dir)
    out = tmp_path / "ev"
    res = runner.invoke(app, ["eval", "--tasks", str(ROOT / "data/queries"), "--problems", "1", "--model",
                              str(model_dir), "--samples", "2", "--turns", "2", "--max-tokens", "24", "--device", "cpu",
                              "--input-budget-mb", "0.25", "--out", str(out)])
    assert res.exit_code == 0, res.output
    recs = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    assert len(recs) == 4 and {r["turn"] for r in recs} == {0, 1}
    summary = json.loads((out / "summary.json").read_text())
    assert set(summary["per_turn"]) == {"turn_1", "best_of_1", "turn_2", "best_of_2"}
    assert summary["per_turn"]["turn_1"]["n"] == 2
    sec, tok = summary["seconds"], summary["tokens"]
    assert 0 < sec["generate"] <= sec["total"] and sec["evaluate_and_rest"] >= 0
    assert 0 < tok["completion_tokens"] <= 2 * 2 * 24 and tok["generated_per_s"] > 0
    assert (out / "report.md").read_text().startswith("# drk eval --model")
    assert "generation" in (out / "report.md").read_text()
    assert (out / "speedup_per_turn.png").read_bytes()[:4] == b"\x89PNG"
