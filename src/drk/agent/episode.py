"""The multi-turn episode: prompt → generate → extract code → evaluate → feedback → next turn.

Shared by `drk collect`, `drk eval --model`, `drk infer` (STTS) and the RL rollouts. Many episodes advance
together: each turn, every active episode's context goes to the engine in one `generate` call and every
extracted candidate to the evaluator in one `evaluate_batch` call.

History policies decide what the next turn sees:
- `all`: the whole conversation so far (the paper's multi-turn training and evaluation);
- `topw`: the first prompt plus the `keep` past turns with the highest reward, in chronological order
  (the paper's sequential test-time scaling, STTS);
- `window`: the first prompt plus the best run of `keep` consecutive turns by summed reward (what the
  released evaluation code selects).
A turn in a context is its assistant reply followed by the feedback it received.
"""
from __future__ import annotations

import hashlib
from concurrent.futures import Future
from dataclasses import asdict, dataclass, field, fields
from typing import Callable

from drk.agent.extract import extract_code
from drk.agent.prompts import feedback_prompt, initial_messages
from drk.config import option
from drk.engines.base import FINISH_ERROR, Engine, SamplingParams
from drk.gym.reward import RewardWeights, turn_reward
from drk.gym.types import INFRA_ERROR, EvalOptions, EvalRequest, EvalResult
from drk.tasks import Task

HISTORY_POLICIES = ("all", "topw", "window")
STOPPED_INFRA = "infra_error"   # Episode.stopped when the endpoint or the evaluator failed (not the model)


class InfraError(RuntimeError):
    """The infrastructure (an endpoint or the evaluator) kept failing after retries, so a stage stops.

    `where` names it (the endpoint URL, "evaluator ..."), `cause` says what happened (HTTP 401, connection
    refused, ...), `unfinished` counts the items left for the next run, which redoes them."""

    def __init__(self, where: str, cause: str, unfinished: int = 0) -> None:
        super().__init__(f"{where}: {cause}")
        self.where, self.cause, self.unfinished = where, cause, unfinished


def engine_label(engine) -> str:
    """What to name when the engine fails: its endpoint URL, else its name."""
    spec = getattr(engine, "spec", None) or getattr(getattr(engine, "engine", None), "spec", None)
    return getattr(spec, "base_url", None) or getattr(engine, "name", "the model engine")


def infra_failure(episodes: list["Episode"], engine, unfinished: int) -> InfraError | None:
    """An InfraError for the first episode the infrastructure failed, or None."""
    for ep in episodes:
        why = ep.infra_error
        if why:
            if why.startswith("evaluator: "):
                return InfraError("evaluator", why[len("evaluator: "):], unfinished)
            return InfraError(f"endpoint {engine_label(engine)}", why, unfinished)
    return None


@dataclass
class Turn:
    index: int
    completion: str
    code: str | None = None
    extraction_error: str = ""
    result: EvalResult | None = None  # None when there was no code to evaluate
    reward: float = 0.0
    feedback: str = ""                # the user message that followed this turn
    context_turns: list[int] = field(default_factory=list)  # which earlier turns were in this turn's context
    finish_reason: str = ""
    engine_error: str = ""
    usage: dict = field(default_factory=dict)
    token_ids: list[int] | None = None
    logprobs: list[float] | None = None
    prompt_token_ids: list[int] | None = None

    @property
    def ok(self) -> bool:
        return self.result is not None and self.result.ok

    @property
    def speedup(self) -> float | None:
        return self.result.speedup if self.result is not None else None

    def to_dict(self) -> dict:
        """The turn as a record: the result as a dict, without token ids and log-probs (those are for
        training, not for files)."""
        d = asdict(self)  # asdict turns the EvalResult into its to_dict() form
        for k in ("token_ids", "logprobs", "prompt_token_ids"):
            d.pop(k)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "Turn":
        """A turn read back from a record (a resumed run), its result typed again; unknown keys (e.g. "task")
        are ignored."""
        names = {f.name for f in fields(cls)}
        turn = cls(**{k: v for k, v in d.items() if k in names})
        if isinstance(turn.result, dict):
            turn.result = EvalResult.from_dict(turn.result)
        return turn


@dataclass
class Episode:
    uuid: str
    task: Task
    first_messages: list[dict]
    turns: list[Turn] = field(default_factory=list)
    stopped: str = ""                 # why the episode ended early ("infra_error", "context_limit"), else ""

    def conversation(self) -> list[dict]:
        """First prompt, then assistant/feedback pairs; ends with the last assistant reply (SFT-ready)."""
        msgs = list(self.first_messages)
        for i, t in enumerate(self.turns):
            msgs.append({"role": "assistant", "content": t.completion})
            if i < len(self.turns) - 1:
                msgs.append({"role": "user", "content": t.feedback})
        return msgs

    @property
    def infra_error(self) -> str:
        """Why the infrastructure (endpoint or evaluator) failed this episode, or "". Such an episode says
        nothing about the model: it is never scored or trained on, and the next run redoes it."""
        if self.stopped != STOPPED_INFRA:
            return ""
        return next((t.engine_error for t in self.turns if t.engine_error), "infrastructure error")

    def best_turn(self) -> int | None:
        """Index of the best turn: correct first, then speedup, then reward; None if no turn is correct."""
        best = None
        for t in self.turns:
            if not t.ok:
                continue
            key = (t.speedup if t.speedup is not None else 0.0, t.reward, t.index)
            if best is None or key > best[0]:
                best = (key, t.index)
        return best[1] if best else None

    def record(self, teacher: str = "", usage: dict | None = None) -> dict:
        """One line of trajectories.jsonl."""
        best = self.best_turn()
        return {"uuid": self.uuid, "task": self.task.id, "task_hash": self.task.source_hash,
                "messages": self.conversation(), "turns": [t.to_dict() for t in self.turns],
                "best_round": best, "final_speedup": self.turns[best].speedup if best is not None else None,
                "rewards": [t.reward for t in self.turns], "teacher": teacher, "usage": usage or {},
                "stopped": self.stopped}


def episode_uuid(task: Task, sample: int, salt: str = "") -> str:
    h = hashlib.sha256(f"{task.id}|{task.source_hash}|{sample}|{salt}".encode()).hexdigest()[:16]
    return f"{task.id.replace('/', '.')}-{sample}-{h}"


def select_turns(turns: list[Turn], policy: str, keep: int) -> list[Turn]:
    """Which past turns go into the next context (chronological order)."""
    if policy == "all" or len(turns) <= keep:
        return list(turns)
    if policy == "topw":
        ranked = sorted(turns, key=lambda t: (t.reward, t.index), reverse=True)[:keep]
        return sorted(ranked, key=lambda t: t.index)
    if policy == "window":
        best_start, best_sum = 0, float("-inf")
        for s in range(len(turns) - keep + 1):
            total = sum(t.reward for t in turns[s:s + keep])
            if total >= best_sum:  # ties: the later window
                best_start, best_sum = s, total
        return turns[best_start:best_start + keep]
    raise ValueError(f"unknown history policy {policy!r}; use one of {HISTORY_POLICIES}")


def build_context(ep: Episode, policy: str, keep: int) -> tuple[list[dict], list[int]]:
    """Messages for the next turn and the indices of the turns included."""
    chosen = select_turns(ep.turns, policy, keep)
    msgs = list(ep.first_messages)
    for t in chosen:
        msgs.append({"role": "assistant", "content": t.completion})
        msgs.append({"role": "user", "content": t.feedback})
    return msgs, [t.index for t in chosen]


# EvalOptions (drk.gym) does not import drk.config: the flags of its fields that are not their dashed names
EVAL_OPTION_FLAGS = {"timeout_s": "--timeout", "fp64_check": "--fp64"}


@dataclass
class EpisodeConfig:
    """One episode's options; the stages nest it whole (`drk collect --turns 5 --temperature 0.7 --trials 3`)."""
    turns: int = 3                    # turns per episode
    history: str = "all"              # all | topw | window
    keep: int = 4                     # turns kept in context by topw/window
    # the sampler's options (n is always 1: each episode samples its own turns)
    sampling: SamplingParams = option(factory=SamplingParams, flat=True, hide=("n",),
                                      flags={"max_new_tokens": "--max-tokens"})
    eval_options: EvalOptions = option(factory=EvalOptions, flat=True, panel="eval", flags=EVAL_OPTION_FLAGS)
    reward: RewardWeights = option(factory=RewardWeights, hidden=True)  # recipe only: episode.reward.w_c ...
    system_prompt: bool = True        # the first prompt has the system message
    feedback_chars: int = 2000        # the evaluator's feedback is cut to this many characters per turn
    overlap_chunks: int = 1           # generate a turn in this many chunks, each judged while the next is generated


def new_episode(task: Task, sample: int, cfg: EpisodeConfig, salt: str = "") -> Episode:
    first = task.meta.get("prompt") if isinstance(task.meta.get("prompt"), list) else None
    return Episode(episode_uuid(task, sample, salt), task, first or initial_messages(task.source, cfg.system_prompt))


def _one_reply(cfg: EpisodeConfig) -> SamplingParams:
    """The turn's sampling parameters: one reply per episode."""
    return SamplingParams(**{**asdict(cfg.sampling), "n": 1})


def generate_turn(episodes: list[Episode], engine: Engine, cfg: EpisodeConfig) -> list:
    """The engine's replies for every episode's next turn (one generate call), for `step(gens=...)`."""
    return engine.generate([build_context(ep, cfg.history, cfg.keep)[0] for ep in episodes], _one_reply(cfg)) \
        if episodes else []


@dataclass
class Started:
    """A turn whose replies were made earlier and whose kernels are already with the evaluator
    (`start_turn`), for `step(started=...)`."""
    episodes: list[Episode]
    turns: list[Turn]
    pending: list[tuple[Turn, Future]]


def _submit(chunk: list[Episode], ctx_ids: list[list[int]], made: list, gym, cfg: EpisodeConfig,
            submit: Callable | None) -> tuple[list[Turn], list, list]:
    """The chunk's turns from its replies `made`; their kernels submitted (`submit`: futures, pending) or, without
    it, judged here in one batch. Returns (turns, pending, judged)."""
    turns, reqs, owners = [], [], []
    for ep, ids, g in zip(chunk, ctx_ids, made):
        turn = _turn_from(ep, ids, g[0])
        if turn.code is not None:
            reqs.append(EvalRequest(ep.task, turn.code, cfg.eval_options, solution=f"{ep.uuid}/turn{turn.index}",
                                    request_id=f"{ep.uuid}/{turn.index}"))
            owners.append(turn)
        turns.append(turn)
    if submit is not None:
        return turns, [(turn, submit(req)) for turn, req in zip(owners, reqs)], []
    return turns, [], list(zip(owners, gym.evaluate_batch(reqs) if reqs else []))


def _check_made(gens: list, episodes: list[Episode]) -> None:
    if len(gens) != len(episodes):
        raise ValueError(f"{len(gens)} replies made earlier for {len(episodes)} episodes")


def start_turn(episodes: list[Episode], gens: list, gym, cfg: EpisodeConfig) -> Started | None:
    """Hand the kernels of replies made earlier (`generate_turn`, for exactly these episodes in this order) to
    the evaluator now and return without waiting, so they are judged while the caller does other work (the RL
    loop: the rest of the current step); `step(started=...)` finishes the turn. None when the evaluator takes
    no submissions (it judges only whole batches, which would block here)."""
    submit = getattr(gym, "submit", None)
    if submit is None:
        return None
    _check_made(gens, episodes)
    ctx_ids = [build_context(ep, cfg.history, cfg.keep)[1] for ep in episodes]
    turns, pending, _ = _submit(episodes, ctx_ids, gens, gym, cfg, submit)
    return Started(list(episodes), turns, pending)


def step(episodes: list[Episode], engine: Engine, gym, cfg: EpisodeConfig, *, gens: list | None = None,
         started: Started | None = None, while_judged: Callable[[], None] | None = None) -> list[Turn]:
    """Advance every episode by one turn. The episodes are generated in `cfg.overlap_chunks` chunks, and each
    chunk's kernels go to the evaluator as soon as they exist, so the evaluator judges one chunk while the
    engine generates the next (one chunk: one generate call, then one batch of evaluations).
    `gens`: the replies, made earlier (`generate_turn`) for exactly these episodes in this order.
    `started`: the replies made earlier and already with the evaluator (`start_turn`), for these episodes.
    `while_judged`: called once every kernel of the turn is with the evaluator and before waiting for them
    (the RL loop generates its next step's first turns there)."""
    if gens is not None:
        _check_made(gens, episodes)
    if started is not None and [id(ep) for ep in started.episodes] != [id(ep) for ep in episodes]:
        raise ValueError("the turn was started for other episodes")
    turns: list[Turn] = []
    judged: list[tuple[Turn, EvalResult]] = []
    pending: list[tuple[Turn, Future]] = []  # submitted while later chunks are generated
    if started is not None:
        turns, pending = list(started.turns), list(started.pending)
    else:
        params = _one_reply(cfg)
        k = max(1, min(int(cfg.overlap_chunks), len(episodes)))
        size = -(-len(episodes) // k) if episodes else 0
        submit = getattr(gym, "submit", None) if (k > 1 or while_judged is not None) else None
        for lo in range(0, len(episodes), max(1, size)):
            chunk = episodes[lo:lo + size]
            contexts = [build_context(ep, cfg.history, cfg.keep) for ep in chunk]
            made = gens[lo:lo + size] if gens is not None else engine.generate([c for c, _ in contexts], params)
            t, p, j = _submit(chunk, [ids for _, ids in contexts], made, gym, cfg, submit)
            turns, pending, judged = turns + t, pending + p, judged + j
    if while_judged is not None:
        while_judged()
    judged += [(turn, fut.result()) for turn, fut in pending]
    for turn, res in judged:
        turn.result = res
        if res.verdict == INFRA_ERROR:  # the evaluator failed, not the candidate: an infrastructure error
            turn.engine_error = f"evaluator: {res.error or 'infrastructure error'}"
    for ep, turn in zip(episodes, turns):
        turn.reward = turn_reward(turn.result, cfg.reward) if turn.result else 0.0
        turn.feedback = feedback_prompt(turn.result, turn.extraction_error, cfg.feedback_chars)
        ep.turns.append(turn)
        if turn.engine_error:  # a generation that failed after retries, or an evaluator infra_error
            ep.stopped = STOPPED_INFRA
    return turns


def _turn_from(ep: Episode, ctx_ids: list[int], gen) -> Turn:
    turn = Turn(index=len(ep.turns), completion=gen.text, context_turns=ctx_ids, finish_reason=gen.finish_reason,
                usage=dict(gen.usage), token_ids=gen.token_ids, logprobs=gen.logprobs,
                prompt_token_ids=gen.prompt_token_ids)
    if gen.finish_reason == FINISH_ERROR:
        turn.engine_error = gen.error or "generation failed"
    else:
        turn.code, turn.extraction_error = extract_code(gen.text)
    return turn


def run_episodes(episodes: list[Episode], engine: Engine, gym, cfg: EpisodeConfig,
                 on_turn: Callable[[int, list[Episode]], None] | None = None) -> list[Episode]:
    """Run every episode up to `cfg.turns` turns (episodes stopped by an infrastructure error drop out).
    Episodes that already have turns (a resumed run) continue from where they are."""
    for t in range(min((len(ep.turns) for ep in episodes), default=0), cfg.turns):
        active = [ep for ep in episodes if not ep.stopped and len(ep.turns) <= t]
        if not active:
            break
        step(active, engine, gym, cfg)
        if on_turn is not None:
            on_turn(t, episodes)
    return episodes
