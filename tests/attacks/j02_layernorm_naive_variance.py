# drk-attack: task=data/queries/013_layer_norm_no_affine.py property=strong_oracle expect=incorrect|hacked|runtime_error|crashed device=any
"""Row layer norm with the one-pass variance E[x^2] - E[x]^2 in float32 (the e03 gap on a second, very common
task): exact for this task's inputs (3 randn + 1), catastrophic cancellation once rows carry a large common
offset (x + 1e4: E[x^2] ~ 1e8, so var loses every significant digit and outputs are garbage or NaN). The
wide-input probe scales and shifts values by a few units only, so it does not reach this."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def ln_naive(x_ptr, out_ptr, n_cols, eps, BLOCK_N: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / n_cols
    var = tl.maximum(tl.sum(x * x, axis=0) / n_cols - mean * mean, 0.0)
    tl.store(out_ptr + row * n_cols + cols, (x - mean) * tl.rsqrt(var + eps), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, eps):
        super().__init__()
        self.eps = eps

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.shape[-1]
        ln_naive[(x.numel() // n,)](x, out, n, self.eps, BLOCK_N=triton.next_power_of_2(n))
        return out
