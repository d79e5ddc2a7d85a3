"""Evaluation overlapped with generation in the episode loop (`EpisodeConfig.overlap_chunks`): while the
evaluator judges one chunk's kernels, the engine generates the next chunk, so neither waits on the other.

    .venv/bin/python -m pytest tests/test_episode_overlap.py -q
"""
from __future__ import annotations

import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor

from drk.agent.episode import EpisodeConfig, new_episode, step
from drk.engines.base import FINISH_STOP, Generation
from drk.gym import EvalResult
from drk.gym.transport.base import SubmitBackend
from drk.tasks import Task

TASK = Task(id="t", name="t", source="import torch\nclass Model(torch.nn.Module):\n    pass\n")
CODE = "```python\nclass ModelNew:\n    pass\n```"
GEN_S, EVAL_S, WORKERS = 0.1, 0.4, 4  # per generated sample, per evaluation; evaluator workers


class SlowEngine:
    """Takes GEN_S per conversation (linear in the batch: chunking costs the engine nothing here)."""

    def __init__(self) -> None:
        self.calls: list[tuple[float, float, int]] = []

    def generate(self, conversations, params):
        t0 = time.monotonic()
        time.sleep(GEN_S * len(conversations))
        self.calls.append((t0, time.monotonic(), len(conversations)))
        return [[Generation(text=CODE, finish_reason=FINISH_STOP)] for _ in conversations]


class SlowGym(SubmitBackend):
    """Judges every request in EVAL_S on one of WORKERS threads, with its own wall-clock record."""

    def __init__(self) -> None:
        self.pool = ThreadPoolExecutor(WORKERS)
        self.spans: list[tuple[float, float, str]] = []
        self.lock = threading.Lock()

    def submit(self, req) -> Future:
        def judge():
            t0 = time.monotonic()
            time.sleep(EVAL_S)
            with self.lock:
                self.spans.append((t0, time.monotonic(), req.solution))
            return EvalResult(task=req.task.id, solution=req.solution, verdict="ok", compiled=True, correct=True,
                              speedup=1.5)
        return self.pool.submit(judge)


def _run(chunks: int, n: int = 8) -> tuple[list, SlowEngine, SlowGym, float, list]:
    cfg = EpisodeConfig(turns=1, overlap_chunks=chunks)
    eps = [new_episode(TASK, i, cfg) for i in range(n)]
    engine, gym = SlowEngine(), SlowGym()
    t0 = time.monotonic()
    turns = step(eps, engine, gym, cfg)
    return turns, engine, gym, time.monotonic() - t0, eps


def test_one_chunk_is_generated_while_the_previous_one_is_evaluated():
    turns, engine, gym, wall, _ = _run(chunks=2)
    assert [n for _, _, n in engine.calls] == [4, 4]
    second_generation_ends = engine.calls[1][1]
    assert min(t0 for t0, _, _ in gym.spans) < second_generation_ends - 2 * GEN_S  # judged meanwhile
    plain = 8 * GEN_S + 2 * EVAL_S  # generate all 8, then judge 8 on 4 workers
    assert wall < plain - EVAL_S / 2, (wall, plain)  # overlapped: 4g + max(4g, e) + e
    assert all(t.result is not None and t.result.verdict == "ok" and t.reward > 0 for t in turns)


def test_every_episode_keeps_its_own_turn_and_result_in_order():
    """Chunking changes when work happens, never which result belongs to which episode."""
    turns, engine, gym, _, eps = _run(chunks=3)
    assert [n for _, _, n in engine.calls] == [3, 3, 2] and len(gym.spans) == 8
    assert [t.index for t in turns] == [0] * 8
    for ep, turn in zip(eps, turns):
        assert ep.turns == [turn] and turn.result.solution == f"{ep.uuid}/turn0"


def test_one_chunk_is_the_plain_loop():
    _, engine, gym, _, _ = _run(chunks=1)
    assert [n for _, _, n in engine.calls] == [8]
    assert min(t0 for t0, _, _ in gym.spans) >= engine.calls[0][1]
