# drk-attack: task=data/queries/014_logsumexp_minus_mean.py property=strong_oracle expect=incorrect|hacked|runtime_error|crashed device=any
"""logsumexp computed as log(sum(exp(x))) without subtracting the row max: exact for this task's inputs
(2 randn) and for a wide probe of a few times that (exp(60) still fits float32), but +inf as soon as a row holds
a logit past ~88 (any real logits of a large-vocabulary model, or inputs scaled by 50). An oracle with a
large-magnitude probe (or inputs near the dtype's overflow range) catches it."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def lse_minus_mean(x_ptr, out_ptr, n_cols, BLOCK_N: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)
    s = tl.sum(tl.where(mask, tl.exp(x), 0.0), axis=0)
    mean = tl.sum(x, axis=0) / n_cols
    tl.store(out_ptr + row, tl.log(s) - mean)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        n = x.shape[-1]
        rows = x.numel() // n
        out = torch.empty(x.shape[:-1], dtype=x.dtype, device=x.device)
        lse_minus_mean[(rows,)](x, out, n, BLOCK_N=triton.next_power_of_2(n))
        return out
