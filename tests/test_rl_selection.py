"""The released trainer's rules beyond the paper (drk.train.selection), one property per test: each fails if
its switch does nothing. Pure functions first, then the trainer's use of them on hand-made episodes and on
the tiny model. docs/faithfulness.md maps every switch to its test here.

    PYTHONPATH=src .venv/bin/python -m pytest tests/test_rl_selection.py -q
"""
from __future__ import annotations

import random
from types import SimpleNamespace

import pytest
import torch

from drk.agent.episode import STOPPED_INFRA, Turn
from drk.config import ConfigError, load_config
from drk.gym.types import EvalResult
from drk.train import selection
from drk.stages.rl import RLConfig, build_optimizer, rejection_masks, rewards_and_advantages, turn_rows
from drk.train.selection import (LossScaling, TurnSelection, flat_group_keep, low_spread_groups, micro_batch_weight,
                                 nominal_rows, prs_seed, regressed_turns, round_coverage)

from conftest import ROOT


def t64(x):
    return torch.tensor(x, dtype=torch.float64)


# ------------------------------------------------------------------------------------------------------
# defaults are the released code's


def test_defaults_are_the_released_trainers():
    cfg = RLConfig()
    assert cfg.weight_decay == 0.01
    assert (cfg.loss_scaling.scale_factor, cfg.loss_scaling.denominator, cfg.loss_scaling.nominal_rows) == \
        (1000.0, "nominal", None)
    ts = cfg.turn_selection
    assert (ts.mask_regressed_turns, ts.mask_no_code_turns, ts.mask_failed_episodes) == (True, False, True)
    assert (ts.flat_groups, ts.flat_group_std, ts.prs_coverage_decimals, ts.prs_seed_per_rank) == \
        ("last-turn", 1e-3, 2, True)


def test_switches_are_validated_with_their_path():
    for bad in ({"loss_scaling": {"denominator": "mean"}}, {"loss_scaling": {"scale_factor": 0}},
                {"turn_selection": {"flat_groups": "all"}}, {"turn_selection": {"prs_coverage_decimals": -1}}):
        with pytest.raises((ValueError, ConfigError)):
            load_config(RLConfig, None, bad)
    with pytest.raises(ConfigError, match="turn_selection.nonsense"):
        load_config(RLConfig, None, {"turn_selection": {"nonsense": 1}})


def test_paper_recipe_states_the_released_switches():
    cfg = load_config(RLConfig, ROOT / "recipes/rl.yaml")
    assert cfg.weight_decay == 0.01 and cfg.loss_scaling == LossScaling() and cfg.turn_selection == TurnSelection()


# ------------------------------------------------------------------------------------------------------
# loss scale factor and micro-batch scaling (pure)


def test_scale_factor_divides_the_micro_batch_weight():
    for nominal in (None, 48.0):
        one = micro_batch_weight(3, 40, aggregation="turn-sum", kept=6.0, nominal=nominal, scale_factor=1.0)
        assert micro_batch_weight(3, 40, aggregation="turn-sum", kept=6.0, nominal=nominal,
                                  scale_factor=1000.0) == pytest.approx(one / 1000)


def test_nominal_weight_ignores_how_many_turns_were_kept():
    w = [micro_batch_weight(3, 40, aggregation="turn-sum", kept=k, nominal=48.0) for k in (3.0, 6.0, 48.0)]
    assert w == [3 / 48] * 3
    assert [micro_batch_weight(3, 40, aggregation="turn-sum", kept=k, nominal=None) for k in (3.0, 6.0)] == [1.0, 0.5]
    assert micro_batch_weight(3, 40, aggregation="token-mean", kept=80.0, nominal=None) == 0.5


def test_nominal_rows_count_turns_twice_like_the_released_normalisation():
    assert nominal_rows(16, 16, 3) == 16 * 16 * 3 * 3
    assert nominal_rows(16, 16, 1) == 256
    assert nominal_rows(16, 16, 3, given=768) == 768


# ------------------------------------------------------------------------------------------------------
# loss scaling in the trainer (tiny model, one SGD step)


def _update(overrides: dict, keep: list[bool], lr: float = 1.0) -> dict:
    """Parameter change of one `train_on_rows` step with SGD and no gradient clipping."""
    from accelerate import Accelerator

    from drk.engines import build_tiny_model
    from drk.train.batch import TurnRow
    from drk.stages.rl import old_logprobs, train_on_rows

    model, tok = build_tiny_model(None, seed=0)
    cfg = load_config(RLConfig, None, {"grad_clip": 1e9, "prompts_per_step": 1, "rollouts": 2, "turns": 1,
                                       **overrides})
    acc = Accelerator(cpu=True)
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    model, opt, sched = acc.prepare(model, opt, torch.optim.lr_scheduler.LambdaLR(opt, lambda _: 1.0))
    rows = [TurnRow([5, 6, 7, 8], [9, 10, 11], [-1.0] * 3, 1.0, 0, (0, 0, 0)),
            TurnRow([5, 6], [12, 13, 14, 15, 16], [-1.0] * 5, -0.5, 1, (0, 1, 0))]
    model.eval()
    logp_old = old_logprobs(model, rows, cfg, tok.pad_token_id, None)
    before = {k: v.detach().clone() for k, v in model.named_parameters()}
    model.train()
    train_on_rows(model, opt, sched, acc, rows, logp_old, torch.tensor(keep), cfg, tok.pad_token_id, None)
    return {k: v.detach() - before[k] for k, v in model.named_parameters()}


def _close(a: dict, b: dict, factor: float = 1.0) -> bool:
    worst = max(float((a[k] - factor * b[k]).abs().max() / (a[k].abs().max() + 1e-30)) for k in a
                if a[k].abs().max() > 0)
    return worst < 1e-3


def test_trainer_divides_the_loss_by_the_scale_factor():
    """SGD is linear in the gradient: lr 1000 on the loss / 1000 moves exactly as lr 1 on the plain loss (an lr
    of 1 on the scaled loss would move weights by less than float32 resolves)."""
    scaled = _update({"loss_scaling": {"scale_factor": 1000.0}}, [True, True], lr=1000.0)
    plain = _update({"loss_scaling": {"scale_factor": 1.0}}, [True, True])
    assert any(v.abs().max() > 0 for v in plain.values())
    assert _close(scaled, plain)
    assert not _close(_update({"loss_scaling": {"scale_factor": 1.0}}, [True, True], lr=1000.0), plain)


def test_trainer_sums_kept_turns_over_the_nominal_count():
    """Nominal: the step's gradient is the sum of its kept turns' parts over a fixed count, so the two
    single-turn steps add up to the two-turn step. Kept: the two-turn step is their mean."""
    for denominator, factor in (("nominal", 1.0), ("kept", 0.5)):
        ls = {"scale_factor": 1.0, "denominator": denominator}
        both = _update({"loss_scaling": ls}, [True, True])
        first, second = _update({"loss_scaling": ls}, [True, False]), _update({"loss_scaling": ls}, [False, True])
        assert _close(both, {k: first[k] + second[k] for k in both}, factor), denominator
    twice = _update({"loss_scaling": {"scale_factor": 1.0, "nominal_rows": 4}}, [True, True])
    assert _close(twice, _update({"loss_scaling": {"scale_factor": 1.0}}, [True, True]), 0.5)  # default: 1 x 2 x 1 x 1


# ------------------------------------------------------------------------------------------------------
# weight decay


def test_optimizer_decays_weights_by_default():
    """With a zero gradient AdamW's only move is the decay: p <- p * (1 - lr * weight_decay)."""
    model = torch.nn.Linear(4, 3)
    before = model.weight.detach().clone()
    opt = build_optimizer(model, RLConfig(lr=0.1))
    for p in model.parameters():
        p.grad = torch.zeros_like(p)
    opt.step()
    torch.testing.assert_close(model.weight.detach(), before * (1 - 0.1 * 0.01))
    opt = build_optimizer(model, RLConfig(lr=0.1, weight_decay=0.0))
    kept = model.weight.detach().clone()
    opt.step()
    torch.testing.assert_close(model.weight.detach(), kept)


# ------------------------------------------------------------------------------------------------------
# void turns (pure, then on episodes)


def test_regressed_turns_by_hand():
    r = t64([[[0.0, 1.0, 0.0, 0.0],     # success at t1: t2 and t3 regress
              [1.0, 0.5, 0.0, 2.0],     # t2 regresses; t3 scores again
              [0.0, 0.0, 0.0, 0.0],     # never scored: nothing regresses
              [1.5, 0.0, 0.0, 0.0]]])   # t1 regresses; t2 is not present; t3 regresses
    present = torch.ones_like(r, dtype=torch.bool)
    present[0, 3, 2] = False
    expect = torch.tensor([[[False, False, True, True], [False, False, True, False],
                            [False, False, False, False], [False, True, False, True]]])
    assert torch.equal(regressed_turns(r, present), expect)


def _turn(t: int, reward: float, code: bool = True, coverage: float | None = None) -> Turn:
    return Turn(index=t, completion="reply", code="code" if code else None, reward=reward, token_ids=[1, 2],
                logprobs=[-1.0, -1.0], prompt_token_ids=[3, 4],
                result=EvalResult("t", verdict="ok" if reward > 0 else "incorrect", coverage=coverage) if code else None)


def _episode(rewards, stopped: str = "", no_code: tuple = (), coverage=None):
    return SimpleNamespace(turns=[_turn(t, r, t not in no_code, coverage) for t, r in enumerate(rewards)],
                           stopped=stopped)


def _cfg(turns: int, rollouts: int, **selection_switches) -> RLConfig:
    return load_config(RLConfig, None, {"turns": turns, "rollouts": rollouts, "prompts_per_step": 1,
                                        "turn_selection": selection_switches})


def test_regressed_turn_is_not_trained():
    groups = [[_episode([1.0, 0.0, 0.0]), _episode([0.0, 1.0, 1.0])]]
    on = rewards_and_advantages(groups, _cfg(3, 2))
    assert on.valid[0, 0].tolist() == [True, False, False] and on.valid[0, 1].tolist() == [True, True, True]
    assert on.present.all()
    assert on.advantages[0, 0, 1] == 0 and on.advantages[0, 1, 1] == 2.0  # alone at turn 1: its own return
    off = rewards_and_advantages(groups, _cfg(3, 2, mask_regressed_turns=False))
    assert off.valid.all()


def test_turn_without_code_is_trained_unless_masked():
    groups = [[_episode([0.0, 1.0], no_code=(0,)), _episode([1.0, 1.0])]]
    assert rewards_and_advantages(groups, _cfg(2, 2)).valid.all()       # released: trained as a failure
    on = rewards_and_advantages(groups, _cfg(2, 2, mask_no_code_turns=True))
    assert on.valid[0, 0].tolist() == [False, True] and on.valid[0, 1].all()


def test_episode_stopped_by_an_infrastructure_error_is_not_trained():
    failed = _episode([1.0, 0.5], stopped=STOPPED_INFRA)
    failed.turns.append(Turn(index=2, completion="", engine_error="evaluator: died", token_ids=[1], logprobs=[-1.0],
                             prompt_token_ids=[3]))
    groups = [[failed, _episode([1.0, 0.5, 0.5])]]
    on = rewards_and_advantages(groups, _cfg(3, 2))
    assert on.present[0, 0].tolist() == [True, True, False] and not on.valid[0, 0].any()
    assert on.lengths[0].tolist() == [3, 3]
    off = rewards_and_advantages(groups, _cfg(3, 2, mask_failed_episodes=False))
    assert off.valid[0, 0].tolist() == [True, True, False]


# ------------------------------------------------------------------------------------------------------
# flat groups


def test_low_spread_uses_the_sample_std_below_the_threshold():
    members = torch.ones(3, 2, dtype=torch.bool)
    # sample std of (0, d) is d / sqrt(2): 1.4e-3 -> 0.99e-3 (flat), 1.42e-3 -> 1.004e-3 (not flat)
    flat = low_spread_groups(t64([[0.0, 1.4e-3], [0.0, 1.42e-3], [0.7, 0.7]]), members, 1e-3)
    assert flat.tolist() == [True, False, True]
    lonely = torch.tensor([[True, False], [False, False]])
    assert low_spread_groups(t64([[1.0, 5.0], [0.0, 0.0]]), lonely, 1e-3).tolist() == [False, False]
    assert low_spread_groups(t64([[1.0, 5.0, 1.0]]), torch.tensor([[True, False, True]]), 1e-3).tolist() == [True]


def test_flat_group_keep_by_hand():
    # prompt 0: rollout 0 stopped after turn 0 (1.0); rollout 1 scored (0.0, 1.0): last turns 1 and 1, flat
    # prompt 1: rollout 0 scored (0.0, 0.0); rollout 1 stopped after turn 0 (1.0): last turns 0 and 1
    r = t64([[[1.0, 0.0], [0.0, 1.0]], [[0.0, 0.0], [1.0, 0.0]]])
    lengths = torch.tensor([[1, 2], [2, 1]])
    valid = torch.arange(2)[None, None, :] < lengths[..., None]
    last = flat_group_keep(r, valid, lengths, mode="last-turn")
    assert not last[0].any() and last[1].all()
    # per turn: turn 0 differs in both prompts; turn 1 has one member in each, and one member is never flat
    assert flat_group_keep(r, valid, lengths, mode="per-turn").all()
    r2 = r.clone()
    r2[0, 1, 0] = 1.0                               # prompt 0, turn 0: (1, 1) is flat
    per = flat_group_keep(r2, valid, lengths, mode="per-turn")
    assert not per[0, :, 0].any() and per[0, :, 1].all() and per[1].all()
    assert flat_group_keep(r2, valid, lengths, mode="none").all()


def test_masked_turn_counts_as_zero_in_its_group():
    r = t64([[[1.0], [1.0]]])
    lengths = torch.tensor([[1, 1]])
    valid = torch.tensor([[[True], [False]]])
    assert flat_group_keep(r, valid, lengths).all()                     # 1 vs masked (0): not flat
    assert not flat_group_keep(r, torch.ones_like(valid), lengths).any()


def test_trainer_drops_rows_of_flat_groups():
    groups = [[_episode([0.5]), _episode([0.5])], [_episode([0.0]), _episode([1.0])]]
    cfg = load_config(RLConfig, None, {"turns": 1, "rollouts": 2, "prompts_per_step": 2,
                                       "algo": {"use_mrs": False, "use_prs": False}})
    st = rewards_and_advantages(groups, cfg)
    rows = turn_rows(groups, st.advantages, st.valid, cfg)
    keep, stats = rejection_masks(rows, None, st, cfg, step=1)
    assert [r.pnt[0] for r in rows] == [0, 0, 1, 1] and keep.tolist() == [False, False, True, True]
    assert stats["flat_groups_kept"] == 0.5
    cfg.turn_selection.flat_group_std = 0.0          # nothing has a std below 0
    assert rejection_masks(rows, None, st, cfg, step=1)[0].all()
    cfg.turn_selection.flat_group_std, cfg.turn_selection.flat_groups = 1e-3, "none"
    assert rejection_masks(rows, None, st, cfg, step=1)[0].all()


# ------------------------------------------------------------------------------------------------------
# PRS: rounded coverage, a seed per rank


def test_round_coverage_matches_pythons_formatting():
    rng = random.Random(0)
    xs = [rng.random() for _ in range(5000)] + [k / 1000 for k in range(1001)] + [0.015, 0.305, 0.395]
    got = round_coverage(t64(xs), 2).tolist()
    assert got == [float(f"{x:.2f}") for x in xs]
    nan = round_coverage(t64([float("nan"), 0.123]), 2)
    assert nan[0] != nan[0] and nan[1] == 0.12
    assert round_coverage(t64([0.123456]), None).item() == 0.123456


def _prs_setup(coverage: float, n: int = 400):
    groups = [[_episode([1.0], coverage=coverage) for _ in range(n)]]
    cfg = load_config(RLConfig, None, {"turns": 1, "rollouts": n, "prompts_per_step": 1,
                                       "algo": {"use_mrs": False}, "turn_selection": {"flat_groups": "none"}})
    st = rewards_and_advantages(groups, cfg)
    return cfg, st, turn_rows(groups, st.advantages, st.valid, cfg)


def test_prs_reads_coverage_rounded_to_two_decimals():
    """0.395 rounds to 0.40 (always kept); unrounded its keep probability is 0.95."""
    cfg, st, rows = _prs_setup(0.395)
    keep, _ = rejection_masks(rows, None, st, cfg, step=1)
    assert keep.all()
    cfg.turn_selection.prs_coverage_decimals = None
    keep, _ = rejection_masks(rows, None, st, cfg, step=1)
    assert 0 < int((~keep).sum()) < 60               # about 5% of 400 dropped


def test_prs_seed_differs_per_rank():
    assert prs_seed(3, 7, 0) == 3 * 7_919 + 7 == prs_seed(3, 7, 0, per_rank=False)
    assert len({prs_seed(3, 7, r) for r in range(8)}) == 8
    assert {prs_seed(3, 7, r, per_rank=False) for r in range(8)} == {prs_seed(3, 7, 0)}
    assert not {prs_seed(0, s, 1) for s in range(10_000)} & {prs_seed(0, s, 0) for s in range(10_000)}


def test_ranks_draw_different_prs_decisions():
    cfg, st, rows = _prs_setup(0.35)                 # keep probability 0.5
    rank0, _ = rejection_masks(rows, None, st, cfg, step=1, rank=0)
    rank1, _ = rejection_masks(rows, None, st, cfg, step=1, rank=1)
    assert not torch.equal(rank0, rank1)
    cfg.turn_selection.prs_seed_per_rank = False
    same0, _ = rejection_masks(rows, None, st, cfg, step=1, rank=0)
    same1, _ = rejection_masks(rows, None, st, cfg, step=1, rank=1)
    assert torch.equal(same0, same1) and torch.equal(same0, rank0)
