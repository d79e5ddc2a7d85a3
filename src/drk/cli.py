"""The `drk` command line: one thin command per pipeline stage.

Each command parses its options, calls one library function and renders the result. Heavy imports
(torch, transformers, trl) happen inside the commands, so `drk --help` answers instantly. Errors a user can
cause (bad paths, malformed files, unreachable endpoints) end with one line on stderr and exit status 2.
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Optional

import typer

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="drk: reproduce and extend Dr. Kernel — evaluate, collect, fine-tune and RL-train "
                       "LLMs that write Triton kernels, all on one sandboxed evaluator (KernelGym).")



@app.callback()
def _root() -> None:
    """drk: evaluate, collect, fine-tune and RL-train LLMs that write Triton kernels (Dr. Kernel).

    Every stage reads and writes files and uses one sandboxed evaluator (KernelGym): `drk eval`,
    `drk collect`, `drk infer`, `drk sft`, `drk rl`, `drk gym serve`. `drk COMMAND --help` shows examples.
    """


KB_HELP = "KernelBench problems folder (or set DRK_KERNELBENCH); without it, the Hugging Face dataset is used."


class UserError(Exception):
    """A problem the user can fix: printed as one line, exit status 2."""


def fail(msg: str) -> None:
    typer.secho(f"drk: error: {msg}", fg="red", err=True)
    raise typer.Exit(2)


def user_errors(fn):
    """Turn the library's user-facing exceptions into one-line messages."""
    import functools

    @functools.wraps(fn)
    def wrapper(*a, **k):
        from drk.tasks import TaskError
        from drk.tasks.scaling import ScalingError

        try:
            return fn(*a, **k)
        except (UserError, TaskError, ScalingError, FileNotFoundError) as e:
            fail(str(e))
        except KeyboardInterrupt:
            typer.secho("drk: interrupted; results written so far are kept", err=True)
            raise typer.Exit(130)

    return wrapper


def load_tasks(task_file: Optional[Path], level: Optional[str], problems: Optional[str],
               kernelbench: Optional[Path], tasks_path: Optional[Path]) -> list:
    from drk.tasks import load_kernelbench, task_from_file
    from drk.tasks.queries import load_queries

    if task_file is not None:
        return [task_from_file(task_file)]
    if tasks_path is not None:
        return load_queries(str(tasks_path), problems=problems)
    return load_kernelbench(level or "1", problems, kernelbench)


def eval_options(device: str, trials: int, tolerance: float, timeout: float, timing_trials: int,
                 input_budget_mb: Optional[float], compile_baseline: bool, fp64: bool):
    from drk.gym import EvalOptions

    return EvalOptions(device=device, trials=trials, tolerance=tolerance, timeout_s=timeout,
                       timing_trials=timing_trials, input_budget_mb=input_budget_mb,
                       compile_baseline=compile_baseline, fp64_check=fp64)


def render_summary(summary: dict, title: str) -> None:
    from rich.console import Console
    from rich.table import Table

    def pct(x):
        return "–" if x is None else f"{100 * x:.1f}%"

    def num(x):
        return "–" if x is None else f"{x:.2f}x"

    t = Table(title=title)
    for col in ("group", "n", "compiled", "correct", "hacks", "fast_1", "fast_1.2", "fast_1 (compile)",
                "geomean speedup", "vs compile", "coverage"):
        t.add_column(col, justify="right" if col != "group" else "left")
    for g, s in summary.items():
        if not s.get("n"):
            continue
        t.add_row(g, str(s["n"]), pct(s["compiled"]), pct(s["correct"]), pct(s["hack_rate"]), pct(s["fast_1"]),
                  pct(s["fast_1.2"]), pct(s["fast_1_compile"]), num(s["geomean_speedup"]),
                  num(s["geomean_speedup_compile"]), pct(s["mean_coverage"]))
    Console(stderr=True).print(t)


@app.command("eval")
@user_errors
def eval_cmd(
    task_file: Optional[Path] = typer.Argument(None, help="One task file (KernelBench format) to evaluate against."),
    solution: Optional[Path] = typer.Option(None, "--solution", help="With TASK_FILE: the one candidate to evaluate."),
    solutions: Optional[Path] = typer.Option(None, "--solutions", help="Folder of candidate files (level*/ subfolders)."),
    level: Optional[str] = typer.Option(None, "--level", help="KernelBench level(s): 1, 2, 3 or 1,2."),
    problems: Optional[str] = typer.Option(None, "--problems", help="Problem ids: 1,2,19 or 1-10."),
    kernelbench: Optional[Path] = typer.Option(None, "--kernelbench", envvar="DRK_KERNELBENCH", help=KB_HELP),
    tasks_path: Optional[Path] = typer.Option(None, "--tasks", help="A folder of task files or a JSONL/parquet query set instead of KernelBench."),
    device: str = typer.Option("auto", "--device", help="cuda, cuda:N, cpu (Triton interpreter, scaled shapes) or auto."),
    workers: Optional[int] = typer.Option(None, "--workers", help="Evaluation workers (default: one per GPU; CPU: up to 4)."),
    out: Optional[Path] = typer.Option(None, "--out", help="Write results.jsonl and summary.json here."),
    trials: int = typer.Option(5, "--trials", help="Correctness trials with fresh seeded inputs."),
    tolerance: float = typer.Option(1e-2, "--tolerance", help="atol = rtol for float32 outputs (paper: 1e-2)."),
    timeout: float = typer.Option(300.0, "--timeout", help="Seconds per evaluation."),
    timing_trials: int = typer.Option(100, "--timing-trials", help="Timed calls per kernel (median reported)."),
    input_budget_mb: Optional[float] = typer.Option(None, "--input-budget-mb", help="Scale size constants so inputs fit (default: 2 MB on CPU, full size on GPU)."),
    compile_baseline: bool = typer.Option(True, "--compile-baseline/--no-compile-baseline", help="Also time the reference under torch.compile."),
    fp64: bool = typer.Option(False, "--fp64", help="Also compare against a float64 reference (max_abs_diff_fp64)."),
    as_json: bool = typer.Option(False, "--json", help="Print results as JSON lines on stdout."),
) -> None:
    """Evaluate candidate kernels: one pair, or a folder of solutions for KernelBench levels.

    \b
    Examples:
      drk eval data/queries/001_scaled_tanh_bias.py --solution my_kernel.py
      drk eval --level 1 --solutions data/solutions --kernelbench ../KernelBench/KernelBench --out runs/l1
      drk eval --level 1,2 --problems 1-20 --solutions sols/ --device cpu --workers 2
    """
    from drk.gym import LocalPool
    from drk.metrics import summarize_by_group

    opts = eval_options(device, trials, tolerance, timeout, timing_trials, input_budget_mb, compile_baseline, fp64)
    if task_file is not None:
        if solution is None:
            raise UserError("give the candidate with --solution FILE (or use --solutions DIR with --level)")
        return _eval_pair(task_file, solution, opts, workers, as_json, out)
    if solutions is None:
        raise UserError("nothing to evaluate: pass --solutions DIR (or TASK_FILE --solution FILE)")
    from drk.solutions import evaluate_candidates, find_candidates, write_summary

    tasks = load_tasks(None, level, problems, kernelbench, tasks_path)
    cands = find_candidates(tasks, solutions)
    if not cands:
        raise UserError(f"no candidate in {solutions} matches the {len(tasks)} selected task(s) "
                        "(file names must start with the problem id, e.g. 19_ReLU.py)")
    results = _run_with_progress(cands, opts, workers, out)
    summary = summarize_by_group(results)
    if out is not None:
        write_summary(out, {"summary": summary, "protocol": results[0].get("protocol") if results else {},
                            "device": results[0].get("device") if results else "", "n_candidates": len(results)})
    if as_json:
        for r in results:
            typer.echo(json.dumps(r))
    render_summary(summary, f"drk eval: {len(results)} candidates on {results[0].get('device') if results else '?'}")


def _run_with_progress(cands, opts, workers, out) -> list[dict]:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from drk.gym import LocalPool
    from drk.solutions import evaluate_candidates

    with LocalPool(device=opts.device, workers=workers) as pool, Progress(
            TextColumn("[bold]eval"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
            TextColumn("{task.description}"), transient=False, console=_stderr_console()) as prog:
        bar = prog.add_task("", total=len(cands))

        def tick(r):
            prog.update(bar, advance=1, description=f"{r.task}: {r.verdict}")

        opts.device = pool.device
        return evaluate_candidates(cands, pool, opts, out, on_result=tick)


def _stderr_console():
    from rich.console import Console

    return Console(stderr=True)


def _eval_pair(task_file: Path, solution: Path, opts, workers, as_json: bool, out: Optional[Path]) -> None:
    from drk.agent.feedback import feedback_text
    from drk.gym import EvalRequest, LocalPool
    from drk.records import JsonlWriter
    from drk.tasks import task_from_file

    task = task_from_file(task_file)
    try:
        source = solution.read_text()
    except OSError as e:
        raise UserError(f"cannot read solution {solution}: {e}") from None
    with LocalPool(device=opts.device, workers=1) as pool:
        opts.device = pool.device
        res = pool.evaluate(EvalRequest(task, source, opts, solution=str(solution))).to_dict()
    if out is not None:
        with JsonlWriter(out / "results.jsonl") as w:
            w.write(res)
    if as_json:
        typer.echo(json.dumps(res))
    else:
        typer.echo(feedback_text(res))
    raise typer.Exit(0 if res["verdict"] == "ok" else 1)


def main() -> None:  # pragma: no cover
    app()


if __name__ == "__main__":  # pragma: no cover
    main()
