"""Text-generation engines: one interface (`Engine`) over OpenAI-compatible endpoints, local transformers
models and (optionally) in-process vLLM.

What it is: the shared types (`SamplingParams`, `Generation`, `EngineSpec`, `EngineError`) and
`make_engine(spec)`, which picks the backend: `kind="openai"` (or "auto" with a `base_url`) -> `OpenAIEngine`;
`kind="hf"` (or "auto" without a `base_url`) -> `HFEngine.from_pretrained(spec.model)`; `kind="vllm"` ->
`VLLMEngine` (never chosen by "auto": it must be asked for); `kind="template"` -> `TemplateTeacher`, the
template teacher for the synthetic task family (`drk.engines.template`). Also `build_tiny_model` (offline test model);
the offline OpenAI-compatible test server is `drk.testing.scripted_server.ScriptedServer`.

What it deliberately is not: prompt construction or code extraction; those live with the agent.

Importing this package is cheap: torch, transformers, openai and vllm are imported only when an engine is built.

How to test: `pytest tests/test_engines.py`.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from drk.engines.base import (FINISH_ERROR, FINISH_LENGTH, FINISH_STOP, Engine, EngineError, EngineSpec, Generation,
                              SamplingParams, UsageCounter)

if TYPE_CHECKING:  # pragma: no cover
    from drk.engines.local import HFEngine
    from drk.engines.openai_engine import OpenAIEngine
    from drk.engines.vllm_engine import VLLMEngine

KINDS = ("auto", "openai", "hf", "vllm", "template")


def resolve_kind(spec: EngineSpec) -> str:
    """The concrete backend for `spec`: "auto" means openai with a base_url, hf without one."""
    if spec.kind not in KINDS:
        raise EngineError(f"unknown engine kind {spec.kind!r}; expected one of {', '.join(KINDS)}")
    if spec.kind != "auto":
        return spec.kind
    return "openai" if spec.base_url else "hf"


def make_engine(spec: EngineSpec) -> Engine:
    """Build the engine `spec` describes; raises EngineError for setup problems."""
    kind = resolve_kind(spec)
    try:
        if kind == "openai":
            from drk.engines.openai_engine import OpenAIEngine

            return OpenAIEngine(spec)
        if kind == "template":
            from drk.engines.template import TemplateTeacher

            return TemplateTeacher.from_spec(spec)
        if kind == "hf":
            from drk.engines.local import HFEngine

            return HFEngine.from_spec(spec)
        from drk.engines.vllm_engine import VLLMEngine

        return VLLMEngine.from_spec(spec)
    except TypeError as exc:  # an unknown key in spec.extra
        if "unexpected keyword" not in str(exc):
            raise
        raise EngineError(f"bad options for the {kind} engine: {exc}") from exc


def __getattr__(name: str) -> Any:
    """Lazy access to the heavy classes: `from drk.engines import HFEngine` imports torch only then."""
    lazy = {"HFEngine": "drk.engines.local", "OpenAIEngine": "drk.engines.openai_engine",
            "VLLMEngine": "drk.engines.vllm_engine",
            "build_tiny_model": "drk.engines.tiny"}
    if name in lazy:
        import importlib

        return getattr(importlib.import_module(lazy[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["Engine", "EngineError", "EngineSpec", "Generation", "SamplingParams", "UsageCounter", "FINISH_STOP",
           "FINISH_LENGTH", "FINISH_ERROR", "make_engine", "resolve_kind", "HFEngine", "OpenAIEngine",
           "VLLMEngine", "build_tiny_model"]
