"""`drk eval --model`: generate kernels with a model (local or endpoint), evaluate every turn, and report
per turn and best-of-history, with the same metrics code as `drk eval --solutions`.

Files: OUT/results.jsonl (one line per episode turn: the evaluator result plus episode, sample, turn,
reward), OUT/episodes.jsonl (conversations), OUT/summary.json, OUT/report.md, OUT/speedup_per_turn.png.
A turn whose reply had no code counts as not compiled.

Each episode is written the moment it finishes, so an interrupt loses only the episodes in flight; rerunning
with the same OUT runs only the missing episodes (OUT/eval_config.json identifies the run; another config is
refused unless `overwrite`). A turn the endpoint or the evaluator failed (after retries) is recorded with
verdict infra_error; its episode is left out of every score and redone by the next run.
"""
from __future__ import annotations

import math
import time
from dataclasses import asdict
from pathlib import Path
from typing import Callable

from drk.agent.episode import Episode, EpisodeConfig, episode_uuid, infra_failure, new_episode, run_episodes
from drk.engines.base import TimedEngine
from drk.metrics import best_per_task, summarize
from drk.records import JsonlWriter, claim_run_dir, read_jsonl, rewrite_jsonl, write_json
from drk.tasks import Task

OUTPUTS = ("results.jsonl", "episodes.jsonl", "summary.json", "report.md", "speedup_per_turn.png")
SALT = "eval"


def turn_record(ep: Episode, sample: int, t) -> dict:
    # no result: either the reply had no code (the model's fault: not compiled) or the engine failed after
    # retries (the infrastructure's: infra_error, never scored)
    verdict = "infra_error" if t.engine_error else "compile_error"
    base = t.result or {"task": ep.task.id, "verdict": verdict, "compiled": False, "correct": False,
                        "error": t.engine_error or t.extraction_error, "flags": []}
    return {**base, "episode": ep.uuid, "sample": sample, "turn": t.index, "reward": t.reward,
            "no_code": t.result is None and not t.engine_error}


def per_turn_summaries(records: list[dict], turns: int) -> dict:
    """{"turn_1": {...}, "best_of_1": {...}, ...}: metrics of turn t alone and of the best turn <= t."""
    out = {}
    for t in range(turns):
        at_t = [r for r in records if r["turn"] == t]
        # best-of-history is per episode: one best record per episode among turns <= t
        best = best_per_task([dict(r, task=r["episode"]) for r in records if r["turn"] <= t])
        out[f"turn_{t + 1}"] = summarize(at_t)
        out[f"best_of_{t + 1}"] = summarize(best)
    return out


def evaluate_model(tasks: list[Task], engine, gym, cfg: EpisodeConfig, out_dir: str | Path, *,
                   samples: int = 1, model_name: str = "", wave: int = 64, overwrite: bool = False,
                   on_start: Callable[[int, int], None] | None = None,
                   on_episode: Callable[[Episode], None] | None = None) -> dict | None:
    """Run the episodes not yet in OUT, writing each as it finishes; returns the summary, or None when OUT
    already holds this finished run (nothing is done). Raises InfraError (after writing what finished and a
    partial summary) when the endpoint or the evaluator failed; the next run redoes those episodes."""
    out = Path(out_dir)
    resumed = claim_run_dir(out, "eval_config.json", {"model": model_name, "episode": asdict(cfg)},
                            overwrite=overwrite, outputs=OUTPUTS)
    results, episodes = out / "results.jsonl", out / "episodes.jsonl"
    # an episode is done when its record is in episodes.jsonl and the infrastructure did not fail it;
    # anything else (infra failures, turns of an episode cut by an interrupt) is dropped and redone
    done = {r["uuid"] for r in read_jsonl(episodes) if r.get("uuid") and not _infra_stopped(r)}
    rewrite_jsonl(episodes, lambda r: r.get("uuid") in done)
    rewrite_jsonl(results, lambda r: r.get("episode") in done)
    plan = [(t, s) for t in tasks for s in range(samples)]
    selected = {episode_uuid(t, s, SALT) for t, s in plan}
    todo = [(t, s) for t, s in plan if episode_uuid(t, s, SALT) not in done]
    if on_start is not None:
        on_start(len(todo), len(plan) - len(todo))
    if not todo and resumed and (out / "summary.json").exists():
        return None
    timed = TimedEngine(engine)
    before = timed.usage()
    t0 = time.perf_counter()
    failure = None
    with JsonlWriter(results) as w, JsonlWriter(episodes) as we:
        for i in range(0, len(todo), max(1, wave)):
            eps = [(s, new_episode(t, s, cfg, salt=SALT)) for t, s in todo[i:i + max(1, wave)]]
            written: set[str] = set()

            def flush(_t: int, _eps) -> None:
                """Write every episode that has just finished (all turns, or stopped)."""
                for s, ep in eps:
                    if ep.uuid in written or not (ep.stopped or len(ep.turns) >= cfg.turns):
                        continue
                    written.add(ep.uuid)
                    for turn in ep.turns:
                        w.write(turn_record(ep, s, turn))
                    we.write(ep.record(teacher=model_name))
                    if on_episode is not None:
                        on_episode(ep)

            run_episodes([e for _, e in eps], timed, gym, cfg, on_turn=flush)
            flush(cfg.turns, None)
            failure = infra_failure([e for _, e in eps], engine, len(todo) - i - len(eps))
            if failure is not None:
                failure.unfinished += sum(1 for _, e in eps if e.infra_error)
                break
    wall = time.perf_counter() - t0
    used = {k: timed.usage()[k] - before[k] for k in ("prompt_tokens", "completion_tokens")}
    ep_recs = [r for r in read_jsonl(episodes) if r.get("uuid") in selected]
    infra = {r["uuid"] for r in ep_recs if _infra_stopped(r)}
    records = [r for r in read_jsonl(results) if r.get("episode") in selected and r["episode"] not in infra]
    summary = {"model": model_name, "tasks": len(tasks), "samples": samples, "turns": cfg.turns,
               "complete": failure is None, "episodes": len(ep_recs) - len(infra), "infra_errors": len(infra),
               "per_turn": per_turn_summaries(records, cfg.turns), "config": asdict(cfg),
               "seconds": {"total": round(wall, 3), "generate": round(timed.seconds, 3),
                           "evaluate_and_rest": round(wall - timed.seconds, 3)},
               "tokens": {**used, "generated_per_s": round(used["completion_tokens"] / timed.seconds, 1)
                          if timed.seconds > 0 else None}}
    write_json(out / "summary.json", summary)
    (out / "report.md").write_text(report_markdown(summary))
    plot_speedups(records, cfg.turns, out / "speedup_per_turn.png")
    if failure is not None:
        raise failure
    return summary


def _infra_stopped(rec: dict) -> bool:
    return rec.get("stopped") in ("infra_error", "engine_error")


def _pct(x) -> str:
    return "–" if x is None else f"{100 * x:.1f}%"


def _num(x) -> str:
    return "–" if x is None else f"{x:.2f}x"


def _timing_line(summary: dict) -> str:
    sec, tok = summary.get("seconds") or {}, summary.get("tokens") or {}
    if not sec:
        return ""
    rate = f" ({tok['generated_per_s']} tokens/s)" if tok.get("generated_per_s") else ""
    return (f"Wall {sec['total']:.1f} s: generation {sec['generate']:.1f} s for {tok.get('completion_tokens', 0)} "
            f"tokens{rate}, evaluation and the rest {sec['evaluate_and_rest']:.1f} s.")


def report_markdown(summary: dict) -> str:
    lines = [f"# drk eval --model {summary['model']}", "",
             f"{summary['tasks']} tasks x {summary['samples']} samples x {summary['turns']} turns. "
             f"{_timing_line(summary)}", "",
             "| group | n | compiled | correct | hacks | fast_1 | fast_1.2 | fast_1.5 | fast_2 | fast_1 (compile) "
             "| fast_1.2 (compile) | geomean speedup | vs compile |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for g, s in summary["per_turn"].items():
        if not s.get("n"):
            continue
        lines.append(f"| {g} | {s['n']} | {_pct(s['compiled'])} | {_pct(s['correct'])} | {_pct(s['hack_rate'])} | "
                     f"{_pct(s['fast_1'])} | {_pct(s['fast_1.2'])} | {_pct(s['fast_1.5'])} | {_pct(s['fast_2'])} | "
                     f"{_pct(s['fast_1_compile'])} | {_pct(s['fast_1.2_compile'])} | {_num(s['geomean_speedup'])} | "
                     f"{_num(s['geomean_speedup_compile'])} |")
    if summary.get("infra_errors"):
        lines += ["", f"{summary['infra_errors']} episode(s) failed on infrastructure (infra_error) and are left out "
                  "of every number above; rerun the same command to retry them."]
    lines += ["", "fast_p: share of all candidates (or, best_of_t, of all episodes) that are correct and more than "
              "p times faster than the eager (or torch.compile) reference. Speedups are not measured on CPU."]
    return "\n".join(lines) + "\n"


def plot_speedups(records: list[dict], turns: int, path: Path) -> None:
    """Distribution of log2 speedup of the correct kernels at each turn (a PNG)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    data = [[math.log2(r["speedup"]) for r in records if r["turn"] == t and r.get("verdict") == "ok"
             and r.get("speedup")] for t in range(turns)]
    fig, ax = plt.subplots(figsize=(1.6 + 1.2 * turns, 3.6))
    if any(data):
        ax.boxplot([d if d else [float("nan")] for d in data])
        ax.set_xticks(range(1, turns + 1), [str(t + 1) for t in range(turns)])
    else:
        ax.text(0.5, 0.5, "no speedups measured (CPU or no correct kernels)", ha="center", va="center",
                transform=ax.transAxes)
    ax.axhline(0.0, color="gray", lw=0.8)
    ax.set_xlabel("turn")
    ax.set_ylabel("log2 speedup vs eager (correct kernels)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
