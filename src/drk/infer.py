"""`drk infer task.py`: sequential test-time scaling on one task; writes OUT/history.jsonl (one line per
turn) and OUT/best.py (the best correct kernel by measured speedup; on CPU, where speed is not measured,
by reward and then the latest turn)."""
from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Callable

from drk.agent.episode import Episode, EpisodeConfig
from drk.agent.stts import STTSConfig, run_stts
from drk.records import JsonlWriter, start_fresh, write_json
from drk.tasks import Task


def run_infer(task: Task, engine, gym, cfg: EpisodeConfig, scfg: STTSConfig, out_dir: str | Path,
              on_turn: Callable[[dict], None] | None = None) -> tuple[Episode, dict]:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    start_fresh(out / "history.jsonl")
    write_json(out / "infer_config.json", {"task": task.id, "episode": asdict(cfg), "stts": asdict(scfg)})
    written = 0
    with JsonlWriter(out / "history.jsonl") as w:
        def flush(ep: Episode) -> None:
            nonlocal written
            for t in ep.turns[written:]:
                rec = {"task": task.id, **t.to_dict()}
                w.write(rec)
                if on_turn is not None:
                    on_turn(rec)
            written = len(ep.turns)

        ep = run_stts(task, engine, gym, cfg, scfg, on_turn=flush)
        flush(ep)
    best = ep.best_turn()
    summary = {"task": task.id, "turns": len(ep.turns), "best_turn": best, "stopped": ep.stopped,
               "best_speedup": ep.turns[best].speedup if best is not None else None,
               "best_reward": ep.turns[best].reward if best is not None else None}
    if best is not None:
        (out / "best.py").write_text(ep.turns[best].code or "")
    write_json(out / "summary.json", summary)
    return ep, summary
