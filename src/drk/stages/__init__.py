"""The pipeline's stages, side by side: `collect`, `sft`, `rl`, `eval`, `infer` — one module per `drk` command.

Each module has one entry function, `run`, that `drk.cli` calls with a config object (never a Typer
object) and whose result the CLI renders; everything the command does besides parsing options and
rendering lives there. Stages talk through files (trajectories.jsonl, checkpoints, results.jsonl) and
never import one another: what more than one of them loads (tasks, engines, the evaluator, the policy
model) is `drk.loading`; the agent loop is `drk.agent`, the RL math `drk.train`.
"""
