"""Tests of drk.train.algos: hand-computed values, naive loop references, and the properties the trainer relies on."""
from __future__ import annotations

import math

import pytest
import torch

from drk.gym.reward import RewardWeights, turn_reward
from drk.train.algos import (AlgoConfig, entropy_from_logits, grpo_advantages, mrs_mask, policy_loss,
                             prs_keep_prob, prs_mask, returns_to_go, selective_log_softmax, trloo_advantages)

NAN = float("nan")


def t64(x):
    return torch.tensor(x, dtype=torch.float64)


# ------------------------------------------------------------------------------------------------------
# The hand example: P=2 prompts x N=4 rollouts x T=3 turns, with early stops and one fully invalid rollout.
#   prompt 0: rollout 1 stops after turn 1, rollout 3 after turn 0
#   prompt 1: rollout 1 stops after turn 0, rollout 2 after turn 1, rollout 3 never valid (garbage rewards)

VALID = torch.tensor([
    [[1, 1, 1], [1, 1, 0], [1, 1, 1], [1, 0, 0]],
    [[1, 1, 1], [1, 0, 0], [1, 1, 0], [0, 0, 0]],
], dtype=torch.bool)
REWARDS = t64([
    [[0.0, 1.0, 2.0], [1.0, 0.5, 99.0], [0.0, 0.0, 3.0], [2.0, NAN, -7.0]],
    [[1.0, 1.0, 1.0], [0.0, 42.0, NAN], [0.5, 0.0, 5.0], [100.0, NAN, 3.0]],
])
# gamma = 1, by hand
RETURNS_G1 = t64([
    [[3.0, 3.0, 2.0], [1.5, 0.5, 0.0], [3.0, 3.0, 3.0], [2.0, 0.0, 0.0]],
    [[3.0, 2.0, 1.0], [0.0, 0.0, 0.0], [0.5, 0.0, 0.0], [0.0, 0.0, 0.0]],
])
# gamma = 0.5, by hand: e.g. p0 i0: G2 = 2, G1 = 1 + .5*2 = 2, G0 = 0 + .5*2 = 1
RETURNS_G05 = t64([
    [[1.0, 2.0, 2.0], [1.25, 0.5, 0.0], [0.75, 1.5, 3.0], [2.0, 0.0, 0.0]],
    [[1.75, 1.5, 1.0], [0.0, 0.0, 0.0], [0.5, 0.0, 0.0], [0.0, 0.0, 0.0]],
])
# TRLOO by hand: A_i = G_i - mean of the OTHER valid G_j at (p, t); one valid rollout -> A = G.
#   p0 t0: G = 3, 1.5, 3, 2 (S = 9.5): 3 - 6.5/3 = 5/6, 1.5 - 8/3 = -7/6, 5/6, 2 - 7.5/3 = -1/2
#   p0 t1: G = 3, .5, 3 (i3 invalid): 3 - 1.75 = 1.25, .5 - 3 = -2.5, 1.25
#   p0 t2: G = 2, 3 (i0, i2): -1, 1
#   p1 t0: G = 3, 0, .5: 3 - .25 = 2.75, 0 - 1.75 = -1.75, .5 - 1.5 = -1
#   p1 t1: G = 2, 0 (i0, i2): 2, -2
#   p1 t2: only i0 valid: A = G = 1
TRLOO = t64([
    [[5 / 6, 1.25, -1.0], [-7 / 6, -2.5, 0.0], [5 / 6, 1.25, 1.0], [-0.5, 0.0, 0.0]],
    [[2.75, 2.0, 1.0], [-1.75, 0.0, 0.0], [-1.0, -2.0, 0.0], [0.0, 0.0, 0.0]],
])
# GRPO (no std) by hand: A_i = G_i - mean of ALL valid G at (p, t); one valid rollout -> 0.
#   p0 t0: mean 2.375 -> .625, -.875, .625, -.375     p0 t1: mean 13/6 -> 5/6, -5/3, 5/6     p0 t2: mean 2.5 -> -.5, .5
#   p1 t0: mean 7/6 -> 11/6, -7/6, -2/3               p1 t1: mean 1 -> 1, -1                 p1 t2: 0
GRPO = t64([
    [[0.625, 5 / 6, -0.5], [-0.875, -5 / 3, 0.0], [0.625, 5 / 6, 0.5], [-0.375, 0.0, 0.0]],
    [[11 / 6, 1.0, 0.0], [-7 / 6, 0.0, 0.0], [-2 / 3, -1.0, 0.0], [0.0, 0.0, 0.0]],
])


# ------------------------------------------------------------------------------------------------------
# naive references (Python loops over scalars)


def ref_reward(c, s, cov, w_c, w_s, w_p, cap):
    if not c:
        return 0.0
    st = 0.0 if math.isnan(s) else min(s, cap)
    pt = 0.0 if math.isnan(cov) else cov
    return w_c + w_s * st + w_p * pt


def ref_returns(r, v, gamma):
    P, N, T = r.shape
    out = torch.zeros(P, N, T, dtype=torch.float64)
    for p in range(P):
        for i in range(N):
            for t in range(T):
                if v[p, i, t]:
                    out[p, i, t] = sum(gamma ** (k - t) * float(r[p, i, k]) for k in range(t, T) if v[p, i, k])
    return out


def ref_trloo(g, v):
    P, N, T = g.shape
    out = torch.zeros(P, N, T, dtype=torch.float64)
    for p in range(P):
        for t in range(T):
            for i in range(N):
                if not v[p, i, t]:
                    continue
                others = [float(g[p, j, t]) for j in range(N) if j != i and v[p, j, t]]
                base = sum(others) / len(others) if others else 0.0
                out[p, i, t] = float(g[p, i, t]) - base
    return out


def ref_grpo(g, v, scale, eps, unbiased):
    P, N, T = g.shape
    out = torch.zeros(P, N, T, dtype=torch.float64)
    for p in range(P):
        for t in range(T):
            vals = [float(g[p, j, t]) for j in range(N) if v[p, j, t]]
            if not vals:
                continue
            m = sum(vals) / len(vals)
            if len(vals) >= 2:
                sd = math.sqrt(sum((x - m) ** 2 for x in vals) / (len(vals) - (1 if unbiased else 0)))
            else:
                sd = 0.0
            for i in range(N):
                if v[p, i, t]:
                    a = float(g[p, i, t]) - m
                    out[p, i, t] = a / (sd + eps) if scale else a
    return out


def ref_mrs(lt, lr, mask, traj, lower, upper, veto):
    B, L = lt.shape
    K = int(traj.max()) + 1
    rho = []
    for k in range(K):
        d = [float(lt[b, l] - lr[b, l]) for b in range(B) if traj[b] == k for l in range(L) if mask[b, l]]
        rho.append(math.exp(sum(d) / len(d)) if d else 1.0)
    keep = []
    for b in range(B):
        ok = lower <= rho[int(traj[b])] <= upper
        for l in range(L):
            if mask[b, l] and math.exp(float(lt[b, l] - lr[b, l])) < veto:
                ok = False
        keep.append(ok)
    return torch.tensor(keep), torch.tensor(rho, dtype=torch.float64)


def ref_tok_loss(lnew, lold, a, cl, ch, c):
    ratio = math.exp(lnew - lold)
    l1 = -a * ratio
    l2 = -a * min(max(ratio, 1 - cl), 1 + ch)
    l = max(l1, l2)
    if a < 0 and c is not None:
        l = min(l, -a * c)
    return l


def ref_policy_loss(lnew, lold, adv, mask, keep, cl, ch, c, agg):
    B, L = lnew.shape
    total, n_tok, n_turn = 0.0, 0, 0
    for b in range(B):
        if not keep[b]:
            continue
        k = 0
        for l in range(L):
            if mask[b, l]:
                total += ref_tok_loss(float(lnew[b, l]), float(lold[b, l]), float(adv[b]), cl, ch, c)
                k += 1
        n_tok += k
        n_turn += k > 0
    return total / max(n_turn if agg == "turn-sum" else n_tok, 1)


def random_valid(gen, P, N, T):
    """Prefix-valid masks with random lengths 0..T (some rollouts fully invalid)."""
    lengths = torch.randint(0, T + 1, (P, N), generator=gen)
    return torch.arange(T)[None, None, :] < lengths[:, :, None]


# ------------------------------------------------------------------------------------------------------
# config


def test_algo_config_defaults_are_the_papers():
    cfg = AlgoConfig()
    assert cfg.reward == RewardWeights() and cfg.gamma == 1.0  # the reward's weights are the evaluator's, nested
    assert (cfg.reward.w_c, cfg.reward.w_s, cfg.reward.w_p, cfg.reward.speedup_cap) == (0.5, 0.5, 0.5, 3.0)
    assert (cfg.mrs_lower, cfg.mrs_upper, cfg.mrs_veto) == (0.999, 1.001, 1e-4)
    assert (cfg.prs_tau, cfg.prs_s) == (0.3, 0.1)
    assert (cfg.clip_low, cfg.clip_high, cfg.dual_clip, cfg.aggregation) == (0.2, 0.28, 3.0, "turn-sum")
    assert cfg.use_pr and cfg.use_prs and cfg.use_mrs and cfg.advantage == "trloo"


def test_algo_config_round_trips_and_reads_the_flat_reward_key():
    cfg = AlgoConfig()
    assert AlgoConfig.from_dict(cfg.to_dict()) == cfg
    assert AlgoConfig.from_dict({"w_c": 0.25}).reward.w_c == 0.25  # the recipe key algo.w_c, as before


@pytest.mark.parametrize("bad", [{"aggregation": "mean"}, {"dual_clip": 1.0}, {"mrs_lower": 2.0},
                                 {"advantage": "ppo"}])
def test_algo_config_refuses_values_outside_their_domain(bad):
    with pytest.raises(ValueError):
        AlgoConfig(**bad)


def test_algo_config_refuses_unknown_keys():
    with pytest.raises(ValueError):
        AlgoConfig.from_dict({"nonsense": 1})


def test_without_pr_the_reward_has_no_coverage_term():
    assert AlgoConfig(use_pr=False).reward_weights().w_p == 0.0


def test_algo_config_feeds_the_functions_directly():
    cfg = AlgoConfig()
    assert turn_reward({"verdict": "ok", "speedup": 1.0, "coverage": 0.5}, cfg.reward_weights()) == 1.25
    assert prs_mask(torch.tensor([True]), t64([0.5]), torch.tensor([True]), **cfg.prs_kwargs()).shape == (1,)


# ------------------------------------------------------------------------------------------------------
# rewards


def _turn(verdict="ok", speedup=None, coverage=None) -> dict:
    return {"verdict": verdict, "speedup": speedup, "coverage": coverage}


def test_turn_reward_by_hand():
    w = RewardWeights()
    cases = [(_turn(speedup=1.5, coverage=0.8), 1.65), (_turn(speedup=5.0, coverage=NAN), 2.0),
             (_turn("incorrect", 2.0, 1.0), 0.0), (_turn(speedup=NAN, coverage=0.6), 0.8),
             (_turn("hacked", 0.5, 0.2), 0.0), (_turn(speedup=float("inf"), coverage=0.0), 2.0),
             (_turn("infra_error", 3.0, 1.0), 0.0), (_turn(speedup=None, coverage=None), 0.5)]
    for result, want in cases:  # .5 + .5*min(s, 3) + .5*cov for ok turns; unknown terms 0; +inf capped
        assert turn_reward(result, w) == pytest.approx(want), result
    # PR off (w_p = 0); other weights and cap
    assert turn_reward(_turn(speedup=1.5, coverage=0.8), RewardWeights(w_p=0.0)) == pytest.approx(1.25)
    w2 = RewardWeights(w_c=1.0, w_s=0.2, w_p=2.0, speedup_cap=2.0)
    assert turn_reward(_turn(speedup=2.5, coverage=0.4), w2) == pytest.approx(1.0 + 0.4 + 0.8)


def test_turn_reward_failed_turns_score_zero_even_with_nan():
    for verdict in ("incorrect", "no_triton", "forbidden", "timeout", "compile_error"):
        assert turn_reward(_turn(verdict, NAN, NAN)) == 0.0
        assert turn_reward(_turn(verdict, 10.0, 1.0)) == 0.0


def test_turn_reward_matches_loop_reference():
    gen = torch.Generator().manual_seed(0)
    for w in [(0.5, 0.5, 0.5, 3.0), (1.0, 0.3, 0.0, 2.0)]:
        for _ in range(200):
            c = bool(torch.rand((), generator=gen) < 0.6)
            s = float(torch.rand((), generator=gen) * 6) if torch.rand((), generator=gen) > 0.2 else NAN
            v = float(torch.rand((), generator=gen)) if torch.rand((), generator=gen) > 0.2 else NAN
            got = turn_reward(_turn("ok" if c else "incorrect", s, v), RewardWeights(*w))
            assert got == pytest.approx(ref_reward(c, s, v, *w))


# ------------------------------------------------------------------------------------------------------
# returns


def test_returns_by_hand_gamma_1_and_half():
    g1 = returns_to_go(REWARDS, VALID)
    torch.testing.assert_close(g1, RETURNS_G1)
    g05 = returns_to_go(REWARDS, VALID, gamma=0.5)
    torch.testing.assert_close(g05, RETURNS_G05)
    # invalid turns: exactly 0, and their (garbage/NaN) rewards contribute nothing
    assert torch.equal(g1[~VALID], torch.zeros(int((~VALID).sum()), dtype=torch.float64))
    assert not torch.isnan(g1).any()


def test_returns_gamma_zero_is_reward_and_gap_semantics():
    r = t64([[1.0, 2.0, 3.0, 4.0]])
    v = torch.tensor([[True, False, True, True]])  # a gap at turn 1
    torch.testing.assert_close(returns_to_go(r, v, gamma=0.0), t64([[1.0, 0.0, 3.0, 4.0]]))
    # gamma**(k - t) with the distance in turn index: G0 = 1 + .5**2 * 3 + .5**3 * 4
    torch.testing.assert_close(returns_to_go(r, v, gamma=0.5), t64([[1.0 + 0.75 + 0.5, 0.0, 5.0, 4.0]]))


def test_returns_match_loop_reference():
    gen = torch.Generator().manual_seed(1)
    P, N, T = 3, 6, 5
    r = torch.randn(P, N, T, generator=gen, dtype=torch.float64)
    v = random_valid(gen, P, N, T)
    v[0, 0] = torch.tensor([True, False, True, False, True])  # non-prefix too
    r[~v] = NAN
    for gamma in (1.0, 0.9, 0.5, 0.0):
        torch.testing.assert_close(returns_to_go(r, v, gamma), ref_returns(r, v, gamma))


# ------------------------------------------------------------------------------------------------------
# advantages


def test_trloo_by_hand():
    a = trloo_advantages(RETURNS_G1, VALID)
    torch.testing.assert_close(a, TRLOO)
    # garbage at invalid entries of the returns is ignored
    g = RETURNS_G1.clone()
    g[~VALID] = NAN
    torch.testing.assert_close(trloo_advantages(g, VALID), TRLOO)
    # end to end from rewards
    torch.testing.assert_close(trloo_advantages(returns_to_go(REWARDS, VALID), VALID), TRLOO)


def test_grpo_by_hand():
    torch.testing.assert_close(grpo_advantages(RETURNS_G1, VALID), GRPO)
    # with std (sample std, n - 1): p0 t0: values 3, 1.5, 3, 2 -> squared deviations sum 1.6875, /3 = .5625,
    # std .75 -> .625/.75 = 5/6 etc.; p0 t2: values 2, 3 -> std sqrt(.5) -> -+ .5/sqrt(.5); single valid -> 0
    a = grpo_advantages(RETURNS_G1, VALID, scale_by_std=True, eps=0.0)
    torch.testing.assert_close(a[0, :, 0], t64([5 / 6, -7 / 6, 5 / 6, -0.5]))
    torch.testing.assert_close(a[0, :, 2], t64([-math.sqrt(0.5), 0.0, math.sqrt(0.5), 0.0]))
    assert torch.equal(a[1, :, 2], t64([0.0, 0.0, 0.0, 0.0]))
    # population std: p0 t2 std = .5 -> -+1
    ap = grpo_advantages(RETURNS_G1, VALID, scale_by_std=True, eps=0.0, unbiased=False)
    torch.testing.assert_close(ap[0, :, 2], t64([-1.0, 0.0, 1.0, 0.0]))
    # eps enters as std + eps
    ae = grpo_advantages(RETURNS_G1, VALID, scale_by_std=True, eps=0.25)
    torch.testing.assert_close(ae[0, :, 0], t64([0.625, -0.875, 0.625, -0.375]) / 1.0)


def test_grpo_is_scaled_trloo_when_all_valid():
    gen = torch.Generator().manual_seed(2)
    for N in (2, 3, 4, 8):
        g = torch.randn(5, N, 3, generator=gen, dtype=torch.float64)
        v = torch.ones(5, N, 3, dtype=torch.bool)
        a_t = trloo_advantages(g, v)
        a_g = grpo_advantages(g, v)
        torch.testing.assert_close(a_g, (N - 1) / N * a_t, rtol=0, atol=1e-12)
        torch.testing.assert_close(a_t.sum(dim=1), torch.zeros(5, 3, dtype=torch.float64), rtol=0, atol=1e-12)
    # the hand example at turn 0 of prompt 0 (all four valid)
    torch.testing.assert_close(GRPO[0, :, 0], 3 / 4 * TRLOO[0, :, 0])


def test_advantages_match_loop_reference():
    gen = torch.Generator().manual_seed(3)
    P, N, T = 4, 5, 4
    g = torch.randn(P, N, T, generator=gen, dtype=torch.float64)
    v = random_valid(gen, P, N, T)
    v[1, :, :] = torch.rand(N, T, generator=gen) < 0.5  # arbitrary (non-prefix) pattern too
    g[~v] = NAN
    torch.testing.assert_close(trloo_advantages(g, v), ref_trloo(g, v))
    for scale in (False, True):
        for unbiased in (True, False):
            torch.testing.assert_close(grpo_advantages(g, v, scale_by_std=scale, eps=1e-6, unbiased=unbiased),
                                       ref_grpo(g, v, scale, 1e-6, unbiased))


def test_advantages_dtype_and_float32():
    g = RETURNS_G1.float()
    a = trloo_advantages(g, VALID)
    assert a.dtype == torch.float32
    torch.testing.assert_close(a, TRLOO.float())
    assert grpo_advantages(g, VALID).dtype == torch.float32
    with pytest.raises(ValueError):
        trloo_advantages(g, VALID[0])


# ------------------------------------------------------------------------------------------------------
# MRS


def _mrs_batch():
    """Six trajectories; rows are turns. Returns (logp_train, logp_rollout, mask, traj, expected keep)."""
    gen = torch.Generator().manual_seed(4)
    traj = torch.tensor([0, 0, 1, 1, 2, 3, 3, 4, 5, 5, 6, 6])
    B, L = len(traj), 10
    lr = -torch.rand(B, L, generator=gen, dtype=torch.float64) * 3 - 0.01   # rollout log-probs
    mask = torch.zeros(B, L, dtype=torch.bool)
    mask[:, 2:] = True                 # first two positions: prompt/feedback
    mask[1, 8:] = False                # a shorter turn
    delta = torch.zeros(B, L, dtype=torch.float64)
    # traj 0: no mismatch on trained tokens; huge mismatch on masked-out tokens (ignored) -> keep
    delta[0:2, :2] = 5.0
    # traj 1: +0.01 on every token -> rho_bar = e^.01 = 1.01005 > 1.001 -> reject both turns
    delta[2:4] = 0.01
    # traj 2: -0.0005 -> rho_bar = 0.9995 -> keep
    delta[4] = -0.0005
    # traj 3: -0.002 -> rho_bar = 0.998 < 0.999 -> reject
    delta[5:7] = -0.002
    # traj 4: +-0.05 alternating (8 trained tokens, mean 0) -> rho_bar = 1 although tokens are far off -> keep
    delta[7, 2:] = torch.tensor([0.05, -0.05] * 4, dtype=torch.float64)
    # traj 5: turn 8 holds one token with ratio 1e-5 < veto, compensated over the other 15 trained tokens so that
    # rho_bar = 1 -> the trajectory is kept, but turn 8 is vetoed (exactly that turn)
    big = math.log(1e-5)
    delta[8, 5] = big
    comp = -big / 15
    delta[8, 2:] += comp
    delta[8, 5] -= comp
    delta[9, 2:] = comp
    # traj 6: token-weighted pooling. turn 10 has 2 trained tokens at +0.006, turn 11 six at -0.002:
    # token mean = 0 -> keep (a mean of per-turn means would be 0.002 -> reject)
    mask[10, 4:] = False
    delta[10, 2:4] = 0.006
    delta[11, 2:] = torch.tensor([-0.002] * 6 + [0.0] * 2, dtype=torch.float64)
    mask[11, 8:] = False
    lt = lr + delta
    expected = torch.tensor([True, True, False, False, True, False, False, True, False, True, True, True])
    return lt, lr, mask, traj, expected


def test_mrs_rejects_exactly_the_perturbed_trajectories():
    lt, lr, mask, traj, expected = _mrs_batch()
    res = mrs_mask(lt, lr, mask, traj)
    assert torch.equal(res.keep, expected)
    assert torch.equal(res.traj_keep, torch.tensor([True, False, True, False, True, True, True]))
    assert torch.equal(res.turn_vetoed, torch.arange(12) == 8)
    torch.testing.assert_close(res.rho_bar, t64([1.0, math.exp(0.01), math.exp(-0.0005), math.exp(-0.002),
                                                 1.0, 1.0, 1.0]))
    # keep, rho = ... unpacking works too
    keep, rho, *_ = res
    assert torch.equal(keep, expected)


def test_mrs_bounds_and_veto_options():
    lt, lr, mask, traj, _ = _mrs_batch()
    # wide bounds: only the vetoed turn goes
    res = mrs_mask(lt, lr, mask, traj, lower=0.0, upper=math.inf)
    assert torch.equal(res.keep, torch.arange(12) != 8)
    # no veto: turn 8 comes back
    res = mrs_mask(lt, lr, mask, traj, veto=None)
    assert bool(res.keep[8]) and not bool(res.turn_vetoed.any())
    # a token at ratio 2e-4 (above the 1e-4 veto) is not vetoed
    lt2 = lr.clone()
    lt2[0, 3] = lr[0, 3] + math.log(2e-4)
    assert bool(mrs_mask(lt2, lr, mask, traj, lower=0.0, upper=math.inf).keep[0])
    lt2[0, 3] = lr[0, 3] + math.log(0.5e-4)
    assert not bool(mrs_mask(lt2, lr, mask, traj, lower=0.0, upper=math.inf).keep[0])
    # the veto ignores masked-out tokens
    lt2 = lr.clone()
    lt2[0, 0] = lr[0, 0] - 50.0
    assert bool(mrs_mask(lt2, lr, mask, traj).keep[0])


def test_mrs_edge_cases():
    lr = torch.full((3, 4), -1.0)
    lt = lr.clone()
    mask = torch.tensor([[1, 1, 0, 0], [0, 0, 0, 0], [1, 1, 1, 1]], dtype=torch.bool)
    # traj_index None: each row its own trajectory; a row without trained tokens has rho_bar 1
    res = mrs_mask(lt, lr, mask)
    assert torch.equal(res.keep, torch.tensor([True, True, True]))
    torch.testing.assert_close(res.rho_bar, torch.ones(3))
    # NaN among trained log-probs: rejected; NaN at a masked-out position: ignored
    lt[2, 1] = NAN
    lt[0, 3] = NAN
    res = mrs_mask(lt, lr, mask)
    assert torch.equal(res.keep, torch.tensor([True, True, False]))
    # num_traj larger than used: absent trajectories report rho_bar 1
    res = mrs_mask(lr, lr, mask, torch.tensor([0, 0, 2]), num_traj=4)
    assert res.rho_bar.shape == (4,)
    with pytest.raises(ValueError):
        mrs_mask(lr, lr, mask[:, :2])


def test_mrs_matches_loop_reference():
    gen = torch.Generator().manual_seed(5)
    B, L = 24, 12
    traj = torch.randint(0, 8, (B,), generator=gen)
    traj[:8] = torch.arange(8)  # every trajectory present
    lr = -torch.rand(B, L, generator=gen, dtype=torch.float64) * 4
    mask = torch.rand(B, L, generator=gen) < 0.7
    # per-trajectory offsets around the bounds plus per-token noise, and a few veto tokens
    offs = (torch.rand(8, generator=gen, dtype=torch.float64) - 0.5) * 0.004
    lt = lr + offs[traj][:, None] + torch.randn(B, L, generator=gen, dtype=torch.float64) * 1e-4
    lt[3, 5] -= 12.0
    lt[17, 2] -= 9.5  # ratio ~7.5e-5
    for bounds in ((0.999, 1.001), (0.998, 1.0005)):
        keep, rho, _, _ = mrs_mask(lt, lr, mask, traj, lower=bounds[0], upper=bounds[1])
        rkeep, rrho = ref_mrs(lt, lr, mask, traj, bounds[0], bounds[1], 1e-4)
        torch.testing.assert_close(rho, rrho)
        assert torch.equal(keep, rkeep)
    assert 0 < int(keep.sum()) < B  # the draw exercises both outcomes


# ------------------------------------------------------------------------------------------------------
# PRS


def test_prs_keep_rates():
    n = 20000
    gen = torch.Generator().manual_seed(6)
    valid = torch.ones(5, n, 1, dtype=torch.bool)
    correct = torch.ones(5, n, 1, dtype=torch.bool)
    cov = t64([0.25, 0.35, 0.5, 0.3, 0.4])[:, None, None].expand(5, n, 1)
    keep = prs_mask(correct, cov, valid, generator=gen)
    rates = keep.double().mean(dim=(1, 2))
    assert rates[0] == 0.0            # 0.25: below tau, never kept
    assert abs(float(rates[1]) - 0.5) < 0.02   # 0.35: (0.35 - 0.3)/0.1 = 0.5
    assert rates[2] == 1.0            # 0.5: always kept
    assert rates[3] == 0.0            # exactly tau
    assert rates[4] == 1.0            # exactly tau + s
    torch.testing.assert_close(prs_keep_prob(correct, cov, valid)[:, 0, 0], t64([0.0, 0.5, 1.0, 0.0, 1.0]))


def _prs_case():
    gen = torch.Generator().manual_seed(7)
    shape = (4, 8, 3)
    correct = torch.rand(shape, generator=gen) < 0.5
    cov = torch.rand(shape, generator=gen) * 0.4      # mostly low coverage
    cov[0, 0, 0] = NAN
    correct[0, 0, 0] = True
    valid = random_valid(gen, *shape)
    valid[0, 0, 0] = True
    return correct, cov, valid


def _prs(seed: int):
    return prs_mask(*_prs_case(), generator=torch.Generator().manual_seed(seed))


def test_prs_is_reproducible_for_a_seed_and_differs_across_seeds():
    assert torch.equal(_prs(11), _prs(11))
    assert not torch.equal(_prs(11), _prs(12))


def test_prs_keeps_every_incorrect_valid_turn_and_no_invalid_one():
    correct, _, valid = _prs_case()
    keep = _prs(11)
    assert bool(keep[~correct & valid].all())
    assert not bool(keep[~valid].any())


def test_prs_keeps_a_correct_turn_of_unknown_coverage():
    assert bool(_prs(11)[0, 0, 0])


def test_prs_draws_keep_with_the_papers_probability():
    correct, cov, valid = _prs_case()
    u = torch.rand(correct.shape, generator=torch.Generator().manual_seed(11))  # keep = valid & (u < p)
    p = prs_keep_prob(correct, cov, valid)
    torch.testing.assert_close(p, torch.tensor([
        [[(1.0 if not c or math.isnan(x) else min(max((x - 0.3) / 0.1, 0.0), 1.0)) if v else 0.0
          for c, x, v in zip(cr, xr, vr)] for cr, xr, vr in zip(c2, x2, v2)]
        for c2, x2, v2 in zip(correct.tolist(), cov.tolist(), valid.tolist())]))
    assert torch.equal(_prs(11), valid & (u < p))


def test_prs_without_coverage_keeps_every_valid_turn():
    correct, _, valid = _prs_case()
    assert torch.equal(prs_mask(correct, None, valid), valid)


# ------------------------------------------------------------------------------------------------------
# policy loss


def _one_token(ratio, adv, **kw):
    lnew = torch.tensor([[math.log(ratio)]], dtype=torch.float64, requires_grad=True)
    lold = torch.zeros(1, 1, dtype=torch.float64)
    loss, stats = policy_loss(lnew, lold, t64([adv]), torch.ones(1, 1, dtype=torch.bool), **kw)
    loss.backward()
    return loss.item(), lnew.grad[0, 0].item(), stats


@pytest.mark.parametrize("ratio,adv,exp_loss,exp_grad,kind", [
    # A > 0: loss = max(-A r, -A clip(r)); clipped (zero grad) above 1 + .28, NOT below 1 - .2
    (1.1, 1.0, -1.1, -1.1, None),
    (1.5, 1.0, -1.28, 0.0, "clipfrac_high"),
    (0.5, 1.0, -0.5, -0.5, None),
    (1.5, 2.0, -2.56, 0.0, "clipfrac_high"),
    # A < 0: clipped (zero grad) below 1 - .2; unclipped above 1 + .28 up to the dual clip c = 3
    (0.5, -1.0, 0.8, 0.0, "clipfrac_low"),
    (0.9, -1.0, 0.9, 0.9, None),
    (1.5, -1.0, 1.5, 1.5, None),
    (2.5, -1.0, 2.5, 2.5, None),
    (5.0, -1.0, 3.0, 0.0, "dual_clip_frac"),   # min(max(5, 1.28), 3) = 3
    (4.0, -2.0, 6.0, 0.0, "dual_clip_frac"),   # min(8, 6) = 6
    # A = 0: nothing
    (3.0, 0.0, 0.0, 0.0, None),
])
def test_policy_loss_clipping_single_token(ratio, adv, exp_loss, exp_grad, kind):
    loss, grad, stats = _one_token(ratio, adv)
    assert loss == pytest.approx(exp_loss, abs=1e-12)
    assert grad == pytest.approx(exp_grad, abs=1e-12)  # d/dlogp (-A r) = -A r when unclipped
    for k in ("clipfrac_low", "clipfrac_high", "dual_clip_frac"):
        assert stats[k] == (1.0 if k == kind else 0.0)
    assert stats["ratio_mean"] == pytest.approx(ratio)
    assert stats["approx_kl"] == pytest.approx(ratio - 1 - math.log(ratio))
    assert stats["n_kept_turns"] == 1 and stats["n_kept_tokens"] == 1


def test_policy_loss_dual_clip_disabled_and_other_ranges():
    loss, grad, _ = _one_token(5.0, -1.0, dual_clip=None)
    assert loss == pytest.approx(5.0) and grad == pytest.approx(5.0)
    loss, _, _ = _one_token(1.5, 1.0, clip_high=0.2)
    assert loss == pytest.approx(-1.2)
    loss, _, _ = _one_token(0.5, -1.0, clip_low=0.1)
    assert loss == pytest.approx(0.9)
    with pytest.raises(ValueError):
        _one_token(1.0, 1.0, aggregation="mean")
    with pytest.raises(ValueError):
        _one_token(1.0, 1.0, dual_clip=0.5)


def test_policy_loss_aggregation_by_hand():
    # ratio 1 everywhere -> per-token loss = -A. Turn 0: A=1, 3 trained tokens -> -3; turn 1: A=-.5, 2 tokens -> +1;
    # turn 2: dropped (A=10); turn 3: kept but no trained token (not counted).
    lnew = torch.full((4, 5), -1.0, dtype=torch.float64, requires_grad=True)
    lold = torch.full((4, 5), -1.0, dtype=torch.float64)
    mask = torch.tensor([[0, 1, 1, 1, 0], [0, 0, 1, 1, 0], [1, 1, 1, 1, 1], [0, 0, 0, 0, 0]], dtype=torch.bool)
    adv = t64([1.0, -0.5, 10.0, 7.0])
    keep = torch.tensor([True, True, False, True])
    loss, stats = policy_loss(lnew, lold, adv, mask, keep)
    assert loss.item() == pytest.approx((-3.0 + 1.0) / 2)          # turn-sum, mean over the 2 kept turns
    assert stats["n_kept_turns"] == 2 and stats["n_kept_tokens"] == 5 and stats["pg_loss"] == pytest.approx(-1.0)
    loss.backward()
    expected = torch.zeros(4, 5, dtype=torch.float64)
    expected[0, 1:4] = -1.0 / 2     # -A * ratio / n_turns
    expected[1, 2:4] = 0.5 / 2
    assert torch.equal(lnew.grad, expected)
    lnew.grad = None
    loss_tm, stats = policy_loss(lnew, lold, adv, mask, keep, aggregation="token-mean")
    assert loss_tm.item() == pytest.approx((-3.0 + 1.0) / 5)
    loss_tm.backward()
    torch.testing.assert_close(lnew.grad, expected * 2 / 5)


def test_policy_loss_gradient_only_through_kept_turns_and_masked_tokens():
    gen = torch.Generator().manual_seed(8)
    B, L = 6, 9
    lold = -torch.rand(B, L, generator=gen, dtype=torch.float64) * 3
    lnew_val = lold + (torch.rand(B, L, generator=gen, dtype=torch.float64) - 0.5) * 0.1  # ratios near 1: no clipping
    mask = torch.rand(B, L, generator=gen) < 0.6
    mask[:, 0] = True
    keep = torch.tensor([True, False, True, True, False, True])
    # garbage at untrained positions: prompt tokens may hold -inf/NaN log-probs
    lnew_val[~mask] = -math.inf
    lnew_val[0, ~mask[0]] = NAN
    lnew = lnew_val.clone().requires_grad_(True)
    adv = torch.randn(B, generator=gen, dtype=torch.float64)
    adv[1] = NAN  # a dropped turn's advantage is never read
    loss, _ = policy_loss(lnew, lold, adv, mask, keep)
    assert torch.isfinite(loss)
    loss.backward()
    trained = mask & keep[:, None]
    assert torch.equal(lnew.grad[~trained], torch.zeros(int((~trained).sum()), dtype=torch.float64))
    assert bool((lnew.grad[trained] != 0).all())
    assert torch.isfinite(lnew.grad).all()


def test_policy_loss_nothing_kept():
    lnew = torch.zeros(2, 3, requires_grad=True)
    loss, stats = policy_loss(lnew, torch.zeros(2, 3), torch.ones(2), torch.ones(2, 3, dtype=torch.bool),
                              torch.tensor([False, False]))
    assert loss.item() == 0.0 and stats["n_kept_turns"] == 0 and stats["n_kept_tokens"] == 0
    loss.backward()
    assert torch.equal(lnew.grad, torch.zeros(2, 3))


def test_policy_loss_matches_loop_reference():
    gen = torch.Generator().manual_seed(9)
    B, L = 10, 7
    lold = -torch.rand(B, L, generator=gen, dtype=torch.float64) * 2
    lnew = (lold + torch.randn(B, L, generator=gen, dtype=torch.float64) * 0.8).requires_grad_(True)  # wide ratios
    adv = torch.randn(B, generator=gen, dtype=torch.float64) * 2
    mask = torch.rand(B, L, generator=gen) < 0.7
    mask[4] = False
    keep = torch.rand(B, generator=gen) < 0.7
    keep[4] = True
    for agg in ("turn-sum", "token-mean"):
        for c in (3.0, None):
            loss, stats = policy_loss(lnew, lold, adv, mask, keep, dual_clip=c, aggregation=agg)
            ref = ref_policy_loss(lnew.detach(), lold, adv, mask, keep, 0.2, 0.28, c, agg)
            assert loss.item() == pytest.approx(ref, rel=1e-12, abs=1e-12)
            # the gradient against a per-token autograd reference
            lnew.grad = None
            loss.backward()
            g_ref = torch.zeros(B, L, dtype=torch.float64)
            if agg == "token-mean":
                count = sum(int(mask[b].sum()) for b in range(B) if keep[b])
            else:  # kept turns with at least one trained token (row 4 is kept but has none)
                count = sum(1 for b in range(B) if keep[b] and mask[b].any())
            for b in range(B):
                for l in range(L):
                    if keep[b] and mask[b, l]:
                        x = lnew.detach()[b, l].clone().requires_grad_(True)
                        r = torch.exp(x - lold[b, l])
                        a = adv[b]
                        tl = torch.maximum(-a * r, -a * r.clamp(0.8, 1.28))
                        if a < 0 and c is not None:
                            tl = torch.minimum(tl, -a * c)
                        tl.backward()
                        g_ref[b, l] = x.grad / count
            torch.testing.assert_close(lnew.grad, g_ref)
            # stats against direct counts
            tok = [(b, l) for b in range(B) for l in range(L) if keep[b] and mask[b, l]]
            ratios = [math.exp(float(lnew.detach()[b, l] - lold[b, l])) for b, l in tok]
            assert stats["n_kept_tokens"] == len(tok)
            assert stats["ratio_mean"] == pytest.approx(sum(ratios) / len(ratios))
            assert stats["clipfrac_high"] == pytest.approx(
                sum(1 for (b, l), r in zip(tok, ratios) if adv[b] > 0 and r > 1.28) / len(tok))
            assert stats["clipfrac_low"] == pytest.approx(
                sum(1 for (b, l), r in zip(tok, ratios) if adv[b] < 0 and r < 0.8) / len(tok))
            assert stats["dual_clip_frac"] == pytest.approx(
                (sum(1 for (b, l), r in zip(tok, ratios) if adv[b] < 0 and r > 3.0) / len(tok)) if c else 0.0)
            assert stats["approx_kl"] == pytest.approx(sum(r - 1 - math.log(r) for r in ratios) / len(tok))
    assert stats["clipfrac_high"] > 0 and stats["clipfrac_low"] > 0  # the draw exercises the clips


def test_policy_loss_per_token_advantages_and_float32():
    lnew = torch.zeros(2, 3, requires_grad=True)
    adv_tok = torch.tensor([[1.0, 2.0, 3.0], [0.0, -1.0, 0.0]])
    mask = torch.ones(2, 3, dtype=torch.bool)
    loss, _ = policy_loss(lnew, torch.zeros(2, 3), adv_tok, mask)
    assert loss.dtype == torch.float32
    assert loss.item() == pytest.approx((-6.0 + 1.0) / 2)
    # (B,) advantages broadcast == explicit (B, L)
    l1, _ = policy_loss(lnew, torch.zeros(2, 3), torch.tensor([1.0, -2.0]), mask)
    l2, _ = policy_loss(lnew, torch.zeros(2, 3), torch.tensor([[1.0] * 3, [-2.0] * 3]), mask)
    assert l1.item() == l2.item()


# ------------------------------------------------------------------------------------------------------
# log-prob helpers


@pytest.mark.parametrize("temperature,chunk", [(1.0, 1024), (1.0, 3), (0.7, 5), (1.3, 1)])
def test_selective_log_softmax_matches_full_log_softmax(temperature, chunk):
    gen = torch.Generator().manual_seed(10)
    logits = (torch.randn(3, 7, 50, generator=gen, dtype=torch.float64) * 3).requires_grad_(True)
    ids = torch.randint(0, 50, (3, 7), generator=gen)
    out = selective_log_softmax(logits, ids, temperature=temperature, chunk_rows=chunk)
    ref = torch.log_softmax(logits / temperature, dim=-1).gather(-1, ids[..., None]).squeeze(-1)
    assert out.shape == (3, 7) and out.dtype == torch.float64
    torch.testing.assert_close(out, ref)
    g1, = torch.autograd.grad(out.sum(), logits)
    g2, = torch.autograd.grad(ref.sum(), logits)
    torch.testing.assert_close(g1, g2)


def test_selective_log_softmax_half_precision_and_shapes():
    gen = torch.Generator().manual_seed(11)
    logits = torch.randn(4, 9, 33, generator=gen).to(torch.bfloat16)
    ids = torch.randint(0, 33, (4, 9), generator=gen)
    out = selective_log_softmax(logits, ids, chunk_rows=4)
    assert out.dtype == torch.float32
    ref = torch.log_softmax(logits.float(), dim=-1).gather(-1, ids[..., None]).squeeze(-1)
    torch.testing.assert_close(out, ref)
    # 2-D input and a masked (-inf) vocabulary entry
    l2 = torch.tensor([[0.0, 0.0, -math.inf, 0.0]])
    torch.testing.assert_close(selective_log_softmax(l2, torch.tensor([1])), torch.tensor([-math.log(3.0)]))
    with pytest.raises(ValueError):
        selective_log_softmax(logits, ids[:, :3])


def test_entropy_from_logits():
    V = 16
    logits = torch.zeros(2, 3, V)
    logits[1] = torch.tensor([100.0] + [0.0] * (V - 1))  # near one-hot -> ~0 entropy
    mask = torch.tensor([[True, True, False], [False, False, False]])
    assert float(entropy_from_logits(logits, mask)) == pytest.approx(math.log(V))   # uniform: ln V
    assert float(entropy_from_logits(logits[1:], None)) == pytest.approx(0.0, abs=1e-30)
    both = torch.ones(2, 3, dtype=torch.bool)
    assert float(entropy_from_logits(logits, both, chunk_rows=2)) == pytest.approx(math.log(V) / 2, rel=1e-6)
    assert float(entropy_from_logits(logits, torch.zeros(2, 3, dtype=torch.bool))) == 0.0
    # against the definition on random logits, with temperature, and finite with -inf logits
    gen = torch.Generator().manual_seed(12)
    x = torch.randn(5, 4, 20, generator=gen, dtype=torch.float64)
    m = torch.rand(5, 4, generator=gen) < 0.5
    m[0, 0] = True
    p = torch.softmax(x / 0.8, -1)
    ref = (-(p * p.log()).sum(-1))[m].mean()
    torch.testing.assert_close(entropy_from_logits(x, m, temperature=0.8, chunk_rows=3), ref)
    x[..., 0] = -math.inf
    assert torch.isfinite(entropy_from_logits(x, m))
