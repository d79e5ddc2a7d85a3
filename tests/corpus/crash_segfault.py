# drk-corpus: task=data/queries/001_scaled_tanh_bias.py expect=crashed device=cpu
"""Wild pointer arithmetic: segfaults the interpreter process (on a GPU it is an illegal address)."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def wild_kernel(x_ptr, o_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK).to(tl.int64) * 1_000_000_000 + 1_000_000_000
    tl.store(o_ptr + offs, tl.load(x_ptr + offs))


class ModelNew(nn.Module):
    def __init__(self, hidden, scale):
        super().__init__()
        self.bias = nn.Parameter(0.1 * torch.randn(hidden))

    def forward(self, x):
        out = torch.empty_like(x)
        wild_kernel[(1,)](x, out, BLOCK=16)
        return out
