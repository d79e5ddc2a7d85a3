"""The candidate process can write its own replies (attacks m05-m07 reach the runner object and replace its
`reply`): a failing reply may only claim a failure of the candidate's own, and its text is bounded by the judge."""
from drk.gym import types as T
from drk.gym.judge.checks import MAX_CLAIMED_ERROR, claimed_failure


def test_a_reply_cannot_claim_success_or_the_infrastructures_failure():
    for kind in (T.OK, T.INFRA_ERROR, T.TIMEOUT, T.CRASHED, T.INCORRECT, "OK", None, 3, ["ok"], "nonsense"):
        assert claimed_failure({"ok": False, "kind": kind, "error": "x"}) == (T.RUNTIME_ERROR, "x")
    for kind in (T.RUNTIME_ERROR, T.COMPILE_ERROR, T.FORBIDDEN, T.HACKED):
        assert claimed_failure({"ok": False, "kind": kind, "error": "boom"}) == (kind, "boom")


def test_a_claimed_error_text_is_bounded_by_the_judge():
    verdict, error = claimed_failure({"ok": False, "kind": T.RUNTIME_ERROR, "error": "E" * 10_000_000})
    assert verdict == T.RUNTIME_ERROR and len(error) == MAX_CLAIMED_ERROR
    assert len(claimed_failure({"ok": False, "error": ["x"] * 10**6})[1]) <= 200
    assert claimed_failure({"ok": False})[1] == ""
