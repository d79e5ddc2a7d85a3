# drk-corpus: task=data/queries/001_scaled_tanh_bias.py expect=compile_error device=gpu
"""tl.arange needs a power-of-two constexpr range: a Triton compile error (CompilationError on GPU)."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def bad_kernel(x_ptr, o_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, 1000)
    tl.store(o_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


class ModelNew(nn.Module):
    def __init__(self, hidden, scale):
        super().__init__()
        self.bias = nn.Parameter(0.1 * torch.randn(hidden))

    def forward(self, x):
        out = torch.empty_like(x)
        bad_kernel[(triton.cdiv(x.numel(), 1000),)](x, out, x.numel(), BLOCK=1000)
        return out
