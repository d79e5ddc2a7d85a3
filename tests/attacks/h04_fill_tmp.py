# drk-attack: task=data/queries/001_scaled_tanh_bias.py property=verdict_not_neighbours expect=ok|forbidden|runtime_error device=any then=data/query_solutions/001_scaled_tanh_bias.py markers={tmp}/drk-redteam-fill-h04,{shm}/drk-redteam-fill-h04
"""Writes 400 MB into /tmp and 100 MB into /dev/shm (numpy.ndarray.tofile) and leaves them there: the host must
 not keep them (test removes them) and the next candidate must still be ok."""
import torch
import torch.nn as nn
import triton
import triton.language as tl
import numpy


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
        if not getattr(self, "filled", False):
            self.filled = True
            numpy.zeros(400 << 20, dtype=numpy.uint8).tofile("/tmp/drk-redteam-fill-h04")
            numpy.zeros(100 << 20, dtype=numpy.uint8).tofile("/dev/shm/drk-redteam-fill-h04")
        return stb(x, self.bias, self.scale)
