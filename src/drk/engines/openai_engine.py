"""OpenAI-compatible chat endpoint engine (OpenAI, vLLM/SGLang servers, ...) with our own retries.

What it is: `OpenAIEngine(spec)` sends one `chat.completions` request per conversation (temperature, top_p,
max_tokens, n, seed, stop; `top_k` only as a vLLM/SGLang `extra_body` field when set; `logprobs=True` only when
`spec.extra["logprobs"]`), from a thread pool of `spec.max_concurrency` workers, so at most that many requests
are in flight. Retries are ours (the client's own `max_retries` is 0, so every retry is counted): exponential
backoff with full jitter, honouring a short `Retry-After`, on 408/409/429/5xx, timeouts and connection errors.
Other HTTP errors (400, 401, 404, ...) fail at once. If the server returns fewer than `n` choices, further
requests are made for the rest (with seed + k when a seed is given, so they differ). A request that still fails
yields Generations with finish_reason "error" and a one-line `error`; `generate` never raises for it.

The API key is read from the environment variable named by `spec.api_key_env` ("EMPTY" when unset and the
host is local; EngineError when unset for a remote host). It lives only inside the openai client: it is never
logged, stored on this object, put in an error, or returned (error strings are scrubbed of it as well).

What it deliberately is not: a tokenizer-aware engine. Endpoints return text (and optionally log-probs), not the
exact token ids, so `token_ids` / `prompt_token_ids` are None. The text is returned untouched.

Tuning knobs in `spec.extra`: logprobs (bool), backoff_base_s (0.5), backoff_max_s (30), extra_body (dict).

How to test: `pytest tests/test_engines.py -k openai` (runs against `ScriptedServer` over real HTTP).
"""
from __future__ import annotations

import logging
import os
import random
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from urllib.parse import urlparse

from drk.engines.base import (FINISH_STOP, EngineError, EngineSpec, Generation, SamplingParams, UsageCounter,
                              error_generation, one_line)

log = logging.getLogger(__name__)

LOCAL_HOSTS = {"localhost", "127.0.0.1", "::1", "0.0.0.0"}
RETRYABLE_STATUS = {408, 409, 429}


def is_local_url(url: str) -> bool:
    return (urlparse(url).hostname or "").lower() in LOCAL_HOSTS


def read_api_key(env_name: str, base_url: str) -> str:
    """The key from `env_name`; "EMPTY" for a local server when unset; EngineError for a remote one."""
    key = os.environ.get(env_name, "")
    if key:
        return key
    if is_local_url(base_url):
        return "EMPTY"
    raise EngineError(f"environment variable {env_name} is not set; an API key is required for {base_url}")


def backoff_delay(attempt: int, base_s: float, max_s: float, retry_after_s: float | None = None) -> float:
    """Full-jitter exponential backoff; a server's Retry-After (when given and below max_s) is a floor."""
    delay = random.uniform(0.0, min(max_s, base_s * (2 ** attempt)))
    if retry_after_s is not None and 0 <= retry_after_s <= max_s:
        delay = max(delay, retry_after_s)
    return delay


def _retry_after_s(exc: Exception) -> float | None:
    response = getattr(exc, "response", None)
    value = getattr(response, "headers", {}).get("retry-after") if response is not None else None
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def classify_error(exc: Exception) -> tuple[bool, str]:
    """(retryable, one-line description) for an exception raised by the openai client."""
    import openai

    if isinstance(exc, openai.APITimeoutError):
        return True, "timeout"
    if isinstance(exc, openai.APIConnectionError):
        return True, f"connection error: {exc}"
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        return status in RETRYABLE_STATUS or status >= 500, f"HTTP {status}: {exc.message}"
    return False, f"{type(exc).__name__}: {exc}"


class OpenAIEngine:
    """Chat completions against an OpenAI-compatible endpoint; see the module docstring."""

    def __init__(self, spec: EngineSpec) -> None:
        try:
            import openai
        except ImportError as exc:  # pragma: no cover - openai is a core dependency
            raise EngineError("the `openai` package is required: pip install openai") from exc
        if not spec.base_url:
            raise EngineError("OpenAIEngine needs spec.base_url (e.g. http://127.0.0.1:8000/v1)")
        self.spec = spec
        self.name = f"openai:{spec.model}@{spec.base_url}"
        self.max_concurrency = max(1, int(spec.max_concurrency))
        self.max_retries = max(0, int(spec.max_retries))
        self.want_logprobs = bool(spec.extra.get("logprobs", False))
        self.backoff_base_s = float(spec.extra.get("backoff_base_s", 0.5))
        self.backoff_max_s = float(spec.extra.get("backoff_max_s", 30.0))
        self.extra_body = dict(spec.extra.get("extra_body") or {})
        self._client = openai.OpenAI(base_url=spec.base_url, api_key=read_api_key(spec.api_key_env, spec.base_url),
                                     timeout=spec.timeout_s, max_retries=0)
        self._usage = UsageCounter()

    def __repr__(self) -> str:
        return f"OpenAIEngine(model={self.spec.model!r}, base_url={self.spec.base_url!r})"

    def usage(self) -> dict:
        return self._usage.snapshot()

    def close(self) -> None:
        self._client.close()

    def list_models(self) -> list[str]:
        """Model ids the endpoint serves (an optional startup check); raises EngineError if unreachable."""
        try:
            return [m.id for m in self._client.models.list()]
        except Exception as exc:  # noqa: BLE001 - any failure here is a setup error
            reason = self._scrub(one_line(str(exc)))
            raise EngineError(f"cannot list models at {self.spec.base_url}: {reason}") from None

    def generate(self, conversations: list[list[dict]], params: SamplingParams) -> list[list[Generation]]:
        if not conversations:
            return []
        workers = min(self.max_concurrency, len(conversations))
        pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="drk-openai")
        try:
            gens = list(pool.map(lambda conv: self._samples_for(conv, params), conversations))
        except BaseException:  # Ctrl-C: start no queued request and do not wait here; the caller flushes
            pool.shutdown(wait=False, cancel_futures=True)
            raise
        pool.shutdown(wait=True)
        return gens

    # ----------------------------------------------------------------------------------------------- internals
    def _samples_for(self, messages: list[dict], params: SamplingParams) -> list[Generation]:
        """`params.n` Generations for one conversation, topping up when the server returns fewer choices."""
        gens: list[Generation] = []
        while len(gens) < params.n:
            want = params.n - len(gens)
            seed = None if params.seed is None else params.seed + len(gens)
            response, error = self._request_with_retries(messages, params, want, seed)
            if error:
                gens.extend(error_generation(error) for _ in range(want))
                break
            new = self._generations_from(response)[:want]
            if not new:
                gens.extend(error_generation("server returned no choices") for _ in range(want))
                self._usage.add(errors=1)
                break
            gens.extend(new)
        return gens

    def _request_kwargs(self, messages: list[dict], params: SamplingParams, n: int, seed: int | None) -> dict:
        kwargs: dict[str, Any] = {"model": self.spec.model, "messages": messages, "n": n,
                                  "temperature": params.temperature, "top_p": params.top_p,
                                  "max_tokens": params.max_new_tokens}
        if seed is not None:
            kwargs["seed"] = seed
        if params.stop:
            kwargs["stop"] = list(params.stop)
        if self.want_logprobs:
            kwargs["logprobs"] = True
        extra_body = dict(self.extra_body)
        if params.top_k and params.top_k > 0:
            extra_body.setdefault("top_k", params.top_k)  # not an OpenAI field; vLLM/SGLang accept it
        if extra_body:
            kwargs["extra_body"] = extra_body
        return kwargs

    def _request_with_retries(self, messages: list[dict], params: SamplingParams, n: int,
                              seed: int | None) -> tuple[Any, str]:
        """(response, "") on success or (None, one-line error) after retries are exhausted."""
        kwargs = self._request_kwargs(messages, params, n, seed)
        attempt = 0
        while True:
            self._usage.add(requests=1)
            try:
                return self._client.chat.completions.create(**kwargs), ""
            except Exception as exc:  # noqa: BLE001 - classified below; nothing escapes generate()
                retryable, reason = classify_error(exc)
                if not retryable or attempt >= self.max_retries:
                    self._usage.add(errors=1)
                    tries = f" after {attempt + 1} attempts" if attempt else ""
                    return None, self._scrub(one_line(f"{reason}{tries}"))
                delay = backoff_delay(attempt, self.backoff_base_s, self.backoff_max_s, _retry_after_s(exc))
                log.warning("request to %s failed (%s); retry %d/%d in %.2fs", self.spec.base_url,
                            self._scrub(one_line(reason, 120)), attempt + 1, self.max_retries, delay)
                self._usage.add(retries=1)
                attempt += 1
                time.sleep(delay)

    def _generations_from(self, response: Any) -> list[Generation]:
        choices = list(getattr(response, "choices", None) or [])
        usage = getattr(response, "usage", None)
        prompt_tokens = int(getattr(usage, "prompt_tokens", 0) or 0)
        completion_tokens = int(getattr(usage, "completion_tokens", 0) or 0)
        self._usage.add(prompt_tokens=prompt_tokens, completion_tokens=completion_tokens)
        shares = split_evenly(completion_tokens, len(choices))
        return [Generation(text=(choice.message.content or "") if choice.message else "",
                           logprobs=choice_logprobs(choice), finish_reason=choice.finish_reason or FINISH_STOP,
                           usage={"prompt_tokens": prompt_tokens, "completion_tokens": share})
                for choice, share in zip(sorted(choices, key=lambda c: c.index or 0), shares)]

    def _scrub(self, text: str) -> str:
        """Remove the API key from a string, in case a server or library echoed it."""
        key = self._client.api_key if hasattr(self, "_client") else ""
        return text.replace(key, "***") if key and key != "EMPTY" else text


def split_evenly(total: int, parts: int) -> list[int]:
    """`total` split into `parts` integers that sum to it (a response's usage covers all its choices)."""
    if parts <= 0:
        return []
    base, extra = divmod(total, parts)
    return [base + (1 if i < extra else 0) for i in range(parts)]


def choice_logprobs(choice: Any) -> list[float] | None:
    content = getattr(getattr(choice, "logprobs", None), "content", None)
    return [float(t.logprob) for t in content] if content else None
