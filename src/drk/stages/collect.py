"""`drk collect`: multi-turn trajectories from a teacher, written to OUT/trajectories.jsonl.

Entry: `run(CollectConfig) -> stats` loads the queries, the teacher and the evaluator, then `collect`s.

One line per finished episode (`Episode.record`): uuid, task, messages (alternating user/assistant, ready
for SFT), per-turn code/result/reward/feedback, best_round, final_speedup, teacher, usage.

Resume: uuids already in the file are skipped, so rerunning the same command continues where an interrupted
run stopped; episodes run in waves and each is written the moment it finishes, so an interruption loses at
most the episodes in flight. A directory holding a collection with other settings (collect_config.json) is
refused unless `overwrite`.

Infrastructure errors (the endpoint or the evaluator failing after retries) are not the teacher's: such an
episode never enters trajectories.jsonl (it is not training data); it is logged to OUT/infra_errors.jsonl
with verdict infra_error, the run stops after the wave in flight (InfraError) and the next run redoes it.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Callable

from drk.agent.episode import (STOPPED_INFRA, Episode, EpisodeConfig, episode_uuid, infra_failure, new_episode,
                               run_episodes)
from drk.config import option
from drk.engines.base import SamplingParams
from drk.loading import (EngineOptions, GymOptions, TaskSelection, check_device, check_out, load_engine,
                         load_training_tasks, open_gym)
from drk.records import JsonlWriter, claim_run_dir, read_jsonl, rewrite_jsonl
from drk.tasks import Task

OUTPUTS = ("trajectories.jsonl", "infra_errors.jsonl")


@dataclass
class CollectConfig:
    """What `drk collect` runs: which queries, which teacher, how many episodes, evaluated where."""
    out: Path = option(panel="out")      # writes OUT/trajectories.jsonl (and infra_errors.jsonl); rerun to resume
    tasks: TaskSelection = option(factory=TaskSelection, flat=True, panel="in", hide=("task_file",))  # a query set or KernelBench levels
    engine: EngineOptions = option(factory=EngineOptions, flat=True, panel="model")  # the teacher
    episode: EpisodeConfig = option(factory=lambda: EpisodeConfig(turns=5, sampling=SamplingParams(max_new_tokens=4096)),
                                    flat=True, panel="model")  # turns, sampling, evaluation protocol
    gym: GymOptions = option(factory=GymOptions, flat=True, panel="eval")
    samples: int = option(1, panel="model")  # episodes per query
    wave: int = option(32, panel="model")  # episodes run together (an interrupt loses at most one wave)
    overwrite: bool = option(False, panel="out")  # replace a collection in `out` made with other settings (default: refuse)


def run(cfg: CollectConfig, *, on_start: Callable[[int, int], None] | None = None,
        on_episode: Callable[[Episode], None] | None = None) -> dict:
    """`drk collect`: returns `collect`'s stats. `on_start(todo, skipped)` once the work is known,
    `on_episode` after each finished episode."""
    device = cfg.episode.eval_options.device
    check_device(device)
    check_out(cfg.out)
    tasks = load_training_tasks(cfg.tasks)
    engine = load_engine(cfg.engine, device)
    teacher = ("template" + "".join(f" {o}" for o in cfg.engine.template_opts) if cfg.engine.kind == "template"
               else cfg.engine.model or "")
    with open_gym(cfg.gym, device) as pool:
        episode = replace(cfg.episode, eval_options=replace(cfg.episode.eval_options, device=pool.device))
        return collect(tasks, engine, pool, episode, cfg.out, samples=cfg.samples, teacher=teacher, wave=cfg.wave,
                       overwrite=cfg.overwrite, on_start=on_start, on_episode=on_episode)


def _usage(ep: Episode) -> dict:
    total: dict[str, int] = {}
    for t in ep.turns:
        for k, v in (t.usage or {}).items():
            if isinstance(v, (int, float)):
                total[k] = total.get(k, 0) + int(v)
    return total


def _is_infra_record(rec: dict) -> bool:
    # "engine_error" is how older versions marked an endpoint failure that they wrongly kept as data
    return rec.get("stopped") in (STOPPED_INFRA, "engine_error")


def collect(tasks: list[Task], engine, gym, cfg: EpisodeConfig, out_dir: str | Path, *, samples: int = 1,
            teacher: str = "", wave: int = 32, on_episode: Callable[[Episode], None] | None = None,
            on_start: Callable[[int, int], None] | None = None, overwrite: bool = False) -> dict:
    """Run the missing episodes; returns {"skipped", "written", "correct", "todo"}. Raises InfraError when
    the endpoint or the evaluator failed (after the finished episodes are written)."""
    out = Path(out_dir)
    claim_run_dir(out, "collect_config.json", {"teacher": teacher, "episode": asdict(cfg)}, overwrite=overwrite,
                  outputs=OUTPUTS)
    path = out / "trajectories.jsonl"
    rewrite_jsonl(path, lambda r: not _is_infra_record(r))  # poisoned records of older versions are redone
    done = {r.get("uuid") for r in read_jsonl(path)}
    todo = [(t, s) for t in tasks for s in range(samples) if episode_uuid(t, s) not in done]
    stats = {"skipped": len(tasks) * samples - len(todo), "written": 0, "correct": 0, "todo": len(todo)}
    if on_start is not None:
        on_start(len(todo), stats["skipped"])
    if not todo:
        return stats
    wave = max(1, wave)
    with JsonlWriter(path) as w, JsonlWriter(out / "infra_errors.jsonl") as wi:
        for i in range(0, len(todo), wave):
            eps = [new_episode(t, s, cfg) for t, s in todo[i:i + wave]]
            written: set[str] = set()

            def flush(_t: int, episodes: list[Episode]) -> None:
                """Write every episode that has just finished (all turns, or stopped)."""
                for ep in episodes:
                    if ep.uuid in written or not (ep.stopped or len(ep.turns) >= cfg.turns):
                        continue
                    written.add(ep.uuid)
                    if ep.infra_error:
                        wi.write({"uuid": ep.uuid, "task": ep.task.id, "verdict": "infra_error",
                                  "error": ep.infra_error, "turn": len(ep.turns) - 1})
                    else:
                        w.write(ep.record(teacher=teacher, usage=_usage(ep)))
                        stats["written"] += 1
                        stats["correct"] += ep.best_turn() is not None
                    if on_episode is not None:  # every finished episode, infra failures included (progress)
                        on_episode(ep)

            run_episodes(eps, engine, gym, cfg, on_turn=flush)
            flush(cfg.turns, eps)
            failure = infra_failure(eps, engine, len(todo) - stats["written"])
            if failure is not None:
                raise failure
    return stats
