"""The text-generation interface every engine implements: request/response types and the `Engine` protocol.

What it is: plain dataclasses (`SamplingParams`, `Generation`, `EngineSpec`), the `Engine` protocol, the
`EngineError` raised for setup problems, and a thread-safe `UsageCounter` that engines share.

What it deliberately is not: an engine. No torch, transformers or openai import happens here, so the module is
cheap to import from the CLI, the agent loop and the trainers.

Contract every engine keeps:
  * `generate(conversations, params)` returns, per conversation and in input order, exactly `params.n`
    `Generation`s.
  * A per-request failure (endpoint down after retries, ...) never raises: it comes back as a `Generation` with
    `finish_reason == "error"` and a one-line `error`. Only setup problems raise `EngineError`.

How to test: `pytest tests/test_engines.py` (CPU, offline).
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

FINISH_STOP = "stop"      # EOS / end-of-turn token or a stop string
FINISH_LENGTH = "length"  # hit max_new_tokens
FINISH_ERROR = "error"    # no sample could be produced; see Generation.error


class EngineError(RuntimeError):
    """A setup error: bad model path, missing API key for a remote endpoint, missing optional dependency."""


@dataclass
class SamplingParams:
    temperature: float = 1.0          # sampling temperature (<= 0: greedy)
    top_p: float = 1.0                # nucleus sampling's probability mass (1.0: off)
    top_k: int = 0                    # 0 = off (transformers' generate() would default to 50: we never use it)
    max_new_tokens: int = 1024        # tokens one reply may generate
    n: int = 1                        # samples per conversation
    seed: int | None = None           # sampling seed (None: unseeded)
    stop: list[str] | None = None     # stop strings; the text is cut before the first one (not included)


@dataclass
class Generation:
    text: str
    token_ids: list[int] | None = None         # exact sampled ids (local engines); None for endpoints
    logprobs: list[float] | None = None        # log-prob of each sampled id under the distribution sampled from
    prompt_token_ids: list[int] | None = None  # exact context ids the sample was conditioned on (local engines)
    finish_reason: str = ""                    # "stop" | "length" | "error"
    usage: dict = field(default_factory=dict)  # prompt_tokens, completion_tokens
    error: str = ""                            # one-line reason when the request failed after retries


@runtime_checkable
class Engine(Protocol):
    name: str

    def generate(self, conversations: list[list[dict]], params: SamplingParams) -> list[list[Generation]]:
        """Per conversation (OpenAI chat format), `params.n` Generations, in input order."""
        ...

    def usage(self) -> dict:
        """Cumulative prompt_tokens, completion_tokens, requests, retries, errors."""
        ...


@dataclass
class EngineSpec:
    """What the CLI builds from flags: either `base_url` (an endpoint) or a local model path / HF id."""

    model: str
    base_url: str | None = None
    api_key_env: str = "OPENAI_API_KEY"   # the *name* of the variable holding the key, never the key itself
    kind: str = "auto"                    # auto | openai | hf | vllm
    max_concurrency: int = 16
    timeout_s: float = 600.0
    max_retries: int = 5
    dtype: str = "auto"
    device: str = "auto"
    extra: dict = field(default_factory=dict)


def error_generation(message: str, prompt_token_ids: list[int] | None = None) -> Generation:
    """A placeholder sample for a request that failed; `message` is squashed to one line."""
    return Generation(text="", prompt_token_ids=prompt_token_ids, finish_reason=FINISH_ERROR,
                      error=one_line(message))


def one_line(message: str, limit: int = 300) -> str:
    """Collapse whitespace (newlines included) and cap the length, for `Generation.error`."""
    flat = " ".join(str(message).split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


class UsageCounter:
    """Thread-safe cumulative counters: prompt_tokens, completion_tokens, requests, retries, errors."""

    KEYS = ("prompt_tokens", "completion_tokens", "requests", "retries", "errors")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts = dict.fromkeys(self.KEYS, 0)

    def add(self, **deltas: int) -> None:
        with self._lock:
            for key, value in deltas.items():
                self._counts[key] += int(value or 0)

    def snapshot(self) -> dict:
        with self._lock:
            return dict(self._counts)


class ChatTemplateEngine:
    """For engines that sample from token ids: conversations go through the tokenizer's chat template
    (`add_generation_prompt=True`), so `prompt_token_ids` are exactly what was sampled from. Subclasses set
    `tokenizer`, `chat_template_kwargs`, `_usage` and implement `generate_ids`."""

    tokenizer: object
    chat_template_kwargs: dict
    _usage: UsageCounter

    def usage(self) -> dict:
        return self._usage.snapshot()

    def encode_conversation(self, messages: list[dict]) -> list[int]:
        """Prompt ids exactly as sampled from: the chat template with add_generation_prompt=True."""
        ids = self.tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True,  # type: ignore[attr-defined]
                                                 return_dict=False, **self.chat_template_kwargs)
        return [int(i) for i in ids]

    def generate(self, conversations: list[list[dict]], params: SamplingParams) -> list[list[Generation]]:
        return self.generate_ids([self.encode_conversation(c) for c in conversations], params)

    def generate_ids(self, prompts: list[list[int]], params: SamplingParams) -> list[list[Generation]]:
        raise NotImplementedError


class TimedEngine:
    """Wraps an engine to count the seconds spent generating (the rest of a rollout is evaluation)."""

    def __init__(self, engine) -> None:
        self.engine, self.seconds = engine, 0.0
        self.name = getattr(engine, "name", "engine")

    def generate(self, conversations, params):
        t0 = time.perf_counter()
        try:
            return self.engine.generate(conversations, params)
        finally:
            self.seconds += time.perf_counter() - t0

    def usage(self) -> dict:
        return self.engine.usage()

    def take_seconds(self) -> float:
        s, self.seconds = self.seconds, 0.0
        return s

    def __getattr__(self, name):
        return getattr(self.engine, name)
