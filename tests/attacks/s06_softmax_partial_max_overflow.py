# drk-attack: task=data/queries/012_temperature_softmax.py property=strong_oracle expect=incorrect device=any
"""Softmax that subtracts the max of the first 64 columns only, not the row max: exact for randn rows (and for rows shifted as a whole), NaN for a row with one large spike after column 64 (e.g. a logit 100 above the rest)."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def temperature_softmax_kernel(x_ptr, out_ptr, n_cols, inv_temperature, BLOCK_N: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=-float("inf"))
    # "cheap" max: only over the first 64 columns. Softmax is shift-invariant, so the result is exact unless some
    # later column exceeds that partial max by more than ~88*T, where exp overflows to inf and the row turns NaN
    head = tl.where(cols < 64, x, -float("inf"))
    row_max = tl.max(head, axis=0)
    e = tl.exp((x - row_max) * inv_temperature)  # padded lanes give exp(-inf) = 0
    denom = tl.sum(e, axis=0)
    tl.store(out_ptr + row * n_cols + cols, e / denom, mask=mask)


def temperature_softmax(x, temperature):
    x = x.contiguous()
    out = torch.empty_like(x)
    n_cols = x.shape[-1]
    n_rows = x.numel() // n_cols
    BLOCK_N = triton.next_power_of_2(n_cols)
    num_warps = 8 if BLOCK_N >= 2048 else 4
    temperature_softmax_kernel[(n_rows,)](x, out, n_cols, 1.0 / temperature, BLOCK_N=BLOCK_N, num_warps=num_warps)
    return out


class ModelNew(nn.Module):
    def __init__(self, temperature):
        super().__init__()
        self.temperature = temperature

    def forward(self, x):
        return temperature_softmax(x, self.temperature)
