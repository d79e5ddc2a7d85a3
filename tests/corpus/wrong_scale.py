# drk-corpus: task=data/queries/001_scaled_tanh_bias.py expect=incorrect device=any
"""Plausible but wrong: forgets the scale factor."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def tanh_bias_kernel(x_ptr, b_ptr, o_ptr, n, hidden, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    b = tl.load(b_ptr + offs % hidden, mask=m)
    t = 1.0 - 2.0 / (tl.exp(2.0 * x) + 1.0)
    tl.store(o_ptr + offs, t + b, mask=m)


class ModelNew(nn.Module):
    def __init__(self, hidden, scale):
        super().__init__()
        self.scale = scale
        self.bias = nn.Parameter(0.1 * torch.randn(hidden))

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        tanh_bias_kernel[(triton.cdiv(x.numel(), 1024),)](x, self.bias, out, x.numel(), x.shape[-1], BLOCK=1024)
        return out
