"""What the stages load before they run, each defined once: the tasks, a generation engine, the evaluator
and the policy model with its tokenizer.

Every stage (`drk.stages.*`) takes the option groups below (`TaskSelection`, `EngineOptions`,
`GymOptions`) from the CLI or a caller and loads them through these functions, so two stages never load
the same thing two ways, and no stage imports another. The `check_*` functions refuse a bad option value
before anything starts.

What it deliberately is not: a stage (nothing here writes a run's outputs), or the CLI (no Typer; errors a
user can fix are `ConfigError`, `TaskError` or `EngineError`, which `drk` shows as one line with exit
status 2; an evaluator that cannot be reached is `InfraError`, exit 3).

Importing it is cheap: torch, transformers and the evaluator are imported inside the functions that need
them, so `drk --help` stays instant. Tested through the stages' CLI tests (tests/test_cli.py,
tests/test_newcomer_errors.py).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from drk.config import ConfigError, option

# ------------------------------------------------------------------------------------------------ checks
_DEVICE = re.compile(r"^(auto|cpu|cuda|cuda:\d+)$")
REPORT_TO = ("none", "tensorboard", "trackio", "wandb")


def check_device(device: str, option: str = "--device") -> None:
    """Refuse devices drk does not know (e.g. `gpu`, which would otherwise mean nothing) and CUDA on a machine
    without a GPU, before anything starts."""
    if not _DEVICE.match(device or ""):
        raise ConfigError(f"unknown device {device!r} for {option}: use auto, cpu, cuda or cuda:N")
    if device.startswith("cuda"):
        import torch

        n = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if n == 0:
            raise ConfigError(f"{option} {device}: no CUDA GPU is visible on this machine; use {option} cpu "
                              "(Triton's interpreter, scaled-down shapes) or auto")
        if ":" in device and int(device.split(":")[1]) >= n:
            raise ConfigError(f"{option} {device}: only {n} CUDA device(s) visible")


def check_out(out: Path | None) -> None:
    if out is not None and out.exists() and not out.is_dir():
        raise ConfigError(f"--out {out} is an existing file; give a directory (it will be created)")


def check_report_to(report_to: str | None) -> None:
    """An unknown tracker, or one whose package is missing, is refused before training starts."""
    if report_to is None or report_to == "none":
        return
    if report_to not in REPORT_TO:
        raise ConfigError(f"unknown --report-to {report_to!r}: use one of {', '.join(REPORT_TO)}")
    import importlib.util

    if importlib.util.find_spec(report_to) is None:
        raise ConfigError(f"--report-to {report_to} needs the {report_to} package: pip install {report_to}")


# ------------------------------------------------------------------------------------------------- tasks
@dataclass
class TaskSelection:
    """Which tasks a stage runs on (`--level/--problems/--kernelbench`, a query set, or one task file)."""
    task_file: Path | None = None    # one task file (KernelBench format)
    queries: str | None = None       # a query set: folder of task files, JSONL/parquet, HF dataset id
    level: str | None = None         # KernelBench level(s): 1, 2, 3 or 1,2
    problems: str | None = None      # problem ids / rows: 1,2,19 or 1-10
    kernelbench: Path | None = option(None, envvar="DRK_KERNELBENCH")  # KernelBench problems folder; None: the Hugging Face dataset
    limit: int | None = option(None, min=1)  # only the first N tasks (a quick look)


def check_tasks(tasks: list) -> None:
    """A task that cannot even be parsed, or lacks Model/get_inputs/get_init_inputs, is the task's fault:
    refuse it by name here instead of letting every candidate fail against it (and be blamed for it)."""
    import ast

    from drk.tasks import TaskError

    for t in tasks:
        where = t.origin or t.id
        try:
            tree = ast.parse(t.source, filename=where)
        except SyntaxError as e:
            raise TaskError(f"task {t.id} is broken ({where}, line {e.lineno}: {e.msg}); fix the task file "
                            "(no candidate was evaluated)") from None
        names = {n.name for n in tree.body if isinstance(n, (ast.ClassDef, ast.FunctionDef))}
        names |= {tg.id for n in tree.body if isinstance(n, ast.Assign) for tg in n.targets
                  if isinstance(tg, ast.Name)}
        missing = [n for n in ("Model", "get_inputs", "get_init_inputs") if n not in names]
        if missing:
            raise TaskError(f"task {t.id} is broken ({where}): it does not define {', '.join(missing)}; fix the "
                            "task file (no candidate was evaluated)")


def load_tasks(sel: TaskSelection) -> list:
    """The tasks to evaluate (`drk eval`): one task file, else a query set, else KernelBench (level 1 unless
    given); checked."""
    from drk.tasks import load_kernelbench, task_from_file
    from drk.tasks.queries import load_queries

    if sel.task_file is not None:
        tasks = [task_from_file(sel.task_file)]
    elif sel.queries is not None:
        tasks = load_queries(sel.queries, problems=sel.problems)
    else:
        tasks = load_kernelbench(sel.level or "1", sel.problems, sel.kernelbench)
    tasks = tasks[:sel.limit] if sel.limit else tasks
    check_tasks(tasks)
    return tasks


def load_training_tasks(sel: TaskSelection) -> list:
    """The queries a training stage learns from (`drk collect`, `drk rl`): a query set or KernelBench levels,
    never a default; checked, with a warning when they are a benchmark's tasks (contamination)."""
    from drk.tasks import load_kernelbench
    from drk.tasks.queries import load_queries, warn_if_benchmark

    if sel.queries is None and sel.level is None:
        raise ConfigError("give --queries (a query set) or --level (KernelBench)")
    tasks = load_queries(sel.queries, sel.problems) if sel.queries else load_kernelbench(sel.level, sel.problems,
                                                                                         sel.kernelbench)
    tasks = tasks[:sel.limit] if sel.limit else tasks
    check_tasks(tasks)
    warn_if_benchmark(tasks, sel.queries or "kernelbench")
    return tasks


# ------------------------------------------------------------------------------------------------ engine
@dataclass
class EngineOptions:
    """The model that writes kernels, as `--model/--base-url/--engine` give it."""
    model: str | None = None             # local path / HF id, or the model name served at base_url
    base_url: str | None = None          # an OpenAI-compatible endpoint (vLLM, SGLang, hosted APIs)
    api_key_env: str = "OPENAI_API_KEY"  # the *name* of the variable holding the key, never the key
    concurrency: int = 16                # concurrent requests to an endpoint
    max_retries: int = 5                 # retries (exponential backoff) before a request is an infra_error
    kind: str = option("auto", flag="--engine")  # auto | openai | hf | vllm | template (drk.engines.KINDS)
    template_opts: list[str] = option(factory=list, flag="--engine-opt")  # KEY=VALUE options of the template teacher (repeatable): wrong=0.5 slow=0.2 fix=0.8 seed=0 wrong_variants=nomask,wrong_op


def _looks_like_path(model: str) -> bool:
    """A --model that can only mean a local path: starts with ./ ../ / ~, ends with /, has more than one /,
    or its first component is an existing local folder (runs/sft). Anything else may be a hub id (org/name)."""
    if model.startswith((".", "/", "~")) or model.endswith("/") or model.count("/") > 1 or "\\" in model:
        return True
    return "/" in model and Path(model.split("/", 1)[0]).is_dir()


def _template_opts(items: list[str]) -> dict:
    """`["wrong=0.5", "fix=0.8"]` -> {"wrong": 0.5, "fix": 0.8} (values read as YAML)."""
    from drk.config import parse_sets

    try:
        return parse_sets(list(items or []), nested=False)
    except ConfigError as e:
        raise ConfigError(str(e).replace("--set", "--engine-opt")) from None


def load_engine(opts: EngineOptions, device: str = "auto"):
    """The engine `opts` names, on `device` for a local model. A mistyped local path is refused here, never
    sent to the hub (slow retries, odd errors)."""
    import os

    from drk.engines import KINDS, EngineError, EngineSpec, make_engine

    if opts.kind not in KINDS:
        raise ConfigError(f"unknown --engine {opts.kind!r}: use one of {', '.join(KINDS)}")
    extra = _template_opts(opts.template_opts)
    if opts.kind == "template":  # the built-in teacher of the synthetic tasks: no model to find
        return make_engine(EngineSpec(model=opts.model or "template", kind="template", extra=extra))
    if extra:
        raise ConfigError("--engine-opt is for --engine template only (endpoint and model options have their own "
                          "flags)")
    model = opts.model
    if not model:
        raise ConfigError("give --model (a local path / HF id, or the model name served at --base-url)")
    if opts.base_url is None and not Path(model).expanduser().exists():
        if _looks_like_path(model):
            raise ConfigError(f"model not found: {model} is not an existing local directory (an HF id looks like "
                              "org/name; a served model needs --base-url)")
        if model.count("/") != 1:
            raise ConfigError(f"model not found: {model} (a local directory, an HF id like org/name, or use "
                              "--base-url)")
    # DRK_BACKOFF_BASE_S: the first retry's mean delay (tests shorten it; the default suits real endpoints)
    extra = {"backoff_base_s": float(os.environ["DRK_BACKOFF_BASE_S"])} if os.environ.get("DRK_BACKOFF_BASE_S") else {}
    spec = EngineSpec(model=model, kind=opts.kind, base_url=opts.base_url, api_key_env=opts.api_key_env,
                      max_concurrency=opts.concurrency, device="cuda" if device.startswith("cuda") else device,
                      max_retries=opts.max_retries, extra=extra)
    try:
        return make_engine(spec)
    except OSError as e:  # a local model that cannot be read
        raise EngineError(f"cannot load model {model}: {str(e).splitlines()[0]}") from None


# ------------------------------------------------------------------------------------------------ evaluator
@dataclass
class GymOptions:
    """Which evaluator backend (`--gym`), how many workers, and the evaluation cache."""
    spec: str = option("local", flag="--gym", envvar="DRK_GYM")  # local (warm workers here) | http://HOST:PORT (drk gym serve) | ray | ray://HOST:PORT
    workers: int | None = None    # evaluation workers (default: one per GPU; CPU: up to 4)
    cache: Path | None = option(None, flag="--eval-cache")  # SQLite evaluation cache: identical candidates are evaluated once


class open_gym:
    """`with open_gym(options, device) as gym:` — any backend, closed at the end. A backend that cannot
    start is an infrastructure failure (InfraError, exit 3), not the candidates'; a local one that cannot
    start here (no sandbox, an unknown --gym) is the user's to fix (ConfigError)."""

    def __init__(self, options: GymOptions, device: str) -> None:
        self.options, self.device = options, device

    def __enter__(self):
        from drk.agent.episode import InfraError
        from drk.engines.base import one_line
        from drk.gym.transport.backends import GymUnavailable, make_gym
        from drk.gym.transport.pool import SandboxError

        spec, cache = self.options.spec, self.options.cache
        try:
            self.gym = make_gym(spec, device=self.device, workers=self.options.workers,
                                cache_path=str(cache) if cache else None)
        except SandboxError as e:
            raise ConfigError(str(e)) from None
        except GymUnavailable as e:
            if not spec.startswith(("http://", "https://", "ray")):
                raise ConfigError(str(e)) from None
            raise InfraError(f"evaluator {spec}", str(e)) from None
        except (RuntimeError, OSError) as e:
            raise InfraError(f"evaluator {spec}", f"could not start ({one_line(str(e), 200)})") from None
        return self.gym

    def __exit__(self, *exc) -> None:
        self.gym.close()


# ------------------------------------------------------------------------------------------------ policy
def load_policy(name: str, *, dtype=None, seed: int = 0, save_offline_to: Path | None = None):
    """(model, tokenizer) of a policy to train: an HF id or local path (e.g. a `drk sft` checkpoint), or one
    of the offline models `drk.engines.tiny.SIZES` (tiny | small | qwen3-0.6b), built with random weights
    from `seed` and saved to `save_offline_to` when given. `dtype`: a torch dtype (default: the checkpoint's
    own; float32 for the offline models)."""
    from drk.engines.tiny import SIZES, build_tiny_model

    if name in SIZES:
        return build_tiny_model(save_offline_to, size=name, seed=seed, dtype="float32" if dtype is None else dtype)
    from transformers import AutoModelForCausalLM, AutoTokenizer

    try:
        tok = AutoTokenizer.from_pretrained(name)
        model = AutoModelForCausalLM.from_pretrained(name, dtype="auto" if dtype is None else dtype)
    except OSError as e:
        raise ConfigError(f"cannot load model {name}: {str(e).splitlines()[0]}") from None
    return model, tok
