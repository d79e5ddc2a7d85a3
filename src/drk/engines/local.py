"""Local Hugging Face transformers engine (`HFEngine`) with our own sampling loop and exact log-probs.

What it is: batched, left-padded, KV-cached sampling written directly against `model(input_ids, attention_mask,
position_ids, past_key_values, use_cache=True)`. We do NOT call `model.generate()`: in transformers 5.x any
GenerationConfig field left unset falls back to the checkpoint's generation_config.json and then to library
defaults (top_k=50, ...), which would silently change the distribution. Our loop applies exactly, in this order:
mask ids >= len(tokenizer) (optional, for vocabularies padded past the tokenizer) -> divide by temperature ->
top-k -> top-p -> log_softmax. Each returned log-prob is the sampled id's log-prob under that final (truncated,
renormalised) distribution; `logprobs_of()` recomputes the same quantity teacher-forced. Temperature <= 0 means
greedy; its log-probs are then reported under the untempered (T=1) distribution.

Returned per sample: the exact prompt ids (chat template with add_generation_prompt=True), the exact sampled ids
cut after the first stop token (EOS / <|im_end|>, inclusive) with no padding, their log-probs, and the text
(decoded without the final stop token; cut before the first stop string if `params.stop` matched, while
`token_ids` keep every sampled token, as vLLM does).

Numerics: float32 KV-cached sampling matches a full teacher-forced forward to ~1e-6 (CPU and CUDA); in bf16 the
two differ by bf16 rounding (inherent, not a bug). Reproducibility: with `seed`, the same inputs, batch settings
and device give the same samples (one torch.Generator per call; samples do depend on how rows are batched). On
CUDA in bf16 some decode kernels are not bitwise deterministic (seen on an H200: 4-12 of 48 rows diverged between
two identical seeded calls), so a seeded call runs with `torch.use_deterministic_algorithms(True, warn_only=True)`
and restores the previous global setting afterwards. With the CUDA-graph decoder that costs ~30% of decode
speed on an H200 (Qwen3-0.6B shape, 32 rows x 256 tokens: 9.2 vs 7.0 ms per step, 2026-12-02; two seeded calls
gave the same 32 rows), so `deterministic=False` turns it off (`drk rl` does, unless
`deterministic_generation: true`).

Decoding (`decode=`, else $DRK_DECODE, else auto; drk.engines.decoders): on CUDA the default replays one
captured CUDA graph per token over a static KV cache (`graph`), which removes the per-kernel launch cost that
bounds a small model's step; `dynamic` is the plain eager loop over a growing cache (the CPU default, and the
fallback for models the static path does not support or whose capture fails); `static` runs the static-cache
step eagerly (tests). All three apply the same sampling code to the logits, so they sample the same
distribution.

What it deliberately is not: a server. No continuous batching: finished rows keep decoding (cheaply) until the
chunk finishes; use vLLM for serving throughput. The model is switched to eval() while sampling (LoRA dropout
would otherwise change the distribution) and restored afterwards.

How to test: `pytest tests/test_engines.py -k hf` (tiny random Qwen3 on CPU).
"""
from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from drk.engines.base import (FINISH_LENGTH, FINISH_STOP, ChatTemplateEngine, EngineError, EngineSpec, Generation,
                              SamplingParams, UsageCounter)
from drk.engines.decoders import DynamicDecoder, StaticDecoder, buckets, static_supported

log = logging.getLogger(__name__)


# ----------------------------------------------------------------------------------------------- distribution
def sampling_logprobs(logits: Any, *, temperature: float, top_k: int = 0, top_p: float = 1.0,
                      vocab_limit: int | None = None) -> Any:
    """log-probs (float32, [..., V]) of the distribution we sample from; truncated ids get -inf.

    Order: vocab mask -> temperature -> top-k -> top-p (vLLM's order). temperature <= 0 is treated as 1 here
    (greedy callers take the argmax, and report the untempered log-prob).
    """
    import torch

    x = logits.float()
    if vocab_limit is not None and vocab_limit < x.shape[-1]:
        if x.data_ptr() == logits.data_ptr():  # already float32: .float() returned the caller's tensor
            x = x.clone()
        x[..., vocab_limit:] = float("-inf")
    if temperature > 0 and temperature != 1.0:
        x = x / temperature
    if top_k and 0 < top_k < x.shape[-1]:
        kth = torch.topk(x, top_k, dim=-1).values[..., -1:]
        x = x.masked_fill(x < kth, float("-inf"))  # ties with the k-th value are kept
    if top_p < 1.0:
        x = _top_p_filter(x, top_p)
    return torch.log_softmax(x, dim=-1)


def _top_p_filter(x: Any, top_p: float) -> Any:
    """Keep the smallest prefix of ids (by descending prob) whose mass reaches top_p; the top id is always kept."""
    import torch

    sorted_x, order = torch.sort(x, dim=-1, descending=True)
    probs = torch.softmax(sorted_x, dim=-1)
    mass_before = torch.cumsum(probs, dim=-1) - probs
    drop_sorted = mass_before > top_p
    drop = torch.zeros_like(drop_sorted).scatter(-1, order, drop_sorted)
    return x.masked_fill(drop, float("-inf"))


def sample_next(logits: Any, params: SamplingParams, generator: Any, vocab_limit: int | None) -> tuple[Any, Any]:
    """(next ids [B], their log-probs [B]) for one decoding step; no GPU->CPU sync."""
    import torch

    if params.temperature <= 0:
        logp = sampling_logprobs(logits, temperature=1.0, vocab_limit=vocab_limit)
        ids = torch.argmax(logp, dim=-1)
    else:
        logp = sampling_logprobs(logits, temperature=params.temperature, top_k=params.top_k,
                                 top_p=params.top_p, vocab_limit=vocab_limit)
        ids = torch.multinomial(logp.exp(), 1, generator=generator).squeeze(-1)
    return ids, logp.gather(-1, ids.unsqueeze(-1)).squeeze(-1)


# ---------------------------------------------------------------------------------------------------- helpers
def stop_token_ids_of(model: Any, tokenizer: Any, extra: list[int] | None = None) -> set[int]:
    """EOS ids from the tokenizer, the model's configs and the chat end-of-turn token (<|im_end|> if present)."""
    ids: set[int] = set(extra or [])
    for source in (getattr(model, "generation_config", None), getattr(model, "config", None), tokenizer):
        eos = getattr(source, "eos_token_id", None)
        ids.update([eos] if isinstance(eos, int) else (eos or []))
    end_of_turn = tokenizer.convert_tokens_to_ids("<|im_end|>") if "<|im_end|>" in tokenizer.get_vocab() else None
    if end_of_turn is not None:
        ids.add(end_of_turn)
    return ids


def find_stop_string(text: str, stops: list[str]) -> int:
    """Index of the earliest occurrence of any stop string in `text`, or -1."""
    hits = [i for i in (text.find(s) for s in stops if s) if i >= 0]
    return min(hits) if hits else -1


@contextmanager
def deterministic_algorithms(enabled: bool) -> Iterator[None]:
    """Turn on torch's deterministic algorithms (warn-only) inside the block, then restore the global setting."""
    import torch

    if not enabled:
        yield
        return
    previous = torch.are_deterministic_algorithms_enabled()
    previous_warn = torch.is_deterministic_algorithms_warn_only_enabled()
    torch.use_deterministic_algorithms(True, warn_only=True)
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(previous, warn_only=previous_warn)


def resolve_device(device: str) -> str:
    import torch

    if device in ("auto", "", None):
        return "cuda" if torch.cuda.is_available() else "cpu"
    return device


def dtype_table() -> dict:
    """The dtype names recipes and options accept."""
    import torch

    return {"float32": torch.float32, "fp32": torch.float32, "bfloat16": torch.bfloat16, "bf16": torch.bfloat16,
            "float16": torch.float16, "fp16": torch.float16}


def resolve_dtype(dtype: str) -> Any:
    table = dtype_table()
    if dtype in ("auto", "", None):
        return "auto"
    if dtype not in table:
        raise EngineError(f"unknown dtype {dtype!r}; expected auto, float32, bfloat16 or float16")
    return table[dtype]


# ----------------------------------------------------------------------------------------------------- engine
DECODE_MODES = ("auto", "graph", "static", "dynamic")  # auto = graph on CUDA (when the model allows), else dynamic


class HFEngine(ChatTemplateEngine):
    """Sampling from a transformers causal LM (plain or PEFT-wrapped) with exact ids and log-probs."""

    def __init__(self, model: Any, tokenizer: Any, *, name: str | None = None, mask_padded_vocab: bool = True,
                 max_batch_rows: int = 64, stop_token_ids: list[int] | None = None, sync_every: int = 8,
                 chat_template_kwargs: dict | None = None, deterministic: bool = True,
                 decode: str | None = None) -> None:
        decode = decode or os.environ.get("DRK_DECODE") or "auto"
        if decode not in DECODE_MODES:
            raise EngineError(f"unknown decode mode {decode!r}; expected one of {', '.join(DECODE_MODES)}")
        self.model = model
        self.decode = decode  # see DECODE_MODES
        self._static: StaticDecoder | None = None  # kept between calls (its graph is reused); release() frees it
        self._static_refused: str | None = None  # None: not checked yet; "": the model allows it; else why not
        self._graph_failed: dict[bool, str] = {}  # deterministic-algorithms flag -> why its capture failed
        self.deterministic = deterministic  # seeded calls run with torch's deterministic algorithms
        self.tokenizer = tokenizer
        self.name = name or f"hf:{getattr(getattr(model, 'config', None), '_name_or_path', '') or 'model'}"
        self.mask_padded_vocab = mask_padded_vocab
        self.max_batch_rows = max(1, int(max_batch_rows))
        self.sync_every = max(1, int(sync_every))
        self.chat_template_kwargs = dict(chat_template_kwargs or {})
        self.stop_ids = stop_token_ids_of(model, tokenizer, stop_token_ids)
        self.tokenizer_len = len(tokenizer)
        pad = tokenizer.pad_token_id
        self.pad_id = pad if pad is not None else min(self.stop_ids) if self.stop_ids else 0
        self._usage = UsageCounter()
        # Context managers under which this engine's GPU work runs, let go at each sync point: `drk rl` sets the
        # evaluators' lock on the policy's GPU (drk.gym.gpu_work_hold), so no decode step runs while a kernel
        # there is timed. None: nothing to hold.
        self.gpu_hold: Any = None
        self.timing = {"prefill_s": 0.0, "decode_s": 0.0, "decode_steps": 0, "padded_prompt_tokens": 0}

    def take_timing(self) -> dict:
        """Where generation time went since the last call: prefill and decode seconds, decode steps (one per
        new token of the longest row in each batch), padded prompt tokens; resets the counters."""
        t, self.timing = self.timing, dict.fromkeys(self.timing, 0)
        t["decode_ms_per_step"] = 1000 * t["decode_s"] / t["decode_steps"] if t["decode_steps"] else None
        return t

    @classmethod
    def from_pretrained(cls, path: str, *, dtype: str = "auto", device: str = "auto", **kwargs: Any) -> "HFEngine":
        """Load AutoModelForCausalLM + AutoTokenizer from a local path or HF id; EngineError if that fails."""
        from transformers import AutoModelForCausalLM, AutoTokenizer

        attn = kwargs.pop("attn_implementation", None)
        try:
            tokenizer = AutoTokenizer.from_pretrained(path)
            model = AutoModelForCausalLM.from_pretrained(
                path, dtype=resolve_dtype(dtype), **({"attn_implementation": attn} if attn else {}))
        except (OSError, ValueError) as exc:
            raise EngineError(f"cannot load model/tokenizer from {path!r}: {exc}") from exc
        model = model.to(resolve_device(device)).eval()
        return cls(model, tokenizer, name=f"hf:{path}", **kwargs)

    @classmethod
    def from_spec(cls, spec: EngineSpec) -> "HFEngine":
        return cls.from_pretrained(spec.model, dtype=spec.dtype, device=spec.device, **spec.extra)

    # ---------------------------------------------------------------------------------------------- public



    def generate_ids(self, prompts: list[list[int]], params: SamplingParams) -> list[list[Generation]]:
        """Like `generate`, from already-tokenised prompts (multi-turn RL keeps exact ids across turns)."""
        import torch

        if any(len(p) == 0 for p in prompts):
            raise ValueError("empty prompt")
        rows = [(ci, prompt) for ci, prompt in enumerate(prompts) for _ in range(params.n)]
        device = self._device()
        generator = None
        if params.seed is not None:
            generator = torch.Generator(device=device)
            generator.manual_seed(int(params.seed))
        out: list[list[Generation]] = [[] for _ in prompts]
        with self._eval_mode(), deterministic_algorithms(self.deterministic and params.seed is not None):
            for start in range(0, len(rows), self.max_batch_rows):
                chunk = rows[start:start + self.max_batch_rows]
                for (ci, _), gen in zip(chunk, self._sample_chunk([p for _, p in chunk], params, generator)):
                    out[ci].append(gen)
        self._usage.add(requests=len(prompts), prompt_tokens=sum(len(p) for p in prompts),
                        completion_tokens=sum(len(g.token_ids or []) for gs in out for g in gs))
        return out

    def logprobs_of(self, prompt_ids: list[int], completion_ids: list[int], *, temperature: float = 1.0,
                    top_k: int = 0, top_p: float = 1.0) -> list[float]:
        """Teacher-forced log-probs of `completion_ids` after `prompt_ids`, under the same distribution transform
        as sampling (temperature, top-k, top-p, vocab mask). One full forward, no KV cache."""
        import torch

        if not completion_ids:
            return []
        device = self._device()
        ids = torch.tensor([list(prompt_ids) + list(completion_ids)], dtype=torch.long, device=device)
        with self._eval_mode(), torch.no_grad():
            logits = self.model(input_ids=ids, attention_mask=torch.ones_like(ids), use_cache=False).logits
        start = len(prompt_ids) - 1
        step_logits = logits[0, start:start + len(completion_ids)]
        logp = sampling_logprobs(step_logits, temperature=temperature if temperature > 0 else 1.0, top_k=top_k,
                                 top_p=top_p, vocab_limit=self._vocab_limit(step_logits.shape[-1]))
        target = torch.tensor(completion_ids, dtype=torch.long, device=device).unsqueeze(-1)
        return logp.gather(-1, target).squeeze(-1).tolist()  # GPU->CPU sync

    # ----------------------------------------------------------------------------------------------- internals
    def _device(self) -> Any:
        return next(self.model.parameters()).device

    @contextmanager
    def _eval_mode(self) -> Iterator[None]:
        """eval() inside the block (LoRA dropout would change the distribution), the previous mode after."""
        was_training = bool(getattr(self.model, "training", False))
        self.model.eval()
        try:
            yield
        finally:
            self.model.train(was_training)

    def _vocab_limit(self, logits_width: int) -> int | None:
        if self.mask_padded_vocab and logits_width > self.tokenizer_len:
            return self.tokenizer_len
        return None

    def release(self) -> None:
        """Free the static decoder (its KV cache and CUDA graph) until the next call needs one again: `drk rl`
        calls this before training so the cache's memory goes to the backward pass."""
        self._static = None

    def _decoder_for(self, rows: int, max_len: int) -> Any:
        """The static (graph) decoder when this call may use one, else a fresh dynamic one."""
        import torch

        device = self._device()
        mode = self.decode
        if mode == "auto":
            mode = "graph" if device.type == "cuda" else "dynamic"
        if mode == "graph" and device.type != "cuda":
            raise EngineError("decode='graph' needs a CUDA device; use 'static' or 'dynamic'")
        if mode != "dynamic" and self._static_refused is None:
            self._static_refused = static_supported(self.model)
            if self._static_refused:
                log.warning("static decoding off for %s: %s", self.name, self._static_refused)
        if mode == "graph" and torch.are_deterministic_algorithms_enabled() in self._graph_failed:
            mode = "dynamic"
        if mode == "dynamic" or self._static_refused:
            return DynamicDecoder(self.model, self.pad_id)
        if self._static is None or not self._static.fits(rows, max_len, self.model, use_graph=mode == "graph"):
            self._static = None  # free the old buffers and graph before allocating new ones
            self._static = StaticDecoder(self.model, *buckets(rows, max_len), self.pad_id,
                                         use_graph=mode == "graph")
        return self._static

    def _sample_chunk(self, prompts: list[list[int]], params: SamplingParams, generator: Any) -> list[Generation]:
        """Sample one left-padded batch to completion; returns one Generation per row."""
        import torch

        if params.max_new_tokens <= 0:
            return [Generation(text="", token_ids=[], logprobs=[], prompt_token_ids=list(p),
                               finish_reason=FINISH_LENGTH, usage={"prompt_tokens": len(p), "completion_tokens": 0})
                    for p in prompts]
        device = self._device()
        decoder = self._decoder_for(len(prompts), max(len(p) for p in prompts) + params.max_new_tokens)
        rows = len(prompts)
        stop_ids = torch.tensor(sorted(self.stop_ids), dtype=torch.long, device=device)
        done = torch.zeros(rows, dtype=torch.bool, device=device)
        tokens, logps = [], []
        t0 = time.perf_counter()
        hold = GpuHold(self.gpu_hold, device)
        with torch.no_grad(), hold:
            try:
                step_logits = decoder.prefill(prompts)
            except RuntimeError as exc:  # a graph capture the model's forward does not allow: eager from now on
                if decoder is not self._static or not decoder.use_graph:
                    raise
                why = f"CUDA graph capture failed: {str(exc)[:200]}"
                self._static, self._graph_failed[decoder.deterministic] = None, why
                log.warning("graph decoding off for %s (deterministic=%s): %s", self.name, decoder.deterministic, why)
                decoder = DynamicDecoder(self.model, self.pad_id)
                step_logits = decoder.prefill(prompts)
            if device.type == "cuda":
                torch.cuda.synchronize(device)  # once per batch: splits prefill from decode in `timing`
            t1 = time.perf_counter()
            vocab_limit = self._vocab_limit(step_logits.shape[-1])
            for step in range(params.max_new_tokens):
                ids, lp = sample_next(step_logits, params, generator, vocab_limit)
                ids = torch.where(done, torch.full_like(ids, self.pad_id), ids)
                tokens.append(ids)
                logps.append(lp)
                done = done | torch.isin(ids, stop_ids)
                if params.stop:
                    done = done | self._stop_string_rows(tokens, params.stop, device)
                if step + 1 == params.max_new_tokens:
                    break
                if (step + 1) % self.sync_every == 0:
                    if bool(done.all()):  # GPU->CPU sync: every step so far has run on the device
                        break
                    hold.let_in()  # so a measurement waiting for the GPU takes it now, between two steps
                step_logits = decoder.step(ids)
            decoder.finish()
            all_ids = torch.stack(tokens, 1).tolist()  # GPU->CPU sync (once per chunk)
            all_lps = torch.stack(logps, 1).tolist()   # GPU->CPU sync
        self.timing["prefill_s"] += t1 - t0
        self.timing["decode_s"] += time.perf_counter() - t1
        self.timing["decode_steps"] += len(tokens)
        self.timing["padded_prompt_tokens"] += decoder.prompt_tokens
        return [self._finish(prompt, ids, lps, params) for prompt, ids, lps in zip(prompts, all_ids, all_lps)]

    def _stop_string_rows(self, tokens: list, stops: list[str], device: Any) -> Any:
        """Bool [B]: rows whose recent tail (of the per-step id tensors in `tokens`) decodes to text containing
        a stop string (GPU->CPU sync per step). Only the tail is stacked, so a step costs O(window)."""
        import torch

        window = 4 * max(len(s) for s in stops) + 4
        tails = torch.stack(tokens[-window:], 1).tolist()  # GPU->CPU sync
        hits = [find_stop_string(self.tokenizer.decode(t, skip_special_tokens=False), stops) >= 0 for t in tails]
        return torch.tensor(hits, dtype=torch.bool, device=device)

    def _finish(self, prompt: list[int], ids: list[int], lps: list[float], params: SamplingParams) -> Generation:
        """Cut a raw row at its first stop token (inclusive) or stop string, and build the Generation."""
        finish = FINISH_LENGTH
        cut = len(ids)
        for i, tok in enumerate(ids):
            if tok in self.stop_ids:
                cut, finish = i + 1, FINISH_STOP
                break
        text_ids = ids[:cut - 1] if finish == FINISH_STOP else ids[:cut]
        text = self.tokenizer.decode(text_ids, skip_special_tokens=False)
        if params.stop:
            at = find_stop_string(text, params.stop)
            if at >= 0:
                text, finish = text[:at], FINISH_STOP
                cut = self._tokens_covering(ids[:cut], params.stop)
        ids, lps = ids[:cut], lps[:cut]
        return Generation(text=text, token_ids=ids, logprobs=lps, prompt_token_ids=list(prompt),
                          finish_reason=finish, usage={"prompt_tokens": len(prompt), "completion_tokens": len(ids)})

    def _tokens_covering(self, ids: list[int], stops: list[str]) -> int:
        """Smallest prefix length of `ids` whose text contains a stop string (the token that completed it)."""
        for k in range(1, len(ids) + 1):
            if find_stop_string(self.tokenizer.decode(ids[:k], skip_special_tokens=False), stops) >= 0:
                return k
        return len(ids)


class GpuHold:
    """Holds `factory()` (a context manager, e.g. the GPU lock's shared hold; None: holds nothing) over a block
    of GPU work, and lets others in at points where the device has finished the work so far (`let_in`: out
    and in again). A hold is never let go while its kernels still run on `device` (a measurement would start
    beside them): on CUDA it synchronises the device first, except when the block ends with an exception."""

    def __init__(self, factory: Any, device: Any = None) -> None:
        self.factory, self.held, self.device = factory, None, device

    def __enter__(self) -> "GpuHold":
        if self.factory is not None:
            self.held = self.factory()
            self.held.__enter__()
        return self

    def __exit__(self, exc_type: Any = None, *exc: Any) -> None:
        held, self.held = self.held, None
        if held is None:
            return
        try:
            if exc_type is None and getattr(self.device, "type", None) == "cuda":
                import torch

                torch.cuda.synchronize(self.device)
        finally:
            held.__exit__(None, None, None)

    def let_in(self) -> None:
        if self.held is not None:
            self.__exit__()
            self.__enter__()
