"""The `drk` command line: one thin command per pipeline stage.

Each command parses its options, calls one library function and renders the result. Heavy imports
(torch, transformers, trl) happen inside the commands, so `drk --help` answers instantly. Errors a user can
cause (bad paths, malformed files, unreachable endpoints) end with one line on stderr and exit status 2.
"""
from __future__ import annotations

import json
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
        from drk.config import ConfigError
        from drk.tasks import TaskError
        from drk.tasks.scaling import ScalingError

        try:
            return fn(*a, **k)
        except (UserError, TaskError, ScalingError, ConfigError, FileNotFoundError) as e:
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


def eval_options(device: str, timeout: float, input_budget_mb: Optional[float], **protocol):
    """EvalOptions from the shared CLI options; `protocol` overrides its defaults (trials, tolerance, ...)."""
    from drk.gym import EvalOptions

    return EvalOptions(device=device, timeout_s=timeout, input_budget_mb=input_budget_mb, **protocol)


def _recipe_defaults(ctx: typer.Context, param, value: Optional[Path]):
    """Eager `-c recipe.yaml`: its keys (option names, with underscores) become the command's defaults;
    flags given on the command line still win."""
    if value is None:
        return value
    from drk.config import ConfigError, load_yaml

    try:
        data = load_yaml(value)
    except ConfigError as e:
        fail(str(e))
    names = {p.name for p in ctx.command.params}
    unknown = sorted(set(data) - names)
    if unknown:
        fail(f"{value}: unknown option(s) {', '.join(unknown)} for drk {ctx.command.name}")
    ctx.default_map = {**(ctx.default_map or {}), **data}
    return value


def recipe_option():
    return typer.Option(None, "-c", "--config", is_eager=True, callback=_recipe_defaults,
                        help="Recipe (YAML) whose keys set this command's options, e.g. recipes/eval.yaml.")


GYM_HELP = "Evaluator: local (warm workers here), http://HOST:PORT (drk gym serve), ray or ray://HOST:PORT."
CACHE_HELP = "SQLite evaluation cache: identical candidates are evaluated once."


class open_gym:
    """`with open_gym(spec, device, workers, cache) as gym:` — any backend, closed at the end."""

    def __init__(self, spec: str, device: str, workers: Optional[int], cache: Optional[Path] = None) -> None:
        self.args = (spec, device, workers, str(cache) if cache else None)

    def __enter__(self):
        from drk.gym.backends import GymUnavailable, make_gym

        spec, device, workers, cache = self.args
        try:
            self.gym = make_gym(spec, device=device, workers=workers, cache_path=cache)
        except GymUnavailable as e:
            raise UserError(str(e)) from None
        return self.gym

    def __exit__(self, *exc) -> None:
        self.gym.close()


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
def eval_cmd(
    task_file: Optional[Path] = typer.Argument(None, help="One task file (KernelBench format) to evaluate against."),
    solution: Optional[Path] = typer.Option(None, "--solution", help="With TASK_FILE: the one candidate to evaluate."),
    config: Optional[Path] = recipe_option(),
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
    model: Optional[str] = typer.Option(None, "--model", help="Generate the candidates: a local model path / HF id, or the model name at --base-url."),
    base_url: Optional[str] = typer.Option(None, "--base-url", help="OpenAI-compatible endpoint (vLLM, SGLang, hosted APIs)."),
    api_key_env: str = typer.Option("OPENAI_API_KEY", "--api-key-env", help="Environment variable holding the API key."),
    samples: int = typer.Option(1, "--samples", help="With --model: episodes per task."),
    turns: int = typer.Option(3, "--turns", help="With --model: turns per episode (feedback between turns)."),
    temperature: float = typer.Option(1.0, "--temperature"),
    top_p: float = typer.Option(1.0, "--top-p"),
    max_tokens: int = typer.Option(4096, "--max-tokens", help="Max new tokens per reply."),
    concurrency: int = typer.Option(16, "--concurrency", help="Concurrent requests to an endpoint."),
    gym: str = typer.Option("local", "--gym", envvar="DRK_GYM", help=GYM_HELP),
    eval_cache: Optional[Path] = typer.Option(None, "--eval-cache", help=CACHE_HELP),
) -> None:
    """Evaluate candidate kernels: one pair, a folder of solutions, or kernels a model writes.

    \b
    Examples:
      drk eval data/queries/001_scaled_tanh_bias.py --solution my_kernel.py
      drk eval --level 1 --solutions data/solutions --kernelbench ../KernelBench/KernelBench --out runs/l1
      drk eval --level 1,2 --problems 1-20 --solutions sols/ --device cpu --workers 2
      drk eval --level 1 --problems 1-10 --model Qwen/Qwen3-8B --samples 4 --turns 3 --out runs/q3
      drk eval --level 1 --base-url http://localhost:8000/v1 --model drkernel-8b --samples 8 --out runs/v
    """
    from drk.metrics import summarize_by_group

    opts = eval_options(device, timeout, input_budget_mb, trials=trials, tolerance=tolerance,
                        timing_trials=timing_trials, compile_baseline=compile_baseline, fp64_check=fp64)
    if task_file is not None:
        if solution is None:
            raise UserError("give the candidate with --solution FILE (or use --solutions DIR with --level)")
        return _eval_pair(task_file, solution, opts, workers, as_json, out, gym, eval_cache)
    if solutions is None and model is not None:
        tasks = load_tasks(None, level, problems, kernelbench, tasks_path)
        engine = make_engine_from(model, base_url, api_key_env, concurrency, device)
        cfg = episode_config(turns, "all", 4, temperature, top_p, max_tokens, opts)
        return _eval_model(tasks, engine, cfg, opts, workers, out, samples, model, gym, eval_cache)
    if solutions is None:
        raise UserError("nothing to evaluate: pass --solutions DIR, --model NAME, or TASK_FILE --solution FILE")
    from drk.records import write_json
    from drk.solutions import find_candidates

    tasks = load_tasks(None, level, problems, kernelbench, tasks_path)
    cands = find_candidates(tasks, solutions)
    if not cands:
        raise UserError(f"no candidate in {solutions} matches the {len(tasks)} selected task(s) "
                        "(file names must start with the problem id, e.g. 19_ReLU.py)")
    results = _run_with_progress(cands, opts, workers, out, gym, eval_cache)
    summary = summarize_by_group(results)
    if out is not None:
        write_json(out / "summary.json", {"summary": summary, "protocol": results[0].get("protocol") if results else {},
                                            "device": results[0].get("device") if results else "",
                                            "n_candidates": len(results)})
    if as_json:
        for r in results:
            typer.echo(json.dumps(r))
    render_summary(summary, f"drk eval: {len(results)} candidates on {results[0].get('device') if results else '?'}")


def _run_with_progress(cands, opts, workers, out, gym="local", cache=None) -> list[dict]:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from drk.solutions import evaluate_candidates

    with open_gym(gym, opts.device, workers, cache) as pool, Progress(
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


def _eval_pair(task_file: Path, solution: Path, opts, workers, as_json: bool, out: Optional[Path], gym="local",
               cache=None) -> None:
    from drk.agent.feedback import feedback_text
    from drk.gym import EvalRequest
    from drk.records import JsonlWriter
    from drk.tasks import task_from_file

    task = task_from_file(task_file)
    try:
        source = solution.read_text()
    except OSError as e:
        raise UserError(f"cannot read solution {solution}: {e}") from None
    with open_gym(gym, opts.device, 1, cache) as pool:
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


def make_engine_from(model: Optional[str], base_url: Optional[str], api_key_env: str, concurrency: int,
                     device: str = "auto"):
    from drk.engines import EngineError, EngineSpec, make_engine

    if not model:
        raise UserError("give --model (a local path / HF id, or the model name served at --base-url)")
    if base_url is None and not Path(model).exists() and model.count("/") != 1:
        raise UserError(f"model not found: {model} (a local directory, an HF id like org/name, or use --base-url)")
    spec = EngineSpec(model=model, base_url=base_url, api_key_env=api_key_env, max_concurrency=concurrency,
                      device="cuda" if device.startswith("cuda") else device)
    try:
        return make_engine(spec)
    except EngineError as e:
        raise UserError(str(e)) from None
    except OSError as e:  # a local model that cannot be read
        raise UserError(f"cannot load model {model}: {str(e).splitlines()[0]}") from None


def episode_config(turns: int, history: str, keep: int, temperature: float, top_p: float, max_tokens: int, opts):
    from drk.agent.episode import EpisodeConfig
    from drk.engines import SamplingParams

    return EpisodeConfig(turns=turns, history=history, keep=keep, eval_options=opts,
                         sampling=SamplingParams(temperature=temperature, top_p=top_p, max_new_tokens=max_tokens))


def _eval_model(tasks, engine, cfg, opts, workers, out, samples, model_name, gym="local", cache=None) -> None:
    from drk.model_eval import evaluate_model

    out = out or Path("runs") / "eval-model"
    with open_gym(gym, opts.device, workers, cache) as pool:
        opts.device = pool.device
        summary = evaluate_model(tasks, engine, pool, cfg, out, samples=samples, model_name=model_name)
    render_summary(summary["per_turn"], f"drk eval --model {model_name}: {len(tasks)} tasks x {samples} samples")
    typer.echo(f"wrote {out}/results.jsonl, summary.json, report.md, speedup_per_turn.png")


TASK_OPTS_DOC = "Task selection as in `drk eval`: --level/--problems/--kernelbench, or --queries."


@app.command("collect")
@user_errors
def collect_cmd(
    config: Optional[Path] = recipe_option(),
    queries: Optional[str] = typer.Option(None, "--queries", help="Query set: folder of task files, JSONL/parquet (plain or Dr. Kernel RL layout), or HF dataset id."),
    level: Optional[str] = typer.Option(None, "--level", help="Use KernelBench levels instead (contamination warning)."),
    problems: Optional[str] = typer.Option(None, "--problems", help="Problem ids / rows: 1,2,19 or 1-10."),
    kernelbench: Optional[Path] = typer.Option(None, "--kernelbench", envvar="DRK_KERNELBENCH", help=KB_HELP),
    base_url: Optional[str] = typer.Option(None, "--base-url", help="Teacher: OpenAI-compatible endpoint."),
    model: Optional[str] = typer.Option(None, "--model", help="Teacher model name (or a local model path)."),
    api_key_env: str = typer.Option("OPENAI_API_KEY", "--api-key-env", help="Environment variable holding the API key."),
    out: Path = typer.Option(..., "--out", help="Writes OUT/trajectories.jsonl (appends; finished uuids are skipped)."),
    turns: int = typer.Option(5, "--turns"),
    samples: int = typer.Option(1, "--samples", help="Episodes per query."),
    temperature: float = typer.Option(1.0, "--temperature"),
    top_p: float = typer.Option(1.0, "--top-p"),
    max_tokens: int = typer.Option(4096, "--max-tokens"),
    concurrency: int = typer.Option(16, "--concurrency", help="Concurrent requests to the endpoint."),
    wave: int = typer.Option(32, "--wave", help="Episodes run (and written) together."),
    device: str = typer.Option("auto", "--device"),
    workers: Optional[int] = typer.Option(None, "--workers"),
    timeout: float = typer.Option(300.0, "--timeout"),
    input_budget_mb: Optional[float] = typer.Option(None, "--input-budget-mb"),
    gym: str = typer.Option("local", "--gym", envvar="DRK_GYM", help=GYM_HELP),
    eval_cache: Optional[Path] = typer.Option(None, "--eval-cache", help=CACHE_HELP),
) -> None:
    """Collect multi-turn trajectories from a teacher; each turn's kernel is evaluated and the feedback goes
    into the next turn.

    \b
    Examples:
      drk collect --queries data/queries --base-url https://api.openai.com/v1 --model gpt-4.1 --turns 5 --out runs/traj
      drk collect --queries rl-data.parquet --base-url http://localhost:8000/v1 --model teacher --samples 4 --out runs/t
    The API key is read from $OPENAI_API_KEY (or --api-key-env NAME) and never written anywhere.
    """
    from drk.collect import collect

    tasks = _training_tasks(queries, level, problems, kernelbench)
    engine = make_engine_from(model, base_url, api_key_env, concurrency, device)
    opts = eval_options(device, timeout, input_budget_mb)
    cfg = episode_config(turns, "all", 4, temperature, top_p, max_tokens, opts)
    with open_gym(gym, device, workers, eval_cache) as pool:
        opts.device = pool.device
        stats = collect(tasks, engine, pool, cfg, out, samples=samples, teacher=model or "", wave=wave,
                        on_episode=lambda ep: typer.echo(
                            f"{ep.uuid}: rewards {[round(t.reward, 2) for t in ep.turns]}", err=True))
    typer.echo(f"wrote {stats['written']} episodes ({stats['correct']} with a correct turn), skipped "
               f"{stats['skipped']} already in {out}/trajectories.jsonl")


def _training_tasks(queries, level, problems, kernelbench) -> list:
    from drk.tasks import load_kernelbench
    from drk.tasks.queries import load_queries, warn_if_benchmark

    if queries is None and level is None:
        raise UserError("give --queries (a query set) or --level (KernelBench)")
    tasks = load_queries(queries, problems) if queries else load_kernelbench(level, problems, kernelbench)
    warn_if_benchmark(tasks, queries or "kernelbench")
    return tasks


@app.command("infer")
@user_errors
def infer_cmd(
    task_file: Path = typer.Argument(..., help="The task (KernelBench format: Model, get_inputs, get_init_inputs)."),
    config: Optional[Path] = recipe_option(),
    model: Optional[str] = typer.Option(None, "--model", help="Local model path / HF id, or the model name at --base-url."),
    base_url: Optional[str] = typer.Option(None, "--base-url"),
    api_key_env: str = typer.Option("OPENAI_API_KEY", "--api-key-env"),
    device: str = typer.Option("auto", "--device", help="Evaluation device: cuda or cpu."),
    iterations: int = typer.Option(10, "--iterations", help="STTS iterations (the first is a multi-turn episode)."),
    turns: int = typer.Option(5, "--turns", help="Turns in the first iteration."),
    keep: int = typer.Option(4, "--keep", help="Past turns carried into each new context."),
    select: str = typer.Option("topw", "--select", help="topw (top-w by reward, the paper) or window (best consecutive window)."),
    out: Path = typer.Option(..., "--out", help="Writes OUT/history.jsonl, OUT/best.py, OUT/summary.json."),
    temperature: float = typer.Option(1.0, "--temperature"),
    top_p: float = typer.Option(1.0, "--top-p"),
    max_tokens: int = typer.Option(4096, "--max-tokens"),
    timeout: float = typer.Option(300.0, "--timeout"),
    input_budget_mb: Optional[float] = typer.Option(None, "--input-budget-mb"),
    gym: str = typer.Option("local", "--gym", envvar="DRK_GYM", help=GYM_HELP),
) -> None:
    """Sequential test-time scaling on one task: keep every turn, rebuild each context from the first
    prompt plus the best past turns, and keep the best correct kernel.

    \b
    Examples:
      drk infer task.py --base-url http://localhost:8000/v1 --model drkernel-14b --out runs/infer
      drk infer task.py --model ./checkpoints/rl --iterations 10 --turns 5 --keep 4 --out runs/infer
    """
    from rich.console import Console
    from rich.table import Table

    from drk.agent.stts import STTSConfig
    from drk.infer import run_infer
    from drk.tasks import task_from_file

    if select not in ("topw", "window"):
        raise UserError("--select must be topw or window")
    task = task_from_file(task_file)
    engine = make_engine_from(model, base_url, api_key_env, 4, device)
    opts = eval_options(device, timeout, input_budget_mb)
    cfg = episode_config(turns, select, keep, temperature, top_p, max_tokens, opts)
    table = Table(title=f"drk infer {task.id}")
    for col in ("turn", "context", "verdict", "speedup", "coverage", "reward"):
        table.add_column(col)

    def row(rec: dict) -> None:
        r = rec.get("result") or {}
        table.add_row(str(rec["index"] + 1), ",".join(str(i + 1) for i in rec.get("context_turns", [])) or "-",
                      r.get("verdict", "no code"), "–" if r.get("speedup") is None else f"{r['speedup']:.2f}x",
                      "–" if r.get("coverage") is None else f"{r['coverage']:.0%}", f"{rec['reward']:.2f}")
        typer.echo(f"turn {rec['index'] + 1}: {r.get('verdict', 'no code')} reward {rec['reward']:.2f}", err=True)

    with open_gym(gym, device, 1) as pool:
        opts.device = pool.device
        ep, summary = run_infer(task, engine, pool, cfg, STTSConfig(iterations, turns, 1, keep, select), out,
                                on_turn=row)
    Console(stderr=True).print(table)
    if summary["best_turn"] is None:
        typer.echo(f"no correct kernel in {summary['turns']} turns; history in {out}/history.jsonl")
        raise typer.Exit(1)
    typer.echo(f"best: turn {summary['best_turn'] + 1} (speedup {summary['best_speedup']}) -> {out}/best.py")


@app.command("sft")
@user_errors
def sft_cmd(
    config: Optional[Path] = typer.Option(None, "-c", "--config", help="Recipe (YAML), e.g. recipes/sft.yaml."),
    model: Optional[str] = typer.Option(None, "--model", help="HF id or local path; 'tiny' builds the offline test model."),
    data: Optional[str] = typer.Option(None, "--data", help="trajectories.jsonl from drk collect, or an HF dataset id."),
    out: Optional[Path] = typer.Option(None, "--out", help="Checkpoint directory."),
    filter: Optional[str] = typer.Option(None, "--filter", help="all | correct | upto_best."),
    lr: Optional[float] = typer.Option(None, "--lr"),
    epochs: Optional[float] = typer.Option(None, "--epochs"),
    batch_size: Optional[int] = typer.Option(None, "--batch-size", help="Global batch (sequences per step)."),
    micro_batch_size: Optional[int] = typer.Option(None, "--micro-batch-size"),
    max_length: Optional[int] = typer.Option(None, "--max-length"),
    lora: Optional[bool] = typer.Option(None, "--lora/--no-lora"),
    packing: Optional[bool] = typer.Option(None, "--packing/--no-packing"),
) -> None:
    """Cold-start supervised fine-tuning on multi-turn trajectories (TRL SFTTrainer; loss on assistant
    turns only; optional LoRA; multi-GPU with `accelerate launch -m drk sft ...`).

    \b
    Examples:
      drk sft -c recipes/tiny/sft.yaml --out runs/tiny-sft          # CPU, offline, a few minutes
      drk sft -c recipes/sft.yaml --model Qwen/Qwen3-8B-Base --data runs/collect/trajectories.jsonl
    """
    from drk.config import load_config
    from drk.train.sft import SFTConfig, run_sft

    cfg = load_config(SFTConfig, config, {"model": model, "data": data, "out": str(out) if out else None,
                                          "filter": filter, "lr": lr, "epochs": epochs, "batch_size": batch_size,
                                          "micro_batch_size": micro_batch_size, "max_length": max_length,
                                          "lora": lora, "packing": packing})
    summary = run_sft(cfg)
    typer.echo(f"trained {summary['steps']} steps on {summary['examples']} conversations; loss "
               f"{summary['losses'][0] if summary['losses'] else float('nan'):.3f} -> "
               f"{summary['losses'][-1] if summary['losses'] else float('nan'):.3f}; checkpoint in {cfg.out}")


@app.command("rl")
@user_errors
def rl_cmd(
    config: Optional[Path] = typer.Option(None, "-c", "--config", help="Recipe (YAML), e.g. recipes/rl.yaml."),
    out: Optional[Path] = typer.Option(None, "--out", help="Run directory (checkpoints, metrics.jsonl, rollouts/)."),
    resume: Optional[Path] = typer.Option(None, "--resume", help="Continue the run in this directory from its latest checkpoint."),
    model: Optional[str] = typer.Option(None, "--model", help="Policy: HF id / local path (e.g. a drk sft checkpoint); tiny | qwen3-0.6b."),
    queries: Optional[str] = typer.Option(None, "--queries", help="Query set (default data/queries)."),
    steps: Optional[int] = typer.Option(None, "--steps"),
    prompts_per_step: Optional[int] = typer.Option(None, "--prompts-per-step"),
    rollouts: Optional[int] = typer.Option(None, "--rollouts"),
    turns: Optional[int] = typer.Option(None, "--turns"),
    lr: Optional[float] = typer.Option(None, "--lr"),
    eval_device: Optional[str] = typer.Option(None, "--eval-device", help="Where kernels are evaluated: cpu, cuda, cuda:N."),
    env: Optional[str] = typer.Option(None, "--env", help="gym (the evaluator) or toy (code-block reward, for tests)."),
    gym: Optional[str] = typer.Option(None, "--gym", envvar="DRK_GYM", help=GYM_HELP),
    stop_after: Optional[int] = typer.Option(None, "--stop-after", help="Stop after this step (for smoke runs)."),
) -> None:
    """Multi-turn RL with TRLOO advantages, mismatch rejection sampling (MRS), profiling-based reward (PR)
    and profiling-based rejection sampling (PRS); resumable from any checkpoint.

    \b
    Examples:
      drk rl -c recipes/tiny/rl.yaml --out runs/tiny-rl                  # CPU, offline, a few minutes
      drk rl -c recipes/rl.yaml --model runs/sft --out runs/rl            # the paper's recipe
      drk rl --resume runs/rl                                             # continue a killed run
      accelerate launch -m drk rl -c recipes/rl.yaml --model runs/sft --out runs/rl
    """
    from drk.config import load_config
    from drk.train.rl import RLConfig, train

    overrides = {"out": str(out) if out else None, "model": model, "queries": queries, "steps": steps,
                 "prompts_per_step": prompts_per_step, "rollouts": rollouts, "turns": turns, "lr": lr,
                 "eval_device": eval_device, "env": env, "gym": gym}
    if resume is not None:
        saved = resume / "rl_config.json"
        if not saved.exists():
            raise UserError(f"nothing to resume: {saved} not found")
        from drk.config import build, merge

        cfg = build(RLConfig, merge(json.loads(saved.read_text()), overrides))
    else:
        cfg = load_config(RLConfig, config, overrides)
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn("[bold]rl"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  TextColumn("{task.description}"), console=_stderr_console()) as prog:
        bar = prog.add_task("", total=cfg.steps)

        def tick(m: dict) -> None:
            prog.update(bar, completed=m["step"], description=f"reward {m['reward_mean']:.3f} correct "
                                                                f"{m['correct']:.2f} loss {m['loss']:.4f}")

        m = train(cfg, resume=resume is not None, stop_after=stop_after, on_step=tick)
    if m:
        typer.echo(f"step {m['step']}: reward {m['reward_mean']:.3f}, correct {m['correct']:.2f}, "
                   f"loss {m['loss']:.4f}; run in {cfg.out}")


gym_app = typer.Typer(no_args_is_help=True, help="The evaluator as a service.")
app.add_typer(gym_app, name="gym")


@gym_app.command("serve")
@user_errors
def gym_serve(
    host: str = typer.Option("127.0.0.1", "--host"),
    port: int = typer.Option(10907, "--port"),
    backend: str = typer.Option("local", "--backend", help="local (warm workers here) or ray / ray://HOST:PORT."),
    device: str = typer.Option("auto", "--device", help="cuda or cpu (Triton interpreter, scaled shapes)."),
    workers: Optional[int] = typer.Option(None, "--workers"),
    eval_cache: Optional[Path] = typer.Option(None, "--eval-cache", help=CACHE_HELP),
    timeout: float = typer.Option(300.0, "--timeout", help="Default seconds per evaluation."),
    input_budget_mb: Optional[float] = typer.Option(None, "--input-budget-mb"),
    allow: Optional[str] = typer.Option(None, "--allow", help="Client addresses admitted without a token: "
                                        "CIDR[,CIDR...]. A non-loopback --host needs this and/or --token-env."),
    token_env: Optional[str] = typer.Option(None, "--token-env", help="Name of the environment variable holding "
                                            "the bearer token clients must send (drk clients: DRK_GYM_TOKEN)."),
    max_timeout: float = typer.Option(900.0, "--max-timeout", help="Most seconds a request may ask for."),
    max_trials: int = typer.Option(20, "--max-trials", help="Most correctness trials a request may ask for."),
    max_timing_trials: int = typer.Option(1000, "--max-timing-trials", help="Most timed calls a request may ask for."),
    max_input_mb: Optional[float] = typer.Option(None, "--max-input-mb", help="Cap on a request's input budget."),
    max_source_kb: int = typer.Option(200, "--max-source-kb", help="Largest reference or candidate source."),
    max_body_mb: float = typer.Option(4.0, "--max-body-mb", help="Largest request body (413 above)."),
    max_inflight_per_client: int = typer.Option(256, "--max-inflight-per-client", help="429 above."),
    max_queue: int = typer.Option(4096, "--max-queue", help="Unfinished jobs in all (503 above)."),
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

    from drk.gym.access import AccessPolicy, bind_problem, parse_allow
    from drk.gym.limits import Limits

    try:
        from drk.gym.server import serve
    except ImportError:
        raise UserError("drk gym serve needs fastapi and uvicorn: pip install 'drk[serve]'") from None
    try:
        nets = parse_allow(allow)
    except ValueError as e:
        raise UserError(str(e)) from None
    token = os.environ.get(token_env) if token_env else None
    if token_env and not token:
        raise UserError(f"--token-env {token_env}: that environment variable is not set or empty")
    problem = bind_problem(host, nets, token)
    if problem:  # before any worker starts: nothing is exposed
        raise UserError(problem)
    limits = Limits(max_timeout_s=max_timeout, max_trials=max_trials, max_timing_trials=max_timing_trials,
                    max_input_mb=max_input_mb, max_source_chars=max_source_kb * 1024,
                    max_body_bytes=int(max_body_mb * 2**20), max_inflight_per_client=max_inflight_per_client,
                    max_queue=max_queue)
    defaults = eval_options(device, min(timeout, max_timeout), input_budget_mb)
    with open_gym(backend, device, workers, eval_cache) as gym:
        defaults.device = gym.device
        typer.echo(f"drk gym serving on http://{host}:{port} ({gym.device}, {getattr(gym, 'workers', '?')} workers)",
                   err=True)
        serve(gym, host, port, defaults, limits, AccessPolicy(nets, token))


def main() -> None:  # pragma: no cover
    app()


if __name__ == "__main__":  # pragma: no cover
    main()
