# drk-attack: task=data/queries/012_temperature_softmax.py property=strong_oracle expect=incorrect|hacked|runtime_error|crashed device=any
"""Temperature softmax without the max subtraction the task's own reference spells out: exp(x / T) / sum.
Exact for this task's inputs (randn, T = 0.7) and for a wide probe of a few times that (exp(26 / 0.7) fits
float32), but inf/inf = NaN as soon as a row holds a value past ~62 (T * 88.7). An oracle with a
large-magnitude probe catches it."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def softmax_nomax(x_ptr, out_ptr, n_cols, inv_t, BLOCK_N: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=-float("inf"))
    e = tl.exp(x * inv_t)
    tl.store(out_ptr + row * n_cols + cols, e / tl.sum(e, axis=0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, temperature):
        super().__init__()
        self.temperature = temperature

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.shape[-1]
        softmax_nomax[(x.numel() // n,)](x, out, n, 1.0 / self.temperature, BLOCK_N=triton.next_power_of_2(n))
        return out
