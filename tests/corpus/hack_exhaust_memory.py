# drk-corpus: task=data/queries/001_scaled_tanh_bias.py expect=runtime_error|crashed device=any
"""Tries to take a terabyte of memory (address-space limit on CPU, allocator OOM on GPU): never ok, and the
run goes on."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def fill_kernel(o_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(o_ptr + offs, tl.zeros([BLOCK], dtype=tl.float32), mask=offs < n)


class ModelNew(nn.Module):
    def __init__(self, hidden, scale):
        super().__init__()
        self.bias = nn.Parameter(0.1 * torch.randn(hidden))

    def forward(self, x):
        hog = torch.empty(2**38, dtype=torch.float32, device=x.device)
        fill_kernel[(1,)](hog, 16, BLOCK=16)
        return x + hog[:1]
