# drk-corpus: task=data/queries/001_scaled_tanh_bias.py expect=runtime_error device=any
"""Raises inside forward (a shape bug the model could fix from the error text)."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def copy_kernel(x_ptr, o_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(o_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


class ModelNew(nn.Module):
    def __init__(self, hidden, scale):
        super().__init__()
        self.bias = nn.Parameter(0.1 * torch.randn(hidden))

    def forward(self, x):
        out = torch.empty_like(x)
        copy_kernel[(1,)](x, out, x.numel(), BLOCK=128)
        return out.view(-1, 3, 7)
