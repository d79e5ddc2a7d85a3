"""`drk rl`: the loop learns a learnable toy reward (drk.testing.toy_env, passed to the stage), a killed run
resumes to exactly the same state, the training-side log-probs line up with the engine's, and the CPU recipe
runs end to end with the evaluator.

    .venv/bin/python -m pytest tests/test_rl.py -q
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
import yaml

from conftest import ROOT
from drk.config import load_config
from drk.stages import rl
from drk.stages.rl import RLConfig, train
from drk.testing.toy_env import toy_env

TOY = {"model": "tiny", "queries": str(ROOT / "data/queries"), "prompts_per_step": 4, "rollouts": 8,
       "turns": 1, "lr": 3e-3, "max_new_tokens": 24, "micro_batch_tokens": 4096, "seed": 0,
       "algo": {"use_prs": False}}


@pytest.mark.slow
def test_policy_learns_the_toy_reward(tmp_path):
    cfg = load_config(RLConfig, None, {**TOY, "steps": 30, "out": str(tmp_path), "checkpoint_every": 100,
                                        "log_rollouts": False})
    train(cfg, env=toy_env())
    rewards = [json.loads(x)["reward_mean"] for x in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    print("reward per step:", [round(r, 2) for r in rewards])
    assert len(rewards) == 30
    assert sum(rewards[-5:]) / 5 > sum(rewards[:5]) / 5 + 0.3, rewards


def _script_clock(monkeypatch, steps: int = 10) -> None:
    """RL's time-limit clock, read at the start, then per step at its start, its end and the check: step 1
    takes 30 s (the evaluation workers' start), the others 5 s, and the check comes 1 s after a step ends."""
    readings = [0.0]
    for k in range(steps):
        t = readings[-1]
        readings += [t, t + (30 if k == 0 else 5), t + (31 if k == 0 else 6)]
    ticks = iter(readings)
    monkeypatch.setattr(rl, "_clock", lambda: next(ticks))


def test_time_limit_ends_the_run_complete_before_its_steps(tmp_path, monkeypatch):
    # After step 1 its own 30 s judge (31 + 30 <= 70); after that the later steps' 5 s do, until step 7's check
    # (67 s + 5 s > 70) ends the run there, complete: checkpoint, final weights and the reason on disk. Had
    # step 1 kept judging, the run would have stopped after step 2 (37 + 30 > 70).
    _script_clock(monkeypatch)
    cfg = load_config(RLConfig, None, {**TOY, "steps": 10, "prompts_per_step": 2, "rollouts": 2, "out": str(tmp_path),
                                       "checkpoint_every": 100, "log_rollouts": False, "time_limit_s": 70})
    last = train(cfg, env=toy_env())
    steps = [json.loads(x)["step"] for x in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert steps == list(range(1, 8)) and last["stopped"] == "time_limit"
    assert (tmp_path / "final" / "model.safetensors").exists()
    assert (tmp_path / "checkpoints" / "step_00007").exists()
    assert json.loads((tmp_path / "stopped.json").read_text())["step"] == 7


def test_a_run_stopped_by_its_time_limit_continues_under_a_later_one(tmp_path, monkeypatch):
    # the same scripted clock as above stops the first command after step 7 of 10; the same command with a
    # later limit continues that run (the limit is not part of what identifies it) to its last step
    _script_clock(monkeypatch)
    base = {**TOY, "steps": 10, "prompts_per_step": 2, "rollouts": 2, "out": str(tmp_path), "checkpoint_every": 100,
            "log_rollouts": False}
    _, first = rl.run(overrides={**base, "time_limit_s": 70}, env=toy_env())
    assert first["step"] == 7 and first["stopped"] == "time_limit"
    monkeypatch.setattr(rl, "_clock", time.monotonic)
    _, last = rl.run(overrides={**base, "time_limit_s": 3600}, env=toy_env())
    assert last["step"] == 10 and "stopped" not in last
    assert not (tmp_path / "stopped.json").exists()  # the run is no longer stopped
    steps = [json.loads(x)["step"] for x in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert steps == list(range(1, 11))


def _weights(path: Path) -> dict:
    from safetensors.torch import load_file

    return load_file(str(path / "model.safetensors"))


@pytest.mark.slow
def test_killed_run_resumes_to_the_same_state(tmp_path):
    base = {**TOY, "steps": 6, "checkpoint_every": 1, "prompts_per_step": 8}
    ref = load_config(RLConfig, None, {**base, "out": str(tmp_path / "ref")})
    train(ref, env=toy_env())
    recipe = tmp_path / "r.yaml"
    out = tmp_path / "killed"
    recipe.write_text(yaml.safe_dump({**base, "out": str(out)}))
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    proc = subprocess.Popen([sys.executable, str(ROOT / "tests" / "toy_rl_run.py"), str(recipe)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 300
    while not (out / "checkpoints" / "step_00002").exists():
        assert proc.poll() is None and time.time() < deadline, "training ended before it could be killed"
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert not (out / "final").exists(), "the run finished before the kill; the test proves nothing"
    killed_at = int((out / "checkpoints" / "latest").read_text().strip().replace("step_", ""))
    _, last = rl.run(resume=out, env=toy_env())  # what `drk rl --resume OUT` runs, with the toy environment
    assert last["step"] == 6, last
    a, b = _weights(tmp_path / "ref" / "final"), _weights(out / "final")
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a), "resumed weights differ"
    ma = [json.loads(x) for x in (tmp_path / "ref" / "metrics.jsonl").read_text().splitlines()]
    mb = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    assert [m["step"] for m in mb] == list(range(1, 7))
    assert [m["reward_mean"] for m in ma] == [m["reward_mean"] for m in mb]
    assert killed_at < 6


def test_training_logprobs_match_the_engine():
    """The trainer's right-aligned completion log-probs equal the engine's sampling log-probs."""
    from drk.engines import build_tiny_model
    from drk.engines.base import SamplingParams
    from drk.engines.local import HFEngine
    from drk.train.batch import TurnRow, completion_logprobs

    model, tok = build_tiny_model(None)
    eng = HFEngine(model, tok)
    convs = [[{"role": "user", "content": "write a kernel"}], [{"role": "user", "content": "a longer prompt " * 5}]]
    gens = eng.generate(convs, SamplingParams(temperature=0.8, max_new_tokens=20, seed=3, n=2))
    rows = [TurnRow(g.prompt_token_ids, g.token_ids, g.logprobs, 0.0, 0, (0, 0, 0)) for gs in gens for g in gs]
    with torch.no_grad():
        logp, mask, _ = completion_logprobs(model, rows, pad_id=tok.pad_token_id, temperature=0.8, vocab_limit=None)
    for i, r in enumerate(rows):
        n = len(r.completion_ids)
        got = logp[i, logp.shape[1] - n:]
        assert mask[i].sum() == n
        diff = (got - torch.tensor(r.rollout_logprobs)).abs().max().item()
        assert diff < 1e-4, diff


def test_non_finite_gradient_skips_the_update():
    """A NaN gradient norm skips the optimizer step (clipping by NaN would write NaN into every weight and
    every later rollout would sample from NaN logits); the next finite one updates as usual."""
    from accelerate import Accelerator
    from transformers import get_constant_schedule

    from drk.engines import build_tiny_model
    from drk.train.batch import TurnRow
    from drk.stages.rl import train_on_rows

    model, tok = build_tiny_model(None)
    cfg = load_config(RLConfig, None, {"lr": 1e-3})
    acc = Accelerator(cpu=True)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr)
    model, opt, sched = acc.prepare(model, opt, get_constant_schedule(opt))
    rows = [TurnRow([5, 6, 7, 8], [9, 10, 11], [-1.0] * 3, 1.0, 0, (0, 0, 0)),
            TurnRow([5, 6], [12, 13, 14, 15, 16], [-1.0] * 5, -1.0, 1, (0, 1, 0))]
    logp_old = [torch.full((len(r.completion_ids),), -7.0) for r in rows]
    keep = torch.ones(len(rows), dtype=torch.bool)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    hook = model.model.norm.weight.register_hook(lambda g: g * float("nan"))
    stats = train_on_rows(model, opt, sched, acc, rows, logp_old, keep, cfg, tok.pad_token_id, None)
    hook.remove()
    assert stats["skipped_updates"] == 1 and stats["grad_norm"] != stats["grad_norm"]  # NaN
    assert all(torch.equal(v, before[k]) for k, v in model.state_dict().items())
    stats = train_on_rows(model, opt, sched, acc, rows, logp_old, keep, cfg, tok.pad_token_id, None)
    assert stats["skipped_updates"] == 0 and 0 < stats["grad_norm"] < float("inf")
    assert not all(torch.equal(v, before[k]) for k, v in model.state_dict().items())
    assert all(torch.isfinite(v).all() for v in model.state_dict().values())


@pytest.mark.slow
def test_tiny_recipe_runs_with_the_evaluator(tmp_path):
    from typer.testing import CliRunner

    from drk.cli import app

    res = CliRunner().invoke(app, ["rl", "-c", str(ROOT / "recipes/tiny/rl.yaml"), "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    m = [json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [x["step"] for x in m] == [1, 2] and m[0]["turns"] == 8
    for key in ("reward_mean", "reward_max", "correct", "fast_1", "mrs_kept", "prs_kept", "adv_mean", "loss",
                "clipfrac_high", "entropy", "grad_norm", "gen_tokens_per_s", "train_tokens_per_s", "seconds",
                "eval_phases_s"):
        assert key in m[0], key
    assert m[0]["generation"]["decode_steps"] > 0 and m[0]["generation"]["decode_ms_per_step"] > 0
    steps = sorted((tmp_path / "rollouts").glob("step_*.jsonl"))
    assert len(steps) == 2
    rec = json.loads(steps[0].read_text().splitlines()[0])
    assert {"completion", "feedback", "reward", "verdict", "turn"} <= rec.keys()
    assert json.loads((tmp_path / "rl_config.json").read_text())["algo"]["advantage"] == "trloo"
    assert (tmp_path / "checkpoints" / "latest").read_text().strip() == "step_00002"


def test_phase_medians_leave_out_cache_hits_and_count_missing_phases_as_zero():
    """A step's `eval_phases_s` says where its evaluation time went: cache hits cost nothing and would pull
    every median to 0; a phase one evaluation lacks (e.g. `timing` after a failed check) did not run there."""
    from drk.gym.types import EvalResult
    from drk.metrics import phase_medians

    runs = [EvalResult("t", verdict="ok", phase_seconds={"total": 4.0, "compile": 1.0, "timing": 0.5}),
            EvalResult("t", verdict="incorrect", phase_seconds={"total": 2.0, "compile": 3.0}),
            EvalResult("t", verdict="ok", phase_seconds={"total": 6.0, "compile": 2.0, "timing": 0.7}),
            EvalResult("t", verdict="ok", phase_seconds={"total": 9.0, "compile": 9.0, "cache_hit": 1.0}),
            EvalResult("t", verdict="infra_error")]  # never evaluated: no total
    got = phase_medians(runs)
    assert got == {"n": 3, "total_sum": 12.0, "total": 4.0, "compile": 2.0, "timing": 0.5}
    assert phase_medians([EvalResult("t", verdict="ok")]) == {"n": 0}


def test_paper_recipe_loads():
    cfg = load_config(RLConfig, ROOT / "recipes/rl.yaml")
    assert (cfg.prompts_per_step, cfg.rollouts, cfg.turns, cfg.steps, cfg.lr) == (16, 16, 3, 300, 1e-6)
    assert (cfg.algo.clip_low, cfg.algo.clip_high, cfg.algo.dual_clip, cfg.grad_clip) == (0.2, 0.28, 3.0, 1.0)


def test_top_p_with_mrs_is_refused_in_one_line(tmp_path):
    """top_p < 1 makes the engine's log-probs those of a truncated distribution; MRS would drop nearly every
    trajectory, so the run refuses to start instead of training on nothing."""
    from typer.testing import CliRunner

    from drk.cli import app

    cfg = tmp_path / "rl.yaml"
    cfg.write_text(yaml.safe_dump({**TOY, "steps": 1, "top_p": 0.9}))
    res = CliRunner().invoke(app, ["rl", "-c", str(cfg), "--out", str(tmp_path / "out")])
    assert res.exit_code != 0 and "top_p 0.9 < 1 cannot be combined with mismatch rejection sampling" in res.output
    assert res.exception is None or isinstance(res.exception, SystemExit)  # a message, not a traceback
    assert not (tmp_path / "out" / "metrics.jsonl").exists()


class _Later:
    """A future whose result the loop waits for: the wait is logged."""

    def __init__(self, log: list, res) -> None:
        self.log, self.res = log, res

    def result(self):
        self.log.append("wait")
        return self.res


def _logging_toy_env(log: list):
    env = toy_env()
    inner = env.gym

    class Gym:
        def evaluate_batch(self, reqs, on_result=None):
            return inner.evaluate_batch(reqs)

        def submit(self, req):
            log.append("submit")
            return _Later(log, inner.evaluate_batch([req])[0])
    env.gym = Gym()
    return env


def _steps_state(out: Path) -> tuple[list, list]:
    tasks = [sorted({json.loads(x)["task"] for x in p.read_text().splitlines()})
             for p in sorted((out / "rollouts").glob("step_*.jsonl"))]
    states = [json.loads((p / "trainer_state.json").read_text())["sampler"]
              for p in sorted((out / "checkpoints").glob("step_*"))]
    return tasks, states


def test_prefetch_generates_the_next_steps_first_turns_while_this_ones_are_judged(tmp_path, monkeypatch):
    """`prefetch`: step t's kernels go to the evaluator, step t+1's first turns are generated, then the loop
    waits for step t's results; the queries each step uses, and what a checkpoint records of the sampler,
    are those of a run without it (a resumed run generates the prefetched turns again)."""
    base = {**TOY, "steps": 3, "prompts_per_step": 2, "rollouts": 2, "checkpoint_every": 1, "keep_checkpoints": 5}
    log: list = []
    first_turns = rl.first_turns

    def logged(cfg, groups, engine, step):
        log.append(f"ahead{step}")
        return first_turns(cfg, groups, engine, step)
    monkeypatch.setattr(rl, "first_turns", logged)
    from drk.agent import episode
    monkeypatch.setattr(episode, "extract_code", lambda text: ("pass", ""))  # every reply a kernel to judge
    on = load_config(RLConfig, None, {**base, "prefetch": True, "out": str(tmp_path / "on")})
    metrics = []
    train(on, env=_logging_toy_env(log), on_step=metrics.append)
    assert [m["first_turns_ahead"] for m in metrics] == [False, True, True]
    # step 1: its 4 kernels submitted, step 2's first turns generated and their 4 kernels submitted at once (judged
    # while step 1 scores and trains), then step 1's 4 waits; step 2 submits nothing of its own (already with
    # the evaluator), generates and submits step 3's, waits for its own; the last step only waits
    assert log == (["submit"] * 4 + ["ahead2"] + ["submit"] * 4 + ["wait"] * 4 + ["ahead3"] + ["submit"] * 4
                   + ["wait"] * 4 + ["wait"] * 4), log
    off = load_config(RLConfig, None, {**base, "out": str(tmp_path / "off")})
    train(off, env=toy_env())
    assert _steps_state(tmp_path / "on") == _steps_state(tmp_path / "off")
    assert all(m["turns"] == 4 for m in metrics)
    # an evaluator that takes only whole batches (no submit): the turns generated ahead are judged in the next step
    assert not hasattr(toy_env().gym, "submit")
    whole = load_config(RLConfig, None, {**base, "prefetch": True, "out": str(tmp_path / "whole")})
    batches = []
    train(whole, env=toy_env(), on_step=batches.append)
    assert [m["first_turns_ahead"] for m in batches] == [False, True, True] and all(m["turns"] == 4 for m in batches)
    assert _steps_state(tmp_path / "whole") == _steps_state(tmp_path / "off")


def test_scoring_and_training_run_inside_the_evaluators_gpu_hold(tmp_path, monkeypatch):
    """With `prefetch` the next step's kernels are judged while this step scores and trains on the same GPU, so
    every forward of the trainer runs inside the evaluators' lock held shared (a kernel timed beside it would
    be time-sliced with it), and the hold is let go between micro-batches so a waiting measurement goes first."""
    from contextlib import contextmanager

    state, log = {"held": 0}, []

    @contextmanager
    def shared():
        state["held"] += 1
        log.append("in")
        try:
            yield
        finally:
            state["held"] -= 1
            log.append("out")
    monkeypatch.setattr(rl, "_gpu_work_hold", lambda accelerator: shared)
    forward = rl.completion_logprobs

    def logged(*a, **kw):
        log.append("forward" if state["held"] else "forward outside the hold")
        return forward(*a, **kw)
    monkeypatch.setattr(rl, "completion_logprobs", logged)
    cfg = load_config(RLConfig, None, {**TOY, "steps": 1, "prompts_per_step": 2, "rollouts": 4,
                                       "micro_batch_tokens": 64, "out": str(tmp_path)})
    train(cfg, env=toy_env())
    forwards = [k for k, x in enumerate(log) if x.startswith("forward")]
    assert len(forwards) >= 4 and "forward outside the hold" not in log, log
    # two forwards (scoring, then training) never share one hold: out and in again between them
    assert all("out" in log[a:b] and "in" in log[a:b] for a, b in zip(forwards, forwards[1:])), log
    assert state["held"] == 0
