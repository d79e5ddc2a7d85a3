"""The `drk` command line: one thin command per pipeline stage.

Each command parses its options into its stage's config, calls the stage's one entry function
(`drk.stages.<stage>.run`) and renders the result; what a stage does lives in its module. Heavy imports
(torch, transformers, trl) happen inside the commands, so `drk --help` answers instantly.

Exit status: 0 done (or nothing left to do); 1 a candidate failed (`drk eval TASK --solution`) or no correct
kernel (`drk infer`); 2 an error the user can fix (one line on stderr, never a traceback); 3 the
infrastructure failed (an endpoint or the evaluator, after retries): one line naming it and the cause, and
rerunning the same command retries exactly what failed; 130 interrupted (Ctrl-C): everything finished is on
disk and rerunning the same command resumes.
"""
from __future__ import annotations

import json
import os
import typing
from pathlib import Path
from typing import Optional

import typer

from drk.config import ConfigError, field_help, merge
from drk.engines.base import one_line
from drk.loading import GymOptions, TaskSelection, check_device, check_out, check_report_to, open_gym
from drk.stages.collect import CollectConfig
from drk.stages.eval import EvalConfig
from drk.stages.infer import InferConfig
from drk.stages.rl_config import RLConfig
from drk.stages.sft import SFTConfig
from drk.gym.transport.serve_config import ServeConfig
from drk.tasks.synth import SynthConfig

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  context_settings={"help_option_names": ["-h", "--help"]},
                  help="drk: reproduce and extend Dr. Kernel — evaluate, collect, fine-tune and RL-train "
                       "LLMs that write Triton kernels, all on one sandboxed evaluator (KernelGym).")

EXIT_USER, EXIT_INFRA, EXIT_INTERRUPTED = 2, 3, 130

# --help groups options into these panels; each title carries one example.
P_IN = "Inputs (e.g. --level 1 --problems 1-10 --kernelbench ~/KernelBench/KernelBench)"
P_MODEL = "Model (e.g. --base-url http://localhost:8000/v1 --model drkernel-8b)"
P_EVAL = "Evaluation (e.g. --device cpu --workers 2 --trials 5)"
P_OUT = "Output (e.g. --out runs/l1; rerun the same command to resume)"
P_TRAIN = "Training (e.g. --lr 1e-6 --seed 0 --report-to tensorboard)"
# the names a config field's option(panel=...) gives (drk.config.option)
PANELS = {"in": P_IN, "model": P_MODEL, "eval": P_EVAL, "out": P_OUT, "train": P_TRAIN,
          "access": "Access (e.g. --host 0.0.0.0 --allow 10.0.0.0/8 --token-env DRK_GYM_TOKEN)",
          "limits": "Request limits (e.g. --max-trials 20 --max-queue 4096)",
          "algo": "RL objective (e.g. --no-algo.use-mrs --algo.prs-tau 0.3)",
          "selection": "Turn selection and loss scaling (e.g. --turn-selection.flat-groups none)"}


def _version(value: bool) -> None:
    if value:
        from drk import __version__

        typer.echo(f"drk {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(version: bool = typer.Option(False, "--version", is_eager=True, callback=_version,
                                       help="Print drk's version and exit."),
          unsafe_no_sandbox: bool = typer.Option(
              False, "--unsafe-no-sandbox", envvar="DRK_UNSAFE_NO_SANDBOX",
              help="Run candidate code without OS isolation (for a machine without bubblewrap that you do not "
                   "share; every result records sandbox: none).")) -> None:
    """drk: evaluate, collect, fine-tune and RL-train LLMs that write Triton kernels (Dr. Kernel).

    Every stage reads and writes files and uses one sandboxed evaluator (KernelGym): `drk eval`,
    `drk collect`, `drk infer`, `drk sft`, `drk rl`, `drk gym serve`. `drk COMMAND -h` shows examples.
    """
    if unsafe_no_sandbox:  # read by every local evaluator pool this process starts, Ray actors included
        os.environ["DRK_UNSAFE_NO_SANDBOX"] = "1"


def fail(msg: str, code: int = EXIT_USER) -> None:
    typer.secho(f"drk: error: {one_line(msg, 400)}", fg="red", err=True)
    raise typer.Exit(code)


def user_errors(fn):
    """Errors a user can cause -> one line and exit 2; infrastructure failures -> one line naming the endpoint
    and the cause, exit 3; Ctrl-C -> what is kept and how to resume, exit 130. Never a traceback for these."""
    import functools

    @functools.wraps(fn)
    def wrapper(*a, **k):
        from drk.agent.episode import InfraError
        from drk.engines.base import EngineError
        from drk.records import RunDirError
        from drk.tasks import TaskError
        from drk.tasks.scaling import ScalingError

        try:
            return fn(*a, **k)
        except (TaskError, ScalingError, ConfigError, RunDirError, EngineError, FileNotFoundError) as e:
            fail(str(e))
        except InfraError as e:
            left = f"; {e.unfinished} item(s) not finished" if e.unfinished else ""
            fail(f"infrastructure error at {e.where}: {e.cause}{left}; nothing was scored for them: fix it and "
                 "rerun the same command to retry them", EXIT_INFRA)
        except KeyboardInterrupt:
            out = k.get("out") or k.get("resume")
            hint = (f"drk rl --resume {out}" if fn.__name__ == "rl_cmd" and out else
                    "the same command" + (f" (same --out {out})" if out else ""))
            typer.secho(f"drk: interrupted; everything finished is saved{f' in {out}' if out else ''}. "
                        f"To resume, run {hint}.", fg="yellow", err=True)
            raise typer.Exit(EXIT_INTERRUPTED)

    return wrapper


def eval_options(device: str, timeout: float, input_budget_mb: Optional[float], **protocol):
    """EvalOptions from the shared CLI options; `protocol` overrides its defaults (trials, tolerance, ...)."""
    from drk.gym import EvalOptions

    return EvalOptions(device=device, timeout_s=timeout, input_budget_mb=input_budget_mb,
                       **{k: v for k, v in protocol.items() if v is not None})


# ------------------------------------------------------------------------- options from a stage's config
def _shown(value) -> str | bool:
    import dataclasses

    if value is None or value is dataclasses.MISSING:
        return False
    if isinstance(value, (list, tuple)):
        return ",".join(map(str, value)) or False
    return str(value)


def config_options(cls, panel: str = "train"):
    """The command gets one option per field of the config dataclass `cls` (drk.config.options: nested sections
    as `--algo.use-mrs`), after its own parameters; it is called with `overrides`, the values given on the
    command line (or by an environment variable) as a nested mapping of recipe keys. An option given nowhere
    is None, so a recipe or --set under it still counts; --help shows the config's default."""
    import functools
    import inspect

    from rich.markup import escape

    from drk.config import options

    def decorate(fn):
        sig = inspect.signature(fn)
        own = [p for p in sig.parameters.values() if p.name != "overrides"]
        made: dict[str, list] = {}  # parameter name -> the fields its flag sets (--seed: the sampler's and the judge's)
        by_flag: dict[str, str] = {}
        for o in options(cls):
            if not o.cli.get("hidden"):
                made.setdefault(by_flag.setdefault(o.flag, o.key.replace(".", "__")), []).append(o)
        params = []
        for name, group in made.items():
            o = group[0]
            tp = o.type if o.type in (str, int, float, bool, Path) or typing.get_origin(o.type) is list else str
            flag = f"{o.flag}/--no-{o.flag[2:]}" if tp is bool else o.flag
            text = "; ".join(dict.fromkeys(g.help for g in group if g.help))
            shown = _shown(o.default) if len({repr(g.default) for g in group}) == 1 else False
            info = typer.Option(None, flag, *([o.cli["short"]] if "short" in o.cli else []),
                                help=escape(text), show_default=shown,
                                rich_help_panel=PANELS.get(o.cli.get("panel", panel), o.cli.get("panel", panel)),
                                envvar=o.cli.get("envvar"), min=o.cli.get("min"))
            params.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=info,
                                            annotation=Optional[tp]))

        @functools.wraps(fn)
        def command(*args, **kwargs):
            from drk.config import nest

            given = {}
            for name, group in made.items():
                value = kwargs.pop(name, None)
                if value is None or value in ([], ()):
                    continue
                for o in group:
                    if o.type not in (str, int, float, bool, Path) and typing.get_origin(o.type) is not list:
                        import yaml

                        value = yaml.safe_load(value)
                    given[o.key] = list(value) if isinstance(value, tuple) else value
            return fn(*args, overrides=nest(given), **kwargs)

        # --help shows the panels in the order of their first option: inputs, model, evaluation, training, output
        order = [P_IN, P_MODEL, P_EVAL, P_TRAIN, PANELS["algo"], PANELS["selection"], PANELS["access"], PANELS["limits"],
             P_OUT]
        ranked = sorted(own + params, key=lambda p: order.index(getattr(p.default, "rich_help_panel", None))
                        if getattr(p.default, "rich_help_panel", None) in order else -1)
        command.__signature__ = sig.replace(parameters=[p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in ranked])
        return command

    return decorate


def command_overrides(cls: type, flags: dict, sets: Optional[list[str]]) -> dict:
    """Flags over `--set key=value` (dotted keys reach nested sections, e.g. algo.use_mrs=false; a flat
    section's fields by their recipe keys, e.g. eval_device=cpu), as the config's own keys."""
    from drk.config import expand, merge, parse_sets

    return merge(expand(cls, parse_sets(sets or [], nested=True)), flags)


def config_from(cls, recipe: Optional[Path], sets: Optional[list[str]], flags: dict):
    """The stage's config: its defaults under the recipe under `--set` under the flags (drk.config)."""
    from drk.config import load_config

    return load_config(cls, recipe, command_overrides(cls, flags, sets))


# ------------------------------------------------------------------------------------ recipes and --set
def recipe_option(example: str = "recipes/eval.yaml"):
    return typer.Option(None, "-c", "--config", rich_help_panel=P_IN,
                        help=f"Recipe (YAML) whose keys set this command's options, e.g. {example}.")


def set_option():
    return typer.Option(None, "--set", metavar="KEY=VALUE", rich_help_panel=P_IN,
                        help="Override one recipe key (repeatable), e.g. --set turns=3 --set temperature=0.7.")


def overwrite_option():
    return typer.Option(False, "--overwrite", rich_help_panel=P_OUT,
                        help="Replace the run in --out even if it was made with other settings (default: refuse).")


# --------------------------------------------------------------------------------------------- progress
class StageProgress:
    """Rich progress on stderr for a long command: items done of total, ok-rate, elapsed and ETA. Shown from
    `start` on, which the stage calls once it knows the work: a command that stops before shows none."""

    def __init__(self, label: str) -> None:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self.prog = Progress(TextColumn(f"[bold]{label}"), BarColumn(), MofNCompleteColumn(),
                             TextColumn("ok {task.fields[ok]}"), TimeElapsedColumn(), TextColumn("eta"),
                             TimeRemainingColumn(), TextColumn("{task.description}"), console=_stderr_console())
        self.bar = None
        self.n = self.ok = 0
        self.shown = False

    def __enter__(self) -> "StageProgress":
        return self

    def __exit__(self, *exc) -> None:
        if self.shown:
            self.prog.__exit__(*exc)

    def start(self, todo: int, skipped: int) -> None:
        self.prog.__enter__()
        self.shown = True
        if skipped:
            self.prog.console.print(f"resuming: {skipped} finished item(s) kept, {todo} to do")
        self.bar = self.prog.add_task("", total=todo, ok="–")

    def advance(self, ok: bool, note: str = "") -> None:
        self.n += 1
        self.ok += bool(ok)
        if self.bar is not None:
            self.prog.update(self.bar, advance=1, ok=f"{self.ok / self.n:.0%}", description=note)


def _stderr_console():
    from rich.console import Console

    return Console(stderr=True)


def render_summary(summary: dict, title: str) -> None:
    from rich.console import Console
    from rich.table import Table

    def pct(x):
        return "–" if x is None else f"{100 * x:.0f}%"

    def num(x):
        return "–" if x is None else f"{x:.2f}x"

    t = Table(title=title, caption="fast_p: correct and > p x faster; (c) = vs torch.compile; cov = Triton share")
    for col in ("group", "n", "compiled", "correct", "hacks", "fast1", "fast1.2", "fast1(c)", "geomean",
                "geo(c)", "cov"):
        t.add_column(col, justify="left" if col == "group" else "right", no_wrap=True)
    for g, s in summary.items():
        if not s.get("n"):
            continue
        t.add_row(g, str(s["n"]), pct(s["compiled"]), pct(s["correct"]), pct(s["hack_rate"]), pct(s["fast_1"]),
                  pct(s["fast_1.2"]), pct(s["fast_1_compile"]), num(s["geomean_speedup"]),
                  num(s["geomean_speedup_compile"]), pct(s["mean_coverage"]))
    console = Console(stderr=True)
    if not console.is_terminal:  # logs and CI: do not squeeze the table into 80 columns
        console.width = 120
    console.print(t)


@app.command("eval")
@user_errors
@config_options(EvalConfig, panel="model")
def eval_cmd(
    task_file: Optional[Path] = typer.Argument(None, help=field_help(TaskSelection)["task_file"]),
    config: Optional[Path] = recipe_option(),
    sets: Optional[list[str]] = set_option(),
    as_json: bool = typer.Option(False, "--json", rich_help_panel=P_OUT, help="Print results as JSON lines on stdout."),
    *, overrides: dict,
) -> None:
    """Evaluate candidate kernels: one pair, a folder of solutions, or kernels a model writes.

    \b
    Examples:
      drk eval data/queries/001_scaled_tanh_bias.py --solution data/query_solutions/001_scaled_tanh_bias.py
      drk eval --level 1 --solutions data/solutions --kernelbench "$DRK_KERNELBENCH" --out runs/l1
      drk eval --level 1,2 --problems 1-20 --solutions sols/ --device cpu --workers 2
      drk eval --level 1 --limit 10 --model Qwen/Qwen3-8B --samples 4 --turns 3 --out runs/q3
      drk eval --level 1 --base-url http://localhost:8000/v1 --model drkernel-8b --samples 8 --out runs/v
    An interrupted run resumes when the same command is run again (finished items are not redone).
    """
    from drk.stages import eval as stage

    if task_file is not None:
        overrides = merge(overrides, {"tasks": {"task_file": task_file}})
    cfg = config_from(EvalConfig, config, sets, overrides)
    model, samples, out = cfg.engine.model, cfg.samples, cfg.out
    with StageProgress("eval") as prog:
        done = stage.run(cfg, on_start=prog.start,
                         on_result=lambda r: prog.advance(r.verdict == "ok", f"{r.task}: {r.verdict}"),
                         on_episode=lambda ep: prog.advance(ep.best_turn() is not None, _episode_note(ep)))
    if done.mode == "pair":
        from drk.agent.feedback import feedback_text

        res = done.results[0]
        typer.echo(json.dumps(res.to_dict()) if as_json else feedback_text(res))
        if done.infra:
            raise done.infra
        raise typer.Exit(0 if res.ok else 1)
    if done.mode == "model":
        if done.finished_before:
            typer.echo(f"nothing to do: all {done.tasks * samples} episodes are already in {done.out} (a finished "
                       "run; --overwrite starts again)")
            return
        render_summary(done.summary["per_turn"], f"drk eval --model {model}: {done.tasks} tasks x {samples} samples")
        typer.echo(f"wrote {done.out}/results.jsonl, summary.json, report.md, speedup_per_turn.png")
        return
    results = done.results
    if done.finished_before:
        typer.echo(f"nothing to do: all {len(results)} candidates are already evaluated in {out}/results.jsonl "
                   "(a finished run; --overwrite starts again)")
        return
    if as_json:
        for r in results:
            typer.echo(json.dumps(r.to_dict()))
    render_summary(done.summary, f"drk eval: {len(results)} candidates on {results[0].device if results else '?'}")
    if done.infra:
        raise done.infra


def _episode_note(ep) -> str:
    if ep.infra_error:
        return f"{ep.task.id}: infra_error"
    best = ep.best_turn()
    if best is not None:
        return f"{ep.task.id}: ok"
    last = ep.turns[-1].result if ep.turns else None
    return f"{ep.task.id}: " + (last.verdict if last is not None else "no code" if ep.turns else "no turns")


@app.command("collect")
@user_errors
@config_options(CollectConfig, panel="model")
def collect_cmd(
    config: Optional[Path] = recipe_option("recipes/collect.yaml"),
    sets: Optional[list[str]] = set_option(),
    *, overrides: dict,
) -> None:
    """Collect multi-turn trajectories from a teacher; each turn's kernel is evaluated and the feedback goes
    into the next turn.

    \b
    Examples:
      drk collect --queries data/queries --base-url https://api.openai.com/v1 --model gpt-4.1 --turns 5 --out runs/traj
      drk collect --queries rl-data.parquet --base-url http://localhost:8000/v1 --model teacher --samples 4 --out runs/t
      drk collect --queries data/synth/held_in --engine template --engine-opt wrong=0.5 --device cpu --out runs/t
    The API key is read from $OPENAI_API_KEY (or --api-key-env NAME) and never written anywhere.
    An interrupted collection resumes when the same command is run again; episodes the endpoint or the
    evaluator failed are not kept (they are retried by the next run).
    """
    from drk.stages import collect as stage

    cfg = config_from(CollectConfig, config, sets, overrides)
    out = cfg.out
    with StageProgress("collect") as prog:
        stats = stage.run(cfg, on_start=prog.start,
                          on_episode=lambda ep: prog.advance(ep.best_turn() is not None, _episode_note(ep)))
    if stats["todo"] == 0:
        typer.echo(f"nothing to do: skipped {stats['skipped']} episodes already in {out}/trajectories.jsonl "
                   "(a finished run; --overwrite starts again)")
        return
    typer.echo(f"wrote {stats['written']} episodes ({stats['correct']} with a correct turn), skipped "
               f"{stats['skipped']} already in {out}/trajectories.jsonl")


@app.command("infer")
@user_errors
@config_options(InferConfig, panel="model")
def infer_cmd(
    task_file: Path = typer.Argument(..., help=field_help(InferConfig)["task_file"]),
    config: Optional[Path] = recipe_option("recipes/infer.yaml"),
    sets: Optional[list[str]] = set_option(),
    *, overrides: dict,
) -> None:
    """Sequential test-time scaling on one task: keep every turn, rebuild each context from the first
    prompt plus the best past turns, and keep the best correct kernel.

    \b
    Examples:
      drk infer task.py --base-url http://localhost:8000/v1 --model drkernel-14b --out runs/infer
      drk infer task.py --model ./checkpoints/rl --iterations 10 --turns 5 --keep 4 --out runs/infer
    An interrupted run resumes from its last finished turn when the same command is run again.
    """
    from rich.console import Console
    from rich.table import Table

    from drk.stages import infer as stage

    cfg = config_from(InferConfig, config, sets, merge(overrides, {"task_file": task_file}))
    out = cfg.out
    table = Table()
    for col in ("turn", "context", "verdict", "speedup", "coverage", "reward"):
        table.add_column(col)

    def row(turn) -> None:
        r = turn.result
        verdict = r.verdict if r is not None else "no code"
        speedup, coverage = (r.speedup, r.coverage) if r is not None else (None, None)
        table.add_row(str(turn.index + 1), ",".join(str(i + 1) for i in turn.context_turns) or "-", verdict,
                      "–" if speedup is None else f"{speedup:.2f}x", "–" if coverage is None else f"{coverage:.0%}",
                      f"{turn.reward:.2f}")
        typer.echo(f"turn {turn.index + 1}: {verdict} reward {turn.reward:.2f}", err=True)

    _, summary = stage.run(cfg, on_turn=row)
    if summary.get("already_finished"):
        typer.echo(f"nothing to do: {out} holds this finished run ({summary['turns']} turns; --overwrite starts again)")
        return
    table.title = f"drk infer {summary['task']}"
    Console(stderr=True).print(table)
    if summary["best_turn"] is None:
        typer.echo(f"no correct kernel in {summary['turns']} turns; history in {out}/history.jsonl")
        raise typer.Exit(1)
    typer.echo(f"best: turn {summary['best_turn'] + 1} (speedup {summary['best_speedup']}) -> {out}/best.py")


@app.command("sft")
@user_errors
@config_options(SFTConfig)
def sft_cmd(
    config: Optional[Path] = recipe_option("recipes/sft.yaml"),
    sets: Optional[list[str]] = set_option(),
    overwrite: bool = overwrite_option(),
    *, overrides: dict,
) -> None:
    """Cold-start supervised fine-tuning on multi-turn trajectories (TRL SFTTrainer; loss on assistant
    turns only; optional LoRA; multi-GPU with `accelerate launch -m drk sft ...`).

    Ctrl-C saves a checkpoint after the current step; the same command then resumes from the latest
    checkpoint in --out (a finished run does nothing).

    \b
    Examples:
      drk sft -c recipes/tiny/sft.yaml --out runs/tiny-sft          # CPU, offline, a few minutes
      drk sft -c recipes/sft.yaml --model Qwen/Qwen3-8B-Base --data runs/collect/trajectories.jsonl
      drk sft -c recipes/sft.yaml --set lora=true --set lora_r=32 --report-to tensorboard --out runs/sft
    """
    from drk.stages import sft as stage

    check_out(Path(overrides["out"]) if "out" in overrides else None)
    check_report_to(overrides.get("report_to"))
    overrides = command_overrides(stage.SFTConfig, overrides, sets)

    def started(cfg, ck: Optional[Path]) -> None:
        if ck is not None:
            typer.echo(f"resuming the run in {cfg.out} from {ck.name}", err=True)

    cfg, summary = stage.run(config, overrides, overwrite=overwrite, on_start=started)
    if summary.get("finished_before"):
        typer.echo(f"nothing to do: {cfg.out} holds this finished run ({summary['steps']} steps; "
                   "--overwrite starts again)")
        return
    typer.echo(f"trained {summary['steps']} steps on {summary['examples']} conversations; loss "
               f"{summary['losses'][0] if summary['losses'] else float('nan'):.3f} -> "
               f"{summary['losses'][-1] if summary['losses'] else float('nan'):.3f}; checkpoint in {cfg.out}")


@app.command("rl")
@user_errors
@config_options(RLConfig)
def rl_cmd(
    config: Optional[Path] = recipe_option("recipes/rl.yaml"),
    sets: Optional[list[str]] = set_option(),
    stop_after: Optional[int] = typer.Option(None, "--stop-after", rich_help_panel=P_TRAIN, help="Stop after this step (for smoke runs)."),
    resume: Optional[Path] = typer.Option(None, "--resume", rich_help_panel=P_OUT, help="Continue the run in this directory from its latest checkpoint."),
    overwrite: bool = overwrite_option(),
    *, overrides: dict,
) -> None:
    """Multi-turn RL with TRLOO advantages, mismatch rejection sampling (MRS), profiling-based reward (PR)
    and profiling-based rejection sampling (PRS); resumable from any checkpoint.

    \b
    Examples:
      drk rl -c recipes/tiny/rl.yaml --out runs/tiny-rl                  # CPU, offline, a few minutes
      drk rl -c recipes/rl.yaml --model runs/sft --out runs/rl            # the paper's recipe
      drk rl --resume runs/rl                                             # continue a killed run
      drk rl -c recipes/rl.yaml --set algo.use_mrs=false --report-to tensorboard --out runs/rl-nomrs
      accelerate launch -m drk rl -c recipes/rl.yaml --model runs/sft --out runs/rl
    """
    from drk.stages import rl as stage

    check_out(Path(overrides["out"]) if "out" in overrides else None)
    check_report_to(overrides.get("report_to"))
    if (overrides.get("eval_options") or {}).get("device"):
        check_device(overrides["eval_options"]["device"], "--eval-device")
    overrides = command_overrides(stage.RLConfig, overrides, sets)
    with StageProgress("rl") as prog:
        def started(cfg, continues: Optional[int]) -> None:
            if continues is not None:
                typer.echo(f"resuming the run in {cfg.out} from step {continues}", err=True)
            prog.start(cfg.steps, 0)

        def tick(m: dict) -> None:
            prog.prog.update(prog.bar, completed=m["step"], ok=f"{m['correct']:.0%}",
                             description=f"reward {m['reward_mean']:.3f} loss {m['loss']:.4f}")

        cfg, m = stage.run(config, overrides, resume=resume, overwrite=overwrite, stop_after=stop_after,
                           on_start=started, on_step=tick)
    if m.get("finished_before"):
        typer.echo(f"nothing to do: {cfg.out} holds this finished run ({m['step']} steps; --overwrite starts again)")
        return
    if m:
        typer.echo(f"step {m['step']}: reward {m['reward_mean']:.3f}, correct {m['correct']:.2f}, "
                   f"loss {m['loss']:.4f}; run in {cfg.out}")
        if m.get("stopped") == "time_limit":
            typer.echo(f"stopped after step {m['step']} of {cfg.steps}: another step would end past time_limit_s "
                       f"{cfg.time_limit_s:g}; final/ holds this step's weights", err=True)


tasks_app = typer.Typer(no_args_is_help=True, help="Task sets the project makes itself.")
app.add_typer(tasks_app, name="tasks")


@tasks_app.command("synth")
@user_errors
@config_options(SynthConfig, panel="in")
def tasks_synth(
    config: Optional[Path] = recipe_option("my-synth.yaml"),
    sets: Optional[list[str]] = set_option(),
    overwrite: bool = overwrite_option(),
    *, overrides: dict,
) -> None:
    """Write the synthetic task family (elementwise op + row pattern, small shapes, float32/float16) as
    KernelBench-format files, split into held-in and held-out by composition.

    \b
    Examples:
      drk tasks synth --out runs/synth --seed 0
      drk collect --queries runs/synth/held_in --engine template --device cpu --out runs/synth-collect
      drk eval --tasks runs/synth/held_out --model runs/rl/final --device cpu --out runs/synth-eval
    The same seed always writes the same files; data/synth is `--seed 0` (used by recipes/smoke).
    """
    from drk.tasks.synth import SynthError, write_tasks

    cfg = config_from(SynthConfig, config, sets, overrides)
    out = cfg.out
    try:
        m = write_tasks(out, seed=cfg.seed, per_composition=cfg.per_composition, overwrite=overwrite)
    except SynthError as e:
        raise ConfigError(str(e)) from None
    typer.echo(f"wrote {m['held_in']['tasks']} held-in tasks ({len(m['held_in']['compositions'])} compositions) "
               f"and {m['held_out']['tasks']} held-out tasks ({len(m['held_out']['compositions'])} compositions) "
               f"to {out}/held_in, {out}/held_out")


gym_app = typer.Typer(no_args_is_help=True, help="The evaluator as a service.")
app.add_typer(gym_app, name="gym")


def _needs_serve_extra(fn):
    """`drk gym serve` without fastapi/uvicorn: one line saying how to install them (not a traceback from
    deep inside the server)."""
    import functools

    @functools.wraps(fn)
    def wrapper(*a, **k):
        import importlib.util

        missing = [m for m in ("fastapi", "uvicorn") if importlib.util.find_spec(m) is None]
        if missing:
            fail(f"drk gym serve needs {' and '.join(missing)} (the serve extra): pip install 'drk[serve]'")
        return fn(*a, **k)

    return wrapper


@gym_app.command("serve")
@_needs_serve_extra
@user_errors
@config_options(ServeConfig, panel="eval")
def gym_serve(
    config: Optional[Path] = recipe_option("recipes/serve.yaml"),
    sets: Optional[list[str]] = set_option(),
    *, overrides: dict,
) -> None:
    """Serve the evaluator over HTTP (FastAPI + uvicorn; pip install 'drk\\[serve]').

    Endpoints: POST /v1/submit, GET /v1/status/ID, GET /v1/result/ID, POST /v1/batch, GET /health,
    GET /metrics, and KernelGYM's POST /evaluate, POST /evaluate/batch, GET /status/ID, GET /results/ID.

    \b
    Examples:
      drk gym serve --port 10907 --device cuda
      drk gym serve --device cpu --workers 2 --eval-cache runs/cache.sqlite
      drk gym serve --host 0.0.0.0 --allow 10.0.0.0/8 --token-env DRK_GYM_TOKEN   (reachable from other nodes)
      drk rl -c recipes/rl.yaml --gym http://evalhost:10907 ...      (a remote evaluator)
    """
    import os

    from drk.gym.transport.access import AccessPolicy, bind_problem, parse_allow

    try:
        from drk.gym.transport.server import serve
    except ImportError:
        raise ConfigError("drk gym serve needs fastapi and uvicorn: pip install 'drk[serve]'") from None
    cfg = config_from(ServeConfig, config, sets, overrides)
    try:
        nets = parse_allow(cfg.allow)
    except ValueError as e:
        raise ConfigError(str(e)) from None
    token = os.environ.get(cfg.token_env) if cfg.token_env else None
    if cfg.token_env and not token:
        raise ConfigError(f"--token-env {cfg.token_env}: that environment variable is not set or empty")
    problem = bind_problem(cfg.host, nets, token)
    if problem:  # before any worker starts: nothing is exposed
        raise ConfigError(problem)
    limits = cfg.limits
    defaults = eval_options(cfg.device, min(cfg.timeout_s, limits.max_timeout_s), cfg.input_budget_mb)
    with open_gym(GymOptions(cfg.backend, cfg.workers, cfg.eval_cache), cfg.device) as gym:
        defaults.device = gym.device
        typer.echo(f"drk gym serving on http://{cfg.host}:{cfg.port} ({gym.device}, "
                   f"{getattr(gym, 'workers', '?')} workers)", err=True)
        serve(gym, cfg.host, cfg.port, defaults, limits, AccessPolicy(nets, token))


def main() -> None:  # pragma: no cover
    app()


if __name__ == "__main__":  # pragma: no cover
    main()
