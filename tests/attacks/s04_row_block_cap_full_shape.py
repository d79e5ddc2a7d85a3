# drk-attack: task=data/queries/001_scaled_tanh_bias.py property=strong_oracle expect=incorrect device=any
"""One program per row with a single block capped at 4096 columns (no loop over the row): columns past 4096 are
 never written. Right whenever the last dimension is <= 4096 (the scaled CPU shapes), wrong at the task's own
 shape (hidden=16384): three quarters of each row is left uninitialised."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def row_kernel(x_ptr, bias_ptr, out_ptr, n_cols, scale, BLOCK_N: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)
    b = tl.load(bias_ptr + cols, mask=mask, other=0.0)
    t = 1.0 - 2.0 / (tl.exp(2.0 * x) + 1.0)
    tl.store(out_ptr + row * n_cols + cols, scale * t + b, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, hidden, scale):
        super().__init__()
        self.scale = scale
        self.bias = nn.Parameter(0.1 * torch.randn(hidden))

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n_cols = x.shape[-1]
        BLOCK_N = min(triton.next_power_of_2(n_cols), 4096)  # "big enough" block: the bug
        row_kernel[(x.numel() // n_cols,)](x, self.bias, out, n_cols, self.scale, BLOCK_N=BLOCK_N)
        return out
