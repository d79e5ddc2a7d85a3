"""`drk rl`: multi-turn RL for kernel generation, the Dr. Kernel recipe as one readable loop.

Per step: B prompts x N rollouts x up to T turns are sampled from the current policy (the local engine
wraps the training model itself, so no weight sync is needed; vLLM is optional), every turn's kernel is
evaluated (one batch per turn through the evaluator pool), then

    rewards r[p,n,t] (verdict ok → w_c + w_s·min(speedup, 3) + w_p·coverage; else 0)
    → void-turn masks → returns G = Σ_k γ^(k−t) r_k → TRLOO advantages (leave-one-out over the N
    rollouts, per turn index) → MRS mask (trainer vs rollout log-probs) × PRS mask (coverage) × flat-group
    mask → clipped policy loss (0.2/0.28, dual clip 3, token-sum per turn, summed over a nominal row count,
    ÷ 1000) → AdamW step (weight decay 0.01), grad clip 1.0 → log → checkpoint.

Where this departs from the textbook (and why):
- TRLOO instead of GRPO: GRPO's self-inclusive mean biases the advantage by (N−1)/N; no std scaling.
- Each turn is a separate training row conditioned on exactly the ids it was sampled with; prompt and
  feedback tokens are masked. An episode whose next context would exceed `max_context_tokens` stops
  (it is never truncated on one side only).
- `logp_old` is the trainer's own forward before the update; MRS compares it with the engine's
  log-probs, so rollouts whose sampling numerics drifted from training are rejected, not reweighted.
- One optimizer step per rollout batch by default (`updates_per_step` > 1 gives PPO-style mini-batches).
- Rules of the released training code the paper does not state (`loss_scaling`, `turn_selection`,
  `weight_decay`; drk.train.selection, docs/faithfulness.md) are on by default: regressed turns and
  episodes stopped by an infrastructure error are not trained, prompts whose rollouts' rewards barely
  differ are dropped, PRS reads coverage rounded to 2 decimals with a seed per data-parallel rank, and the
  loss is a sum over a fixed row count divided by 1000. Unlike the released trainer, a step whose filters
  leave fewer groups than asked for trains on what is left instead of sampling more prompts.

Everything the run needs to continue is checkpointed every `checkpoint_every` steps (weights or adapter,
optimizer, scheduler, RNG states through accelerate, step and data position); `drk rl --resume DIR`
continues exactly. Logs: OUT/metrics.jsonl per step, OUT/rollouts/step_XXXXX.jsonl, TensorBoard when
installed.

Entry: `run` (config, run directory, resume) around `train` (the loop). The options: `RLConfig`
(drk.stages.rl_config, apart so that the command line lists them without importing torch). Turns are judged by the evaluator
unless an `Environment` is passed in code (the tests' learnable toy reward: drk.testing.toy_env).
"""
from __future__ import annotations

import copy
import json
import logging
import math
import random
import shutil
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Callable, NamedTuple

import torch

from drk.config import ConfigError, build, expand, load_config, merge
from drk.engines.base import TimedEngine
from drk.engines.local import GpuHold
from drk.loading import TaskSelection, check_device, check_report_to, load_policy, load_training_tasks
from drk.metrics import phase_medians
from drk.records import JsonlWriter, write_json
from drk.stages.rl_config import RLConfig
from drk.tasks import Task
from drk.train import algos, selection
from drk.train.batch import TurnRow, completion_logprobs, micro_batches, right_aligned, rollout_logprob_tensor

log = logging.getLogger(__name__)


# ---------------------------------------------------------------------------------------------- data
class QuerySampler:
    """Seeded epochs over the query set; its position is part of the checkpoint."""

    def __init__(self, n: int, seed: int, epoch: int = 0, index: int = 0) -> None:
        self.n, self.seed, self.epoch, self.index = n, seed, epoch, index

    def _order(self) -> list[int]:
        rng = random.Random(self.seed * 7919 + self.epoch)
        order = list(range(self.n))
        rng.shuffle(order)
        return order

    def take(self, k: int) -> list[int]:
        out = []
        while len(out) < k:
            order = self._order()
            take = order[self.index:self.index + (k - len(out))]
            out += take
            self.index += len(take)
            if self.index >= self.n:
                self.epoch, self.index = self.epoch + 1, 0
        return out

    def state(self) -> dict:
        return {"epoch": self.epoch, "index": self.index}


# ---------------------------------------------------------------------------------------------- setup
def build_policy(cfg: RLConfig, device: str):
    dtype = {"bfloat16": torch.bfloat16, "float32": torch.float32}.get(cfg.dtype)
    if dtype is None:
        dtype = torch.bfloat16 if device.startswith("cuda") else torch.float32
    model, tok = load_policy(cfg.model, dtype=dtype, seed=cfg.seed)
    model = model.to(device=device, dtype=dtype)
    if cfg.gradient_checkpointing:
        model.gradient_checkpointing_enable()
    if cfg.lora:
        from peft import LoraConfig, get_peft_model

        model = get_peft_model(model, LoraConfig(r=cfg.lora_r, lora_alpha=cfg.lora_alpha,
                                                 target_modules=cfg.lora_target, task_type="CAUSAL_LM"))
    return model, tok


def build_optimizer(model, cfg: RLConfig) -> torch.optim.Optimizer:
    """AdamW over the trained parameters, decay included (the released trainer decays every parameter)."""
    return torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=cfg.lr,
                             weight_decay=cfg.weight_decay)


def saved_config(path: Path, overrides: dict | None = None) -> RLConfig:
    """A run's rl_config.json as an RLConfig, `overrides` over it. Its keys are read as a recipe's, so the
    flat sampler and evaluator keys older versions wrote (`temperature`, `eval_device`) still read."""
    return build(RLConfig, merge(expand(RLConfig, json.loads(Path(path).read_text())), overrides or {}))


# options that say where a run stops, not what it computes: the same run continues under another value
RUN_LIMITS = ("time_limit_s",)


def _identity(cfg: RLConfig) -> dict:
    return {k: v for k, v in asdict(cfg).items() if k not in RUN_LIMITS}


def check_run_dir(cfg: RLConfig, overwrite: bool = False) -> bool:
    """For a run started without --resume: True when `cfg.out` holds this very run (same rl_config.json)
    with a checkpoint, which then simply continues (the same command resumes). A directory holding another
    run is refused: its checkpoints, metrics.jsonl and rollouts would mix with this run's. With `overwrite`,
    or when the same run died before its first checkpoint, the old run's files are deleted first."""
    out = Path(cfg.out)
    if out.exists() and not out.is_dir():
        raise ConfigError(f"--out {out} is a file; give a directory (it will be created)")
    saved = out / "rl_config.json"
    if not saved.exists():
        return False
    try:
        same = _identity(saved_config(saved, {"out": cfg.out})) == _identity(cfg)
    except (OSError, ValueError, TypeError):  # ConfigError is a ValueError: a file this version cannot read
        same = False
    if not same and not overwrite:
        raise ConfigError(f"{out} holds another run (its rl_config.json differs); use another --out, "
                          "or --overwrite to delete it and start again")
    if same and not overwrite and latest_checkpoint(out) is not None:
        return True
    # drk-rl: the folder accelerate's tensorboard tracker writes (--report-to tensorboard)
    for name in ("checkpoints", "rollouts", "final", "tensorboard", "drk-rl"):
        shutil.rmtree(out / name, ignore_errors=True)
    for name in ("metrics.jsonl", "rl_config.json", "eval_cache.sqlite", "stopped.json"):
        (out / name).unlink(missing_ok=True)
    return False


@dataclass
class Environment:
    """Where the rollouts' turns are judged. By default (`env=None`) the evaluator `cfg.gym` names, with the
    reward of `drk.gym.reward`; a caller may pass another to `run`/`train` (tests pass
    `drk.testing.toy_env.toy_env()`). The run records its `name` as `env` in rl_config.json, and a run
    started with one is resumed only when it is passed again."""
    name: str
    gym: Any                                           # evaluate_batch(requests, on_result=None) -> results
    turn_reward: Callable[[str], float] | None = None  # a turn's reward from its completion, instead of the result's
    first_prompt: Callable[[Task], str] | None = None  # each episode's first user message, instead of drk.agent's


def _with_env(cfg: RLConfig, env: Environment | None) -> RLConfig:
    """The config as the run records it: `env` names the environment given in code. Without one, only the
    evaluator can be built."""
    if env is not None:
        return replace(cfg, env=env.name)
    if cfg.env != "gym":
        raise ConfigError(f"env {cfg.env!r}: drk rl builds only gym (the evaluator); a run with another "
                          "environment is started and resumed in code, passing it to drk.stages.rl.run(env=...)")
    return cfg


# ---------------------------------------------------------------------------------------------- rollouts
def _episode_config(cfg: RLConfig, step: int, turn: int):
    from drk.agent.episode import EpisodeConfig

    ecfg = EpisodeConfig(turns=cfg.turns, history="all", overlap_chunks=cfg.overlap_chunks,
                         reward=cfg.algo.reward_weights(), eval_options=cfg.eval_options)
    ecfg.sampling = replace(cfg.sampling, seed=cfg.seed * 1_000_003 + step * 1009 + turn)
    return ecfg


def new_groups(cfg: RLConfig, tasks: list, env: Environment, step: int) -> list[list]:
    """B x N fresh episodes of `step`, grouped [prompt][rollout]."""
    from drk.agent.episode import new_episode

    ecfg = _episode_config(cfg, step, 0)
    groups = [[new_episode(t, n, ecfg, salt=f"rl-step{step}") for n in range(cfg.rollouts)] for t in tasks]
    if env.first_prompt is not None:
        for g in groups:
            for ep in g:
                ep.first_messages = [{"role": "user", "content": env.first_prompt(ep.task)}]
    return groups


def first_turns(cfg: RLConfig, groups: list[list], engine, step: int) -> list:
    """The engine's first-turn replies for `groups` (of `step`, with that turn's sampling seed)."""
    from drk.agent.episode import generate_turn

    return generate_turn([ep for g in groups for ep in g], engine, _episode_config(cfg, step, 0))


def start_first(cfg: RLConfig, groups: list[list], first: list, env: Environment, step: int):
    """The first turns generated ahead (`first_turns`) handed to the evaluator at once, so they are judged
    while the current step scores and trains (its evaluator otherwise idle then): the same kernels, judged
    earlier. None when the evaluator takes no submissions."""
    from drk.agent.episode import start_turn

    return start_turn([ep for g in groups for ep in g], first, env.gym, _episode_config(cfg, step, 0))


def rollout(cfg: RLConfig, groups: list[list], engine, env: Environment, step: int, tokenizer, *,
            first: list | None = None, started=None, while_judged: Callable[[], None] | None = None) -> list[list]:
    """Up to T turns of the episodes in `groups` ([prompt][rollout], from `new_groups`); returns them.
    `first`: their first-turn replies, generated earlier (`first_turns`); `started`: those replies already with
    the evaluator (`start_first`). `while_judged`: called while the last turn's kernels are with the evaluator
    (`agent.episode.step`)."""
    from drk.agent.episode import step as turn_step

    flat = [ep for g in groups for ep in g]
    for t in range(cfg.turns):
        active = [ep for ep in flat if not ep.stopped]
        active = [ep for ep in active if _context_fits(ep, tokenizer, cfg)]
        if not active:
            break
        gens = first if t == 0 and started is None else None  # every episode is active at turn 0 (`step` checks)
        new = turn_step(active, engine, env.gym, _episode_config(cfg, step, t), gens=gens,
                        started=started if t == 0 else None,
                        while_judged=while_judged if t == cfg.turns - 1 else None)
        if env.turn_reward is not None:
            for turn in new:
                turn.reward = env.turn_reward(turn.completion)
    return groups


def _context_fits(ep, tokenizer, cfg: RLConfig) -> bool:
    if not ep.turns:
        return True
    last = ep.turns[-1]
    approx = len(last.prompt_token_ids or []) + len(last.token_ids or []) + len(tokenizer.encode(last.feedback))
    if approx + cfg.sampling.max_new_tokens > cfg.max_context_tokens:
        ep.stopped = "context_limit"
        return False
    return True


# ---------------------------------------------------------------------------------------------- the step
class StepTensors(NamedTuple):
    """Per-turn tensors of one step, (P, N, T) each."""
    rewards: torch.Tensor
    present: torch.Tensor     # the policy produced the turn (metrics are over these)
    valid: torch.Tensor       # present and not masked by `turn_selection` (advantages and the loss use these)
    correct: torch.Tensor
    coverage: torch.Tensor    # NaN where unknown
    advantages: torch.Tensor
    lengths: torch.Tensor     # (P, N): turns each rollout generated, failed ones included


def rewards_and_advantages(groups, cfg: RLConfig) -> StepTensors:
    """Rewards, masks, correctness, coverage and advantages of the episodes.

    A turn is present when the engine produced it (no engine or evaluator failure). It is valid (trained,
    and a member of its TRLOO group) unless a `turn_selection` mask removes it: a regressed turn, a turn
    without code, or any turn of an episode an infrastructure error stopped. A removed turn's reward adds
    nothing to the returns of the turns before it."""
    from drk.agent.episode import STOPPED_INFRA

    P, N, T = len(groups), cfg.rollouts, cfg.turns
    sel = cfg.turn_selection
    r = torch.zeros(P, N, T, dtype=torch.float64)
    present = torch.zeros(P, N, T, dtype=torch.bool)
    masked = torch.zeros(P, N, T, dtype=torch.bool)
    correct = torch.zeros(P, N, T, dtype=torch.bool)
    cov = torch.full((P, N, T), float("nan"), dtype=torch.float64)
    lengths = torch.zeros(P, N, dtype=torch.long)
    for p, g in enumerate(groups):
        for n, ep in enumerate(g):
            lengths[p, n] = len(ep.turns[:T])
            failed = sel.mask_failed_episodes and ep.stopped == STOPPED_INFRA
            for t, turn in enumerate(ep.turns[:T]):
                if turn.token_ids is None or turn.engine_error:
                    continue
                present[p, n, t] = True
                masked[p, n, t] = failed or (sel.mask_no_code_turns and turn.code is None)
                r[p, n, t] = turn.reward
                correct[p, n, t] = turn.ok
                if turn.result is not None and turn.result.coverage is not None:
                    cov[p, n, t] = float(turn.result.coverage)
    if sel.mask_regressed_turns:
        masked |= selection.regressed_turns(r, present)
    valid = present & ~masked
    returns = algos.returns_to_go(r, valid, cfg.algo.gamma)
    if cfg.algo.advantage == "grpo":
        adv = algos.grpo_advantages(returns, valid, scale_by_std=cfg.algo.grpo_scale_by_std)
    else:
        adv = algos.trloo_advantages(returns, valid)
    return StepTensors(r, present, valid, correct, cov, adv, lengths)


def turn_rows(groups, adv, valid, cfg: RLConfig) -> list[TurnRow]:
    rows = []
    for p, g in enumerate(groups):
        for n, ep in enumerate(g):
            for t, turn in enumerate(ep.turns[:cfg.turns]):
                if not valid[p, n, t] or not turn.token_ids:
                    continue
                rows.append(TurnRow(list(turn.prompt_token_ids), list(turn.token_ids), list(turn.logprobs or []),
                                    float(adv[p, n, t]), p * cfg.rollouts + n, (p, n, t)))
    return rows


@torch.no_grad()
def old_logprobs(model, rows, cfg, pad_id, vocab_limit, let_in: Callable[[], None] | None = None
                 ) -> list[torch.Tensor]:
    """Per row, the trainer's log-probs of its completion before the update (CPU, right-aligned). `let_in`:
    called after each micro-batch, once read back (as in `train_on_rows`)."""
    out: list[torch.Tensor | None] = [None] * len(rows)
    lengths = [r.length for r in rows]
    for mb in micro_batches(list(range(len(rows))), lengths, cfg.micro_batch_tokens):
        logp, _, _ = completion_logprobs(model, [rows[i] for i in mb], pad_id=pad_id, temperature=cfg.sampling.temperature,
                                         vocab_limit=vocab_limit)
        for j, i in enumerate(mb):
            n = len(rows[i].completion_ids)
            out[i] = logp[j, logp.shape[1] - n:].float().cpu()
        if let_in is not None:
            let_in()
    return out  # type: ignore[return-value]


def rejection_masks(rows, logp_old, st: StepTensors, cfg: RLConfig, step: int, rank: int = 0
                    ) -> tuple[torch.Tensor, dict]:
    """Per row keep mask (MRS x PRS x flat groups) and what each filter kept."""
    R = len(rows)
    stats = {"mrs_kept": 1.0, "prs_kept": 1.0, "flat_groups_kept": 1.0,
             "void_masked": float((st.present & ~st.valid).sum()) / max(1, int(st.present.sum()))}
    keep = torch.ones(R, dtype=torch.bool)
    if R == 0:
        return keep, stats
    sel = cfg.turn_selection
    if cfg.algo.use_mrs:
        lc = max(len(r.completion_ids) for r in rows)
        lt = right_aligned([lp.tolist() for lp in logp_old], lc, torch.float32, "cpu")
        lr = rollout_logprob_tensor(rows, lc, "cpu")
        mask = right_aligned([[1] * len(r.completion_ids) for r in rows], lc, torch.bool, "cpu")
        traj = torch.tensor([r.traj for r in rows])
        res = algos.mrs_mask(lt, lr, mask, traj, num_traj=int(traj.max()) + 1, **cfg.algo.mrs_kwargs())
        keep &= res.keep.cpu()
        stats["mrs_kept"] = float(res.keep.float().mean())
        stats["mrs_rho_mean"] = float(res.rho_bar[~torch.isnan(res.rho_bar)].mean()) if res.rho_bar.numel() else 1.0
    if cfg.algo.use_prs:
        g = torch.Generator().manual_seed(selection.prs_seed(cfg.seed, step, rank, sel.prs_seed_per_rank))
        cov = selection.round_coverage(st.coverage, sel.prs_coverage_decimals)
        prs = algos.prs_mask(st.correct, cov, st.valid, generator=g, **cfg.algo.prs_kwargs())
        pk = torch.tensor([bool(prs[r.pnt]) for r in rows])
        keep &= pk
        stats["prs_kept"] = float(pk.float().mean())
    if sel.flat_groups != "none":
        flat = selection.flat_group_keep(st.rewards, st.valid, st.lengths, mode=sel.flat_groups,
                                         min_std=sel.flat_group_std)
        fk = torch.tensor([bool(flat[r.pnt]) for r in rows])
        keep &= fk
        stats["flat_groups_kept"] = float(fk.float().mean())
    return keep, stats


def train_on_rows(model, optimizer, scheduler, accelerator, rows, logp_old, keep, cfg: RLConfig, pad_id,
                  vocab_limit, let_in: Callable[[], None] | None = None) -> dict:
    """`updates_per_step` optimizer steps over the kept rows.

    The loss of a mini-batch is its token-sum per turn averaged over the kept turns of *all* ranks (or the
    token mean, for aggregation "token-mean"): every rank scales its micro-batches by W / global count,
    accumulates without synchronising, and the gradients are summed across ranks and divided by W once.
    That equals the single-process gradient on the same rows whatever their split, and a rank with
    nothing to train still joins every collective.

    `loss_scaling` sets what is backpropagated: with the default "nominal" denominator a micro-batch's
    turn-sum is weighted by its rows over a fixed row count (`selection.nominal_rows`, split evenly over the
    updates) rather than over the kept count, and everything is divided by `scale_factor`, as the released
    trainer does. The logged `loss` stays the mean over kept turns (or tokens), whatever the scaling.
    `let_in`: called after each micro-batch, once the device has finished it (the loss read back), so an
    evaluator waiting to measure on this GPU goes first (`GpuHold.let_in`)."""
    W = accelerator.num_processes
    idx = [i for i in range(len(rows)) if keep[i] and rows[i].completion_ids]
    stats: dict = {"loss": 0.0, "clipfrac_low": 0.0, "clipfrac_high": 0.0, "dual_clip_frac": 0.0,
                   "approx_kl": 0.0, "grad_norm": 0.0, "entropy": None, "train_tokens": 0, "skipped_updates": 0}
    random.Random(cfg.seed + len(idx)).shuffle(idx)
    chunks = [idx[k::cfg.updates_per_step] for k in range(cfg.updates_per_step)]
    lengths = [r.length for r in rows]
    agg = cfg.algo.aggregation
    params = [p for p in model.parameters() if p.requires_grad]
    ls = cfg.loss_scaling
    nominal = None
    if ls.denominator == "nominal":
        nominal = selection.nominal_rows(cfg.prompts_per_step, cfg.rollouts, cfg.turns, ls.nominal_rows)
        nominal /= cfg.updates_per_step
    n_stat, n_steps = 0, 0
    for chunk in chunks:
        local = len(chunk) if agg == "turn-sum" else sum(len(rows[i].completion_ids) for i in chunk)
        denom = _sum_across(accelerator, float(local))
        if denom == 0:
            continue
        with accelerator.no_sync(model):
            for mb in micro_batches(chunk, lengths, cfg.micro_batch_tokens):
                sub = [rows[i] for i in mb]
                logp, mask, ent = completion_logprobs(model, sub, pad_id=pad_id, temperature=cfg.sampling.temperature,
                                                      vocab_limit=vocab_limit, with_entropy=stats["entropy"] is None)
                if ent is not None:
                    stats["entropy"] = ent
                lc = logp.shape[1]
                old = right_aligned([logp_old[i].tolist() for i in mb], lc, torch.float32, logp.device)
                adv = torch.tensor([r.advantage for r in sub], dtype=torch.float32, device=logp.device)
                loss, s = algos.policy_loss(logp.float(), old, adv, mask, None, **cfg.algo.loss_kwargs())
                n_tok = int(mask.sum())
                weight = selection.micro_batch_weight(len(mb), n_tok, aggregation=agg, kept=denom, nominal=nominal,
                                                      scale_factor=ls.scale_factor)
                accelerator.backward(loss * weight * W)
                logged_weight = (len(mb) if agg == "turn-sum" else n_tok) / denom
                stats["loss"] += float(loss.detach()) * logged_weight
                for k in ("clipfrac_low", "clipfrac_high", "dual_clip_frac", "approx_kl"):
                    stats[k] += float(s.get(k, 0.0)) * len(mb)
                n_stat += len(mb)
                stats["train_tokens"] += sum(r.length for r in sub)
                if let_in is not None:
                    let_in()
        if W > 1:
            for p in params:
                if p.grad is None:
                    p.grad = torch.zeros_like(p)
                torch.distributed.all_reduce(p.grad)
                p.grad.div_(W)
        stats["grad_norm"] = float(accelerator.clip_grad_norm_(params, cfg.grad_clip))
        n_steps += 1
        if not math.isfinite(stats["grad_norm"]):  # same on every rank (after the all-reduce): all skip together
            # clipping by a NaN/inf norm would write NaN into every weight and end the run's learning for good
            stats["skipped_updates"] += 1
            log.warning("update skipped: gradient norm is %s", stats["grad_norm"])
            optimizer.zero_grad(set_to_none=True)
            continue
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad(set_to_none=True)
    for k in ("clipfrac_low", "clipfrac_high", "dual_clip_frac", "approx_kl"):
        stats[k] /= max(1, n_stat)
    stats["loss"] = _sum_across(accelerator, stats["loss"]) / max(1, n_steps)
    return stats


_clock = time.monotonic  # the time limit's clock (a test replaces it)


def _out_of_time(limit_s: float | None, began: float, durations: list[float], accelerator) -> bool:
    """Would one more step, as slow as the slowest of the last three after the first, end past `limit_s`?
    The first step counts only until there is another: it also starts the evaluation workers and compiles,
    several times a later step. Every rank stops together: one that stopped alone would leave its peers
    waiting in the next collective."""
    if limit_s is None:
        return False
    step_s = max(durations[1:][-3:] or durations)
    late = float(_clock() - began + step_s > limit_s)
    return (_sum_across(accelerator, late) if accelerator.num_processes > 1 else late) > 0


def _sum_across(accelerator, value: float) -> float:
    if accelerator.num_processes == 1:
        return value
    t = torch.tensor([value], dtype=torch.float64, device=accelerator.device)
    return float(accelerator.reduce(t, reduction="sum"))


# ---------------------------------------------------------------------------------------------- logging
def step_metrics(groups, st: StepTensors, mask_stats, train_stats, times, gen_tokens) -> dict:
    """Rewards and correctness over every turn the policy produced; advantages over the trained ones."""
    v, r, correct, cov = st.present, st.rewards, st.correct, st.coverage
    tv, adv = st.valid, st.advantages
    rv = r[v]
    speedups = [t.speedup for g in groups for ep in g for t in ep.turns if t.ok and t.speedup]
    fast1 = sum(1 for g in groups for ep in g for t in ep.turns if t.ok and (t.speedup or 0) > 1.0)
    n_turns = int(v.sum())
    m = {"reward_mean": float(rv.mean()) if n_turns else 0.0, "reward_max": float(rv.max()) if n_turns else 0.0,
         "correct": float(correct[v].float().mean()) if n_turns else 0.0,
         "fast_1": fast1 / max(1, n_turns), "speedup_mean": sum(speedups) / len(speedups) if speedups else None,
         "coverage_mean": float(torch.nanmean(cov[v & correct])) if bool((v & correct).any()) else None,
         "adv_mean": float(adv[tv].mean()) if tv.any() else 0.0,
         "adv_std": float(adv[tv].std()) if int(tv.sum()) > 1 else 0.0,
         "adv_abs_max": float(adv[tv].abs().max()) if tv.any() else 0.0, "turns": n_turns,
         "gen_tokens": gen_tokens, "gen_tokens_per_s": gen_tokens / max(1e-9, times["generate"]),
         "train_tokens_per_s": train_stats["train_tokens"] / max(1e-9, times["train"]),
         "seconds": dict(times)}
    results = [t.result for g in groups for ep in g for t in ep.turns if t.result is not None]
    m["eval_phases_s"] = phase_medians(results)  # where the step's evaluation time went (median per phase)
    m.update(mask_stats)
    m.update(train_stats)
    return m


def rollout_records(groups, step: int):
    for p, g in enumerate(groups):
        for n, ep in enumerate(g):
            for t in ep.turns:
                res = t.result
                yield {"step": step, "prompt": p, "rollout": n, "task": ep.task.id, "turn": t.index,
                       "reward": t.reward, "verdict": res.verdict if res else None,
                       "speedup": res.speedup if res else None, "coverage": res.coverage if res else None,
                       "completion": t.completion, "feedback": t.feedback, "tokens": len(t.token_ids or []),
                       "error": ((res.error if res else "") or t.extraction_error or t.engine_error)[:500]}


# ---------------------------------------------------------------------------------------------- checkpoints
def save_checkpoint(out: Path, step: int, accelerator, model, tokenizer, sampler: QuerySampler, cfg: RLConfig) -> None:
    ck = out / "checkpoints"
    tmp = ck / f".tmp-step_{step:05d}"
    final = ck / f"step_{step:05d}"
    shutil.rmtree(tmp, ignore_errors=True)
    accelerator.save_state(str(tmp / "state"))
    if accelerator.is_main_process:
        accelerator.unwrap_model(model).save_pretrained(tmp / "model")
        tokenizer.save_pretrained(tmp / "model")
        write_json(tmp / "trainer_state.json", {"step": step, "sampler": sampler.state()})
        shutil.rmtree(final, ignore_errors=True)
        tmp.rename(final)
        (ck / "latest.tmp").write_text(final.name)
        (ck / "latest.tmp").replace(ck / "latest")
        kept = sorted(p for p in ck.glob("step_*") if p.is_dir())
        for old in kept[:-max(1, cfg.keep_checkpoints)]:
            shutil.rmtree(old, ignore_errors=True)
    accelerator.wait_for_everyone()


def _forget_after(out: Path, step: int) -> None:
    """On resume: drop logs of steps after the checkpoint (they are recomputed identically)."""
    from drk.records import read_jsonl

    metrics = out / "metrics.jsonl"
    if metrics.exists():
        keep = [r for r in read_jsonl(metrics) if int(r.get("step", 0)) <= step]
        tmp = metrics.with_suffix(".tmp")
        with JsonlWriter(tmp) as w:
            for r in keep:
                w.write(r)
        tmp.replace(metrics)
    for f in (out / "rollouts").glob("step_*.jsonl"):
        if int(f.stem.split("_")[1]) > step:
            f.unlink()


def latest_checkpoint(out: Path) -> Path | None:
    f = out / "checkpoints" / "latest"
    if not f.exists():
        return None
    p = out / "checkpoints" / f.read_text().strip()
    return p if p.is_dir() else None


# ---------------------------------------------------------------------------------------------- the loop
def train(cfg: RLConfig, resume: bool = False, stop_after: int | None = None,
          on_step: Callable[[dict], None] | None = None, env: Environment | None = None) -> dict:
    """Run (or resume) RL training; returns the last step's metrics. `on_step(metrics)` after every step
    (main process). `env`: where turns are judged (default: the evaluator `cfg.gym` names)."""
    from accelerate import Accelerator
    from accelerate.utils import set_seed
    from transformers import get_constant_schedule_with_warmup

    out = Path(cfg.out)
    cfg = _with_env(cfg, env)
    if (cfg.sampling.top_p < 1.0 or cfg.sampling.top_k > 0) and cfg.algo.use_mrs:
        # the engine reports log-probs of the truncated distribution it sampled from, the trainer's are of the
        # full one, so every trajectory's ratio sits below 1 by the truncated mass and MRS drops nearly all
        what = f"top_p {cfg.sampling.top_p} < 1" if cfg.sampling.top_p < 1.0 else f"top_k {cfg.sampling.top_k} > 0"
        raise ConfigError(f"{what} cannot be combined with mismatch rejection sampling (MRS compares log-probs of "
                          "the full distribution); use top_p: 1.0 and top_k: 0 (the paper's setting) or "
                          "algo.use_mrs: false")
    if cfg.sampling.seed is not None or cfg.sampling.n != 1:
        raise ConfigError("sampling_seed and sampling_n are not RL options: every turn's sampling seed is drawn from "
                          "`seed`, and each episode samples one reply per turn (`rollouts` sets how many episodes)")
    cuda = torch.cuda.is_available()
    trackers = [] if cfg.report_to in ("none", "", None) else [cfg.report_to]
    accelerator = Accelerator(cpu=not cuda, log_with=trackers or None, project_dir=str(out))
    set_seed(cfg.seed)
    model, tok = build_policy(cfg, str(accelerator.device))
    optimizer = build_optimizer(model, cfg)
    scheduler = get_constant_schedule_with_warmup(optimizer, cfg.warmup_steps)
    model, optimizer, scheduler = accelerator.prepare(model, optimizer, scheduler)
    tasks = load_training_tasks(TaskSelection(queries=cfg.queries, problems=cfg.problems, limit=cfg.limit))
    world, rank = accelerator.num_processes, accelerator.process_index
    sampler = QuerySampler(len(tasks), cfg.seed)
    start = 0
    ck = latest_checkpoint(out) if resume else None
    if resume and ck is None:
        raise ConfigError(f"nothing to resume in {out} (no checkpoints/latest)")
    if ck is not None:
        accelerator.load_state(str(ck / "state"))
        st = json.loads((ck / "trainer_state.json").read_text())
        start = st["step"]
        sampler = QuerySampler(len(tasks), cfg.seed, st["sampler"]["epoch"], st["sampler"]["index"])
        if accelerator.is_main_process:
            _forget_after(out, start)
    if accelerator.is_main_process:
        out.mkdir(parents=True, exist_ok=True)
        write_json(out / "rl_config.json", asdict(cfg))
        (out / "stopped.json").unlink(missing_ok=True)  # an earlier stop of this run: it goes on now
    train_hold = _gpu_work_hold(accelerator)  # generation, scoring and training beside evaluators measuring here
    engine = _engine(cfg, accelerator, model, tok, train_hold)
    own_gym = env is None
    if own_gym:
        from drk.gym.transport.backends import make_gym

        cache = str(out / "eval_cache.sqlite") if cfg.eval_cache else None
        env = Environment("gym", make_gym(cfg.gym, device=cfg.eval_options.device, workers=cfg.eval_workers,
                                          cache_path=cache))
    pad_id = tok.pad_token_id if tok.pad_token_id is not None else (tok.eos_token_id or 0)
    vocab_limit = len(tok) if accelerator.unwrap_model(model).config.vocab_size > len(tok) else None
    if trackers:  # metrics.jsonl always has everything; a tracker is an extra view of it
        accelerator.init_trackers("drk-rl", config={k: v for k, v in asdict(cfg).items()
                                                    if isinstance(v, (int, float, str, bool))})
    tb = _tensorboard(out) if accelerator.is_main_process and not trackers else None
    metrics: dict = {}
    began, durations, last = _clock(), [], cfg.steps
    try:
        with JsonlWriter(out / "metrics.jsonl") as mlog:
            ahead: dict | None = None  # this step's episodes and first turns, generated during the last one

            def draw(step: int) -> list[list]:  # this rank's share of the step's queries, as fresh episodes
                idx = sampler.take(cfg.prompts_per_step)
                return new_groups(cfg, [tasks[i] for k, i in enumerate(idx) if k % world == rank], env, step)

            for step in range(start + 1, cfg.steps + 1):
                step_began = _clock()
                t0 = time.perf_counter()
                held, ahead = ahead, None
                groups = held["groups"] if held is not None else draw(step)
                ckpt_sampler = sampler  # what a checkpoint of this step records: the queries it has taken

                def generate_ahead(step=step) -> None:
                    """The next step's first turns, generated while this step's kernels are judged: by the
                    weights before this step's update, one step off-policy (MRS measures that mismatch)."""
                    nonlocal ahead, ckpt_sampler
                    ckpt_sampler = copy.copy(sampler)
                    ngroups = draw(step + 1)
                    first = first_turns(cfg, ngroups, engine, step + 1)
                    ahead = {"groups": ngroups, "first": first,
                             "started": start_first(cfg, ngroups, first, env, step + 1)}
                more = cfg.prefetch and step < last and (stop_after is None or step < stop_after)
                groups = rollout(cfg, groups, engine, env, step, tok, first=held["first"] if held else None,
                                 started=held["started"] if held else None,
                                 while_judged=generate_ahead if more else None)
                times = {"rollout": time.perf_counter() - t0}
                gen_tokens = sum(len(t.token_ids or []) for g in groups for ep in g for t in ep.turns)
                times["generate"] = engine.take_seconds()
                gen_timing = engine.take_timing() if hasattr(engine, "take_timing") else None
                times["evaluate"] = times["rollout"] - times["generate"]
                if hasattr(engine, "release"):
                    engine.release()  # the sampler's static KV cache and graph: their memory goes to training
                t1 = time.perf_counter()
                st = rewards_and_advantages(groups, cfg)
                rows = turn_rows(groups, st.advantages, st.valid, cfg)
                model.eval()  # no dropout: the same function as the one that sampled
                with GpuHold(train_hold, accelerator.device) as hold:  # the next step's kernels may be judged now
                    logp_old = old_logprobs(model, rows, cfg, pad_id, vocab_limit, let_in=hold.let_in)
                keep, mstats = rejection_masks(rows, logp_old, st, cfg, step, rank)
                times["score"] = time.perf_counter() - t1
                t2 = time.perf_counter()
                model.train()
                with GpuHold(train_hold, accelerator.device) as hold:
                    tstats = train_on_rows(model, optimizer, scheduler, accelerator, rows, logp_old, keep, cfg,
                                           pad_id, vocab_limit, let_in=hold.let_in)
                times["train"] = time.perf_counter() - t2
                if cfg.engine == "vllm":
                    engine.load_weights(accelerator.unwrap_model(model).state_dict().items())
                metrics = {"step": step, **step_metrics(groups, st, mstats, tstats, times, gen_tokens), "lr": scheduler.get_last_lr()[0]}
                if cfg.prefetch:  # first turns sampled by the previous step's weights; generation includes the next step's
                    metrics["first_turns_ahead"] = held is not None
                if gen_timing:
                    metrics["generation"] = gen_timing
                if world > 1:  # headline numbers over all ranks' rollouts, not just this rank's
                    n = _sum_across(accelerator, float(st.present.sum()))
                    metrics["reward_mean"] = _sum_across(accelerator, float(st.rewards[st.present].sum())) / max(1.0, n)
                    metrics["correct"] = _sum_across(accelerator, float(st.correct[st.present].sum())) / max(1.0, n)
                    metrics["turns"] = int(n)
                if accelerator.is_main_process:
                    mlog.write(metrics)
                    if on_step is not None:
                        on_step(metrics)
                    if cfg.log_rollouts:
                        with JsonlWriter(out / "rollouts" / f"step_{step:05d}.jsonl") as rw:
                            for rec in rollout_records(groups, step):
                                rw.write(rec)
                    if trackers:
                        accelerator.log({k: v for k, v in metrics.items() if isinstance(v, (int, float))
                                         and v is not None and math.isfinite(v)}, step=step)
                    if tb is not None:
                        for k, v in metrics.items():
                            if isinstance(v, (int, float)) and v is not None and math.isfinite(v):
                                tb.add_scalar(k, v, step)
                durations.append(_clock() - step_began)
                if step < cfg.steps and _out_of_time(cfg.time_limit_s, began, durations, accelerator):
                    last = step
                    metrics["stopped"] = "time_limit"
                if step % cfg.checkpoint_every == 0 or step == last:  # a resumed run generates `ahead` again
                    save_checkpoint(out, step, accelerator, model, tok, ckpt_sampler, cfg)
                if step == last or (stop_after is not None and step >= stop_after):
                    break
        if metrics.get("stopped") and accelerator.is_main_process:
            write_json(out / "stopped.json", {"reason": "time_limit", "step": last, "steps": cfg.steps,
                                              "time_limit_s": cfg.time_limit_s})
        if accelerator.is_main_process and metrics.get("step") == last:
            accelerator.unwrap_model(model).save_pretrained(out / "final")
            tok.save_pretrained(out / "final")
        # ranks leave together: one that exits while a peer is still in the last collective can abort the peer
        # (gloo) and turn a finished run into a failed one
        accelerator.wait_for_everyone()
    finally:
        if own_gym:
            env.gym.close()
        if tb is not None:
            tb.close()
        accelerator.end_training()  # finishes trackers and destroys the process group
    return metrics


def run(recipe: str | Path | None = None, overrides: dict | None = None, *, resume: Path | None = None,
        overwrite: bool = False, stop_after: int | None = None, env: Environment | None = None,
        on_start: Callable[[RLConfig, int | None], None] | None = None,
        on_step: Callable[[dict], None] | None = None) -> tuple[RLConfig, dict]:
    """`drk rl`: the run's config — a recipe under `overrides`, or with `resume` the saved config of the run in
    that directory under them — then `train`, from scratch or from the run's latest checkpoint. Without
    `resume`, an `out` holding this very run with a checkpoint continues it (the same command resumes), and
    one holding another run is refused unless `overwrite`.

    Returns (config, the last step's metrics); the metrics are {"finished_before": True, "step": N} when
    `out` already holds this finished run. `on_start(cfg, step)` before training, `step` being where the same
    command continues its run (None otherwise)."""
    overrides = overrides or {}
    continues = None
    if resume is not None:
        saved = Path(resume) / "rl_config.json"
        if not saved.exists():
            raise ConfigError(f"nothing to resume: {saved} not found")
        cfg = _with_env(saved_config(saved, merge({"out": str(resume)}, expand(RLConfig, overrides))), env)
    else:
        cfg = _with_env(load_config(RLConfig, recipe, overrides), env)
        if check_run_dir(cfg, overwrite=overwrite):  # another run's directory is refused
            continues = json.loads((latest_checkpoint(Path(cfg.out)) / "trainer_state.json").read_text())["step"]
            if continues >= cfg.steps:
                return cfg, {"finished_before": True, "step": continues}
    check_report_to(cfg.report_to)
    check_device(cfg.eval_options.device, "--eval-device")
    if on_start is not None:
        on_start(cfg, continues)
    return cfg, train(cfg, resume=resume is not None or continues is not None, stop_after=stop_after,
                      on_step=on_step, env=env)


def _gpu_work_hold(accelerator):
    """The evaluators' GPU lock, shared, as a factory for this process's own GPU work (None on CPU): a kernel
    timed beside the policy's generation or training would be time-sliced with it, its reward moved."""
    if accelerator.device.type != "cuda":
        return None
    from drk.gym import gpu_work_hold

    return gpu_work_hold(str(accelerator.device))


def _engine(cfg: RLConfig, accelerator, model, tok, gpu_hold=None):
    if cfg.engine == "vllm":
        from drk.engines.base import EngineSpec
        from drk.engines.vllm_engine import VLLMEngine

        engine = VLLMEngine.from_spec(EngineSpec(model=cfg.model, kind="vllm"))
    else:
        from drk.engines.local import HFEngine

        engine = HFEngine(accelerator.unwrap_model(model), tok, name=f"policy:{cfg.model}",
                          deterministic=cfg.deterministic_generation, decode=cfg.decode)
        engine.gpu_hold = gpu_hold  # no decode step while an evaluator times a kernel here
    return TimedEngine(engine)


def _tensorboard(out: Path):
    try:
        from torch.utils.tensorboard import SummaryWriter
    except Exception:  # tensorboard not installed: metrics.jsonl has everything
        return None
    return SummaryWriter(str(out / "tensorboard"))
