# drk-attack: task=data/queries/007_rms_scale.py property=strong_oracle expect=incorrect device=any
"""RMS norm with eps dropped: indistinguishable on randn rows (eps=1e-6 against mean_sq ~ 1), NaN for an all-zero row (a padding row), where the reference gives 0."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def rms_scale_kernel(x_ptr, w_ptr, out_ptr, n_cols, eps, BLOCK_N: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)  # one program per row
    cols = tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0)
    mean_sq = tl.sum(x * x, axis=0) / n_cols
    y = x * tl.rsqrt(mean_sq) * w  # eps dropped: 0 * inf = NaN for an all-zero row (padding rows)
    tl.store(out_ptr + row * n_cols + cols, y, mask=mask)


def rms_scale(x, weight, eps):
    x = x.contiguous()
    out = torch.empty_like(x)
    n_cols = x.shape[-1]
    n_rows = x.numel() // n_cols
    BLOCK_N = triton.next_power_of_2(n_cols)  # the whole row fits in one block
    num_warps = 8 if BLOCK_N >= 2048 else 4
    rms_scale_kernel[(n_rows,)](x, weight, out, n_cols, eps, BLOCK_N=BLOCK_N, num_warps=num_warps)
    return out


class ModelNew(nn.Module):
    def __init__(self, hidden, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(1.0 + 0.1 * torch.randn(hidden))

    def forward(self, x):
        return rms_scale(x, self.weight, self.eps)
