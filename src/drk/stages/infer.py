"""`drk infer task.py`: sequential test-time scaling on one task; writes OUT/history.jsonl (one line per
turn) and OUT/best.py (the best correct kernel by measured speedup; on CPU, where speed is not measured,
by reward and then the latest turn).

Entry: `run(InferConfig)` loads the task, the model and the evaluator, then `infer_task` runs the schedule.

Resume: each turn is written as it finishes; rerunning the same command continues the schedule from the
turns in history.jsonl (OUT/infer_config.json identifies the run; another config is refused unless
`overwrite`); a finished run (summary.json says so) is not redone. best.py is removed when a run starts and
written only when it ends, so it never belongs to another run or to a stale schedule. A turn the endpoint or
the evaluator failed is not kept: the run stops (InfraError) and the next run redoes that turn.
"""
from __future__ import annotations

import itertools
import json
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Callable

from drk.agent.episode import Episode, EpisodeConfig, Turn, infra_failure, new_episode
from drk.agent.stts import STTSConfig, run_stts, total_turns
from drk.config import ConfigError, option
from drk.engines.base import SamplingParams
from drk.loading import (EngineOptions, GymOptions, TaskSelection, check_device, check_out, load_engine, load_tasks,
                         open_gym)
from drk.records import JsonlWriter, claim_run_dir, read_jsonl, rewrite_jsonl, write_json
from drk.tasks import Task

OUTPUTS = ("history.jsonl", "best.py", "summary.json")


@dataclass
class InferConfig:
    """What `drk infer` runs: one task, one model, the STTS schedule."""
    task_file: Path = option(hidden=True)  # the task (KernelBench format: Model, get_inputs, get_init_inputs)
    out: Path = option(panel="out")      # writes OUT/history.jsonl, OUT/best.py, OUT/summary.json; rerun to resume
    engine: EngineOptions = option(factory=lambda: EngineOptions(concurrency=4), flat=True, panel="model")
    # turns of the first iteration; history (--select) = the selection (topw: top-w by reward, the paper | window:
    # best consecutive window); keep = past turns carried into each new context; sampling; evaluation protocol
    episode: EpisodeConfig = option(factory=lambda: EpisodeConfig(turns=5, history="topw",
                                                                  sampling=SamplingParams(max_new_tokens=4096)),
                                    flat=True, panel="model", flags={"history": "--select"})
    iterations: int = option(10, panel="model")  # STTS iterations (the first is a multi-turn episode)
    limit: int | None = option(None, panel="in", min=1)  # stop after N turns in all: the schedule is shortened, first iteration first
    gym: GymOptions = option(factory=lambda: GymOptions(workers=1), flat=True, panel="eval")
    overwrite: bool = option(False, panel="out")  # replace a run in `out` made with other settings (default: refuse)


def run(cfg: InferConfig, *, on_turn: Callable[[Turn], None] | None = None) -> tuple[Episode | None, dict]:
    """`drk infer`: returns `infer_task`'s (episode, summary); `on_turn(turn)` after each turn written."""
    turns, keep, select = cfg.episode.turns, cfg.episode.keep, cfg.episode.history
    if select not in ("topw", "window"):
        raise ConfigError("--select must be topw or window")
    device = cfg.episode.eval_options.device
    check_device(device)
    check_out(cfg.out)
    [task] = load_tasks(TaskSelection(task_file=cfg.task_file))
    engine = load_engine(cfg.engine, device)
    scfg = STTSConfig(cfg.iterations, turns, 1, keep, select)
    if cfg.limit:
        scfg = STTSConfig(max(1, 1 + cfg.limit - min(turns, cfg.limit)), min(turns, cfg.limit), 1, keep, select)
    with open_gym(cfg.gym, device) as pool:
        episode = replace(cfg.episode, eval_options=replace(cfg.episode.eval_options, device=pool.device))
        return infer_task(task, engine, pool, episode, scfg, cfg.out, on_turn=on_turn, overwrite=cfg.overwrite)


def _finished_summary(out: Path) -> dict | None:
    try:
        s = json.loads((out / "summary.json").read_text())
    except (OSError, ValueError):
        return None
    return s if s.get("finished") else None


def infer_task(task: Task, engine, gym, cfg: EpisodeConfig, scfg: STTSConfig, out_dir: str | Path,
               on_turn: Callable[[Turn], None] | None = None, overwrite: bool = False
               ) -> tuple[Episode | None, dict]:
    """Returns (episode, summary); (None, the old summary) when OUT already holds this finished run."""
    out = Path(out_dir)
    resumed = claim_run_dir(out, "infer_config.json", {"task": task.id, "task_hash": task.source_hash,
                                                       "episode": asdict(cfg), "stts": asdict(scfg)},
                            overwrite=overwrite, outputs=OUTPUTS)
    old = _finished_summary(out) if resumed else None
    if old is not None:
        return None, {**old, "already_finished": True}
    (out / "best.py").unlink(missing_ok=True)   # never leave another run's (or an unfinished run's) best
    (out / "summary.json").unlink(missing_ok=True)
    history = out / "history.jsonl"
    # keep the turns before the first one the infrastructure failed; those are redone
    kept: list[dict] = []
    for rec in read_jsonl(history):
        if rec.get("engine_error") or rec.get("index") != len(kept):
            break
        kept.append(rec)
    rewrite_jsonl(history, lambda r, c=itertools.count(): next(c) < len(kept))  # the same first records
    ep = new_episode(task, 0, cfg, salt="stts")
    ep.turns = [Turn.from_dict(r) for r in kept]
    written = len(kept)
    with JsonlWriter(history) as w:
        def flush(ep: Episode) -> None:
            nonlocal written
            for t in ep.turns[written:]:
                if t.engine_error:  # an infrastructure failure is not a turn of the schedule
                    continue
                w.write({"task": task.id, **t.to_dict()})
                if on_turn is not None:
                    on_turn(t)
            written = len(ep.turns)

        if len(ep.turns) < total_turns(scfg):
            ep = run_stts(task, engine, gym, cfg, scfg, on_turn=flush, episode=ep)
        flush(ep)
    failure = infra_failure([ep], engine, total_turns(scfg) - len(ep.turns) + 1)
    if failure is not None:
        raise failure
    best = ep.best_turn()
    summary = {"task": task.id, "turns": len(ep.turns), "best_turn": best, "stopped": ep.stopped,
               "best_speedup": ep.turns[best].speedup if best is not None else None,
               "best_reward": ep.turns[best].reward if best is not None else None,
               "resumed_from_turn": len(kept) if kept else None, "finished": True}
    if best is not None:
        (out / "best.py").write_text(ep.turns[best].code or "")
    write_json(out / "summary.json", summary)
    return ep, summary
