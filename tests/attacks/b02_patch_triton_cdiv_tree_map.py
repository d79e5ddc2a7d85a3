# drk-attack: task=data/queries/001_scaled_tanh_bias.py property=fresh_interpreter expect=ok|forbidden|hacked|runtime_error|compile_error device=any then=data/query_solutions/001_scaled_tanh_bias.py
"""Replaces triton.cdiv with `lambda a, b: 1` after its own launch, through
 `torch.utils._pytree.tree_map(functools.partial(setattr, triton, "cdiv"), [...])` so no assignment to a
 library attribute appears in the source. A follower that sizes its grid with triton.cdiv computes one block
 only."""
import torch
import torch.nn as nn
import triton
import triton.language as tl
import functools
import torch.utils._pytree as pytree


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

def _one(a, b):
    return 1


class ModelNew(nn.Module):
    def __init__(self, hidden, scale):
        super().__init__()
        self.scale = scale
        self.bias = nn.Parameter(0.1 * torch.randn(hidden))

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        stb_kernel[((n + 1023) // 1024,)](x, self.bias, out, n, x.shape[-1], self.scale, BLOCK=1024)
        pytree.tree_map(functools.partial(setattr, triton, "cd" + "iv"), [_one])
        return out
