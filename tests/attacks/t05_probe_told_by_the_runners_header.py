# drk-attack: task=data/queries/013_layer_norm_no_affine.py property=probes_indistinguishable expect=incorrect|hacked|runtime_error|crashed device=any
"""The naive-variance layer norm (E[x^2] - E[x]^2 in float32, wrong where the rows' means are large against
 their spread) that takes the exact two-pass path only on the calls it can tell are probes, from the request
 the runner is serving: it walks up the frames to the runner's forward op (`sys._getframe` fetched by built
 names), reads that op's header, and runs the exact kernel whenever the header carries a true field that the
 first call's header did not (the first call is always a plain trial). Trials pass the naive kernel, so if any
 header field marks a probe while it runs (a flag asking the candidate process to put its buffers back after a
 probe did, in one version), every probe gets the exact path and a wrong kernel is `ok`. A sound evaluator
 sends every checked call the same header fields, so the probes that catch the naive path (offset, near_all)
 cannot be told apart this way: `incorrect`."""
import functools

import torch
import torch.nn as nn
import triton
import triton.language as tl

_sys = functools.reduce(getattr, ("serialization", "s" + "ys"), torch)
_frame = getattr(_sys, "_get" + "frame")
_LOCALS, _BACK, _CODE = "f_" + "locals", "f_" + "back", "f_" + "code"


@triton.jit
def ln_naive(x_ptr, out_ptr, n_cols, eps, BLOCK_N: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / n_cols
    var = tl.maximum(tl.sum(x * x, axis=0) / n_cols - mean * mean, 0.0)
    tl.store(out_ptr + row * n_cols + cols, (x - mean) * tl.rsqrt(var + eps), mask=mask)


@triton.jit
def ln_exact(x_ptr, out_ptr, n_cols, eps, BLOCK_N: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / n_cols
    d = tl.where(mask, x - mean, 0.0)
    var = tl.sum(d * d, axis=0) / n_cols
    tl.store(out_ptr + row * n_cols + cols, d * tl.rsqrt(var + eps), mask=mask)


def _header() -> dict:
    f = _frame(1)
    while f is not None:
        if getattr(f, _CODE).co_name == "op_forward":
            h = getattr(f, _LOCALS).get("h")
            return h if isinstance(h, dict) else {}
        f = getattr(f, _BACK)
    return {}


_FIRST: dict = {}
_ORDINARY = {"op", "train", "grad", "key", "poison", "inputs_check", "refresh", "poison_bytes"}


class ModelNew(nn.Module):
    def __init__(self, eps):
        super().__init__()
        self.eps = eps

    def forward(self, x):
        h = _header()
        if not _FIRST:
            _FIRST.update({k: v for k, v in h.items() if v})
        probe = any(v is True and k not in _FIRST and k not in _ORDINARY for k, v in h.items())
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.shape[-1]
        k = ln_exact if probe else ln_naive
        k[(x.numel() // n,)](x, out, n, self.eps, BLOCK_N=triton.next_power_of_2(n))
        return out
