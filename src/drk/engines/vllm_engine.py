"""Optional in-process vLLM adapter (`VLLMEngine`): same Generation fields as `HFEngine`, much faster.

What it is: a thin wrapper over vLLM's documented offline API: `vllm.LLM(model=..., ...)`,
`LLM.get_tokenizer()`, `LLM.generate([{"prompt_token_ids": ids}, ...], vllm.SamplingParams(...))`,
`LLM.reset_prefix_cache()`. Prompts are tokenised here with the model's chat template
(add_generation_prompt=True), so `prompt_token_ids` are exactly what vLLM conditioned on. Sampling maps
temperature/top_p/max_tokens/n/seed/stop one to one, top_k=0 -> -1 ("off" in every vLLM version), and asks for
`logprobs=0`, which returns the sampled token's log-prob. The engine is built with
`logprobs_mode="processed_logprobs"` (vLLM >= 0.10.2) so those log-probs are under the distribution actually
sampled from (after temperature / top-k / top-p), matching `HFEngine`; with older vLLM they are the raw model's.
`token_ids` are vLLM's sampled ids; they include the final EOS / <|im_end|> when generation stopped on it.

`load_weights(named_tensors)` pushes new policy weights for RL (an iterable of (name, tensor) in Hugging Face
naming) into the in-process model via its `load_weights`, then resets the prefix cache. That needs the model in
this process: we default `VLLM_ENABLE_V1_MULTIPROCESSING=0` before building the engine (override by setting it).

What it deliberately is not: tested here (no GPU / vLLM on CI), a server, or a tensor-parallel weight syncer.
Behaviour differences from HFEngine: `text` is vLLM's own detokenisation (we pass skip_special_tokens=False,
vLLM's default would drop special tokens); it is not re-derived from `token_ids`.

How to test: on a GPU box with vLLM installed, compare `VLLMEngine(...).generate(...)[0][0].logprobs` to
`HFEngine.logprobs_of(...)` for the same ids (agreement to bf16 noise).
"""
from __future__ import annotations

import logging
import os
from collections.abc import Iterable
from typing import Any

from drk.engines.base import (FINISH_ERROR, FINISH_STOP, ChatTemplateEngine, EngineError, EngineSpec, Generation,
                              SamplingParams, UsageCounter)

log = logging.getLogger(__name__)


def import_vllm() -> Any:
    try:
        import vllm
    except ImportError as exc:
        raise EngineError("vLLM is not installed: pip install 'drk[vllm]' (needs a CUDA GPU), "
                          "or use --engine hf / an OpenAI-compatible --base-url") from exc
    return vllm


class VLLMEngine(ChatTemplateEngine):
    """In-process vLLM; see the module docstring."""

    def __init__(self, model: str, *, dtype: str = "auto", seed: int = 0, gpu_memory_utilization: float = 0.85,
                 max_model_len: int | None = None, chat_template_kwargs: dict | None = None,
                 **llm_kwargs: Any) -> None:
        os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
        vllm = import_vllm()
        self._vllm = vllm
        self.name = f"vllm:{model}"
        self.chat_template_kwargs = dict(chat_template_kwargs or {})
        llm_kwargs.setdefault("logprobs_mode", "processed_logprobs")
        if max_model_len is not None:
            llm_kwargs["max_model_len"] = max_model_len
        try:
            self.llm = vllm.LLM(model=model, dtype=dtype, seed=seed, gpu_memory_utilization=gpu_memory_utilization,
                                **llm_kwargs)
        except TypeError as exc:
            if "logprobs_mode" not in str(exc):
                raise
            log.warning("this vLLM has no logprobs_mode; log-probs will be the raw (untempered) model's")
            llm_kwargs.pop("logprobs_mode")
            self.llm = vllm.LLM(model=model, dtype=dtype, seed=seed, gpu_memory_utilization=gpu_memory_utilization,
                                **llm_kwargs)
        self.tokenizer = self.llm.get_tokenizer()
        self._usage = UsageCounter()

    @classmethod
    def from_spec(cls, spec: EngineSpec) -> "VLLMEngine":
        return cls(spec.model, dtype=spec.dtype, **spec.extra)




    def generate_ids(self, prompts: list[list[int]], params: SamplingParams) -> list[list[Generation]]:
        sampling = self._vllm.SamplingParams(
            n=params.n, temperature=max(0.0, params.temperature), top_p=params.top_p,
            top_k=params.top_k if params.top_k > 0 else -1, max_tokens=params.max_new_tokens, seed=params.seed,
            stop=list(params.stop) if params.stop else None, logprobs=0, skip_special_tokens=False,
        )
        outputs = self.llm.generate([{"prompt_token_ids": list(p)} for p in prompts], sampling, use_tqdm=False)
        result = [[self._generation(out.prompt_token_ids, c) for c in out.outputs] for out in outputs]
        self._usage.add(requests=len(prompts), prompt_tokens=sum(len(p) for p in prompts),
                        completion_tokens=sum(len(g.token_ids or []) for gs in result for g in gs))
        return result

    def load_weights(self, named_tensors: Iterable[tuple[str, Any]]) -> None:
        """Copy new weights (HF names) into the served model, then drop KV prefixes computed with the old ones."""
        self._driver_model().load_weights(weights=named_tensors)
        self.llm.reset_prefix_cache()

    # ----------------------------------------------------------------------------------------------- internals
    def _driver_model(self) -> Any:
        """The in-process torch model behind `self.llm` (single-process executor only)."""
        worker = self.llm.llm_engine.model_executor.driver_worker
        for path in (("worker", "model_runner", "model"), ("model_runner", "model")):
            obj = worker
            try:
                for attr in path:
                    obj = getattr(obj, attr)
                return obj
            except AttributeError:
                continue
        raise EngineError("cannot reach the vLLM model in this process; build the engine with "
                          "VLLM_ENABLE_V1_MULTIPROCESSING=0 and tensor_parallel_size=1")

    @staticmethod
    def _generation(prompt_ids: list[int], completion: Any) -> Generation:
        ids = list(completion.token_ids)
        logprobs = None
        if completion.logprobs is not None:
            logprobs = [float(step[tok].logprob) for step, tok in zip(completion.logprobs, ids)]
        reason = completion.finish_reason or FINISH_STOP
        return Generation(text=completion.text, token_ids=ids, logprobs=logprobs,
                          prompt_token_ids=list(prompt_ids or []),
                          finish_reason=reason if reason in ("stop", "length") else FINISH_ERROR,
                          error="" if reason in ("stop", "length") else f"vLLM finish_reason={reason}",
                          usage={"prompt_tokens": len(prompt_ids or []), "completion_tokens": len(ids)})
