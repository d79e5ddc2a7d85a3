"""`drk collect`: multi-turn trajectories from a teacher, written to OUT/trajectories.jsonl.

One line per finished episode (`Episode.record`): uuid, task, messages (alternating user/assistant, ready
for SFT), per-turn code/result/reward/feedback, best_round, final_speedup, teacher, usage. Resumable:
uuids already in the file are skipped, so a rerun continues where an interrupted run stopped; episodes are
run in waves and written as each wave finishes, so an interruption loses at most the wave in flight.
"""
from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Callable

from drk.agent.episode import Episode, EpisodeConfig, episode_uuid, new_episode, run_episodes
from drk.records import JsonlWriter, read_jsonl, write_json
from drk.tasks import Task


def _usage(ep: Episode) -> dict:
    total: dict[str, int] = {}
    for t in ep.turns:
        for k, v in (t.usage or {}).items():
            if isinstance(v, (int, float)):
                total[k] = total.get(k, 0) + int(v)
    return total


def collect(tasks: list[Task], engine, gym, cfg: EpisodeConfig, out_dir: str | Path, *, samples: int = 1,
            teacher: str = "", wave: int = 32, on_episode: Callable[[Episode], None] | None = None) -> dict:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "trajectories.jsonl"
    done = {r.get("uuid") for r in read_jsonl(path)}
    todo = [(t, s) for t in tasks for s in range(samples) if episode_uuid(t, s) not in done]
    write_json(out / "collect_config.json", {"teacher": teacher, "samples": samples, "tasks": len(tasks),
                                             "episode": asdict(cfg)})
    stats = {"skipped": len(tasks) * samples - len(todo), "written": 0, "correct": 0}
    wave = max(1, wave)
    with JsonlWriter(path) as w:
        for i in range(0, len(todo), wave):
            eps = [new_episode(t, s, cfg) for t, s in todo[i:i + wave]]
            run_episodes(eps, engine, gym, cfg)
            for ep in eps:
                w.write(ep.record(teacher=teacher, usage=_usage(ep)))
                stats["written"] += 1
                stats["correct"] += ep.best_turn() is not None
                if on_episode is not None:
                    on_episode(ep)
    return stats
