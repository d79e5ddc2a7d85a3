# drk-attack: task=data/queries/001_scaled_tanh_bias.py property=verdict_not_neighbours expect=ok|forbidden|runtime_error|crashed device=any then=data/query_solutions/001_scaled_tanh_bias.py
"""Allocates and touches 2.5 GB of host memory and parks it on the torch module (so it outlives this
 candidate in a warm interpreter), then does the work. The next candidate must still be ok."""
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


class ModelNew(nn.Module):
    def __init__(self, hidden, scale):
        super().__init__()
        self.scale = scale
        self.bias = nn.Parameter(0.1 * torch.randn(hidden))

    def forward(self, x):
        if not hasattr(torch, "_drk_hog"):
            hog = torch.ones(int(2.5 * (1 << 30)) // 4, dtype=torch.float32)
            setattr(torch, "_drk_hog", hog)
        return stb(x, self.bias, self.scale)
