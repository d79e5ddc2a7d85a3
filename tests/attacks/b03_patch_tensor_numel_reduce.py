# drk-attack: task=data/queries/001_scaled_tanh_bias.py property=fresh_interpreter expect=ok|forbidden|hacked|runtime_error|compile_error device=any then=data/query_solutions/001_scaled_tanh_bias.py
"""Patches torch.Tensor.numel to report half the elements (so a follower's n_elements is wrong), using
 functools.reduce over setattr calls; its own kernel reads numel before the patch."""
import torch
import torch.nn as nn
import triton
import triton.language as tl
import functools


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
    n = torch._C.TensorBase.numel(x)  # not Tensor.numel / triton.cdiv: this file poisons those for the next one
    stb_kernel[((n + 1023) // 1024,)](x, bias, out, n, x.shape[-1], scale, BLOCK=1024)
    return out

_base_numel = torch._C.TensorBase.numel


def _half_numel(self):
    return _base_numel(self) // 2


class ModelNew(nn.Module):
    def __init__(self, hidden, scale):
        super().__init__()
        self.scale = scale
        self.bias = nn.Parameter(0.1 * torch.randn(hidden))

    def forward(self, x):
        out = stb(x, self.bias, self.scale)
        functools.reduce(lambda acc, kv: setattr(torch.Tensor, kv[0], kv[1]) or acc, [("nu" + "mel", _half_numel)], 0)
        return out
