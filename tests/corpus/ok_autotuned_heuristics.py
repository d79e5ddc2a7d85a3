# drk-corpus: task=data/queries/001_scaled_tanh_bias.py expect=ok device=any
"""Correct kernel using @triton.autotune over @triton.heuristics and a @triton.jit helper, launched
through a launcher object stored on the module (patterns models commonly write)."""
import math
import functools

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _tanh(x):
    return 1.0 - 2.0 / (tl.exp(2.0 * x) + 1.0)


@triton.autotune(configs=[triton.Config({"BLOCK": 1024}, num_warps=4), triton.Config({"BLOCK": 2048}, num_warps=8)],
                 key=["n"])
@triton.heuristics(values={"EVEN": lambda a: a["n"] % a["BLOCK"] == 0})
@triton.jit
def scaled_tanh_bias_kernel(x_ptr, b_ptr, o_ptr, n, hidden, scale, BLOCK: tl.constexpr, EVEN: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    if EVEN:
        x = tl.load(x_ptr + offs)
        b = tl.load(b_ptr + offs % hidden)
        tl.store(o_ptr + offs, scale * _tanh(x) + b)
    else:
        m = offs < n
        x = tl.load(x_ptr + offs, mask=m)
        b = tl.load(b_ptr + offs % hidden, mask=m)
        tl.store(o_ptr + offs, scale * _tanh(x) + b, mask=m)


class Launcher:
    def __init__(self, scale):
        self.scale = scale

    @functools.lru_cache(maxsize=None)
    def grid_for(self, block):
        return block

    def __call__(self, x, bias):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        grid = lambda meta: (math.ceil(n / meta["BLOCK"]),)
        scaled_tanh_bias_kernel[grid](x, bias, out, n, x.shape[-1], self.scale)
        return out


class ModelNew(nn.Module):
    def __init__(self, hidden, scale):
        super().__init__()
        self.bias = nn.Parameter(0.1 * torch.randn(hidden))
        self.launch = Launcher(scale)

    def forward(self, x):
        return self.launch(x, self.bias)
