"""`drk eval`: evaluate candidate kernels — one candidate against one task file, a folder of candidate
files, or kernels a model writes over multi-turn episodes — on one evaluator, with one metrics code
(`drk.metrics`).

Entry: `run(EvalConfig) -> EvalOutcome`; what the command prints and its exit status are the CLI's.

A folder of candidates (`solutions`): `DIR/levelN/<id>_<anything>.py` or `DIR/levelN/<id>.py` is a
candidate for problem <id> of level N; files directly in DIR apply to the only selected level (or, for a
task directory, match the task file names' numeric prefix). Several candidates per task are allowed
(`19_ReLU.py`, `19_v2.py`). KernelBench's own naming, `level_1_problem_19_sample_0_kernel.py`, is accepted
anywhere in DIR: the name carries the level and the problem id. Results are appended to OUT/results.jsonl
as they finish; a rerun with the same OUT evaluates only the candidates not there yet (OUT/eval_config.json
holds the protocol: another protocol is refused unless `overwrite`). Results with verdict infra_error (the
evaluator failed, not the candidate) are dropped at the start of the next run and evaluated again.

A model (`engine.model`): every turn of every episode is evaluated and reported per turn and
best-of-history. Files: OUT/results.jsonl (one line per episode turn: the evaluator result plus episode,
sample, turn, reward), OUT/episodes.jsonl (conversations), OUT/summary.json (with generation/evaluation
seconds and tokens through `engines.base.TimedEngine`), OUT/report.md, OUT/speedup_per_turn.png. A turn
whose reply had no code counts as not compiled. Each episode is written the moment it finishes, so an
interrupt loses only the episodes in flight; rerunning with the same OUT runs only the missing episodes
(OUT/eval_config.json identifies the run; another config is refused unless `overwrite`). A turn the
endpoint or the evaluator failed (after retries) is recorded with verdict infra_error; its episode is left
out of every score and redone by the next run.

Tested through the CLI: tests/test_cli.py, tests/test_agent.py, tests/test_newcomer_*.py.
"""
from __future__ import annotations

import math
import re
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Callable

from drk.agent.episode import (EVAL_OPTION_FLAGS, Episode, EpisodeConfig, InfraError, episode_uuid, infra_failure, new_episode,
                               run_episodes)
from drk.config import ConfigError, option
from drk.engines.base import SamplingParams, TimedEngine
from drk.gym.types import INFRA_ERROR, EvalOptions, EvalRequest, EvalResult
from drk.loading import (EngineOptions, GymOptions, TaskSelection, check_device, check_out, load_engine, load_tasks,
                         open_gym)
from drk.metrics import best_per_task, summarize, summarize_by_group
from drk.records import JsonlWriter, claim_run_dir, read_jsonl, rewrite_jsonl, write_json
from drk.tasks import Task, TaskError


@dataclass
class EvalConfig:
    """What `drk eval` evaluates, how and where: `tasks.task_file` with `solution` if given, else a
    `solutions` folder, else the kernels `engine.model` writes."""
    # --tasks (recipe key tasks_path): a folder of task files or a query set instead of KernelBench
    tasks: TaskSelection = option(factory=TaskSelection, flat=True, panel="in", hide=("task_file",),
                                  flags={"queries": "--tasks"}, keys={"queries": "tasks_path"})
    # the evaluation protocol (device, trials, ...)
    options: EvalOptions = option(factory=EvalOptions, flat=True, panel="eval", flags=EVAL_OPTION_FLAGS)
    gym: GymOptions = option(factory=GymOptions, flat=True, panel="eval")
    solution: Path | None = option(None, panel="in")  # with tasks.task_file: the one candidate
    solutions: Path | None = option(None, panel="in")  # a folder of candidate files: level1/19_ReLU.py or KernelBench's level_1_problem_19_sample_0_kernel.py
    engine: EngineOptions = option(factory=EngineOptions, flat=True, panel="model")  # with engine.model: a model writes the candidates
    episode: EpisodeConfig = option(factory=lambda: EpisodeConfig(sampling=SamplingParams(max_new_tokens=4096)),
                                    flat=True, panel="model", hide=("eval_options",))  # with a model: turns, sampling (protocol: options)
    samples: int = option(1, panel="model")  # with a model: episodes per task
    wave: int = option(64, panel="model")  # with a model: episodes run together (an interrupt loses at most one wave)
    out: Path | None = option(None, panel="out")  # results.jsonl, summary.json; a model's run defaults to runs/eval-model
    overwrite: bool = option(False, panel="out")  # replace a run in `out` made with other settings (default: refuse)


@dataclass
class EvalOutcome:
    """What `run` did, for the caller to show."""
    mode: str                            # pair | solutions | model
    results: list[EvalResult] = field(default_factory=list)  # one per candidate (pair, solutions)
    summary: dict | None = None          # metrics by group (solutions) or per turn (model)
    finished_before: bool = False        # `out` already held this finished run: nothing was done
    out: Path | None = None
    tasks: int = 0                       # tasks selected
    infra: InfraError | None = None      # results the evaluator failed: raise it after showing the rest (exit 3)


def run(cfg: EvalConfig, *, on_start: Callable[[int, int], None] | None = None,
        on_result: Callable[[EvalResult], None] | None = None,
        on_episode: Callable[[Episode], None] | None = None) -> EvalOutcome:
    """`drk eval`. `on_start(todo, skipped)` once the work is known; `on_result` after each candidate of a
    folder, `on_episode` after each finished episode of a model."""
    check_device(cfg.options.device)
    check_out(cfg.out)
    if cfg.tasks.task_file is not None:
        if cfg.solution is None:
            raise ConfigError("give the candidate with --solution FILE (or use --solutions DIR with --level)")
        return _evaluate_pair(cfg)
    if cfg.solutions is None and cfg.engine.model is not None:
        return _evaluate_with_model(cfg, on_start, on_episode)
    if cfg.solutions is None:
        raise ConfigError("nothing to evaluate: pass --solutions DIR, --model NAME, or TASK_FILE --solution FILE")
    return _evaluate_folder(cfg, on_start, on_result)


def _evaluate_pair(cfg: EvalConfig) -> EvalOutcome:
    [task] = load_tasks(cfg.tasks)
    try:
        source = cfg.solution.read_text()
    except OSError as e:
        raise ConfigError(f"cannot read solution {cfg.solution}: {e}") from None
    with open_gym(replace(cfg.gym, workers=1), cfg.options.device) as pool:
        options = replace(cfg.options, device=pool.device)
        res = pool.evaluate(EvalRequest(task, source, options, solution=str(cfg.solution)))
    if cfg.out is not None:
        with JsonlWriter(cfg.out / "results.jsonl") as w:
            w.write(res.to_dict())
    return EvalOutcome("pair", [res], out=cfg.out, tasks=1, infra=infra_error([res], cfg.gym.spec))


def _evaluate_folder(cfg: EvalConfig, on_start, on_result) -> EvalOutcome:
    tasks = load_tasks(cfg.tasks)
    cands = find_candidates(tasks, cfg.solutions)
    if not cands:
        raise ConfigError(f"no candidate in {cfg.solutions} matches the {len(tasks)} selected task(s) (file names: "
                          "19_ReLU.py, level1/19_ReLU.py or level_1_problem_19_sample_0_kernel.py)")
    new = 0

    def done(r: EvalResult) -> None:
        nonlocal new
        new += 1
        if on_result is not None:
            on_result(r)

    with open_gym(cfg.gym, cfg.options.device) as pool:
        options = replace(cfg.options, device=pool.device)
        results = evaluate_candidates(cands, pool, options, cfg.out, on_result=done, overwrite=cfg.overwrite,
                                      on_start=on_start)
    outcome = EvalOutcome("solutions", results, out=cfg.out, tasks=len(tasks))
    if new == 0 and cfg.out is not None and (cfg.out / "summary.json").exists():
        outcome.finished_before = True
        return outcome
    outcome.summary = summarize_by_group(results)
    if cfg.out is not None:
        write_json(cfg.out / "summary.json", {"summary": outcome.summary,
                                              "protocol": results[0].protocol if results else {},
                                              "device": results[0].device if results else "",
                                              "n_candidates": len(results)})
    outcome.infra = infra_error(results, cfg.gym.spec)
    return outcome


def _evaluate_with_model(cfg: EvalConfig, on_start, on_episode) -> EvalOutcome:
    tasks = load_tasks(cfg.tasks)
    engine = load_engine(cfg.engine, cfg.options.device)
    out = cfg.out or Path("runs") / "eval-model"
    check_out(out)
    with open_gym(cfg.gym, cfg.options.device) as pool:
        episode = replace(cfg.episode, eval_options=replace(cfg.options, device=pool.device))
        summary = evaluate_model(tasks, engine, pool, episode, out, samples=cfg.samples, model_name=cfg.engine.model,
                                 overwrite=cfg.overwrite, wave=cfg.wave, on_start=on_start, on_episode=on_episode)
    return EvalOutcome("model", summary=summary, finished_before=summary is None, out=out, tasks=len(tasks))


def infra_error(results: list[EvalResult], gym: str) -> InfraError | None:
    """An InfraError naming the evaluator when some results failed on infrastructure, else None."""
    bad = [r for r in results if r.verdict == INFRA_ERROR]
    if bad:
        return InfraError(f"evaluator {gym}", bad[0].error or "infrastructure error", len(bad))
    return None


# ------------------------------------------------------------------------------------ a folder of candidates
_ID = re.compile(r"^(\d+)(?:_.*)?\.py$")
_KB_NAME = re.compile(r"^level_(\d+)_problem_(\d+)(?:_sample_\d+)?(?:_.*)?\.py$")  # KernelBench's runs


@dataclass
class Candidate:
    task: Task
    path: Path

    def request(self, options: EvalOptions) -> EvalRequest:
        return EvalRequest(task=self.task, source=self.path.read_text(), options=options, solution=str(self.path))


def find_candidates(tasks: list[Task], directory: str | Path) -> list[Candidate]:
    """Match solution files to tasks by level folder and problem id."""
    root = Path(directory)
    if not root.is_dir():
        raise TaskError(f"solutions directory not found: {root}")
    by_level: dict[int | None, dict[int, Task]] = {}
    for t in tasks:
        if t.problem_id is not None:
            by_level.setdefault(t.level, {})[t.problem_id] = t
    levels = sorted(k for k in by_level if k is not None)
    out: list[Candidate] = []
    for f in sorted(root.rglob("*.py")):
        kb = _KB_NAME.match(f.name)
        if kb:
            task = by_level.get(int(kb.group(1)), {}).get(int(kb.group(2)))
            if task is None and len(levels) == 0:  # a task directory (no levels): match by problem id
                task = by_level.get(None, {}).get(int(kb.group(2)))
            if task is not None:
                out.append(Candidate(task, f))
            continue
        m = _ID.match(f.name)
        if not m:
            continue
        rel = f.relative_to(root).parts
        lvl_dir = next((int(p[5:]) for p in rel[:-1] if re.fullmatch(r"level\d+", p)), None)
        if lvl_dir is not None:
            table = by_level.get(lvl_dir, {})
        elif len(levels) <= 1:
            table = by_level.get(levels[0] if levels else None, {})
        else:
            raise TaskError(f"{f}: several levels selected; put solutions in level1/, level2/ ... subfolders")
        task = table.get(int(m.group(1)))
        if task is not None:
            out.append(Candidate(task, f))
    return out


def evaluate_candidates(cands: list[Candidate], pool, options: EvalOptions, out_dir: str | Path | None,
                        on_result: Callable[[EvalResult], None] | None = None, *, overwrite: bool = False,
                        on_start: Callable[[int, int], None] | None = None) -> list[EvalResult]:
    """Evaluate on `pool` the candidates OUT/results.jsonl does not hold yet, appending each result as it
    finishes; returns the results of all `cands` (earlier runs' read back from the file), in order."""
    writer = None
    old: dict[str, EvalResult] = {}
    if out_dir is not None:
        out = Path(out_dir)
        claim_run_dir(out, "eval_config.json", {"protocol": {k: v for k, v in options.to_dict().items()}},
                      overwrite=overwrite, outputs=("results.jsonl", "summary.json"))
        rewrite_jsonl(out / "results.jsonl", lambda r: r.get("verdict") != INFRA_ERROR)  # redo infra failures
        old = {r.get("solution"): EvalResult.from_dict(r) for r in read_jsonl(out / "results.jsonl")}
        writer = JsonlWriter(out / "results.jsonl")
    todo = [c for c in cands if str(c.path) not in old]
    if on_start is not None:
        on_start(len(todo), len(cands) - len(todo))
    reqs = []
    for c in todo:
        try:
            reqs.append(c.request(options))
        except OSError as e:
            raise TaskError(f"cannot read {c.path}: {e}") from None

    def done(i: int, r: EvalResult) -> None:
        if writer is not None:
            writer.write(r.to_dict())
        if on_result is not None:
            on_result(r)

    try:
        results = pool.evaluate_batch(reqs, on_result=done) if reqs else []
    finally:
        if writer is not None:
            writer.close()
    new = {str(c.path): r for c, r in zip(todo, results)}
    return [old.get(str(c.path)) or new[str(c.path)] for c in cands]


# ------------------------------------------------------------------------------------------------ a model
MODEL_OUTPUTS = ("results.jsonl", "episodes.jsonl", "summary.json", "report.md", "speedup_per_turn.png")
SALT = "eval"


def turn_record(ep: Episode, sample: int, t) -> dict:
    # no result: either the reply had no code (the model's fault: not compiled) or the engine failed after
    # retries (the infrastructure's: infra_error, never scored)
    verdict = "infra_error" if t.engine_error else "compile_error"
    if t.result is not None:
        base = t.result.to_dict()
    else:
        base = {"task": ep.task.id, "verdict": verdict, "compiled": False, "correct": False,
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
                            overwrite=overwrite, outputs=MODEL_OUTPUTS)
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
