"""The two ways `HFEngine` runs a model one token at a time: a growing KV cache, or a static one replayed from
a CUDA graph.

What it is: two decoders with one interface, `prefill(prompts) -> logits [rows, V]` (the distribution of each
row's first new token) and `step(ids [rows]) -> logits [rows, V]` (feed the sampled ids, get the next
distribution). The engine's sampling loop (temperature, top-k/p, stop tokens, log-probs) is the same for both.

* `DynamicDecoder`: transformers' growing cache, a 2-D padding mask, one eager forward per token. Works for
  every model and device. On a GPU a small model's step is bound by host-side kernel launches: ~30 ms per
  step for a Qwen3-0.6B shape on an H200 whatever the batch (docs/measurements/generation.md).
* `StaticDecoder`: transformers' `StaticCache` (fixed [rows, max_len] buffers written in place at a position
  kept on the device), a 4-D mask built on the device from that position, and position ids advanced in place,
  so one decode step has fixed shapes and no host sync and can be captured once as a CUDA graph and
  replayed per token (`use_graph=True`; the launches then cost one `replay()`): 7.0 ms per step for the same
  shape, 32 rows. Without the graph (CPU, tests) it runs the same step eagerly, which is how its logic is
  tested against `DynamicDecoder`.

What the static path costs and assumes: the cache holds `rows x max_len` positions for the whole call (the
dynamic one grows to what the longest row needs); the engine rounds rows and max_len up to buckets so calls
reuse one captured graph, and keeps the decoder between calls until `HFEngine.release()`. Attention runs
over max_len keys every step, masked. The captured graph reads the parameters where they are: training that
updates them in place (optimizer steps) is seen by the next replay; replacing them (new tensors) is not, so
the engine rebuilds the decoder when a parameter's storage moved. Only full-attention models with the
`sdpa` or `eager` attention implementation qualify (`static_supported`); anything else uses the dynamic path.

How to test: `pytest tests/test_engines.py -k static` (CPU: static vs dynamic, same tokens and log-probs);
the CUDA graph itself only on a GPU (`pytest -m gpu tests/test_engines.py`, `bench/rl_vs_trl.py --sides gen`).
"""
from __future__ import annotations

from typing import Any

ROW_BUCKET = 8     # rows are rounded up to a multiple of this (extra rows repeat the first prompt)
LEN_BUCKET = 256   # the cache length is rounded up to a multiple of this


def left_pad(prompts: list[list[int]], pad_id: int, device: Any) -> tuple[Any, Any, Any]:
    """(input_ids, attention_mask, position_ids) [B, L] for left-padded prompts; pads get position 0."""
    import torch

    width = max(len(p) for p in prompts)
    ids = torch.full((len(prompts), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(prompts), width), dtype=torch.long)
    for row, prompt in enumerate(prompts):
        ids[row, width - len(prompt):] = torch.tensor(prompt, dtype=torch.long)
        mask[row, width - len(prompt):] = 1
    positions = (mask.cumsum(-1) - 1).clamp(min=0)
    return ids.to(device), mask.to(device), positions.to(device)


class DynamicDecoder:
    """One eager forward per token over transformers' growing cache (any model, any device)."""

    def __init__(self, model: Any, pad_id: int) -> None:
        self.model, self.pad_id = model, pad_id
        self.cache = self.attention = self.next_pos = None
        self.prompt_tokens = 0  # padded prompt tokens of the last prefill

    def prefill(self, prompts: list[list[int]]) -> Any:
        input_ids, self.attention, positions = left_pad(prompts, self.pad_id, self._device())
        self.prompt_tokens = int(input_ids.numel())
        out = self.model(input_ids=input_ids, attention_mask=self.attention, position_ids=positions,
                         use_cache=True, logits_to_keep=1)
        self.cache, self.next_pos = out.past_key_values, positions[:, -1] + 1
        return out.logits[:, -1, :]

    def step(self, ids: Any) -> Any:
        import torch

        ones = torch.ones((ids.shape[0], 1), dtype=self.attention.dtype, device=ids.device)
        self.attention = torch.cat([self.attention, ones], 1)
        out = self.model(input_ids=ids.unsqueeze(-1), attention_mask=self.attention,
                         position_ids=self.next_pos.unsqueeze(-1), past_key_values=self.cache, use_cache=True)
        self.cache, self.next_pos = out.past_key_values, self.next_pos + 1
        return out.logits[:, -1, :]

    def finish(self) -> None:
        self.cache = self.attention = self.next_pos = None

    def _device(self) -> Any:
        return next(self.model.parameters()).device


def static_supported(model: Any) -> str:
    """'' when `StaticDecoder` can run `model`, else the reason it cannot."""
    config = getattr(model, "config", None)
    if config is None:
        return "model has no config"
    attn = getattr(config, "_attn_implementation", None)
    if attn not in ("sdpa", "eager"):
        return f"attention implementation {attn!r} (needs sdpa or eager)"
    text = config.get_text_config(decoder=True) if hasattr(config, "get_text_config") else config
    kinds = set(getattr(text, "layer_types", None) or ["full_attention"])
    if kinds != {"full_attention"}:
        return f"layer types {sorted(kinds)} (only full attention)"
    if getattr(text, "use_sliding_window", False) and getattr(text, "sliding_window", None):
        return "sliding-window attention"
    return ""


DECODE_ATTENTION = "drk_decode"  # registered with transformers' AttentionInterface on first use


def decode_attention(module: Any, query: Any, key: Any, value: Any, attention_mask: Any, scaling: float | None = None,
                     dropout: float = 0.0, **kwargs: Any) -> tuple[Any, None]:
    """Attention for one new token per row over a static cache, without materialising grouped K/V heads.

    transformers' sdpa path repeats each K/V head for its n_rep query heads whenever a mask is given (every
    static-cache step has one): 2 x n_rep x the cache read back and forth per layer per token, most of a
    small model's decode step. With one query position, the n_rep query heads of a K/V head can instead be
    that head's n_rep query positions: query [B, Hq, 1, D] -> [B, Hkv, n_rep, D] (head h = kv * n_rep + r, the
    grouping `repeat_kv` uses), one SDPA over [B, Hkv, L, D] keys with the [B, 1, 1, L] mask broadcast, and
    back to [B, 1, Hq, D]. Anything else (a prefill, no grouping) goes to transformers' sdpa function."""
    import torch

    batch, heads, q_len, dim = query.shape
    kv_heads = key.shape[1]
    if q_len != 1 or heads % kv_heads or key.shape[-1] != value.shape[-1]:
        from transformers.integrations.sdpa_attention import sdpa_attention_forward

        return sdpa_attention_forward(module, query, key, value, attention_mask, scaling=scaling, dropout=dropout,
                                      **kwargs)
    q = query.reshape(batch, kv_heads, heads // kv_heads, dim)
    out = torch.nn.functional.scaled_dot_product_attention(q, key, value, attn_mask=attention_mask, scale=scaling)
    return out.reshape(batch, 1, heads, dim), None


def _register_decode_attention() -> None:
    from transformers import AttentionInterface

    if DECODE_ATTENTION not in AttentionInterface._global_mapping:
        AttentionInterface.register(DECODE_ATTENTION, decode_attention)


def parameter_layout(model: Any) -> tuple:
    """Where every parameter's storage is: a captured graph is valid while this stays the same."""
    return tuple((p.data_ptr(), p.dtype, p.device) for p in model.parameters())


def buckets(rows: int, max_len: int) -> tuple[int, int]:
    return -(-rows // ROW_BUCKET) * ROW_BUCKET, -(-max_len // LEN_BUCKET) * LEN_BUCKET


class StaticDecoder:
    """Fixed-shape decode steps over a `StaticCache` of `rows x max_len`, optionally replayed from a CUDA graph.

    Per call: `prefill` (eager; resets the write position, fills the padding mask, writes the prompts' keys and
    values), then `step` per token. Both return logits for the caller's rows only (the bucket's extra rows run
    a copy of the first prompt and are dropped)."""

    def __init__(self, model: Any, rows: int, max_len: int, pad_id: int, *, use_graph: bool) -> None:
        import torch
        from transformers import StaticCache

        _register_decode_attention()
        self.model, self.rows, self.max_len, self.pad_id = model, rows, max_len, pad_id
        self.use_graph = use_graph
        self.deterministic = torch.are_deterministic_algorithms_enabled()  # a graph replays the kernels it captured
        self.layout = parameter_layout(model)
        device = next(model.parameters()).device
        self.cache = StaticCache(config=model.config, max_cache_len=max_len)
        self.bool_mask = model.config._attn_implementation == "sdpa"  # eager attention adds a float mask
        self.mask_dtype = model.get_input_embeddings().weight.dtype
        self.ids = torch.full((rows, 1), pad_id, dtype=torch.long, device=device)
        self.pos = torch.zeros((rows, 1), dtype=torch.long, device=device)
        self.valid = torch.ones((rows, max_len), dtype=torch.bool, device=device)  # False at prompt padding
        self.key_pos = torch.arange(max_len, device=device)
        self.graph = self.logits = None
        self.n = 0              # caller's rows in the current call
        self.prompt_tokens = 0  # padded prompt tokens of the last prefill (the caller's rows)

    def fits(self, rows: int, max_len: int, model: Any, *, use_graph: bool) -> bool:
        """Whether this decoder serves a call of `rows` x `max_len` now: same buckets, same model with its
        parameters where they were, same graph choice and deterministic-algorithms setting."""
        import torch

        return (self.rows, self.max_len) == buckets(rows, max_len) and model is self.model and \
            use_graph == self.use_graph and self.deterministic == torch.are_deterministic_algorithms_enabled() and \
            parameter_layout(model) == self.layout

    def prefill(self, prompts: list[list[int]]) -> Any:
        import torch

        self.n = len(prompts)
        full = prompts + [prompts[0]] * (self.rows - len(prompts))
        input_ids, attention, positions = left_pad(full, self.pad_id, self.valid.device)
        width = input_ids.shape[1]
        if width >= self.max_len:
            raise ValueError(f"prompt of {width} tokens does not fit a static cache of {self.max_len}")
        self.prompt_tokens = self.n * width
        self._set_length(0)
        self.valid.fill_(True)
        self.valid[:, :width] = attention.bool()
        causal = self.key_pos[None, None, :] <= torch.arange(width, device=self.valid.device)[None, :, None]
        out = self.model(input_ids=input_ids, attention_mask=self._mask(causal & self.valid[:, None, :]),
                         position_ids=positions, past_key_values=self.cache, use_cache=True, logits_to_keep=1)
        self.pos.copy_(positions[:, -1:] + 1)
        if self.use_graph and self.graph is None:
            self._capture(width)
        return out.logits[:self.n, -1, :]

    def step(self, ids: Any) -> Any:
        self.ids[:self.n, 0].copy_(ids)
        if self.graph is not None:
            self.graph.replay()
            return self.logits[:self.n]
        return self._decode_one()[:self.n]

    def finish(self) -> None:
        """Nothing to free per call: the buffers are reused by the next one."""

    # ------------------------------------------------------------------------------------------- internals
    def _decode_one(self) -> Any:
        """One token for every row at the cache's current write position (read on the device, no sync), with
        `decode_attention` in every layer for the duration of the forward."""
        written = self.cache.layers[0].cumulative_length  # this token's slot; it attends to every slot up to it
        allowed = self.valid & (self.key_pos <= written)
        config = self.model.config
        previous = config._attn_implementation
        config._attn_implementation = DECODE_ATTENTION
        try:
            out = self.model(input_ids=self.ids, attention_mask=self._mask(allowed[:, None, :]),
                             position_ids=self.pos, past_key_values=self.cache, use_cache=True)
        finally:
            config._attn_implementation = previous
        self.pos.add_(1)
        return out.logits[:, -1, :]

    def _mask(self, allowed: Any) -> Any:
        """[rows, q, max_len] bool -> the 4-D mask the attention implementation takes (kept as is by
        transformers' mask builders)."""
        import torch

        allowed = allowed[:, None]
        if self.bool_mask:
            return allowed
        return torch.zeros((), dtype=self.mask_dtype, device=allowed.device).masked_fill(
            ~allowed, torch.finfo(self.mask_dtype).min)

    def _set_length(self, value: int) -> None:
        for layer in self.cache.layers:
            layer.cumulative_length.fill_(value)

    def _capture(self, width: int) -> None:
        """Warm up once on a side stream (lazy cuBLAS/allocator work must not happen inside the capture), undo
        its effects on the write position and positions, then record one decode step."""
        import torch

        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            self._decode_one()  # writes slot `width`, which the first replay overwrites
        torch.cuda.current_stream().wait_stream(stream)
        self._set_length(width)
        self.pos.sub_(1)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            self.logits = self._decode_one()
        self.graph = graph
