# drk-corpus: task=data/queries/001_scaled_tanh_bias.py expect=timeout device=any timeout=20
"""Never returns from forward."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def noop_kernel(x_ptr, BLOCK: tl.constexpr):
    pass


class ModelNew(nn.Module):
    def __init__(self, hidden, scale):
        super().__init__()
        self.bias = nn.Parameter(0.1 * torch.randn(hidden))

    def forward(self, x):
        n = 0
        while True:
            n += 1
