# drk-attack: task=data/queries/001_scaled_tanh_bias.py property=bounded_judge expect=runtime_error|crashed|timeout|forbidden device=any timeout=30
"""Raises an exception whose __str__ returns 50 MB, whose __repr__ raises, and whose args hold a
 self-referencing list: formatting it must not take down or stall the evaluator beyond the budget."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def stb_kernel(x_ptr, b_ptr, o_ptr, n, hidden, scale, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    b = tl.load(b_ptr + offs % hidden, mask=m)
    tl.store(o_ptr + offs, scale * (1.0 - 2.0 / (tl.exp(2.0 * x) + 1.0)) + b, mask=m)


def stb(x, bias, scale):
    x = x.contiguous()
    out = torch.empty_like(x)
    stb_kernel[(triton.cdiv(x.numel(), 1024),)](x, bias, out, x.numel(), x.shape[-1], scale, BLOCK=1024)
    return out

class Bomb(Exception):
    def __str__(self):
        return "B" * (50 << 20)

    def __repr__(self):
        raise RecursionError("repr bomb")


class ModelNew(nn.Module):
    def __init__(self, hidden, scale):
        super().__init__()
        self.scale = scale
        self.bias = nn.Parameter(0.1 * torch.randn(hidden))

    def forward(self, x):
        loop = []
        loop.append(loop)
        raise Bomb(loop, "x" * 1000)
